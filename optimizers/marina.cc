#include "optimizers/marina.h"

#include "optimizers/diana.h"
#include "optimizers/ef21.h"

namespace lemmalab {

bool MarinaFullRound(const StepContext& ctx, double p) {
  if (ctx.t == 1 || p >= 1) return true;  // g^0 = grad f(x^0); p = 1 draws nothing
  PhiloxStream coin = ctx.Stream(Purpose::kSharedCompression, kMarinaCoinStream);
  // Exact: the word and p 2^32 (a power-of-two scaling) are both exact doubles.
  return static_cast<double>(coin()) < p * 4294967296.0;
}

MarinaOptions ReadMarinaOptions(OptionTable& options, const UnbiasedCompressor& compressor) {
  MarinaOptions o;
  o.p = DefaultFromOmega(options, "p", compressor, "marina", "the probability of a full round",
                         "1 / (omega + 1) of the compressor (= k/d for random-k, the paper's "
                         "zeta_Q / d; needs a declared omega)");
  return o;
}

namespace {

constexpr StateTag kEstimate = {
    {"g", "MARINA Algorithm 1 (marina.h)",
     "full round: (1/n) sum_i g_i(x^k); else g + (1/n) sum_i C_i(g_i(x^k) - g_i(x^{k-1}))"}};
constexpr StateTag kPreviousGradient = {{"g_i_prev", "MARINA Algorithm 1 (marina.h)",
                                         "g_i(x^{k-1}), the gradient of the worker's last step"}};
const ExchangeSymbols kMarinaExchange = {
    .worker = {{"g_i-g_i_prev", "MARINA Algorithm 1 (marina.h)",
                "g_i(x^k) - g_i(x^{k-1}), on a compressed round"},
               {"r", "the compressor's draw rule", kWorkerWords},
               {"C_i(...)", "MARINA Algorithm 1 (marina.h)",
                "C_i(g_i(x^k) - g_i(x^{k-1})), as the server decodes it"},
               {"s", "the compressor's format", "the scales of the worker's message"},
               {}},
    .mean = {"mean C_i", "MARINA Algorithm 1 (marina.h)", "(1/n) sum_i C_i(...)"},
    .server = {},
};

template <typename T>
class Marina final : public PhasedExchangeOptimizer<T> {
 public:
  Marina(const MarinaOptions& options, const ExchangeConfig<T>& exchange,
         const OptimizerContext& context)
      : PhasedExchangeOptimizer<T>(exchange, context),
        p_(options.p),
        g_(Vector<T>::Zero(context.dimension)),
        reply_(Vector<T>::Zero(context.dimension)) {
    for (int i = 0; i < context.workers; ++i) {
      workers_.push_back(
          {Vector<T>::Zero(context.LocalDimension(i)), Vector<T>(context.LocalDimension(i))});
    }
    exchange_.set_symbols(kMarinaExchange);
  }

  StepSymbols step_symbols() const override {
    return {.gradient = {"g_i", "MARINA Algorithm 1 (marina.h)",
                         "the worker's gradient at x^k, k = t - 1"},
            .parameters = {"x", "MARINA Algorithm 1 (marina.h)", "x^{k+1} = x^k - gamma g^k"}};
  }

  void WorkerStep(const StepContext& ctx, int worker, ConstVectorRef<T> /*x*/, ConstVectorRef<T> g,
                  Message& out) override {
    Worker& w = workers_[static_cast<std::size_t>(worker)];
    if (FullPrecisionAt(ctx)) {
      full_precision_.Send(ctx, worker, g, out);  // g_i(x^k)
    } else {
      w.difference = g - w.previous;
      exchange_.Send(ctx, worker, w.difference, out);  // C_i(g_i(x^k) - g_i(x^{k-1}))
    }
    w.previous = g;
  }

  void Apply(const StepContext& ctx, std::span<const Message> reply, VectorRef<T> x) override {
    if (this->AppliesFullPrecision(ctx)) {
      full_precision_.Receive(reply, g_);  // g = (1/n) sum_i g_i(x^k)
    } else {
      exchange_.Receive(reply, reply_);
      g_ += reply_;  // g <- g + (1/n) sum_i C_i(...)
    }
    if (const TraceScope trace = ctx.Trace(kServer)) trace.Vector<T>(kEstimate.symbol, g_);
    x -= static_cast<T>(ctx.lr) * g_;
  }

  bool SupportsHierarchy() const override { return false; }

  void DeclareState(OptimizerState<T>& state) override {
    state.PerWorker(workers_, [&](Worker& w) { state.Own(kPreviousGradient, w.previous); });
    state.Replicated(kEstimate, g_);
    this->DeclareExchanges(state);
  }

 private:
  // The full rounds go over the full-precision wire.
  bool FullPrecisionAt(const StepContext& ctx) const override { return MarinaFullRound(ctx, p_); }

  struct Worker {
    Vector<T> previous;    // g_i(x^{k-1}), the gradient of the worker's last step
    Vector<T> difference;  // scratch
  };

  double p_;
  std::vector<Worker> workers_;
  Vector<T> g_;      // g^k, as every replica keeps it
  Vector<T> reply_;  // scratch: the decoded mean of a compressed round
  using PhasedExchangeOptimizer<T>::exchange_;
  using PhasedExchangeOptimizer<T>::full_precision_;
};

}  // namespace

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeMarina(const MarinaOptions& options,
                                                    const ExchangeConfig<T>& exchange,
                                                    const OptimizerContext& context) {
  return std::make_unique<Marina<T>>(options, exchange, context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MarinaFromOptions(OptionTable& options,
                                                           const OptimizerContext& context) {
  const ExchangeConfig<T> exchange = CorrectionExchangeFromOptions<T>(
      options, "marina",
      {"random-k",
       {{"fraction", {0.1, ""}}},
       "{ name = 'random-k', fraction = 0.1 } (RandK scaled by d/k: unbiased, omega = d/k - 1); "
       "it must be unbiased"});
  const UnbiasedCompressor compressor =
      RequireUnbiased<T>(options, exchange.worker_compressor, context, "marina");
  return MakeMarina<T>(ReadMarinaOptions(options, compressor), exchange, context);
}

#define LEMMALAB_INSTANTIATE(T)                                                     \
  template std::unique_ptr<DistributedOptimizer<T>> MakeMarina(                     \
      const MarinaOptions&, const ExchangeConfig<T>&, const OptimizerContext&);     \
  template std::unique_ptr<DistributedOptimizer<T>> MarinaFromOptions(OptionTable&, \
                                                                      const OptimizerContext&);
LEMMALAB_INSTANTIATE(float)
LEMMALAB_INSTANTIATE(double)
#undef LEMMALAB_INSTANTIATE

}  // namespace lemmalab
