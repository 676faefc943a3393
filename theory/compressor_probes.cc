#include "theory/compressor_probes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "theory/statistics.h"

namespace lemmalab {
namespace {

// The senders a compression probe reads: every worker, and the server when it keeps a record.
template <typename T>
std::vector<int> Senders(const Observable<T>& optimizer, int workers) {
  std::vector<int> senders;
  // A sender whose record was never filled (a server that does not compress) is not one.
  const auto compressed = [&](int sender) {
    const CompressionRecord<T>* record = optimizer.LastCompression(sender);
    return record != nullptr && record->input.size() > 0;
  };
  for (int i = 0; i < workers; ++i) {
    if (compressed(i)) senders.push_back(i);
  }
  if (compressed(kServer)) senders.push_back(kServer);
  return senders;
}

std::uint32_t StreamOf(int sender) {
  return sender == kServer ? kServerStream : static_cast<std::uint32_t>(sender);
}

// A probe that needs the compression records: applies to the optimizers that keep them.
template <typename T>
class CompressionProbe : public Probe<T> {
 public:
  explicit CompressionProbe(const ProbeContext& context)
      : workers_(context.workers), seed_(context.seed) {}

  bool AppliesTo(const Observable<T>& optimizer) const override {
    return optimizer.CanKeepCompressionRecords();
  }

  void Attach(Observable<T>& optimizer, const Vector<T>& /*x1*/) override {
    const bool kept = optimizer.KeepCompressionRecords();
    LEMMALAB_CHECK(kept, "{}: the optimizer refused to keep compression records", this->name());
  }

 protected:
  // A sender's index among the per-sender state: the workers, then the server.
  std::size_t Slot(int sender) const {
    return static_cast<std::size_t>(sender == kServer ? workers_ : sender);
  }
  // One flag per sender, for what is recorded once per sender.
  std::vector<std::uint8_t> SenderFlags() const {
    return std::vector<std::uint8_t>(static_cast<std::size_t>(workers_) + 1);
  }
  // Whether `sender` comes for the first time, by its flag in `seen` (which it sets).
  bool FirstTime(std::vector<std::uint8_t>& seen, int sender) const {
    return std::exchange(seen[Slot(sender)], std::uint8_t{1}) == 0;
  }

  int workers_;
  std::uint64_t seed_;
};

template <typename T>
class UnbiasednessProbe final : public CompressionProbe<T> {
 public:
  explicit UnbiasednessProbe(const ProbeContext& context)
      : CompressionProbe<T>(context),
        stride_(std::max<std::int64_t>(
            1, (kUnbiasednessDraws * context.dimension * (context.workers + 1) +
                kUnbiasednessDrawBudget - 1) /
                   kUnbiasednessDrawBudget)) {}

  std::string_view name() const override { return "q-unbiased"; }

  void Observe(const ProbeStep<T>& step, const Observable<T>& optimizer, ProbeSink& sink) override {
    if ((step.t - 1) % stride_ != 0) return;
    for (const int sender : Senders(optimizer, this->workers_)) {
      const CompressionRecord<T>& record = *optimizer.LastCompression(sender);
      // A fresh instance per call: a call's draws depend on its input alone, not on the warm
      // start earlier calls left in a stateful compressor (PowerSGD), so they are the same in
      // a run resumed from a checkpoint.
      const std::unique_ptr<Compressor<T>> fresh = record.maker(record.shape);
      PhiloxStream stream(
          {this->seed_, Purpose::kProbe, StreamOf(sender), static_cast<std::uint64_t>(step.t)});
      const UnbiasednessSample s =
          SampleUnbiasedness(*fresh, record.input, kUnbiasednessDraws, stream);
      // Whether the sender's draws can differ at all: a deterministic compressor's are one
      // value, whose bias the check judges exactly. Once per sender.
      if (this->FirstTime(flagged_, sender)) {
        sink.Record("deterministic", sender, record.compressor->deterministic() ? 1 : 0);
      }
      sink.Record("z", sender, s.z);
      sink.Record("z_inside", sender, s.z_inside);
      sink.Record("bias", sender, s.bias);
      sink.Record("sq_bias", sender, s.sq_bias);
      sink.Record("sq_bias_inside", sender, s.sq_bias_inside);
      // Lemma 1's variance law is the law of Birder's quantizer, not of other compressors.
      if (record.compressor->name() == "stochastic-binary" && s.variance_expected > 0) {
        sink.Record("variance_sum", sender, s.variance_sum);
        sink.Record("variance_expected", sender, s.variance_expected);
      }
      ++calls_;
      z_sum_ += s.z;
      max_bias_ = NanMax(max_bias_, s.bias);
    }
  }

  void Persist(StateArchive& archive) override {
    archive("calls", calls_);
    archive("z_sum", z_sum_);
    archive("max_bias", max_bias_);
    archive("flagged", flagged_);
  }

  std::vector<std::string> Summary() const override {
    if (calls_ == 0) return {"no compressor calls sampled"};
    return {fmt::format(
        "E[C(u)] = u (birder Eq. 5, Lemma 1): {} calls x {} draws (every {} steps), mean "
        "split-sample z {:.3g}, largest relative bias of the draws' mean {:.3g}",
        calls_, kUnbiasednessDraws, stride_, z_sum_ / static_cast<double>(calls_), max_bias_)};
  }

 private:
  std::int64_t stride_;
  std::int64_t calls_ = 0;
  double z_sum_ = 0;
  double max_bias_ = 0;
  std::vector<std::uint8_t> flagged_ = this->SenderFlags();  // `deterministic` recorded
};

template <typename T>
class DeviationProbe final : public CompressionProbe<T> {
 public:
  using CompressionProbe<T>::CompressionProbe;

  std::string_view name() const override { return "q-deviate"; }

  void Observe(const ProbeStep<T>& step, const Observable<T>& optimizer, ProbeSink& sink) override {
    for (const int sender : Senders(optimizer, this->workers_)) {
      const CompressionRecord<T>& record = *optimizer.LastCompression(sender);
      // What the compressor declares, at the sender's first compression (step 1, or later for
      // an algorithm whose first round sends full precision, as MARINA's does).
      if (this->FirstTime(declared_senders_, sender)) {
        const Compressor<T>& compressor = *record.compressor;
        if (const std::optional<double> q = compressor.q()) {
          sink.Record("declared_q", sender, *q);
          declared_ = std::max(declared_, *q);
        }
        // What the bounds on E||C(u) - u||^2 read (EF21's alpha, DIANA's and MARINA's omega),
        // and whether one call or only the calls' mean can contradict them.
        if (const std::optional<double> alpha = compressor.alpha()) {
          sink.Record("declared_alpha", sender, *alpha);
        }
        if (const std::optional<double> omega = compressor.omega()) {
          sink.Record("declared_omega", sender, *omega);
        }
        sink.Record("deterministic", sender, compressor.deterministic() ? 1 : 0);
        sink.Record("correlated_senders", sender, compressor.correlated_senders() ? 1 : 0);
      }
      const double norm = record.input.template cast<double>().norm();
      if (norm == 0) continue;
      const double ratio =
          (record.output.template cast<double>() - record.input.template cast<double>()).norm() /
          norm;
      sink.Record("ratio", sender, ratio);
      if (!(ratio <= worst_)) {  // a NaN ratio is the worst
        worst_ = ratio;
        worst_step_ = step.t;
        worst_sender_ = sender;
      }
      // Every call, whether or not probe_every keeps this step's values: the running largest
      // ratio and the sums of ratio^2 and ratio^4, so the values kept at the last step speak for
      // all the sender's calls (a deterministic bound needs every call, a mean all of them).
      Totals& totals = totals_[this->Slot(sender)];
      totals.max_ratio = NanMax(totals.max_ratio, ratio);
      totals.calls += 1;
      totals.sq_sum += ratio * ratio;
      totals.sq_sq_sum += ratio * ratio * ratio * ratio;
      sink.Record("max_ratio", sender, totals.max_ratio);
      sink.Record("calls", sender, totals.calls);
      sink.Record("sq_ratio_sum", sender, totals.sq_sum);
      sink.Record("sq_ratio_sq_sum", sender, totals.sq_sq_sum);
    }
  }

  void Persist(StateArchive& archive) override {
    archive("worst", worst_);
    archive("worst_step", worst_step_);
    archive("worst_sender", worst_sender_);
    archive("declared", declared_);
    archive("declared_senders", declared_senders_);
    std::vector<double> flat;
    for (const Totals& t : totals_)
      flat.insert(flat.end(), {t.max_ratio, t.calls, t.sq_sum, t.sq_sq_sum});
    archive("totals", flat);
    for (std::size_t i = 0; i < totals_.size() && 4 * i + 3 < flat.size(); ++i) {
      totals_[i] = {flat[4 * i], flat[4 * i + 1], flat[4 * i + 2], flat[4 * i + 3]};
    }
  }

  std::vector<std::string> Summary() const override {
    return {fmt::format(
        "||C(u) - u|| / ||u|| (spams Assumption 1: <= q < 1): max {:.4g} (step {}, {}); declared "
        "q {}",
        worst_, worst_step_,
        worst_sender_ == kServer ? std::string("server") : fmt::format("worker {}", worst_sender_),
        declared_ < 0 ? std::string("none") : fmt::format("{:.4g}", declared_))};
  }

 private:
  double worst_ = 0;
  std::int64_t worst_step_ = 0;
  int worst_sender_ = 0;
  double declared_ = -1;
  std::vector<std::uint8_t> declared_senders_ = this->SenderFlags();  // declarations recorded
  // Per sender (workers, then the server): the running totals of its calls.
  struct Totals {
    double max_ratio = 0, calls = 0, sq_sum = 0, sq_sq_sum = 0;
  };
  std::vector<Totals> totals_ = std::vector<Totals>(static_cast<std::size_t>(this->workers_) + 1);
};

}  // namespace

namespace {

// The t statistic of the projections' mean, with `resolution` the rounding level of a
// projection: a compressor that works in T rounds its output (QSGD's and TernGrad's float32
// scales), so a mean and a spread at that level are rounding, not bias, and count as no evidence
// (a mean at rounding level over a spread at rounding level would otherwise give |z| ~ 1e16).
// When every draw of the second half gave the same projection (no spread to judge by) the
// statistic is +inf only if that projection is too large for an unbiased two-level quantizer to
// have produced it with all draws alike: such a quantizer with levels `gap` apart that is biased
// by b_j on coordinate j in the seen direction repeats one level m times with probability
// prod_j (1 - b_j/gap)^m <= exp(-sum_j b_j m / gap), so a repeated projection sum_j b_j above
// gap ln(1/p) / m has probability at most p. The statistic is then the normal quantile of that
// p (finite: at most kLargestZ), and 0 when p exceeds 1% (inputs at the edge of the interval,
// where the rare level hardly ever comes up, are no evidence). A NaN projection gives NaN.
double SplitSampleStatistic(const std::vector<double>& projections, double gap, double resolution) {
  constexpr double kLargestZ = 37;  // the quantile of p = 1e-300
  const auto m = static_cast<double>(projections.size());
  double mean = 0, var = 0;
  for (const double p : projections) mean += p;
  mean /= m;
  for (const double p : projections) var += (p - mean) * (p - mean);
  var /= m - 1;
  if (std::isnan(mean) || std::isnan(var)) return std::numeric_limits<double>::quiet_NaN();
  if (std::abs(mean) <= resolution) return 0.0;
  if (var > resolution * resolution) return mean / std::sqrt(var / m + resolution * resolution);
  if (!(gap > 0)) return kLargestZ;
  const double log_p = -mean * m / gap;  // ln of the bound on the chance of all-alike draws
  if (log_p > std::log(0.01)) return 0.0;
  return log_p < -690 ? kLargestZ : std::min(kLargestZ, -NormalQuantile(std::exp(log_p)));
}

}  // namespace

template <typename T>
UnbiasednessSample SampleUnbiasedness(Compressor<T>& compressor, const Vector<T>& u, int draws,
                                      PhiloxStream& stream) {
  LEMMALAB_CHECK(draws >= 8, "{} draws are too few for the split-sample test", draws);
  const Eigen::Index d = u.size();
  const Eigen::VectorXd x = u.template cast<double>();
  const Eigen::VectorXd inside = x.unaryExpr([](double v) { return std::abs(v) <= 1 ? 1.0 : 0.0; });
  const int half = draws / 2;
  Message message;
  Vector<T> decoded(d);
  Eigen::VectorXd sum = Eigen::VectorXd::Zero(d), sum_sq = Eigen::VectorXd::Zero(d);
  Eigen::VectorXd w, w_inside;
  double largest = 0;  // max_j |C(u)_j| over the draws: half the widest level gap (NaN: NaN)
  std::vector<double> projections, projections_inside;  // <C_k(u) - u, w>, second half
  for (int k = 0; k < draws; ++k) {
    compressor.Encode(u, stream, message);
    compressor.Decode(message, decoded);
    const Eigen::VectorXd c = decoded.template cast<double>();
    sum += c;
    sum_sq += c.cwiseProduct(c);
    largest = NanMax(largest, c.cwiseAbs().maxCoeff<Eigen::PropagateNaN>());
    if (k == half - 1) {
      // w = sign(mean of the first half - u): the direction a bias would show in.
      w = (sum / half - x).unaryExpr([](double v) { return double((v > 0) - (v < 0)); });
      w_inside = w.cwiseProduct(inside);
    }
    if (k >= half) {
      projections.push_back((c - x).dot(w));
      projections_inside.push_back((c - x).dot(w_inside));
    }
  }
  // A projection sums |C(u)_j - u_j| <= |C(u)_j| + |u_j| over the coordinates, each rounded to
  // T's precision: 16 units of roundoff of that sum is rounding.
  const double roundoff = std::numeric_limits<T>::epsilon() / 2;
  const Eigen::VectorXd magnitude = x.cwiseAbs().array() + largest;
  UnbiasednessSample s;
  s.z = SplitSampleStatistic(projections, 2 * largest, 16 * roundoff * magnitude.sum());
  s.z_inside = SplitSampleStatistic(projections_inside, 2 * largest,
                                    16 * roundoff * magnitude.cwiseProduct(inside).sum());
  const Eigen::VectorXd mean_c = sum / draws;
  const double norm = x.norm();
  s.bias = norm > 0 ? (mean_c - x).norm() / norm : 0.0;
  // ||mean - u||^2 - sum_j s_j^2 / draws is unbiased for ||E C(u) - u||^2 (the draws' noise in
  // the mean, removed): pooled over calls it bounds the bias from above, which a test that only
  // fails to reject cannot.
  double sq_all = 0, sq_inside = 0, norm_inside = 0;
  for (Eigen::Index j = 0; j < d; ++j) {
    const double variance = NanMax(0.0, (sum_sq[j] - draws * mean_c[j] * mean_c[j]) / (draws - 1));
    const double excess = (mean_c[j] - x[j]) * (mean_c[j] - x[j]) - variance / draws;
    sq_all += excess;
    if (inside[j] == 0) continue;
    sq_inside += excess;
    norm_inside += x[j] * x[j];
    s.variance_sum += variance;
    s.variance_expected += 1 - x[j] * x[j];
  }
  s.sq_bias = norm > 0 ? sq_all / (norm * norm) : 0.0;
  s.sq_bias_inside = norm_inside > 0 ? sq_inside / norm_inside : 0.0;
  return s;
}

template <typename T>
std::unique_ptr<Probe<T>> MakeUnbiasednessProbe(const ProbeContext& context) {
  return std::make_unique<UnbiasednessProbe<T>>(context);
}
template <typename T>
std::unique_ptr<Probe<T>> MakeDeviationProbe(const ProbeContext& context) {
  return std::make_unique<DeviationProbe<T>>(context);
}

#define LEMMALAB_INSTANTIATE(T)                                                         \
  template std::unique_ptr<Probe<T>> MakeUnbiasednessProbe(const ProbeContext&);        \
  template std::unique_ptr<Probe<T>> MakeDeviationProbe(const ProbeContext&);           \
  template UnbiasednessSample SampleUnbiasedness(Compressor<T>&, const Vector<T>&, int, \
                                                 PhiloxStream&);
LEMMALAB_INSTANTIATE(float)
LEMMALAB_INSTANTIATE(double)
#undef LEMMALAB_INSTANTIATE

}  // namespace lemmalab
