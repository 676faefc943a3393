#include "theory/spams_probes.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <optional>

#include "theory/optimizer_options.h"
#include "theory/tally.h"
#include "theory/verdicts.h"

namespace lemmalab {
namespace {

// beta1 of the run's optimizer (SPAMS's, for the probes that apply), nullopt when it has none.
std::optional<double> Beta1Of(const Hyperparameters& h) {
  const std::optional<MomentOptions> moments = MomentOptionsOf(OptimizerName(h), h);
  return moments ? std::optional<double>(moments->beta1) : std::nullopt;
}

// The q that `sender`'s compressor declares (spams.txt Assumption 1), when the optimizer keeps
// compression records and the compressor has one.
template <typename T>
std::optional<double> DeclaredQ(const Observable<T>& optimizer, int sender) {
  const CompressionRecord<T>* record = optimizer.LastCompression(sender);
  if (record == nullptr || record->compressor == nullptr) return std::nullopt;
  return record->compressor->q();
}

// Records series "q" once: the workers' compressor's q as worker 0 and the server's as kServer,
// for the senders `has_worker` / `has_server` say carry error feedback.
template <typename T>
void RecordDeclaredQ(const Observable<T>& optimizer, bool has_worker, bool has_server,
                     ProbeSink& sink, std::optional<double>& shown) {
  for (const auto& [sender, has] : {std::pair{0, has_worker}, std::pair{kServer, has_server}}) {
    if (!has) continue;
    if (const std::optional<double> q = DeclaredQ(optimizer, sender)) {
      sink.Record("q", sender, *q);
      if (!shown) shown = q;
    }
  }
}

template <typename T>
class SpamsErrorProbe final : public Probe<T> {
 public:
  explicit SpamsErrorProbe(const ProbeContext& context) : workers_(context.workers) {}

  std::string_view name() const override { return "spams-ef"; }

  bool AppliesTo(const Observable<T>& optimizer) const override {
    return optimizer.Observe(Quantity::kWorkerError, 0) != nullptr ||
           optimizer.Observe(Quantity::kServerError, kServer) != nullptr;
  }

  // The declared q comes from the compressor instance, which optimizers show only through their
  // compression records.
  void Attach(Observable<T>& optimizer, const Vector<T>& /*x1*/) override {
    optimizer.KeepCompressionRecords();
  }

  void Observe(const ProbeStep<T>& step, const Observable<T>& optimizer, ProbeSink& sink) override {
    bool has_worker = false;
    for (int i = 0; i < workers_; ++i) {
      // None: no feedback, or another process's worker.
      const std::optional<double> sq = optimizer.SquaredNorm(Quantity::kWorkerError, i);
      if (!sq) continue;
      has_worker = true;
      sink.Record("sq_norm", i, *sq);
      tally_.Add(*sq, step.t, i);
    }
    const std::optional<double> server_sq = optimizer.SquaredNorm(Quantity::kServerError, kServer);
    if (server_sq) {
      sink.Record("sq_norm", kServer, *server_sq);
      tally_.Add(*server_sq, step.t, kServer);
    }
    if (!q_recorded_) {
      RecordDeclaredQ(optimizer, has_worker, server_sq.has_value(), sink, q_);
      q_recorded_ = true;
    }
  }

  void Persist(StateArchive& archive) override {
    archive.Nested("tally", tally_);
    archive("q_recorded", q_recorded_);
    archive("q", q_);
  }

  std::vector<std::string> Summary() const override {
    if (tally_.count == 0) return {"no error feedback was observed"};
    return {
        fmt::format("max ||e_t||^2 (spams Lemma 2: <= 4 q^2 G^2 / (1-q^2)^2): {:.4g} (step {}, "
                    "{}); declared q {}",
                    tally_.max, tally_.max_step, SenderName(tally_.max_worker),
                    q_ ? fmt::format("{:.4g}", *q_) : std::string("none"))};
  }

 private:
  int workers_;
  Tally tally_;
  bool q_recorded_ = false;
  std::optional<double> q_;
};

template <typename T>
class SpamsMaxVarianceProbe final : public Probe<T> {
 public:
  explicit SpamsMaxVarianceProbe(const ProbeContext& /*context*/) {}

  std::string_view name() const override { return "spams-vhat"; }

  bool AppliesTo(const Observable<T>& optimizer) const override {
    return optimizer.Observe(Quantity::kMaxVariance, kServer) != nullptr;
  }

  void Attach(Observable<T>& optimizer, const Vector<T>& /*x1*/) override {
    optimizer.KeepCompressionRecords();
  }

  void Observe(const ProbeStep<T>& step, const Observable<T>& optimizer, ProbeSink& sink) override {
    const Vector<T>& v_hat = *optimizer.Observe(Quantity::kMaxVariance, kServer);
    const double max = v_hat.size() == 0
                           ? 0.0
                           : static_cast<double>(v_hat.template maxCoeff<Eigen::PropagateNaN>());
    sink.Record("max_vhat", kServer, max);
    tally_.Add(max, step.t, kServer);
    if (!q_recorded_) {
      // Lemma 4 bounds v_hat through ||C(g + e)||, so the q is that of the compressor that
      // produced the averaged g~: the workers' (dist-spams) or the server's (spams). Recorded as
      // kServer, beside max_vhat.
      const bool workers_compress = optimizer.LastCompression(0) != nullptr;
      if (const std::optional<double> q = DeclaredQ(optimizer, workers_compress ? 0 : kServer)) {
        sink.Record("q", kServer, *q);
        q_ = q;
      }
      q_recorded_ = true;
    }
  }

  void Persist(StateArchive& archive) override {
    archive.Nested("tally", tally_);
    archive("q_recorded", q_recorded_);
    archive("q", q_);
  }

  std::vector<std::string> Summary() const override {
    return {fmt::format(
        "max_j v_hat_t,j (spams Lemma 4: <= 4 (1+q^2)^3 G^2 / (1-q^2)^2): {:.4g} "
        "(step {}); declared q {}",
        tally_.max, tally_.max_step, q_ ? fmt::format("{:.4g}", *q_) : std::string("none"))};
  }

 private:
  Tally tally_;
  bool q_recorded_ = false;
  std::optional<double> q_;
};

template <typename T>
class SpamsDenominatorStepProbe final : public Probe<T> {
 public:
  explicit SpamsDenominatorStepProbe(const ProbeContext& /*context*/) {}

  std::string_view name() const override { return "spams-d"; }

  // Needs the update's denominator sqrt(v_hat + eps) next to v_hat: the AMSGrad server of SPAMS.
  bool AppliesTo(const Observable<T>& optimizer) const override {
    return optimizer.Observe(Quantity::kMaxVariance, kServer) != nullptr &&
           optimizer.Observe(Quantity::kDenominator, kServer) != nullptr;
  }

  // 1/sqrt(v_hat_0 + eps) with v_hat_0 = 0, as the optimizer holds it before step 1.
  void Attach(Observable<T>& optimizer, const Vector<T>& /*x1*/) override {
    if (const Vector<T>* denominator = optimizer.Observe(Quantity::kDenominator, kServer)) {
      inverse_ = denominator->template cast<double>().cwiseInverse();
    }
  }

  void Observe(const ProbeStep<T>& step, const Observable<T>& optimizer, ProbeSink& sink) override {
    const Vector<T>& denominator = *optimizer.Observe(Quantity::kDenominator, kServer);
    const Eigen::VectorXd inverse = denominator.template cast<double>().cwiseInverse();
    if (inverse_.size() != inverse.size()) {  // not attached before step 1: D_t from here on
      inverse_ = inverse;
    }
    // D_t = 1/sqrt(v_hat_{t-1} + eps) - 1/sqrt(v_hat_t + eps); ||.||_1 takes absolute values, so
    // a v_hat that ever decreased adds to the sum instead of cancelling.
    const Eigen::VectorXd d = inverse_ - inverse;
    const double l1 = d.lpNorm<1>(), sq = d.squaredNorm();
    sink.Record("l1", kServer, l1);
    sink.Record("sq", kServer, sq);
    l1_sum_ += l1;
    sq_sum_ += sq;
    if (d.size() > 0 && d.minCoeff() < 0 && first_decrease_ == 0) first_decrease_ = step.t;
    inverse_ = inverse;
  }

  void Persist(StateArchive& archive) override {
    archive("inverse", inverse_);
    archive("l1_sum", l1_sum_);
    archive("sq_sum", sq_sum_);
    archive("first_decrease", first_decrease_);
  }

  std::vector<std::string> Summary() const override {
    return {
        fmt::format("sum_t ||D_t||_1 = {:.6g}, sum_t ||D_t||^2 = {:.6g} (spams Lemma 5: <= "
                    "d / sqrt(eps), d / eps); v_hat decreased: {}",
                    l1_sum_, sq_sum_,
                    first_decrease_ == 0 ? std::string("never")
                                         : fmt::format("first at step {}", first_decrease_))};
  }

 private:
  Eigen::VectorXd inverse_;  // 1/sqrt(v_hat_{t-1} + eps)
  double l1_sum_ = 0, sq_sum_ = 0;
  std::int64_t first_decrease_ = 0;
};

template <typename T>
class SpamsMomentsProbe final : public Probe<T> {
 public:
  explicit SpamsMomentsProbe(const ProbeContext& context)
      : workers_(context.workers),
        beta1_(Beta1Of(context.hyperparameters)),
        momentum_(Eigen::VectorXd::Zero(context.dimension)),
        error_average_(Eigen::VectorXd::Zero(context.dimension)) {}

  std::string_view name() const override { return "spams-moments"; }

  // SPAMS's AMSGrad server (v_hat) with error feedback, and its beta1.
  bool AppliesTo(const Observable<T>& optimizer) const override {
    return beta1_.has_value() && optimizer.Observe(Quantity::kMaxVariance, kServer) != nullptr &&
           (optimizer.Observe(Quantity::kWorkerError, 0) != nullptr ||
            optimizer.Observe(Quantity::kServerError, kServer) != nullptr);
  }

  void Observe(const ProbeStep<T>& step, const Observable<T>& optimizer, ProbeSink& sink) override {
    const auto d = step.x.size();
    Eigen::VectorXd g_bar = Eigen::VectorXd::Zero(d), e_bar = Eigen::VectorXd::Zero(d);
    int senders = 0;
    for (int i = 0; i < workers_; ++i) {
      g_bar += step.gradients[static_cast<std::size_t>(i)].template cast<double>();
      if (const Vector<T>* e = optimizer.Observe(Quantity::kWorkerError, i);
          e != nullptr && e->size() == d) {
        e_bar += e->template cast<double>();
        ++senders;
      }
    }
    g_bar /= workers_;
    if (senders > 0) {
      e_bar /= senders;
    } else if (const Vector<T>* e = optimizer.Observe(Quantity::kServerError, kServer)) {
      e_bar = e->template cast<double>();  // Algorithm 3: the one error lives at the server
    }
    const double beta1 = *beta1_;
    momentum_ = beta1 * momentum_ + (1 - beta1) * g_bar;
    error_average_ = beta1 * error_average_ + (1 - beta1) * e_bar;
    sink.Record("momentum_sq", kRunWide, momentum_.squaredNorm());
    sink.Record("error_average_sq", kRunWide, error_average_.squaredNorm());
    momentum_sum_ += momentum_.squaredNorm();
    error_sum_ += error_average_.squaredNorm();
  }

  void Persist(StateArchive& archive) override {
    archive("momentum", momentum_);
    archive("error_average", error_average_);
    archive("momentum_sum", momentum_sum_);
    archive("error_sum", error_sum_);
  }

  std::vector<std::string> Summary() const override {
    return {fmt::format(
        "sum_t ||m'_t||^2 = {:.6g} (spams Lemma 1), sum_t ||E_t||^2 = {:.6g} (spams Lemma 3)",
        momentum_sum_, error_sum_)};
  }

 private:
  int workers_;
  std::optional<double> beta1_;
  Eigen::VectorXd momentum_, error_average_;  // m'_t and E_t
  double momentum_sum_ = 0, error_sum_ = 0;
};

}  // namespace

template <typename T>
std::unique_ptr<Probe<T>> MakeSpamsMomentsProbe(const ProbeContext& context) {
  return std::make_unique<SpamsMomentsProbe<T>>(context);
}

template <typename T>
std::unique_ptr<Probe<T>> MakeSpamsErrorProbe(const ProbeContext& context) {
  return std::make_unique<SpamsErrorProbe<T>>(context);
}
template <typename T>
std::unique_ptr<Probe<T>> MakeSpamsMaxVarianceProbe(const ProbeContext& context) {
  return std::make_unique<SpamsMaxVarianceProbe<T>>(context);
}
template <typename T>
std::unique_ptr<Probe<T>> MakeSpamsDenominatorStepProbe(const ProbeContext& context) {
  return std::make_unique<SpamsDenominatorStepProbe<T>>(context);
}

#define LEMMALAB_INSTANTIATE(T)                                                          \
  template std::unique_ptr<Probe<T>> MakeSpamsErrorProbe(const ProbeContext&);           \
  template std::unique_ptr<Probe<T>> MakeSpamsMaxVarianceProbe(const ProbeContext&);     \
  template std::unique_ptr<Probe<T>> MakeSpamsDenominatorStepProbe(const ProbeContext&); \
  template std::unique_ptr<Probe<T>> MakeSpamsMomentsProbe(const ProbeContext&);
LEMMALAB_INSTANTIATE(float)
LEMMALAB_INSTANTIATE(double)
#undef LEMMALAB_INSTANTIATE

}  // namespace lemmalab
