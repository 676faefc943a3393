#include "optimizers/sgd.h"

#include "optimizers/averaged_gradient.h"

namespace lemmalab {
namespace {

template <typename T>
class Sgd final : public AveragedGradientOptimizer<T> {
 public:
  using AveragedGradientOptimizer<T>::AveragedGradientOptimizer;

 protected:
  void ApplyMean(const StepContext& ctx, const Vector<T>& g, VectorRef<T> x) override {
    x -= static_cast<T>(ctx.lr) * g;
  }
};

}  // namespace

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> SgdFromOptions(OptionTable& /*options*/,
                                                        const OptimizerContext& context) {
  return std::make_unique<Sgd<T>>(context);
}

template std::unique_ptr<DistributedOptimizer<float>> SgdFromOptions(OptionTable&,
                                                                     const OptimizerContext&);
template std::unique_ptr<DistributedOptimizer<double>> SgdFromOptions(OptionTable&,
                                                                      const OptimizerContext&);

}  // namespace lemmalab
