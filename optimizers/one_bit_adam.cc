#include "optimizers/one_bit_adam.h"

#include <string>
#include <vector>

#include "compressors/identity.h"
#include "core/error.h"
#include "optimizers/averaged_gradient.h"
#include "optimizers/ef_sgd.h"

namespace lemmalab {
namespace {

// The update x <- x - lr m / (sqrt(v) + eta), or m / sqrt(v + eta) with eta inside. The
// denominator is kept: after warmup v is frozen, so it is computed once, not at every step.
template <typename T>
class Preconditioner {
 public:
  Preconditioner(T eta, EpsPlacement placement, std::int64_t dimension)
      : eta_(eta), placement_(placement) {
    Set(Vector<T>::Zero(dimension));
  }

  // Recomputes the denominator from v (every warmup step, after v changes).
  void Set(const Vector<T>& v) {
    if (placement_ == EpsPlacement::kOutside) {
      denominator_ = v.array().sqrt() + eta_;
    } else {
      denominator_ = (v.array() + eta_).sqrt();
    }
  }

  void Step(double lr, const Vector<T>& m, VectorRef<T> x) const {
    x.array() -= static_cast<T>(lr) * (m.array() / denominator_.array());
  }

  void Persist(StateArchive& archive) { archive("denominator", denominator_); }

 private:
  T eta_;
  EpsPlacement placement_;
  Vector<T> denominator_;
};

// The trace's names (optimizers/trace.h) for onebit-adam.txt Algorithm 1 and its warmup (Eq. 1).
constexpr StateTag kWorkerMomentum = {
    {"m", "onebit-adam.txt Alg. 1 line 6",
     "m_t^(i) = beta1 m_{t-1} + (1 - beta1) g_t^(i) (m_{t-1}: line 13's synchronised m)"},
    Quantity::kMomentum};
constexpr StateTag kMomentum = {{"m", "onebit-adam.txt Alg. 1 line 13", "m_t = m_bar_t"},
                                Quantity::kMomentum};
constexpr TraceSymbol kWarmupMomentum = {"m", "onebit-adam.txt Eq. 1 (warmup, line 2)",
                                         "m_t = beta1 m_{t-1} + (1 - beta1) g_bar_t"};
// v, frozen after step T_w (then also kFrozenVariance, and traced as v_Tw).
constexpr StateTag kVariance = {
    {"v", "onebit-adam.txt Eq. 1 (warmup, line 2)", "v_t = beta2 v_{t-1} + (1 - beta2) g_bar_t^2"},
    Quantity::kVariance};
constexpr TraceSymbol kFrozenVariance = {"v_Tw", "onebit-adam.txt Alg. 1 line 2",
                                         "the variance stored at the end of warmup, then frozen"};
// Adam's m and v of Eq. 1 on the averaged (1-bit Adam 32-bits) or decoded (1-bit naive)
// gradient, which every replica holds alike.
constexpr StateTag kAveragedMomentum = {
    {"m", "onebit-adam.txt Eq. 1", "m_t = beta1 m_{t-1} + (1 - beta1) g_bar_t"},
    Quantity::kMomentum};
constexpr StateTag kAveragedVariance = {
    {"v", "onebit-adam.txt Eq. 1", "v_t = beta2 v_{t-1} + (1 - beta2) g_bar_t^2"},
    Quantity::kVariance};
const ExchangeSymbols kOneBitAdamExchange = {
    .worker = {{"m+delta", "onebit-adam.txt Alg. 1 line 7", "m_t^(i) + delta_{t-1}^(i)"},
               {"r", "the compressor's draw rule", kWorkerWords},
               {"C(m+delta)", "onebit-adam.txt Alg. 1 line 7",
                "m_hat_t^(i) = C[m_t^(i) + delta_{t-1}^(i)]: scale s times sign"},
               {"s", "onebit-adam.txt Alg. 1 line 7, Sec. 4",
                "the scale ||m + delta|| / ||sign(m + delta)||, per block"},
               {"delta", "onebit-adam.txt Alg. 1 line 7",
                "delta_t^(i) = m_t^(i) + delta_{t-1}^(i) - m_hat_t^(i)"}},
    .mean = {"mean m_hat", "onebit-adam.txt Alg. 1 line 10", "(1/n) sum_i m_hat_t^(i)"},
    .server = {{"mean+delta_bar", "onebit-adam.txt Alg. 1 line 10",
                "(1/n) sum_i m_hat_t^(i) + delta_bar_{t-1}"},
               {"r", "the compressor's draw rule", kServerWords},
               {"m_bar", "onebit-adam.txt Alg. 1 line 10", "m_bar_t = C[mean + delta_bar_{t-1}]"},
               {"s", "onebit-adam.txt Alg. 1 line 10, Sec. 4", "the scale of m_bar, per block"},
               {"delta_bar", "onebit-adam.txt Alg. 1 line 10",
                "delta_bar_t = mean + delta_bar_{t-1} - m_bar_t"}},
};
// Adam (1-bit naive): Eq. 5's exchange both ways, Adam on the decoded gradient (Sec. 3.2, 4.2).
const ExchangeSymbols kNaiveExchange = {
    .worker = kErrorCompensatedGradient,
    .mean = {"mean C(g+delta)", "onebit-adam.txt Sec. 3.2, Eq. 5 (line 140)",
             "(1/n) sum_i C[g^(i) + delta^(i)]"},
    .server = {{"mean+delta_bar", "onebit-adam.txt Sec. 3.2 (compressed both ways)",
                "the mean plus the server's error delta_bar_{t-1}"},
               {"r", "the compressor's draw rule", kServerWords},
               {"g_bar", "onebit-adam.txt Sec. 3.2 (compressed both ways)",
                "C[mean + delta_bar_{t-1}]: the gradient Adam's m and v follow (Sec. 4.2)"},
               {"s", "the compressor's message", "the scales of g_bar, per block"},
               {"delta_bar", "onebit-adam.txt Sec. 3.2 (compressed both ways)",
                "delta_bar_t = mean + delta_bar_{t-1} - g_bar"}},
};
// During warmup the workers send g_t^(i) as it is (the cluster traces it); the server averages.
const ExchangeSymbols kWarmupExchange = {
    .worker = {},
    .mean = {"g_bar", "onebit-adam.txt Alg. 1 line 2 (Adam, Eq. 1)", "(1/n) sum_i g_t^(i)"},
    .server = {},
};

// The warmup's gradients go through an exchange of their own (PhasedExchangeOptimizer's
// full-precision one): the identity, or fp16 (warmup_compressor), without error feedback.
template <typename T>
class OneBitAdam final : public PhasedExchangeOptimizer<T, CompressedExchange<T>> {
  using Base = PhasedExchangeOptimizer<T, CompressedExchange<T>>;

 public:
  OneBitAdam(const OneBitAdamOptions& options, const ExchangeConfig<T>& exchange,
             const CompressorMaker<T>& warmup, const OptimizerContext& context)
      : Base(exchange, {warmup, FeedbackKind::kNone, warmup, FeedbackKind::kNone}, context),
        options_(options),
        beta1_(static_cast<T>(options.beta1)),
        beta2_(static_cast<T>(options.beta2)),
        preconditioner_(static_cast<T>(options.eps), options.eps_placement, context.dimension),
        m_(Vector<T>::Zero(context.dimension)),
        v_(Vector<T>::Zero(context.dimension)),
        g_(Vector<T>::Zero(context.dimension)) {
    for (Vector<T>& m : LocalStates<T>(context)) workers_.push_back({std::move(m)});
    full_precision_.set_symbols(kWarmupExchange);
    exchange_.set_symbols(kOneBitAdamExchange);
  }

  StepSymbols step_symbols() const override {
    return {
        .gradient = {"g", "onebit-adam.txt Alg. 1 line 5", "g_t^(i) = grad F_i(x_t^(i), xi_t^(i))"},
        .parameters = {"x", "onebit-adam.txt Alg. 1 line 13",
                       "x_{t+1} = x_t - gamma m_t / sqrt(v_Tw) (eps: docs/conventions.md)"}};
  }

  void WorkerStep(const StepContext& ctx, int worker, ConstVectorRef<T> /*x*/, ConstVectorRef<T> g,
                  Message& out) override {
    Worker& w = workers_[static_cast<std::size_t>(worker)];
    if (FullPrecisionAt(ctx)) {  // line 2: the original Adam, the gradient in full precision
      full_precision_.Send(ctx, worker, g, out);
      return;
    }
    // Line 6. "own" starts from the synchronised m at the first compressed step.
    const bool own =
        options_.local_momentum == LocalMomentum::kOwn && ctx.t > options_.warmup_steps + 1;
    const Vector<T>& m_previous = own ? w.m : m_;
    w.m = beta1_ * m_previous + (T(1) - beta1_) * g;
    if (const TraceScope trace = ctx.Trace(worker)) trace.Vector<T>(kWorkerMomentum.symbol, w.m);
    exchange_.Send(ctx, worker, w.m, out);  // lines 7-8
  }

  void Apply(const StepContext& ctx, std::span<const Message> reply, VectorRef<T> x) override {
    t_ = ctx.t;
    const bool warmup = this->AppliesFullPrecision(ctx);
    if (warmup) {  // Eq. 1 without bias correction; v is v_Tw after step T_w
      full_precision_.Receive(reply, g_);
      m_ = beta1_ * m_ + (T(1) - beta1_) * g_;
      v_ = beta2_ * v_ + (T(1) - beta2_) * g_.cwiseAbs2();
      preconditioner_.Set(v_);
    } else {
      exchange_.Receive(reply, m_);  // line 13: m = m_bar
    }
    if (const TraceScope trace = ctx.Trace(kServer)) {
      if (warmup) {
        trace.Vector<T>(kWarmupMomentum, m_);
        trace.Vector<T>(kVariance.symbol, v_);
      } else {
        trace.Vector<T>(kMomentum.symbol, m_);
        trace.Vector<T>(kFrozenVariance, v_);
      }
    }
    preconditioner_.Step(ctx.lr, m_, x);  // line 13
  }

  void DeclareState(OptimizerState<T>& state) override {
    state.Nested("preconditioner", preconditioner_);
    this->DeclareExchanges(state);
    // During warmup every worker holds the synchronised m; after it, its own m^(i).
    state.PerWorker(workers_, [&](Worker& w) { state.Own(kWorkerMomentum, w.m, !Warmup(t_)); });
    if (Warmup(t_)) {
      state.Replicated(kMomentum, m_);
    } else {
      state.Server(kMomentum, m_);
    }
    state.Replicated(kVariance, v_);
    state.Shows(Quantity::kFrozenVariance, v_, t_ >= options_.warmup_steps);
    state.Value("t", t_);
  }

 private:
  struct Worker {
    Vector<T> m;  // m^(i) of line 6
  };

  bool Warmup(std::int64_t t) const { return t <= options_.warmup_steps; }
  bool FullPrecisionAt(const StepContext& ctx) const override { return Warmup(ctx.t); }

  OneBitAdamOptions options_;
  T beta1_, beta2_;
  Preconditioner<T> preconditioner_;  // sqrt(v_Tw) + eta once warmup is over
  std::vector<Worker> workers_;
  Vector<T> m_;         // the synchronised m (line 13)
  Vector<T> v_;         // v; frozen (v_Tw) after step T_w
  Vector<T> g_;         // the averaged gradient during warmup
  std::int64_t t_ = 0;  // the last step applied
  using Base::exchange_;
  using Base::full_precision_;
};

// 1-bit Adam (32-bits) of Sec. 7.2: the momentum is not compressed (see the header).
template <typename T>
class OneBitAdamFp32 final : public AveragedGradientOptimizer<T> {
 public:
  OneBitAdamFp32(const OneBitAdamOptions& options, const OptimizerContext& context)
      : AveragedGradientOptimizer<T>(context),
        options_(options),
        m_(Vector<T>::Zero(context.dimension)),
        v_(Vector<T>::Zero(context.dimension)),
        preconditioner_(static_cast<T>(options.eps), options.eps_placement, context.dimension) {}

  void DeclareState(OptimizerState<T>& state) override {
    state.Replicated(kAveragedMomentum, m_);
    state.Replicated(kVariance, v_);
    state.Shows(Quantity::kFrozenVariance, v_, t_ >= options_.warmup_steps);
    state.Nested("preconditioner", preconditioner_);
    state.Value("t", t_);
  }

 protected:
  void ApplyMean(const StepContext& ctx, const Vector<T>& g, VectorRef<T> x) override {
    t_ = ctx.t;
    const T beta1 = static_cast<T>(options_.beta1), beta2 = static_cast<T>(options_.beta2);
    m_ = beta1 * m_ + (T(1) - beta1) * g;
    if (ctx.t <= options_.warmup_steps) {
      v_ = beta2 * v_ + (T(1) - beta2) * g.cwiseAbs2();
      preconditioner_.Set(v_);
    }
    preconditioner_.Step(ctx.lr, m_, x);
  }

 private:
  OneBitAdamOptions options_;
  Vector<T> m_, v_;
  Preconditioner<T> preconditioner_;
  std::int64_t t_ = 0;
};

// Adam (1-bit naive) of Sec. 3.2 (see the header).
template <typename T>
class AdamOneBitNaive final : public ExchangingOptimizer<T> {
 public:
  AdamOneBitNaive(const AdamOptions& options, const ExchangeConfig<T>& exchange,
                  const OptimizerContext& context)
      : ExchangingOptimizer<T>(exchange, context),
        options_(options),
        m_(Vector<T>::Zero(context.dimension)),
        v_(Vector<T>::Zero(context.dimension)),
        g_(Vector<T>::Zero(context.dimension)) {
    exchange_.set_symbols(kNaiveExchange);
  }

  void WorkerStep(const StepContext& ctx, int worker, ConstVectorRef<T> /*x*/, ConstVectorRef<T> g,
                  Message& out) override {
    exchange_.Send(ctx, worker, g, out);  // C(g + delta), worker EF
  }

  void ServerStep(const StepContext& ctx, int chunk, std::span<const Message> received,
                  Message& out) override {
    exchange_.Reduce(ctx, chunk, received, out);
  }

  void Apply(const StepContext& ctx, std::span<const Message> reply, VectorRef<T> x) override {
    exchange_.Receive(reply, g_);
    // Sec. 4.2: v follows the compressed gradient, whose errors do not cancel in its square.
    const T beta1 = static_cast<T>(options_.beta1), beta2 = static_cast<T>(options_.beta2);
    m_ = beta1 * m_ + (T(1) - beta1) * g_;
    v_ = beta2 * v_ + (T(1) - beta2) * g_.cwiseAbs2();
    AdamUpdate<T>(options_, ctx, m_, v_, x);
  }

  void DeclareState(OptimizerState<T>& state) override {
    state.Replicated(kAveragedMomentum, m_);
    state.Replicated(kAveragedVariance, v_);
    state.Nested("exchange", exchange_);
  }

  const EncodeStats* LastEncode(int worker) const override { return exchange_.LastEncode(worker); }

 private:
  AdamOptions options_;
  Vector<T> m_, v_;  // every replica's
  Vector<T> g_;      // the decoded gradient
  using ExchangingOptimizer<T>::exchange_;
};

}  // namespace

OneBitAdamOptions ReadOneBitAdamOptions(OptionTable& options, bool read_local_momentum) {
  OneBitAdamOptions o;
  o.beta1 = options.GetDouble("beta1", o.beta1, kMovingAverageFactor);
  o.beta2 = options.GetDouble("beta2", o.beta2, kMovingAverageFactor);
  o.eps = options.GetDouble("eps", o.eps, Interval::Positive());
  o.eps_placement = EpsPlacementFromOptions(options, o.eps_placement);
  o.warmup_steps = options.GetInt("warmup_steps", o.warmup_steps, 0);
  if (read_local_momentum) {
    o.local_momentum = LocalMomentumFromOptions(options);
  }
  return o;
}

AdamOptions ReadAdamOneBitNaiveOptions(OptionTable& options) {
  AdamOptions defaults;
  defaults.bias_correction = false;  // the paper's Adam (Eq. 1)
  return ReadAdamOptions(options, defaults);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeOneBitAdam(const OneBitAdamOptions& options,
                                                        const ExchangeConfig<T>& exchange,
                                                        const OptimizerContext& context,
                                                        CompressorMaker<T> warmup) {
  if (!warmup) warmup = [](const CompressorShape&) { return MakeIdentity<T>(); };
  return std::make_unique<OneBitAdam<T>>(options, exchange, warmup, context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> OneBitAdamFromOptions(OptionTable& options,
                                                               const OptimizerContext& context) {
  const OneBitAdamOptions o = ReadOneBitAdamOptions(options, true);
  CompressorMaker<T> warmup =
      MakeCompressorMaker<T>(*options.GetComponent("warmup_compressor", "identity"));
  return MakeOneBitAdam<T>(o, ExchangeFromOptions<T>(options, kOneBitAdamDefaults), context,
                           std::move(warmup));
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeOneBitAdamFp32(const OneBitAdamOptions& options,
                                                            const OptimizerContext& context) {
  return std::make_unique<OneBitAdamFp32<T>>(options, context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> OneBitAdamFp32FromOptions(
    OptionTable& options, const OptimizerContext& context) {
  return MakeOneBitAdamFp32<T>(ReadOneBitAdamOptions(options, false), context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeAdamOneBitNaive(const AdamOptions& options,
                                                             const ExchangeConfig<T>& exchange,
                                                             const OptimizerContext& context) {
  LEMMALAB_CHECK(!options.amsgrad, "adam-1bit-naive has no AMSGrad form");
  return std::make_unique<AdamOneBitNaive<T>>(options, exchange, context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> AdamOneBitNaiveFromOptions(
    OptionTable& options, const OptimizerContext& context) {
  const AdamOptions o = ReadAdamOneBitNaiveOptions(options);
  return MakeAdamOneBitNaive<T>(o, ExchangeFromOptions<T>(options, kOneBitAdamDefaults), context);
}

#define LEMMALAB_INSTANTIATE(T)                                                                  \
  template std::unique_ptr<DistributedOptimizer<T>> MakeOneBitAdam(                              \
      const OneBitAdamOptions&, const ExchangeConfig<T>&, const OptimizerContext&,               \
      CompressorMaker<T>);                                                                       \
  template std::unique_ptr<DistributedOptimizer<T>> OneBitAdamFromOptions(                       \
      OptionTable&, const OptimizerContext&);                                                    \
  template std::unique_ptr<DistributedOptimizer<T>> MakeOneBitAdamFp32(const OneBitAdamOptions&, \
                                                                       const OptimizerContext&); \
  template std::unique_ptr<DistributedOptimizer<T>> OneBitAdamFp32FromOptions(                   \
      OptionTable&, const OptimizerContext&);                                                    \
  template std::unique_ptr<DistributedOptimizer<T>> MakeAdamOneBitNaive(                         \
      const AdamOptions&, const ExchangeConfig<T>&, const OptimizerContext&);                    \
  template std::unique_ptr<DistributedOptimizer<T>> AdamOneBitNaiveFromOptions(                  \
      OptionTable&, const OptimizerContext&);
LEMMALAB_INSTANTIATE(float)
LEMMALAB_INSTANTIATE(double)
#undef LEMMALAB_INSTANTIATE

}  // namespace lemmalab
