#include "optimizers/diana.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "optimizers/ef21.h"

namespace lemmalab {

template <typename T>
UnbiasedCompressor RequireUnbiased(OptionTable& options, const CompressorMaker<T>& maker,
                                   const OptimizerContext& context, std::string_view method) {
  const std::unique_ptr<Compressor<T>> trial = maker(context.shape().ForSender(0, context.workers));
  if (!trial->unbiased()) {
    options.Fail("compressor",
                 fmt::format("{} needs an unbiased compressor (E[C(x)] = x, the class U(omega) of "
                             "its analysis); '{}' is biased (use, e.g., random-k with scaled = "
                             "true, qsgd, terngrad, natural or identity)",
                             method, trial->name()));
  }
  // The largest omega over the senders: PermK's senders differ when n does not divide d, and a
  // default step or rate from the smallest would break the others' rule.
  std::optional<double> omega = trial->omega();
  for (int i = 1; i < context.workers && omega; ++i) {
    const std::optional<double> own = maker(context.shape().ForSender(i, context.workers))->omega();
    omega = own ? std::optional<double>(std::max(*omega, *own)) : std::nullopt;
  }
  return {std::string(trial->name()), omega};
}

double DefaultFromOmega(OptionTable& options, std::string_view key,
                        const UnbiasedCompressor& compressor, std::string_view method,
                        std::string_view role, std::string_view rule) {
  if (!compressor.omega && !options.entries().contains(key)) {
    options.Fail(key, fmt::format("{}: compressor '{}' declares no omega (E||C(x) - x||^2 <= "
                                  "omega ||x||^2), so {} ({}) has no default 1 / (omega + 1): "
                                  "give {} in (0, 1]",
                                  method, compressor.name, key, role, key));
  }
  const double fallback = compressor.omega ? 1 / (*compressor.omega + 1) : 1.0;
  const double value = options.GetDouble(key, fallback, Interval{0, 1, true, false});
  options.Describe(key, fmt::format("a number in (0, 1]; default {}", rule));
  return value;
}

DianaOptions ReadDianaOptions(OptionTable& options, const UnbiasedCompressor& compressor) {
  DianaOptions o;
  o.a =
      DefaultFromOmega(options, "a", compressor, "diana", "the shifts' step, alpha of Algorithm 1",
                       "1 / (omega + 1) of the compressor (needs a declared omega)");
  return o;
}

namespace {

// Worker i's shift; kServer's is their mean, which every replica keeps.
constexpr StateTag kShift = {
    {"h_i", "DIANA Algorithm 1 (diana.h)", "h_i <- h_i + a Delta_hat_i, after the step"},
    Quantity::kShift};
constexpr StateTag kMeanShift = {
    {"h", "DIANA Algorithm 1 (diana.h)", "h <- h + a Delta_hat, the replicas' shift"},
    Quantity::kShift};
constexpr TraceSymbol kEstimateSymbol = {"g_hat", "DIANA Algorithm 1 (diana.h)",
                                         "g_hat = h + Delta_hat, the step's direction"};
const ExchangeSymbols kDianaExchange = {
    .worker = {{"Delta_i", "DIANA Algorithm 1 (diana.h)", "Delta_i = g_i - h_i"},
               {"r", "the compressor's draw rule", kWorkerWords},
               {"Delta_hat_i", "DIANA Algorithm 1 (diana.h)",
                "Delta_hat_i = C(Delta_i), as the server decodes it"},
               {"s", "the compressor's format", "the scales of the worker's message"},
               {}},
    .mean = {"Delta_hat", "DIANA Algorithm 1 (diana.h)", "(1/n) sum_i Delta_hat_i"},
    .server = {},
};

template <typename T>
class Diana final : public ExchangingOptimizer<T> {
 public:
  Diana(const DianaOptions& options, const ExchangeConfig<T>& exchange,
        const OptimizerContext& context)
      : ExchangingOptimizer<T>(exchange, context),
        a_(static_cast<T>(options.a)),
        h_(Vector<T>::Zero(context.dimension)),
        g_hat_(Vector<T>::Zero(context.dimension)),
        mean_(Vector<T>::Zero(context.dimension)) {
    for (int i = 0; i < context.workers; ++i) {
      workers_.push_back(
          {Vector<T>::Zero(context.LocalDimension(i)), Vector<T>(context.LocalDimension(i))});
    }
    exchange_.set_symbols(kDianaExchange);
  }

  StepSymbols step_symbols() const override {
    return {.gradient = {"g_i", "DIANA Algorithm 1 (diana.h)",
                         "the worker's gradient at x^k, k = t - 1"},
            .parameters = {"x", "DIANA Algorithm 1 (diana.h)", "x^{k+1} = x^k - gamma g_hat^k"}};
  }

  void WorkerStep(const StepContext& ctx, int worker, ConstVectorRef<T> /*x*/, ConstVectorRef<T> g,
                  Message& out) override {
    Worker& w = workers_[static_cast<std::size_t>(worker)];
    w.difference = g - w.h;                          // Delta_i = g_i - h_i
    exchange_.Send(ctx, worker, w.difference, out);  // Delta_hat_i = C(Delta_i)
    exchange_.DecodeOwn(worker, out, a_, w.h);       // h_i <- h_i + a Delta_hat_i
    if (const TraceScope trace = ctx.Trace(worker)) trace.Vector<T>(kShift.symbol, w.h);
  }

  void ServerStep(const StepContext& ctx, int chunk, std::span<const Message> received,
                  Message& out) override {
    exchange_.Reduce(ctx, chunk, received, out);  // Delta_hat = (1/n) sum_i Delta_hat_i
  }

  void Apply(const StepContext& ctx, std::span<const Message> reply, VectorRef<T> x) override {
    exchange_.Receive(reply, mean_);
    g_hat_ = h_ + mean_;  // g_hat^k = h^k + Delta_hat^k
    h_ += a_ * mean_;     // h^{k+1} = h^k + a Delta_hat^k
    if (const TraceScope trace = ctx.Trace(kServer)) {
      trace.Vector<T>(kEstimateSymbol, g_hat_);
      trace.Vector<T>(kMeanShift.symbol, h_);
    }
    x -= static_cast<T>(ctx.lr) * g_hat_;  // x^{k+1} = x^k - gamma g_hat^k (beta = 0, no prox)
  }

  // Hierarchical layouts compress at the nodes, where no worker's own Delta_hat_i exists.
  bool SupportsHierarchy() const override { return false; }

  void DeclareState(OptimizerState<T>& state) override {
    state.PerWorker(workers_, [&](Worker& w) { state.Own(kShift, w.h); });
    state.Server(kMeanShift, h_);
    state.Nested("exchange", exchange_);
  }

  const EncodeStats* LastEncode(int worker) const override { return exchange_.LastEncode(worker); }

 private:
  struct Worker {
    Vector<T> h;           // h_i
    Vector<T> difference;  // scratch: Delta_i
  };

  T a_;
  std::vector<Worker> workers_;
  Vector<T> h_;      // h = (1/n) sum_i h_i, as every replica keeps it
  Vector<T> g_hat_;  // scratch: the step's direction
  Vector<T> mean_;   // scratch: the decoded Delta_hat
  using ExchangingOptimizer<T>::exchange_;
};

}  // namespace

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeDiana(const DianaOptions& options,
                                                   const ExchangeConfig<T>& exchange,
                                                   const OptimizerContext& context) {
  return std::make_unique<Diana<T>>(options, exchange, context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> DianaFromOptions(OptionTable& options,
                                                          const OptimizerContext& context) {
  const ExchangeConfig<T> exchange = CorrectionExchangeFromOptions<T>(
      options, "diana",
      {"random-k",
       {{"fraction", {0.1, ""}}},
       "{ name = 'random-k', fraction = 0.1 } (scaled by d/k: unbiased, omega = d/k - 1); it "
       "must be unbiased"});
  const UnbiasedCompressor compressor =
      RequireUnbiased<T>(options, exchange.worker_compressor, context, "diana");
  return MakeDiana<T>(ReadDianaOptions(options, compressor), exchange, context);
}

#define LEMMALAB_INSTANTIATE(T)                                                              \
  template UnbiasedCompressor RequireUnbiased<T>(OptionTable&, const CompressorMaker<T>&,    \
                                                 const OptimizerContext&, std::string_view); \
  template std::unique_ptr<DistributedOptimizer<T>> MakeDiana(                               \
      const DianaOptions&, const ExchangeConfig<T>&, const OptimizerContext&);               \
  template std::unique_ptr<DistributedOptimizer<T>> DianaFromOptions(OptionTable&,           \
                                                                     const OptimizerContext&);
LEMMALAB_INSTANTIATE(float)
LEMMALAB_INSTANTIATE(double)
#undef LEMMALAB_INSTANTIATE

}  // namespace lemmalab
