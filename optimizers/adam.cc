#include "optimizers/adam.h"

#include <cmath>
#include <string>
#include <vector>

#include "optimizers/averaged_gradient.h"

namespace lemmalab {
namespace {

// Every replica holds the same m, v (and v_max): probes see them for any worker and the server.
constexpr StateTag kMomentum = {
    {"m", "onebit-adam.txt Eq. (1)", "m_t = beta1 m_{t-1} + (1 - beta1) g_bar_t"},
    Quantity::kMomentum};
constexpr StateTag kVariance = {
    {"v", "onebit-adam.txt Eq. (1)", "v_t = beta2 v_{t-1} + (1 - beta2) g_bar_t^2"},
    Quantity::kVariance};
constexpr StateTag kMaxVariance = {
    {"v_max", "AMSGrad (PyTorch's form)", "max(v_max, v_t), bias-corrected later"},
    Quantity::kMaxVariance};

template <typename T>
class Adam final : public AveragedGradientOptimizer<T> {
 public:
  Adam(const AdamOptions& options, const OptimizerContext& context)
      : AveragedGradientOptimizer<T>(context),
        options_(options),
        m_(Vector<T>::Zero(context.dimension)),
        v_(Vector<T>::Zero(context.dimension)),
        v_max_(options.amsgrad ? Vector<T>::Zero(context.dimension) : Vector<T>()) {}

  void DeclareState(OptimizerState<T>& state) override {
    state.Replicated(kMomentum, m_);
    state.Replicated(kVariance, v_);
    state.Replicated(kMaxVariance, v_max_, /*seen=*/options_.amsgrad);
  }

 protected:
  void ApplyMean(const StepContext& ctx, const Vector<T>& g, VectorRef<T> x) override {
    const T beta1 = static_cast<T>(options_.beta1), beta2 = static_cast<T>(options_.beta2);
    m_ = beta1 * m_ + (T(1) - beta1) * g;
    v_ = beta2 * v_ + (T(1) - beta2) * g.cwiseAbs2();
    // AMSGrad as PyTorch documents it: the max of the raw v, bias-corrected afterwards.
    if (options_.amsgrad) v_max_ = v_max_.cwiseMax(v_);
    if (const TraceScope trace = ctx.Trace(kServer)) {
      trace.Vector<T>(kMomentum.symbol, m_);
      trace.Vector<T>(kVariance.symbol, v_);
      if (options_.amsgrad) trace.Vector<T>(kMaxVariance.symbol, v_max_);
    }
    AdamUpdate<T>(options_, ctx, m_, options_.amsgrad ? v_max_ : v_, x);
  }

 private:
  AdamOptions options_;
  Vector<T> m_, v_;
  Vector<T> v_max_;  // AMSGrad only
};

}  // namespace

template <typename T>
void AdamUpdate(const AdamOptions& options, const StepContext& ctx, const Vector<T>& m,
                const Vector<T>& v, VectorRef<T> x) {
  double c1 = 1.0, c2 = 1.0;
  if (options.bias_correction) {
    const auto t = static_cast<double>(ctx.t);
    c1 = 1.0 - std::pow(options.beta1, t);
    c2 = 1.0 - std::pow(options.beta2, t);
  }
  const T step = static_cast<T>(ctx.lr / c1);
  const T eps = static_cast<T>(options.eps);
  // PyTorch's order of operations: x + (-step) * (m / denominator).
  if (options.eps_placement == EpsPlacement::kOutside) {
    const T sqrt_c2 = static_cast<T>(std::sqrt(c2));
    x.array() -= step * (m.array() / (v.array().sqrt() / sqrt_c2 + eps));
  } else {
    x.array() -= step * (m.array() / (v.array() / static_cast<T>(c2) + eps).sqrt());
  }
}

EpsPlacement EpsPlacementFromOptions(OptionTable& options, EpsPlacement fallback) {
  static const std::vector<std::string> kPlacements = {"outside", "inside"};
  const std::string name = options.GetChoice(
      "eps_placement", fallback == EpsPlacement::kOutside ? "outside" : "inside", kPlacements);
  return name == "inside" ? EpsPlacement::kInside : EpsPlacement::kOutside;
}

AdamOptions ReadAdamOptions(OptionTable& options, const AdamOptions& defaults) {
  AdamOptions o = defaults;
  o.beta1 = options.GetDouble("beta1", o.beta1, kMovingAverageFactor);
  o.beta2 = options.GetDouble("beta2", o.beta2, kMovingAverageFactor);
  o.eps = options.GetDouble("eps", o.eps, Interval::Positive());
  o.bias_correction = options.GetBool("bias_correction", o.bias_correction);
  o.eps_placement = EpsPlacementFromOptions(options, o.eps_placement);
  return o;
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeAdam(const AdamOptions& options,
                                                  const OptimizerContext& context) {
  return std::make_unique<Adam<T>>(options, context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> AdamFromOptions(OptionTable& options,
                                                         const OptimizerContext& context) {
  return MakeAdam<T>(ReadAdamOptions(options, AdamOptions{}), context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> AmsgradFromOptions(OptionTable& options,
                                                            const OptimizerContext& context) {
  AdamOptions o = ReadAdamOptions(options, AdamOptions{});
  o.amsgrad = true;
  return MakeAdam<T>(o, context);
}

#define LEMMALAB_INSTANTIATE(T)                                                               \
  template void AdamUpdate(const AdamOptions&, const StepContext&, const Vector<T>&,          \
                           const Vector<T>&, VectorRef<T>);                                   \
  template std::unique_ptr<DistributedOptimizer<T>> MakeAdam(const AdamOptions&,              \
                                                             const OptimizerContext&);        \
  template std::unique_ptr<DistributedOptimizer<T>> AdamFromOptions(OptionTable&,             \
                                                                    const OptimizerContext&); \
  template std::unique_ptr<DistributedOptimizer<T>> AmsgradFromOptions(OptionTable&,          \
                                                                       const OptimizerContext&);
LEMMALAB_INSTANTIATE(float)
LEMMALAB_INSTANTIATE(double)
#undef LEMMALAB_INSTANTIATE

}  // namespace lemmalab
