#include "optimizers/ef21.h"

#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "compressors/identity.h"

namespace lemmalab {

template <typename T>
ExchangeConfig<T> CorrectionExchangeFromOptions(OptionTable& options, std::string_view method,
                                                const DefaultCompressor& fallback) {
  // Looked up without reading them (entries() marks nothing as known), so they are not listed as
  // options of the method, and a spec that gives one hears why rather than "unknown key".
  for (const std::string_view key : {"worker_feedback", "server_feedback", "server_compressor"}) {
    if (options.entries().contains(key)) {
      options.Fail(
          key,
          fmt::format("{} has no {}: each worker's kept estimate of its gradient is what "
                      "corrects its compression (no error is added back into the next "
                      "message), and the server sends the mean of the corrections back as "
                      "it is; remove '{}'",
                      method,
                      key == "server_compressor" ? "server compression" : "classic error feedback",
                      key));
    }
  }
  const bool given = options.entries().contains("compressor");
  std::shared_ptr<OptionTable> table = options.GetComponent("compressor", fallback.name);
  if (!given) {
    for (const auto& [key, value] : fallback.options) table->Set(key, value);
  }
  options.Describe(
      "compressor",
      fmt::format("a component (a name or a table with a name); default {}", fallback.description));
  ExchangeConfig<T> config;
  config.worker_compressor = MakeCompressorMaker<T>(*table);
  config.worker_feedback = FeedbackKind::kNone;
  config.server_compressor = [](const CompressorShape&) { return MakeIdentity<T>(); };
  config.server_feedback = FeedbackKind::kNone;
  return config;
}

namespace {

// Worker i's estimate; kServer's is their mean, which every replica keeps.
constexpr StateTag kShift = {
    {"g_i", "EF21 Algorithm 1 (ef21.h)", "g_i <- g_i + c_i, the worker's estimate after the step"},
    Quantity::kShift};
constexpr StateTag kMeanShift = {
    {"g", "EF21 Algorithm 1 (ef21.h)", "g <- g + (1/n) sum_i c_i, the replicas' estimate"},
    Quantity::kShift};
constexpr StateTag kMomentum = {
    {"v_i", "EF21-SGDM Algorithm 1 (ef21.h)",
     "v_i <- (1 - eta) v_i + eta g_i(stochastic); v_i = the first gradient at step 1"},
    Quantity::kMomentum};
const ExchangeSymbols kEf21Exchange = {
    .worker = {{"y-g_i", "EF21 Algorithm 1 (ef21.h)",
                "the gradient (EF21-SGDM: v_i) minus the worker's estimate g_i"},
               {"r", "the compressor's draw rule", kWorkerWords},
               {"c_i", "EF21 Algorithm 1 (ef21.h)", "c_i = C(y - g_i), as the server decodes it"},
               {"s", "the compressor's format", "the scales of the worker's message"},
               {}},
    .mean = {"mean c", "EF21 Algorithm 1 (ef21.h)", "(1/n) sum_i c_i"},
    .server = {},
};

template <typename T>
class Ef21 final : public PhasedExchangeOptimizer<T> {
 public:
  Ef21(const Ef21Options& options, const ExchangeConfig<T>& exchange,
       const OptimizerContext& context)
      : PhasedExchangeOptimizer<T>(exchange, context),
        options_(options),
        g_(Vector<T>::Zero(context.dimension)),
        reply_(Vector<T>::Zero(context.dimension)) {
    for (int i = 0; i < context.workers; ++i) {
      workers_.push_back({Vector<T>::Zero(context.LocalDimension(i)),
                          Vector<T>::Zero(options.eta ? context.LocalDimension(i) : 0),
                          Vector<T>(context.LocalDimension(i))});
    }
    exchange_.set_symbols(kEf21Exchange);
  }

  StepSymbols step_symbols() const override {
    return {.gradient = {"grad f_i", "EF21 Algorithm 1 (ef21.h)",
                         "the worker's gradient at x^k, k = t - 1"},
            .parameters = {"x", "EF21 Algorithm 1 (ef21.h)", "x^{k+1} = x^k - gamma g^k"}};
  }

  void WorkerStep(const StepContext& ctx, int worker, ConstVectorRef<T> /*x*/, ConstVectorRef<T> g,
                  Message& out) override {
    Worker& w = workers_[static_cast<std::size_t>(worker)];
    const TraceScope trace = ctx.Trace(worker);
    if (options_.eta) {
      if (ctx.t == 1) {
        w.v = g;  // v_i^0 = g_i(stochastic) at x^0
      } else {
        const T eta = static_cast<T>(*options_.eta);
        w.v = (T(1) - eta) * w.v + eta * g;
      }
      if (trace) trace.Vector<T>(kMomentum.symbol, w.v);
    }
    // y: what EF21 tracks, the gradient or (EF21-SGDM) the worker's momentum v_i.
    const ConstVectorRef<T> y = options_.eta ? ConstVectorRef<T>(w.v) : g;
    if (FullPrecisionAt(ctx)) {
      w.g = y;  // g_i^0 = y, sent uncompressed
      full_precision_.Send(ctx, worker, y, out);
    } else {
      w.difference = y - w.g;
      exchange_.Send(ctx, worker, w.difference, out);  // c_i = C(y - g_i)
      exchange_.DecodeOwn(worker, out, T(1), w.g);     // g_i <- g_i + c_i
    }
    if (trace) trace.Vector<T>(kShift.symbol, w.g);
  }

  void Apply(const StepContext& ctx, std::span<const Message> reply, VectorRef<T> x) override {
    if (this->AppliesFullPrecision(ctx)) {
      full_precision_.Receive(reply, g_);  // g^0 = (1/n) sum_i g_i^0
    } else {
      exchange_.Receive(reply, reply_);
      g_ += reply_;  // g^{k+1} = g^k + (1/n) sum_i c_i
    }
    if (const TraceScope trace = ctx.Trace(kServer)) trace.Vector<T>(kMeanShift.symbol, g_);
    x -= static_cast<T>(ctx.lr) * g_;
  }

  // Hierarchical layouts compress at the nodes, where no worker's own correction exists.
  bool SupportsHierarchy() const override { return false; }

  void DeclareState(OptimizerState<T>& state) override {
    state.PerWorker(workers_, [&](Worker& w) {
      state.Own(kShift, w.g);
      state.Own(kMomentum, w.v, /*seen=*/options_.eta.has_value());  // EF21-SGDM's v_i
    });
    state.Server(kMeanShift, g_);
    this->DeclareExchanges(state);
  }

 private:
  // init = "full"'s first step goes over the full-precision wire.
  bool FullPrecisionAt(const StepContext& ctx) const override {
    return options_.init == Ef21Init::kFull && ctx.t == 1;
  }

  struct Worker {
    Vector<T> g;           // g_i
    Vector<T> v;           // v_i (ef21-sgdm only; empty otherwise)
    Vector<T> difference;  // scratch: y - g_i
  };

  Ef21Options options_;
  std::vector<Worker> workers_;
  Vector<T> g_;      // g = (1/n) sum_i g_i, as every replica keeps it
  Vector<T> reply_;  // scratch: the decoded mean correction
  using PhasedExchangeOptimizer<T>::exchange_;
  using PhasedExchangeOptimizer<T>::full_precision_;
};

Ef21Init InitFromOptions(OptionTable& options, Ef21Init fallback) {
  static const std::vector<std::string> kChoices = {"compressed", "full"};
  const std::string init =
      options.GetChoice("init", fallback == Ef21Init::kFull ? "full" : "compressed", kChoices);
  options.Describe("init",
                   fmt::format("'compressed' (g_i^0 = C(grad f_i(x^0))) or 'full' (step 1 sends "
                               "grad f_i(x^0) in full precision); default '{}'",
                               fallback == Ef21Init::kFull ? "full" : "compressed"));
  return init == "full" ? Ef21Init::kFull : Ef21Init::kCompressed;
}

}  // namespace

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeEf21(const Ef21Options& options,
                                                  const ExchangeConfig<T>& exchange,
                                                  const OptimizerContext& context) {
  return std::make_unique<Ef21<T>>(options, exchange, context);
}

template <typename T>
ExchangeConfig<T> Ef21ExchangeFromOptions(OptionTable& options, std::string_view method) {
  return CorrectionExchangeFromOptions<T>(
      options, method,
      {"top-k",
       {{"k", {std::int64_t{1}, ""}}},
       "{ name = 'top-k', k = 1 } (EF21's logistic-regression experiments)"});
}

Ef21Options ReadEf21Options(OptionTable& options, bool momentum) {
  Ef21Options o;
  if (momentum) o.eta = options.GetDouble("eta", 0.1, Interval{0, 1, true, false});
  o.init = InitFromOptions(options, momentum ? Ef21Init::kFull : Ef21Init::kCompressed);
  return o;
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> Ef21FromOptions(OptionTable& options,
                                                         const OptimizerContext& context) {
  const ExchangeConfig<T> exchange = Ef21ExchangeFromOptions<T>(options, "ef21");
  return MakeEf21<T>(ReadEf21Options(options, /*momentum=*/false), exchange, context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> Ef21SgdmFromOptions(OptionTable& options,
                                                             const OptimizerContext& context) {
  const ExchangeConfig<T> exchange = Ef21ExchangeFromOptions<T>(options, "ef21-sgdm");
  return MakeEf21<T>(ReadEf21Options(options, /*momentum=*/true), exchange, context);
}

#define LEMMALAB_INSTANTIATE(T)                                                               \
  template ExchangeConfig<T> CorrectionExchangeFromOptions<T>(OptionTable&, std::string_view, \
                                                              const DefaultCompressor&);      \
  template ExchangeConfig<T> Ef21ExchangeFromOptions<T>(OptionTable&, std::string_view);      \
  template std::unique_ptr<DistributedOptimizer<T>> MakeEf21(                                 \
      const Ef21Options&, const ExchangeConfig<T>&, const OptimizerContext&);                 \
  template std::unique_ptr<DistributedOptimizer<T>> Ef21FromOptions(OptionTable&,             \
                                                                    const OptimizerContext&); \
  template std::unique_ptr<DistributedOptimizer<T>> Ef21SgdmFromOptions(OptionTable&,         \
                                                                        const OptimizerContext&);
LEMMALAB_INSTANTIATE(float)
LEMMALAB_INSTANTIATE(double)
#undef LEMMALAB_INSTANTIATE

}  // namespace lemmalab
