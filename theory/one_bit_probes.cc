#include "theory/one_bit_probes.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <optional>

#include "core/error.h"
#include "theory/optimizer_options.h"
#include "theory/tally.h"

namespace lemmalab {
namespace {

template <typename T>
class OneBitErrorProbe final : public Probe<T> {
 public:
  explicit OneBitErrorProbe(const ProbeContext& context) : workers_(context.workers) {}

  std::string_view name() const override { return "onebit-error"; }

  bool AppliesTo(const Observable<T>& optimizer) const override {
    return optimizer.Observe(Quantity::kWorkerError, 0) != nullptr ||
           optimizer.Observe(Quantity::kServerError, kServer) != nullptr;
  }

  void Observe(const ProbeStep<T>& step, const Observable<T>& optimizer, ProbeSink& sink) override {
    for (int i = 0; i < workers_; ++i) {
      const Vector<T>* delta = optimizer.Observe(Quantity::kWorkerError, i);
      if (delta == nullptr || delta->size() == 0) continue;  // another process's worker
      const double norm = delta->template cast<double>().norm();
      sink.Record("worker_norm", i, norm);
      worker_.Add(norm, step.t, i);
    }
    if (const Vector<T>* delta_bar = optimizer.Observe(Quantity::kServerError, kServer)) {
      const double norm = delta_bar->template cast<double>().norm();
      sink.Record("server_norm", kServer, norm);
      server_.Add(norm, step.t, kServer);
    }
    RecordTheoremInputs(optimizer, sink);
  }

  // What Theorem 1 needs beyond the norms (theory/one_bit_assertions.cc): the combined error
  // delta_t = (1/n) sum_i delta_t^(i) + delta_bar_t its proof bounds (E||delta_t||^2 <= eps^2,
  // Lemma 2) as `combined_norm` (run-wide), and, once, at the first step the frozen variance
  // v_Tw is set, min_j and max_j sqrt(v_Tw,j) as `frozen_sqrt_min` and `frozen_sqrt_max`.
  void RecordTheoremInputs(const Observable<T>& optimizer, ProbeSink& sink) {
    const Vector<T>* delta_bar = optimizer.Observe(Quantity::kServerError, kServer);
    Eigen::VectorXd combined;
    int senders = 0;
    for (int i = 0; i < workers_; ++i) {
      const Vector<T>* delta = optimizer.Observe(Quantity::kWorkerError, i);
      if (delta == nullptr || delta->size() == 0) continue;
      if (senders++ == 0) combined = Eigen::VectorXd::Zero(delta->size());
      combined += delta->template cast<double>();
    }
    if (senders == workers_ && delta_bar != nullptr && delta_bar->size() == combined.size()) {
      combined = combined / workers_ + delta_bar->template cast<double>();
      sink.Record("combined_norm", kRunWide, combined.norm());
    }
    const Vector<T>* frozen = optimizer.Observe(Quantity::kFrozenVariance, kServer);
    if (!frozen_recorded_ && frozen != nullptr && frozen->size() > 0 &&
        (frozen->array() != T(0)).any()) {
      frozen_recorded_ = true;
      const Eigen::ArrayXd root = frozen->template cast<double>().array().sqrt();
      sink.Record("frozen_sqrt_min", kRunWide, root.minCoeff<Eigen::PropagateNaN>());
      sink.Record("frozen_sqrt_max", kRunWide, root.maxCoeff<Eigen::PropagateNaN>());
    }
  }

  void Persist(StateArchive& archive) override {
    archive.Nested("worker", worker_);
    archive.Nested("server", server_);
    archive("frozen_recorded", frozen_recorded_);
  }

  std::vector<std::string> Summary() const override {
    std::vector<std::string> lines;
    if (worker_.count > 0) {
      lines.push_back(fmt::format(
          "max ||delta_t^(i)|| (onebit-adam Assumption 1.3: bounded): {:.4g} (step {}, worker {})",
          worker_.max, worker_.max_step, worker_.max_worker));
    }
    if (server_.count > 0) {
      lines.push_back(
          fmt::format("  max ||delta_bar_t||: {:.4g} (step {})", server_.max, server_.max_step));
    }
    return lines;
  }

 private:
  int workers_;
  Tally worker_, server_;
  bool frozen_recorded_ = false;
};

template <typename T>
class VarianceNormProbe final : public Probe<T> {
 public:
  explicit VarianceNormProbe(const ProbeContext& /*context*/) {}

  std::string_view name() const override { return "variance-norm"; }

  bool AppliesTo(const Observable<T>& optimizer) const override {
    return optimizer.Observe(Quantity::kVariance, kServer) != nullptr;
  }

  void Observe(const ProbeStep<T>& step, const Observable<T>& optimizer, ProbeSink& sink) override {
    const Eigen::VectorXd v =
        optimizer.Observe(Quantity::kVariance, kServer)->template cast<double>();
    const double l1 = v.lpNorm<1>(), l2 = v.norm();
    sink.Record("l1", kServer, l1);
    sink.Record("l2", kServer, l2);
    last_ = l1;
    last_step_ = step.t;
  }

  void Persist(StateArchive& archive) override {
    archive("last", last_);
    archive("last_step", last_step_);
  }

  std::vector<std::string> Summary() const override {
    return {
        fmt::format("||v_t||_1 at step {}: {:.6g} (onebit-adam Sec. 3.3: v stabilises; the "
                    "check judges its relative change at T_w)",
                    last_step_, last_)};
  }

 private:
  double last_ = 0;
  std::int64_t last_step_ = 0;
};

template <typename T>
class LambRatiosProbe final : public Probe<T> {
 public:
  explicit LambRatiosProbe(const ProbeContext& context) : rules_(context.hyperparameters) {}

  std::string_view name() const override { return "lamb-ratios"; }

  bool AppliesTo(const Observable<T>& optimizer) const override {
    return optimizer.Observe(Quantity::kLayerScale, kServer) != nullptr;
  }

  void Attach(Observable<T>& optimizer, const Vector<T>& /*x1*/) override {
    rules_.SetLayers(
        static_cast<std::size_t>(optimizer.Observe(Quantity::kLayerScale, kServer)->size()));
  }

  void Observe(const ProbeStep<T>& step, const Observable<T>& optimizer, ProbeSink& sink) override {
    // The `worker` field carries the layer index l: r and c are per layer, the same on every
    // replica (onebit-lamb.txt Alg. 1 lines 17-20).
    const Vector<T>& c = *optimizer.Observe(Quantity::kLayerScale, kServer);
    // r and line 17's ratio before the clips exist in 1-bit LAMB's compression phase only (r is
    // 1 before it), so that their extents are the phase's.
    const Vector<T>* r =
        rules_.Compressing(step.t) ? optimizer.Observe(Quantity::kLayerRatio, kServer) : nullptr;
    if (r != nullptr) {
      for (Eigen::Index l = 0; l < r->size(); ++l) {
        const auto value = static_cast<double>((*r)[l]);
        sink.Record("r", static_cast<int>(l), value);
        r_.Add(value, step.t, static_cast<int>(l));
      }
    }
    if (const Vector<T>* target = optimizer.Observe(Quantity::kLayerTarget, kServer);
        target != nullptr && rules_.Compressing(step.t) && frozen(optimizer)) {
      for (Eigen::Index l = 0; l < target->size(); ++l) {
        sink.Record("target", static_cast<int>(l), static_cast<double>((*target)[l]));
      }
    }
    for (Eigen::Index l = 0; l < c.size(); ++l) {
      const auto value = static_cast<double>(c[l]);
      const auto layer = static_cast<int>(l);
      sink.Record("c", layer, value);
      c_.Add(value, step.t, layer);
      // Each rule's excess at this step, so that the check sees every step whatever probe_every
      // keeps (a rule between consecutive steps cannot be judged from points 10 steps apart).
      const std::optional<double> ratio =
          r != nullptr && l < r->size() ? std::optional<double>((*r)[l]) : std::nullopt;
      rules_.Step(step.t, static_cast<std::size_t>(l), value, ratio,
                  [&](std::string_view rule, double excess) { sink.Record(rule, layer, excess); });
    }
  }

  static bool frozen(const Observable<T>& optimizer) {
    const Vector<T>* v = optimizer.Observe(Quantity::kFrozenVariance, kServer);
    return v != nullptr && (v->array() != T(0)).any();
  }

  void Persist(StateArchive& archive) override {
    archive.Nested("r", r_);
    archive.Nested("c", c_);
    archive.Nested("rules", rules_);
  }

  std::vector<std::string> Summary() const override {
    std::vector<std::string> lines;
    lines.push_back(fmt::format(
        "max c_t^(l) (onebit-lamb Eq. 1 clip [c_min, c_max]; Alg. 1 line 20 r c_avg): {:.4g} "
        "(step {}, layer {})",
        c_.max, c_.max_step, c_.max_worker));
    if (r_.count > 0) {
      lines.push_back(fmt::format(
          "  max r_t^(l) (Alg. 1 lines 18-19: clip to [r_min, r_max]): {:.4g} (step {}, layer {})",
          r_.max, r_.max_step, r_.max_worker));
    }
    return lines;
  }

 private:
  LambRules rules_;
  Tally r_, c_;
};

}  // namespace

namespace {

// How far `value` lies outside [lo, hi], relative to the bound it passes: the smallest relative
// slack rtol with lo - rtol |lo| <= value <= hi + rtol |hi| (0 inside, +inf past a bound of 0,
// NaN for NaN).
double Excess(double value, double lo, double hi) {
  if (std::isnan(value)) return value;
  if (value < lo) return lo != 0 ? (lo - value) / std::abs(lo) : INFINITY;
  if (value > hi) return hi != 0 ? (value - hi) / std::abs(hi) : INFINITY;
  return 0;
}

}  // namespace

// The rules of the run's LAMB or 1-bit LAMB; for another optimizer (whose run the probe does not
// apply to) they are left open.
LambRules::LambRules(const Hyperparameters& h) {
  const std::string optimizer = OptimizerName(h);
  const std::optional<LambOptions> lamb = LambOptionsOf(optimizer, h);
  const std::optional<OneBitLambOptions> one_bit = OneBitLambOptionsOf(optimizer, h);
  warmup_ = WarmupStepsOf(optimizer, h);
  c_min_ = lamb ? lamb->c_min : 0;
  c_max_ = lamb ? lamb->c_max : INFINITY;
  r_min_ = one_bit ? one_bit->r_min : 0;
  r_max_ = one_bit ? one_bit->r_max : INFINITY;
  r_threshold_ = one_bit ? one_bit->r_threshold : 0;
  beta3_ = one_bit ? one_bit->beta3 : 0;
  zero_norm_one_ = lamb && lamb->zero_norm == LambZeroNorm::kOne;
}

void LambRules::SetLayers(std::size_t layers) {
  c_avg_.assign(layers, 0.0);       // c_avg starts at 0 (line 1)
  r_previous_.assign(layers, 1.0);  // r_{T_w} = 1 (line 1)
}

void LambRules::Step(std::int64_t t, std::size_t layer, double c, std::optional<double> r,
                     const std::function<void(std::string_view, double)>& excess) {
  LEMMALAB_CHECK(layer < c_avg_.size(), "layer {} of {} (SetLayers)", layer, c_avg_.size());
  if (!warmup_ || t <= *warmup_) {  // LAMB clips c at every step
    // Eq. (1)'s clip; with zero_norm = "one", c = 1 where a norm is 0 (docs/conventions.md).
    excess("c_clip_excess", zero_norm_one_ && c == 1 ? 0.0 : Excess(c, c_min_, c_max_));
    c_avg_[layer] = beta3_ * c_avg_[layer] + (1 - beta3_) * c;  // line 2
    return;
  }
  if (!r) return;
  excess("r_clip_excess", Excess(*r, r_min_, r_max_));  // line 19
  // Line 18 keeps r within r_threshold of r_{t-1}; line 19's clip may move it out of that band
  // only when r_{t-1} itself lies outside [r_min, r_max].
  const double previous = r_previous_[layer];
  if (Excess(previous, r_min_, r_max_) == 0) {
    excess("r_step_excess",
           Excess(*r, (1 - r_threshold_) * previous, (1 + r_threshold_) * previous));
  }
  r_previous_[layer] = *r;
  // Line 20: c = r c_avg, c_avg frozen at the end of the warmup.
  const double expected = *r * c_avg_[layer];
  excess("c_product_excess",
         expected != 0 ? std::abs(c - expected) / std::abs(expected) : (c == 0 ? 0.0 : INFINITY));
}

void LambRules::Persist(StateArchive& archive) {
  archive("r_previous", r_previous_);
  archive("c_avg", c_avg_);
}

template <typename T>
std::unique_ptr<Probe<T>> MakeOneBitErrorProbe(const ProbeContext& context) {
  return std::make_unique<OneBitErrorProbe<T>>(context);
}
template <typename T>
std::unique_ptr<Probe<T>> MakeVarianceNormProbe(const ProbeContext& context) {
  return std::make_unique<VarianceNormProbe<T>>(context);
}
template <typename T>
std::unique_ptr<Probe<T>> MakeLambRatiosProbe(const ProbeContext& context) {
  return std::make_unique<LambRatiosProbe<T>>(context);
}

#define LEMMALAB_INSTANTIATE(T)                                                  \
  template std::unique_ptr<Probe<T>> MakeOneBitErrorProbe(const ProbeContext&);  \
  template std::unique_ptr<Probe<T>> MakeVarianceNormProbe(const ProbeContext&); \
  template std::unique_ptr<Probe<T>> MakeLambRatiosProbe(const ProbeContext&);
LEMMALAB_INSTANTIATE(float)
LEMMALAB_INSTANTIATE(double)
#undef LEMMALAB_INSTANTIATE

}  // namespace lemmalab
