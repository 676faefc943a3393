#include "theory/birder_probes.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>

#include "optimizers/birder.h"
#include "theory/evidence.h"
#include "theory/optimizer_options.h"
#include "theory/statistics.h"
#include "theory/tally.h"

namespace lemmalab {

BirderQuantizerSides BirderQuantizerOf(const Hyperparameters& options) {
  constexpr std::string_view kQ = "stochastic-binary";
  BirderQuantizerSides sides;
  sides.workers = options.Text("compressor.name") == kQ;
  sides.server = options.Has("server_compressor.name")
                     ? options.Text("server_compressor.name") == kQ
                     : sides.workers;
  return sides;
}

namespace {

// Birder's beta from the run's options (nullopt for another optimizer: the z-sequence is
// Birder's).
std::optional<double> BirderBeta(const Hyperparameters& h) {
  const std::optional<BirderOptions> birder = BirderOptionsOf(OptimizerName(h), h);
  return birder ? std::optional<double>(birder->beta) : std::nullopt;
}

template <typename T>
class QuantizerDomainProbe final : public Probe<T> {
 public:
  explicit QuantizerDomainProbe(const ProbeContext& context)
      : workers_(context.workers), sides_(BirderQuantizerOf(context.hyperparameters)) {}

  std::string_view name() const override { return "q-domain"; }

  // Only Birder's quantizer has a domain ([-1, 1], Eq. 5); other compressors' encode statistics
  // count other things (fp16's saturation) or nothing. Each side is recorded where it uses Q.
  bool AppliesTo(const Observable<T>& optimizer) const override {
    return (sides_.workers && optimizer.LastEncode(0) != nullptr) ||
           (sides_.server && optimizer.LastEncode(kServer) != nullptr);
  }

  void Observe(const ProbeStep<T>& step, const Observable<T>& optimizer, ProbeSink& sink) override {
    const std::int64_t t = step.t;
    for (int i = 0; sides_.workers && i < workers_; ++i) {
      const double f = Fraction(*optimizer.LastEncode(i));
      sink.Record("worker_fraction", i, f);
      worker_.Add(f, t, i);
      if (!(f <= 0) && first_outside_ == 0) first_outside_ = t;
    }
    if (const EncodeStats* server = optimizer.LastEncode(kServer); sides_.server && server) {
      const double f = Fraction(*server);
      sink.Record("server_fraction", kServer, f);
      server_.Add(f, t, kServer);
    }
  }

  void Persist(StateArchive& archive) override {
    archive.Nested("worker", worker_);
    archive.Nested("server", server_);
    archive("first_outside", first_outside_);
  }

  std::vector<std::string> Summary() const override {
    std::vector<std::string> lines;
    lines.push_back(fmt::format(
        "inputs of Q outside [-1, 1] (birder Eq. 5): workers mean {:.2f}%, max {:.2f}% "
        "(step {}, worker {}), first at {}",
        100 * worker_.mean(), 100 * worker_.max, worker_.max_step, worker_.max_worker,
        first_outside_ == 0 ? std::string("no step") : fmt::format("step {}", first_outside_)));
    if (server_.count > 0) {
      lines.push_back(fmt::format("  server mean {:.2f}%, max {:.2f}% (step {})",
                                  100 * server_.mean(), 100 * server_.max, server_.max_step));
    }
    return lines;
  }

 private:
  // NaN when an input was not finite: such an input is in no domain, and its fraction must not
  // read as 0.
  static double Fraction(const EncodeStats& s) {
    if (s.non_finite > 0) return std::numeric_limits<double>::quiet_NaN();
    return s.elements == 0 ? 0.0
                           : static_cast<double>(s.out_of_domain) / static_cast<double>(s.elements);
  }

  int workers_;
  BirderQuantizerSides sides_;
  Tally worker_, server_;
  std::int64_t first_outside_ = 0;
};

template <typename T>
class ErrorNormProbe final : public Probe<T> {
 public:
  explicit ErrorNormProbe(const ProbeContext& context)
      : workers_(context.workers), d_(static_cast<double>(context.dimension)) {}

  std::string_view name() const override { return "ef-norm"; }

  bool AppliesTo(const Observable<T>& optimizer) const override {
    return optimizer.Observe(Quantity::kWorkerError, 0) != nullptr ||
           optimizer.Observe(Quantity::kServerError, kServer) != nullptr;
  }

  void Observe(const ProbeStep<T>& step, const Observable<T>& optimizer, ProbeSink& sink) override {
    const std::int64_t t = step.t;
    for (int i = 0; i < workers_; ++i) {
      if (const std::optional<double> sq = optimizer.SquaredNorm(Quantity::kWorkerError, i)) {
        sink.Record("worker_sq_norm", i, *sq);
        worker_.Add(*sq / d_, t, i);
      }
    }
    if (const std::optional<double> sq = optimizer.SquaredNorm(Quantity::kServerError, kServer)) {
      sink.Record("server_sq_norm", kServer, *sq);
      server_.Add(*sq / d_, t, kServer);
    }
  }

  void Persist(StateArchive& archive) override {
    archive.Nested("worker", worker_);
    archive.Nested("server", server_);
  }

  std::vector<std::string> Summary() const override {
    std::vector<std::string> lines;
    const auto line = [&](std::string_view who, const Tally& tally) {
      lines.push_back(fmt::format(
          "{} ||e||^2 / d (birder Lemma 1: E||e||^2 <= d): mean {:.4g}, max {:.4g} (step {})", who,
          tally.mean(), tally.max, tally.max_step));
    };
    if (worker_.count > 0) line("worker", worker_);
    if (server_.count > 0) line("server", server_);
    return lines;
  }

 private:
  int workers_;
  double d_;
  Tally worker_, server_;
};

template <typename T>
class MinDenominatorProbe final : public Probe<T> {
 public:
  explicit MinDenominatorProbe(const ProbeContext& context)
      : workers_(context.workers),
        d_(context.dimension),
        previous_(static_cast<std::size_t>(context.workers)) {}

  std::string_view name() const override { return "min-b"; }

  bool AppliesTo(const Observable<T>& optimizer) const override {
    return optimizer.Observe(Quantity::kRawDenominator, 0) != nullptr &&
           optimizer.Observe(Quantity::kDenominator, 0) != nullptr;
  }

  void Observe(const ProbeStep<T>& step, const Observable<T>& optimizer, ProbeSink& sink) override {
    const std::int64_t t = step.t;
    for (int i = 0; i < workers_; ++i) {
      const Vector<T>& b = *optimizer.Observe(Quantity::kRawDenominator, i);
      const Vector<T>& denominator = *optimizer.Observe(Quantity::kDenominator, i);
      const double min_b = static_cast<double>(b.template minCoeff<Eigen::PropagateNaN>());
      const double min_denominator =
          static_cast<double>(denominator.template minCoeff<Eigen::PropagateNaN>());
      const auto at_constant = static_cast<std::int64_t>((b.array() == T(0)).count());
      sink.Record("min_b", i, min_b);
      sink.Record("max_b", i, static_cast<double>(b.template maxCoeff<Eigen::PropagateNaN>()));
      sink.Record("min_denominator", i, min_denominator);
      sink.Record("at_constant", i, static_cast<double>(at_constant));
      // Theorem 1's proof, step (iii), needs alpha_{t-1} / b_{t-1} >= alpha_t / b_t on every
      // coordinate: the largest ratio (alpha_t / b_t,j) / (alpha_{t-1} / b_{t-1},j) must stay
      // <= 1. Line 7's max rule guarantees it after T0; without it b may fall faster than alpha.
      Eigen::ArrayXd& before = previous_[static_cast<std::size_t>(i)];
      const Eigen::ArrayXd now = denominator.template cast<double>().array();
      if (before.size() == now.size() && lr_ > 0) {
        const double growth = (step.lr / lr_) * (before / now).maxCoeff<Eigen::PropagateNaN>();
        sink.Record("step_ratio", i, growth);
      }
      before = now;
      if (!std::isnan(min_b_) && !(min_b >= min_b_)) {  // a NaN, once seen, stays the smallest
        min_b_ = min_b;
        min_b_step_ = t;
        min_b_worker_ = i;
      }
      min_denominator_ = NanMin(min_denominator_, min_denominator);
      max_at_constant_ = std::max(max_at_constant_, at_constant);
    }
    lr_ = step.lr;
  }

  void Persist(StateArchive& archive) override {
    archive("min_b", min_b_);
    archive("min_b_step", min_b_step_);
    archive("min_b_worker", min_b_worker_);
    archive("min_denominator", min_denominator_);
    archive("max_at_constant", max_at_constant_);
    archive.Later("previous", previous_, d_);  // from step 1 on
    archive("lr", lr_);
  }

  std::vector<std::string> Summary() const override {
    return {fmt::format("min_j b_t,j (birder Thm 1 assumes b >= rho > 0): {:.4g} (step {}, "
                        "worker {}); min denominator b + eps: {:.4g}",
                        min_b_, min_b_step_, min_b_worker_, min_denominator_),
            fmt::format("  coordinates at the added constant (b = 0): at most {} of {}",
                        max_at_constant_, d_)};
  }

 private:
  int workers_;
  std::int64_t d_;
  double min_b_ = std::numeric_limits<double>::infinity();
  std::int64_t min_b_step_ = 0;
  int min_b_worker_ = 0;
  double min_denominator_ = std::numeric_limits<double>::infinity();
  std::int64_t max_at_constant_ = 0;
  std::vector<Eigen::ArrayXd> previous_;  // b_{t-1} + eps per worker
  double lr_ = 0;                         // alpha_{t-1}
};

// Lemma 2 (birder.txt lines 396-515). In the paper's indexing e_t is the error that enters step
// t (after step t-1) and u_bar_t = m_t / b_t + delta_t + e_t - e_{t+1} (Eq. 14), with m_t, b_t
// the workers' means and delta_t = mean_i m^(i)/b^(i) - m_t / b_t (Eq. 9-12). Then
//   z_1     = x_1 + alpha_1 (delta_1 - e_1)                                             (Eq. 20)
//   z_t     = x_t + beta/(1-beta) (x_t - x_{t-1})
//             + alpha_{t-1}/(1-beta) (delta_{t-1} + beta e_{t-1} - e_t),  t >= 2           (Eq. 21)
//   z_{t+1} = z_t + beta/(1-beta) (alpha_{t-1}/b_{t-1} - alpha_t/b_t) m_{t-1}
//             - alpha_t g_t / b_t - alpha_{t-1} delta_{t-1} - (alpha_t - alpha_{t-1}) e_t   (Eq.
//             22)
// and at t = 1, with alpha_0 = alpha_1 and m_0 = 0, z_2 = z_1 - alpha_1 g_1 / b_1 - alpha_1 delta_1
// (Eq. 23). Everything is computed in double from the run's values; b is the denominator
// b + eps the update divides by (the analysis's b, docs/conventions.md §7).
template <typename T>
class ZSequenceProbe final : public Probe<T> {
 public:
  explicit ZSequenceProbe(const ProbeContext& context)
      : workers_(context.workers), beta_(BirderBeta(context.hyperparameters)) {}

  std::string_view name() const override { return "birder-z"; }

  bool AppliesTo(const Observable<T>& optimizer) const override {
    // Under a hierarchical layout the workers' error feedback lives at the nodes, where the
    // identity's e_t cannot see it (CanKeepCompressionRecords is false exactly there).
    return beta_.has_value() && optimizer.Observe(Quantity::kMomentum, 0) != nullptr &&
           optimizer.Observe(Quantity::kDenominator, 0) != nullptr &&
           optimizer.CanKeepCompressionRecords();
  }

  void Attach(Observable<T>& optimizer, const Vector<T>& x1) override {
    x_ = x1.template cast<double>();
    e_ = CombinedError(optimizer);  // e_1
  }

  void Observe(const ProbeStep<T>& step, const Observable<T>& optimizer, ProbeSink& sink) override {
    const Eigen::Index d = x_.size();
    Eigen::VectorXd m = Eigen::VectorXd::Zero(d), b = m, ratio = m, g = m;
    for (int i = 0; i < workers_; ++i) {
      const Eigen::VectorXd mi = optimizer.Observe(Quantity::kMomentum, i)->template cast<double>();
      const Eigen::VectorXd bi =
          optimizer.Observe(Quantity::kDenominator, i)->template cast<double>();
      m += mi;
      b += bi;
      ratio += mi.cwiseQuotient(bi);
      g += step.gradients[static_cast<std::size_t>(i)].template cast<double>();
    }
    const double n = workers_;
    m /= n;
    b /= n;
    g /= n;
    const Eigen::VectorXd delta = ratio / n - m.cwiseQuotient(b);  // delta_t
    const Eigen::VectorXd e_next = CombinedError(optimizer);       // e_{t+1}
    const Eigen::VectorXd x_next = step.x.template cast<double>();
    const double beta = *beta_, alpha = step.lr, k = beta / (1 - beta);
    const Eigen::VectorXd z_next =
        x_next + k * (x_next - x_) + alpha / (1 - beta) * (delta + beta * e_ - e_next);
    Eigen::VectorXd residual;
    if (step.t == 1) {
      z_ = x_ + alpha * (delta - e_);                                       // Eq. 20
      residual = z_next - z_ + alpha * g.cwiseQuotient(b) + alpha * delta;  // Eq. 23
      sink.Record("f_z1", kRunWide, step.problem.Objective(z_.cast<T>(), nullptr));
    } else {
      residual = z_next - z_ -
                 k * (alpha_ * b_.cwiseInverse() - alpha * b.cwiseInverse()).cwiseProduct(m_) +
                 alpha * g.cwiseQuotient(b) + alpha_ * delta_ + (alpha - alpha_) * e_;  // Eq. 22
    }
    // Infinity norms that keep a NaN (Eigen's lpNorm<Infinity> may skip it).
    const auto largest = [](const Eigen::VectorXd& v) {
      return v.size() == 0 ? 0.0 : v.cwiseAbs().maxCoeff<Eigen::PropagateNaN>();
    };
    const double r = largest(residual);
    const double scale = NanMax(largest(z_next), largest(z_));
    const double relative = scale > 0 ? r / scale : r;
    sink.Record("residual", kRunWide, r);
    sink.Record("relative", kRunWide, relative);
    if (!std::isnan(worst_) && !(relative <= worst_)) {
      worst_ = relative;
      worst_step_ = step.t;
    }
    // Shift: what step t+1 needs of step t.
    x_ = x_next;
    z_ = z_next;
    e_ = e_next;
    m_ = m;
    b_ = b;
    delta_ = delta;
    alpha_ = alpha;
  }

  void Persist(StateArchive& archive) override {
    archive("x", x_);
    archive("e", e_);
    // Sized at step 1.
    const Eigen::Index d = x_.size();
    archive.Later("z", z_, d);
    archive.Later("m", m_, d);
    archive.Later("b", b_, d);
    archive.Later("delta", delta_, d);
    archive("alpha", alpha_);
    archive("worst", worst_);
    archive("worst_step", worst_step_);
  }

  std::vector<std::string> Summary() const override {
    return {fmt::format(
        "Lemma 2 z-sequence identity (birder Eq. 21-23): largest relative residual {:.3g} "
        "(step {})",
        worst_, worst_step_)};
  }

 private:
  // e = (1/n) sum_i e^(i) + e_bar (Eq. 12); a side without error feedback contributes 0.
  Eigen::VectorXd CombinedError(const Observable<T>& optimizer) const {
    Eigen::VectorXd e = Eigen::VectorXd::Zero(x_.size());
    for (int i = 0; i < workers_; ++i) {
      if (const Vector<T>* ei = optimizer.Observe(Quantity::kWorkerError, i)) {
        e += ei->template cast<double>();
      }
    }
    e /= workers_;
    if (const Vector<T>* e_bar = optimizer.Observe(Quantity::kServerError, kServer)) {
      e += e_bar->template cast<double>();
    }
    return e;
  }

  int workers_;
  std::optional<double> beta_;  // the run's beta (Birder's one EMA factor of m and b)
  Eigen::VectorXd x_, z_, e_, m_, b_, delta_;  // of the previous step (x_t, z_t, e_t, ...)
  double alpha_ = 0;
  double worst_ = 0;
  std::int64_t worst_step_ = 0;
};

}  // namespace

template <typename T>
std::unique_ptr<Probe<T>> MakeQuantizerDomainProbe(const ProbeContext& context) {
  return std::make_unique<QuantizerDomainProbe<T>>(context);
}
template <typename T>
std::unique_ptr<Probe<T>> MakeErrorNormProbe(const ProbeContext& context) {
  return std::make_unique<ErrorNormProbe<T>>(context);
}
template <typename T>
std::unique_ptr<Probe<T>> MakeMinDenominatorProbe(const ProbeContext& context) {
  return std::make_unique<MinDenominatorProbe<T>>(context);
}
template <typename T>
std::unique_ptr<Probe<T>> MakeZSequenceProbe(const ProbeContext& context) {
  return std::make_unique<ZSequenceProbe<T>>(context);
}

#define LEMMALAB_INSTANTIATE(T)                                                     \
  template std::unique_ptr<Probe<T>> MakeQuantizerDomainProbe(const ProbeContext&); \
  template std::unique_ptr<Probe<T>> MakeErrorNormProbe(const ProbeContext&);       \
  template std::unique_ptr<Probe<T>> MakeMinDenominatorProbe(const ProbeContext&);  \
  template std::unique_ptr<Probe<T>> MakeZSequenceProbe(const ProbeContext&);
LEMMALAB_INSTANTIATE(float)
LEMMALAB_INSTANTIATE(double)
#undef LEMMALAB_INSTANTIATE

}  // namespace lemmalab
