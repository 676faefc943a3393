#include "optimizers/ef_sgd.h"

#include <optional>
#include <vector>

namespace lemmalab {
namespace {

// onebit-adam.txt Sec. 4.1, Eq. 5 (line 140): x_{t+1} = x_t - gamma C[g_t + delta_{t-1}], the
// error-compensated SGD these baselines run (the step size applies after the exchange).
constexpr std::string_view kEq5 = "onebit-adam.txt Eq. 5 (line 140)";
constexpr std::string_view kZheng =
    "Zheng et al., NeurIPS 2019 (onebit-adam-icml-with-appendix.txt line 1198)";
constexpr std::string_view kTang =
    "Tang et al., ICML 2019, DoubleSqueeze (onebit-adam-icml-with-appendix.txt line 1187)";

// The server's side: the mean as it is, unless server_compressor (and server_feedback) make it
// DoubleSqueeze's C(mean + delta_bar).
constexpr SenderSymbols ServerSide(std::string_view source) {
  return {{"mean+delta_bar", source, "the mean plus the server's error delta_bar_{t-1}"},
          {"r", "the compressor's draw rule", kServerWords},
          {"C(mean+delta_bar)", source, "what the server sends back, decoded"},
          {"s", "the compressor's message", "the scales of the server's message, per block"},
          {"delta_bar", source, "delta_bar_t = mean + delta_bar_{t-1} - C(mean + delta_bar)"}};
}

}  // namespace

const SenderSymbols kErrorCompensatedGradient = {
    {"g+delta", kEq5, "g_t^(i) + delta_{t-1}^(i): the gradient plus the worker's error"},
    {"r", "the compressor's draw rule", kWorkerWords},
    {"C(g+delta)", kEq5, "C[g_t^(i) + delta_{t-1}^(i)], as the server decodes it"},
    {"s", "the compressor's message", "the scales of C(g + delta), per block"},
    {"delta", kEq5, "delta_t^(i) = g_t^(i) + delta_{t-1}^(i) - C[g_t^(i) + delta_{t-1}^(i)]"}};

namespace {

const ExchangeSymbols kEfSgdExchange = {
    .worker = kErrorCompensatedGradient,
    .mean = {"mean C(g+delta)", kEq5, "(1/n) sum_i C[g^(i) + delta^(i)]"},
    .server = ServerSide("server_compressor (none by default; DoubleSqueeze's form)")};
const ExchangeSymbols kDoubleSqueezeExchange = {
    .worker = kErrorCompensatedGradient,
    .mean = {"mean C(g+delta)", kTang, "(1/n) sum_i C[g^(i) + delta^(i)]"},
    .server = ServerSide(kTang)};
const ExchangeSymbols kEfSgdmExchange = {
    .worker = {{"m+delta", kZheng, "m_t^(i) + delta_{t-1}^(i): the momentum plus the error"},
               {"r", "the compressor's draw rule", kWorkerWords},
               {"C(m+delta)", kZheng, "C[m_t^(i) + delta_{t-1}^(i)], as the server decodes it"},
               {"s", "the compressor's message", "the scales of C(m + delta), per block"},
               {"delta", kZheng, "delta_t^(i) = m_t^(i) + delta_{t-1}^(i) - C[...]"}},
    .mean = {"mean C(m+delta)", kZheng, "(1/n) sum_i C[m^(i) + delta^(i)]"},
    .server = ServerSide("server_compressor (none by default; Zheng et al.'s server form)")};

// ef-sgdm's worker momentum, never synchronised.
constexpr StateTag kMomentum = {{"m", "ef_sgd.h (ef-sgdm; Zheng et al., NeurIPS 2019)",
                                 "m_t^(i) = beta m_{t-1}^(i) + (1 - beta) g_t^(i)"},
                                Quantity::kMomentum};

// Sends the gradient (no beta) or the worker's own momentum through the exchange.
template <typename T>
class EfSgd final : public ExchangingOptimizer<T> {
 public:
  EfSgd(std::optional<double> beta, const ExchangeConfig<T>& exchange,
        const ExchangeSymbols& symbols, const OptimizerContext& context)
      : ExchangingOptimizer<T>(exchange, context), beta_(beta), reply_(context.dimension) {
    if (beta_) {
      m_ = LocalStates<T>(context);
    }
    exchange_.set_symbols(symbols);
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
  return std::make_unique<EfSgd<T>>(std::nullopt, exchange, kEfSgdExchange, context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeEfSgdm(const EfSgdmOptions& options,
                                                    const ExchangeConfig<T>& exchange,
                                                    const OptimizerContext& context) {
  return std::make_unique<EfSgd<T>>(options.beta, exchange, kEfSgdmExchange, context);
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
  return std::make_unique<EfSgd<T>>(
      std::nullopt,
      ExchangeFromOptions<T>(options, {.compressor = "scaled-sign",
                                       .worker_feedback = FeedbackKind::kClassic,
                                       .server_recompresses = true,
                                       .server_feedback = FeedbackKind::kClassic}),
      kDoubleSqueezeExchange, context);
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
