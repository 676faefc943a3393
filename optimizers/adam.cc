#include "optimizers/adam.h"

#include <cmath>

#include "optimizers/averaged_gradient.h"

namespace lemmalab {
namespace {

template <typename T>
class Adam final : public AveragedGradientOptimizer<T> {
 public:
  Adam(const AdamOptions& options, const OptimizerContext& context)
      : AveragedGradientOptimizer<T>(context),
        options_(options),
        m_(Vector<T>::Zero(context.dimension)),
        v_(Vector<T>::Zero(context.dimension)) {}

 protected:
  void ApplyMean(const StepContext& ctx, const Vector<T>& g, VectorRef<T> x) override {
    const T beta1 = static_cast<T>(options_.beta1), beta2 = static_cast<T>(options_.beta2);
    m_ = beta1 * m_ + (T(1) - beta1) * g;
    v_ = beta2 * v_ + (T(1) - beta2) * g.cwiseAbs2();
    double m_scale = 1.0, v_scale = 1.0;
    if (options_.bias_correction) {
      const auto t = static_cast<double>(ctx.t);
      m_scale = 1.0 / (1.0 - std::pow(options_.beta1, t));
      v_scale = 1.0 / (1.0 - std::pow(options_.beta2, t));
    }
    const T step = static_cast<T>(ctx.lr * m_scale);
    const T eps = static_cast<T>(options_.eps);
    x.array() -= step * m_.array() / ((static_cast<T>(v_scale) * v_.array()).sqrt() + eps);
  }

 private:
  AdamOptions options_;
  Vector<T> m_, v_;
};

}  // namespace

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeAdam(const AdamOptions& options,
                                                  const OptimizerContext& context) {
  return std::make_unique<Adam<T>>(options, context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> AdamFromOptions(OptionTable& options,
                                                         const OptimizerContext& context) {
  AdamOptions o;
  o.beta1 = options.GetDouble("beta1", o.beta1, Interval::ClosedOpen(0, 1));
  o.beta2 = options.GetDouble("beta2", o.beta2, Interval::ClosedOpen(0, 1));
  o.eps = options.GetDouble("eps", o.eps, Interval::Positive());
  o.bias_correction = options.GetBool("bias_correction", o.bias_correction);
  return MakeAdam<T>(o, context);
}

#define LEMMALAB_INSTANTIATE(T)                                                        \
  template std::unique_ptr<DistributedOptimizer<T>> MakeAdam(const AdamOptions&,       \
                                                             const OptimizerContext&); \
  template std::unique_ptr<DistributedOptimizer<T>> AdamFromOptions(OptionTable&,      \
                                                                    const OptimizerContext&);
LEMMALAB_INSTANTIATE(float)
LEMMALAB_INSTANTIATE(double)
#undef LEMMALAB_INSTANTIATE

}  // namespace lemmalab
