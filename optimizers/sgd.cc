#include "optimizers/sgd.h"

#include <fmt/format.h>

#include "optimizers/averaged_gradient.h"

namespace lemmalab {
namespace {

// Every replica holds the same m (the synchronised momentum), for any worker and the server.
constexpr StateTag kMomentum = {{"m", "onebit-adam-icml-with-appendix.txt App. 10, item 2",
                                 "m_t = beta m_{t-1} + (1 - beta) g_t"},
                                Quantity::kMomentum};
constexpr StateTag kTorchBuffer = {{"buf", "torch.optim.SGD (sgd.h)",
                                    "buf <- g at the first step, else mu buf + (1 - dampening) g"},
                                   Quantity::kMomentum};

template <typename T>
class Sgd final : public AveragedGradientOptimizer<T> {
 public:
  using AveragedGradientOptimizer<T>::AveragedGradientOptimizer;

  void DeclareState(OptimizerState<T>& /*state*/) override {}  // x is all SGD carries

 protected:
  void ApplyMean(const StepContext& ctx, const Vector<T>& g, VectorRef<T> x) override {
    x -= static_cast<T>(ctx.lr) * g;
  }
};

template <typename T>
class Sgdm final : public AveragedGradientOptimizer<T> {
 public:
  Sgdm(const SgdmOptions& options, const OptimizerContext& context)
      : AveragedGradientOptimizer<T>(context),
        beta_(static_cast<T>(options.beta)),
        m_(Vector<T>::Zero(context.dimension)) {}

  void DeclareState(OptimizerState<T>& state) override { state.Replicated(kMomentum, m_); }

 protected:
  void ApplyMean(const StepContext& ctx, const Vector<T>& g, VectorRef<T> x) override {
    m_ = beta_ * m_ + (T(1) - beta_) * g;
    x -= static_cast<T>(ctx.lr) * m_;
  }

 private:
  T beta_;
  Vector<T> m_;
};

// torch.optim.SGD's momentum branch (torch/optim/sgd.py, _single_tensor_sgd), step for step.
template <typename T>
class SgdmTorch final : public AveragedGradientOptimizer<T> {
 public:
  SgdmTorch(const SgdmTorchOptions& options, const OptimizerContext& context)
      : AveragedGradientOptimizer<T>(context),
        options_(options),
        buf_(Vector<T>::Zero(context.dimension)),
        direction_(context.dimension) {}

  void DeclareState(OptimizerState<T>& state) override {
    state.Value("started", started_);
    state.Replicated(kTorchBuffer, buf_, /*seen=*/started_);
  }

 protected:
  void ApplyMean(const StepContext& ctx, const Vector<T>& g, VectorRef<T> x) override {
    const T lr = static_cast<T>(ctx.lr);
    if (options_.momentum == 0) {  // PyTorch keeps no buffer then: plain SGD whatever dampening
      x -= lr * g;
      return;
    }
    const T mu = static_cast<T>(options_.momentum);
    if (!started_) {
      buf_ = g;  // the buffer starts as a copy of the first gradient, undamped
      started_ = true;
    } else {
      buf_ = mu * buf_ + (T(1) - static_cast<T>(options_.dampening)) * g;
    }
    if (options_.nesterov) {
      direction_ = g + mu * buf_;
      x -= lr * direction_;
    } else {
      x -= lr * buf_;
    }
  }

 private:
  SgdmTorchOptions options_;
  bool started_ = false;
  Vector<T> buf_;
  Vector<T> direction_;
};

}  // namespace

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> SgdFromOptions(OptionTable& /*options*/,
                                                        const OptimizerContext& context) {
  return std::make_unique<Sgd<T>>(context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeSgdm(const SgdmOptions& options,
                                                  const OptimizerContext& context) {
  return std::make_unique<Sgdm<T>>(options, context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> SgdmFromOptions(OptionTable& options,
                                                         const OptimizerContext& context) {
  SgdmOptions o;
  o.beta = options.GetDouble("beta", o.beta, kMovingAverageFactor);
  return MakeSgdm<T>(o, context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeSgdmTorch(const SgdmTorchOptions& options,
                                                       const OptimizerContext& context) {
  return std::make_unique<SgdmTorch<T>>(options, context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> SgdmTorchFromOptions(OptionTable& options,
                                                              const OptimizerContext& context) {
  SgdmTorchOptions o;
  o.momentum = options.GetDouble("momentum", o.momentum, kMovingAverageFactor);
  o.dampening = options.GetDouble("dampening", o.dampening, Interval{0, 1});
  o.nesterov = options.GetBool("nesterov", o.nesterov);
  if (o.nesterov && (o.momentum == 0 || o.dampening != 0)) {
    // PyTorch's rule: Nesterov's look-ahead g + mu buf needs an undamped, nonzero momentum.
    options.Fail("nesterov",
                 fmt::format("nesterov = true needs momentum > 0 and dampening = 0, got momentum "
                             "{} and dampening {}",
                             o.momentum, o.dampening));
  }
  return MakeSgdmTorch<T>(o, context);
}

#define LEMMALAB_INSTANTIATE(T)                                                               \
  template std::unique_ptr<DistributedOptimizer<T>> SgdFromOptions(OptionTable&,              \
                                                                   const OptimizerContext&);  \
  template std::unique_ptr<DistributedOptimizer<T>> MakeSgdm(const SgdmOptions&,              \
                                                             const OptimizerContext&);        \
  template std::unique_ptr<DistributedOptimizer<T>> SgdmFromOptions(OptionTable&,             \
                                                                    const OptimizerContext&); \
  template std::unique_ptr<DistributedOptimizer<T>> MakeSgdmTorch(const SgdmTorchOptions&,    \
                                                                  const OptimizerContext&);   \
  template std::unique_ptr<DistributedOptimizer<T>> SgdmTorchFromOptions(OptionTable&,        \
                                                                         const OptimizerContext&);
LEMMALAB_INSTANTIATE(float)
LEMMALAB_INSTANTIATE(double)
#undef LEMMALAB_INSTANTIATE

}  // namespace lemmalab
