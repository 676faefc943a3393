#include "optimizers/ef_sgd.h"

#include <optional>
#include <vector>

namespace lemmalab {
namespace {

// ef-sgdm's worker momentum, never synchronised.
constexpr StateTag kMomentum = {{"m", "ef_sgd.h (ef-sgdm; Zheng et al., NeurIPS 2019)",
                                 "m_t^(i) = beta m_{t-1}^(i) + (1 - beta) g_t^(i)"},
                                Quantity::kMomentum};

// Sends the gradient (no beta) or the worker's own momentum through the exchange.
template <typename T>
class EfSgd final : public ExchangingOptimizer<T> {
 public:
  EfSgd(std::optional<double> beta, const ExchangeConfig<T>& exchange,
        const OptimizerContext& context)
      : ExchangingOptimizer<T>(exchange, context), beta_(beta), reply_(context.dimension) {
    if (beta_) {
      m_ = LocalStates<T>(context);
    }
  }

  void WorkerStep(const StepContext& ctx, int worker, ConstVectorRef<T> /*x*/, ConstVectorRef<T> g,
                  Message& out) override {
    if (!beta_) {
      exchange_.Send(ctx, worker, g, out);  // C(g + e), e <- g + e - C(g + e)
      return;
    }
    Vector<T>& m = m_[static_cast<std::size_t>(worker)];
    const T beta = static_cast<T>(*beta_);
    m = beta * m + (T(1) - beta) * g;     // the worker's own momentum, never synchronised
    exchange_.Send(ctx, worker, m, out);  // C(m + e), e <- m + e - C(m + e)
  }

  void ServerStep(const StepContext& ctx, int chunk, std::span<const Message> received,
                  Message& out) override {
    exchange_.Reduce(ctx, chunk, received, out);  // mean; DoubleSqueeze: C(mean + e_bar), e_bar
  }

  void Apply(const StepContext& ctx, std::span<const Message> reply, VectorRef<T> x) override {
    exchange_.Receive(reply, reply_);
    x -= static_cast<T>(ctx.lr) * reply_;
  }

  void DeclareState(OptimizerState<T>& state) override {
    state.PerWorker(kMomentum, m_);  // empty without beta
    state.Nested("exchange", exchange_);
  }

  const EncodeStats* LastEncode(int worker) const override { return exchange_.LastEncode(worker); }

 private:
  std::optional<double> beta_;
  std::vector<Vector<T>> m_;  // m^(i), one per worker (ef-sgdm only)
  Vector<T> reply_;
  using ExchangingOptimizer<T>::exchange_;
};

}  // namespace

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeEfSgd(const ExchangeConfig<T>& exchange,
                                                   const OptimizerContext& context) {
  return std::make_unique<EfSgd<T>>(std::nullopt, exchange, context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeEfSgdm(const EfSgdmOptions& options,
                                                    const ExchangeConfig<T>& exchange,
                                                    const OptimizerContext& context) {
  return std::make_unique<EfSgd<T>>(options.beta, exchange, context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> EfSgdFromOptions(OptionTable& options,
                                                          const OptimizerContext& context) {
  return MakeEfSgd<T>(ExchangeFromOptions<T>(options, {.compressor = "scaled-sign",
                                                       .worker_feedback = FeedbackKind::kClassic,
                                                       .server_recompresses = false,
                                                       .server_feedback = FeedbackKind::kNone}),
                      context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> EfSignSgdFromOptions(OptionTable& options,
                                                              const OptimizerContext& context) {
  return MakeEfSgd<T>(ExchangeFromOptions<T>(options, {.compressor = "block-sign",
                                                       .worker_feedback = FeedbackKind::kClassic,
                                                       .server_recompresses = false,
                                                       .server_feedback = FeedbackKind::kNone}),
                      context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> DoubleSqueezeFromOptions(OptionTable& options,
                                                                  const OptimizerContext& context) {
  return MakeEfSgd<T>(ExchangeFromOptions<T>(options, {.compressor = "scaled-sign",
                                                       .worker_feedback = FeedbackKind::kClassic,
                                                       .server_recompresses = true,
                                                       .server_feedback = FeedbackKind::kClassic}),
                      context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> EfSgdmFromOptions(OptionTable& options,
                                                           const OptimizerContext& context) {
  EfSgdmOptions o;
  o.beta = options.GetDouble("beta", o.beta, kMovingAverageFactor);
  return MakeEfSgdm<T>(o,
                       ExchangeFromOptions<T>(options, {.compressor = "scaled-sign",
                                                        .worker_feedback = FeedbackKind::kClassic,
                                                        .server_recompresses = false,
                                                        .server_feedback = FeedbackKind::kNone}),
                       context);
}

#define LEMMALAB_INSTANTIATE(T)                                                                    \
  template std::unique_ptr<DistributedOptimizer<T>> MakeEfSgd(const ExchangeConfig<T>&,            \
                                                              const OptimizerContext&);            \
  template std::unique_ptr<DistributedOptimizer<T>> MakeEfSgdm(                                    \
      const EfSgdmOptions&, const ExchangeConfig<T>&, const OptimizerContext&);                    \
  template std::unique_ptr<DistributedOptimizer<T>> EfSgdFromOptions(OptionTable&,                 \
                                                                     const OptimizerContext&);     \
  template std::unique_ptr<DistributedOptimizer<T>> EfSignSgdFromOptions(OptionTable&,             \
                                                                         const OptimizerContext&); \
  template std::unique_ptr<DistributedOptimizer<T>> DoubleSqueezeFromOptions(                      \
      OptionTable&, const OptimizerContext&);                                                      \
  template std::unique_ptr<DistributedOptimizer<T>> EfSgdmFromOptions(OptionTable&,                \
                                                                      const OptimizerContext&);
LEMMALAB_INSTANTIATE(float)
LEMMALAB_INSTANTIATE(double)
#undef LEMMALAB_INSTANTIATE

}  // namespace lemmalab
