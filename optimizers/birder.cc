#include "optimizers/birder.h"

#include <vector>

#include "optimizers/full_precision_wire.h"

namespace lemmalab {
namespace {

// The trace's names (optimizers/trace.h) for birder.txt Algorithm 1. The paper's u_t^(i) is the
// quantized update; the trace calls the quantizer's input u and its output Q(u), so that both
// have a name.
constexpr StateTag kMomentum = {
    {"m", "birder.txt Alg. 1 line 5", "m_t^(i) = beta m_{t-1}^(i) + (1 - beta) g_t^(i)"},
    Quantity::kMomentum};
constexpr StateTag kBHat = {{"b_hat", "birder.txt Alg. 1 line 6",
                             "b_hat_t^(i) = beta b_hat_{t-1}^(i) + (1 - beta) |g_t^(i)|"}};
constexpr StateTag kB = {{"b", "birder.txt Alg. 1 line 7",
                          "b_t^(i) = b_hat_t^(i) (max(b_{t-1}^(i), b_hat_t^(i)) once t > T0)"},
                         Quantity::kRawDenominator};
constexpr TraceSymbol kRatio = {"m/(b+eps)", "birder.txt Alg. 1 line 8, footnote 5",
                                "the worker's unquantized update, in [-1, 1]"};
constexpr TraceSymbol kUpdate = {"alpha u_bar", "birder.txt Alg. 1 line 16",
                                 "the step alpha_t u_bar each replica subtracts from x_t"};
const ExchangeSymbols kBirderExchange = {
    .worker = {{"u", "birder.txt Alg. 1 line 8", "m/(b+eps) + e_{t-1}: the quantizer's input"},
               {"r", "birder.txt Eq. 5 (compressors/stochastic_binary.h)",
                "word j of Philox stream (seed, worker-compression, i, t): Q(u)_j = +1 iff "
                "r_j - 2^31 < clamp(u_j, -1, 1) 2^31"},
               {"Q(u)", "birder.txt Alg. 1 line 8", "the quantized update sent, +1 or -1"},
               {"s", "compressors/stochastic_binary.h", "the scale of domain = \"rescale\""},
               {"e", "birder.txt Alg. 1 line 9", "e_t^(i) = u - Q(u)"}},
    .mean = {"mean Q(u)", "birder.txt Alg. 1 line 12", "(1/n) sum_i Q(u^(i))"},
    .server = {{"mean+e_bar", "birder.txt Alg. 1 line 12",
                "(1/n) sum_i Q(u^(i)) + e_bar_{t-1}: the server quantizer's input"},
               {"r", "birder.txt Eq. 5 (compressors/stochastic_binary.h)",
                "u_bar_j = +1 iff r_j - 2^31 < clamp(input_j, -1, 1) 2^31, r_j: word j of Philox "
                "stream (seed, server-compression, server, t) (chunk c of a chunked scheme: "
                "server - c, from the chunk's start)"},
               {"u_bar", "birder.txt Alg. 1 line 12", "the quantized mean sent back, +1 or -1"},
               {"s", "compressors/stochastic_binary.h", "the scale of domain = \"rescale\""},
               {"e_bar", "birder.txt Alg. 1 line 13", "e_bar_t = (mean + e_bar_{t-1}) - u_bar"}},
};

template <typename T>
class Birder final : public ExchangingOptimizer<T> {
 public:
  Birder(const BirderOptions& options, const ExchangeConfig<T>& exchange,
         const OptimizerContext& context)
      : ExchangingOptimizer<T>(exchange, context), options_(options), u_bar_(context.dimension) {
    for (int i = 0; i < context.workers; ++i) {
      const Vector<T> zero = Vector<T>::Zero(context.LocalDimension(i));
      workers_.push_back({zero, zero, zero, zero, zero});
    }
    exchange_.set_symbols(kBirderExchange);
  }

  StepSymbols step_symbols() const override {
    return {.gradient = {"g", "birder.txt Alg. 1 line 4", "g_t^(i) = grad f_i(x_t; xi_t^(i))"},
            .parameters = {"x", "birder.txt Alg. 1 line 16", "x_{t+1} = x_t - alpha_t u_bar"}};
  }

  void WorkerStep(const StepContext& ctx, int worker, ConstVectorRef<T> /*x*/, ConstVectorRef<T> g,
                  Message& out) override {
    Worker& w = workers_[static_cast<std::size_t>(worker)];
    const T beta = static_cast<T>(options_.beta);
    const T one_minus_beta = T(1) - beta;
    w.m = beta * w.m + one_minus_beta * g;                     // line 5
    w.b_hat = beta * w.b_hat + one_minus_beta * g.cwiseAbs();  // line 6
    if (options_.t0 && ctx.t > *options_.t0) {                 // line 7
      w.b = w.b.cwiseMax(w.b_hat);
    } else {
      w.b = w.b_hat;
    }
    w.denominator = w.b.array() + static_cast<T>(options_.eps);  // footnote 5
    w.update = w.m.cwiseQuotient(w.denominator);
    if (const TraceScope trace = ctx.Trace(worker)) {
      trace.Vector<T>(kMomentum.symbol, w.m);
      trace.Vector<T>(kBHat.symbol, w.b_hat);
      trace.Vector<T>(kB.symbol, w.b);
      trace.Vector<T>(kRatio, w.update);
    }
    exchange_.Send(ctx, worker, w.update, out);  // lines 8-10: u = Q(m/b + e), e update
  }

  void ServerStep(const StepContext& ctx, int chunk, std::span<const Message> received,
                  Message& out) override {
    exchange_.Reduce(ctx, chunk, received, out);  // lines 12-14: u_bar = Q(mean u + e_bar), e_bar
  }

  void Apply(const StepContext& ctx, std::span<const Message> reply, VectorRef<T> x) override {
    exchange_.Receive(reply, u_bar_);
    if (const TraceScope trace = ctx.Trace(kServer)) {
      trace.Vector<T>(kUpdate, (static_cast<T>(ctx.lr) * u_bar_).eval());
    }
    x -= static_cast<T>(ctx.lr) * u_bar_;  // line 16
  }

  void DeclareState(OptimizerState<T>& state) override {
    state.PerWorker(workers_, [&](Worker& w) {
      state.Own(kMomentum, w.m);
      state.Own(kBHat, w.b_hat);
      state.Own(kB, w.b);
      state.Shows(Quantity::kDenominator, w.denominator);
    });
    state.Nested("exchange", exchange_);
  }

  const EncodeStats* LastEncode(int worker) const override { return exchange_.LastEncode(worker); }

 private:
  struct Worker {
    Vector<T> m, b_hat, b;
    Vector<T> denominator;  // b + eps
    Vector<T> update;       // m / (b + eps), in [-1, 1]
  };

  BirderOptions options_;
  std::vector<Worker> workers_;
  Vector<T> u_bar_;
  using ExchangingOptimizer<T>::exchange_;
};

// SoftSignSGD (birder.txt App. B: "the uncompressed Birder"), written out on its own so that
// Birder's reduction to it is a test of Birder rather than of a shared code path: every worker
// keeps m and b of Eq. 4, sends m/(b + eps) in full precision, the server averages, and the
// replicas step by -alpha_t times the average. With one worker it is the single-machine form.
// SoftSignSGD's b is Eq. 4's: the average |g| itself, with no b_hat or T0.
constexpr StateTag kSoftSignB = {
    {"b", "birder.txt Eq. 4", "b_t^(i) = beta b_{t-1}^(i) + (1 - beta) |g_t^(i)|"},
    Quantity::kRawDenominator};

template <typename T>
class SoftSignSgd final : public DistributedOptimizer<T> {
 public:
  SoftSignSgd(double beta, double eps, const OptimizerContext& context)
      : beta_(static_cast<T>(beta)),
        eps_(static_cast<T>(eps)),
        m_(LocalStates<T>(context)),
        b_(m_),
        ratio_(m_),
        wire_(context),
        mean_(context.dimension) {}

  void WorkerStep(const StepContext& /*ctx*/, int worker, ConstVectorRef<T> /*x*/,
                  ConstVectorRef<T> g, Message& out) override {
    const auto i = static_cast<std::size_t>(worker);
    m_[i] = beta_ * m_[i] + (T(1) - beta_) * g;
    b_[i] = beta_ * b_[i] + (T(1) - beta_) * g.cwiseAbs();
    ratio_[i] = m_[i].array() / (b_[i].array() + eps_);
    wire_.Send(ratio_[i], out);
  }

  void ServerStep(const StepContext& /*ctx*/, int chunk, std::span<const Message> received,
                  Message& out) override {
    wire_.Reduce(chunk, received, out);
  }

  void Apply(const StepContext& ctx, std::span<const Message> reply, VectorRef<T> x) override {
    wire_.Receive(reply, mean_);
    x -= static_cast<T>(ctx.lr) * mean_;
  }

  bool SupportsChunks() const override { return true; }
  bool SupportsHierarchy() const override { return true; }
  void Split(const StepContext& /*ctx*/, int /*worker*/, const Message& whole,
             std::vector<Message>& parts) override {
    wire_.Split(whole, parts);
  }
  void NodeStep(const StepContext& /*ctx*/, int /*node*/, int part,
                std::span<const Message> received, std::vector<Message>& out) override {
    wire_.NodeReduce(part, received, out);
  }

  void DeclareState(OptimizerState<T>& state) override {
    state.PerWorker(kMomentum, m_);
    state.PerWorker(kSoftSignB, b_);
  }

 private:
  T beta_, eps_;
  std::vector<Vector<T>> m_, b_;
  std::vector<Vector<T>> ratio_;  // m / (b + eps), the message; one buffer per worker
  FullPrecisionWire<T> wire_;
  Vector<T> mean_;
};

}  // namespace

BirderOptions ReadBirderOptions(OptionTable& options, bool read_t0) {
  BirderOptions o;
  o.beta = options.GetDouble("beta", o.beta, kMovingAverageFactor);
  o.eps = options.GetDouble("eps", o.eps, Interval::NonNegative());
  if (read_t0) {
    if (options.Has("t0")) o.t0 = options.GetInt("t0", 0, 0);
    options.Describe("t0", "an integer >= 0; absent: no max rule (line 7)");
  }
  return o;
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeBirder(const BirderOptions& options,
                                                    const ExchangeConfig<T>& exchange,
                                                    const OptimizerContext& context) {
  return std::make_unique<Birder<T>>(options, exchange, context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> BirderFromOptions(OptionTable& options,
                                                           const OptimizerContext& context) {
  const BirderOptions o = ReadBirderOptions(options, /*read_t0=*/true);
  const ExchangeConfig<T> exchange = ExchangeFromOptions<T>(options, kBirderDefaults);
  return MakeBirder<T>(o, exchange, context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> SoftSignSgdFromOptions(OptionTable& options,
                                                                const OptimizerContext& context) {
  const BirderOptions o = ReadBirderOptions(options, /*read_t0=*/false);
  return std::make_unique<SoftSignSgd<T>>(o.beta, o.eps, context);
}

#define LEMMALAB_INSTANTIATE(T)                                                                 \
  template std::unique_ptr<DistributedOptimizer<T>> MakeBirder(                                 \
      const BirderOptions&, const ExchangeConfig<T>&, const OptimizerContext&);                 \
  template std::unique_ptr<DistributedOptimizer<T>> BirderFromOptions(OptionTable&,             \
                                                                      const OptimizerContext&); \
  template std::unique_ptr<DistributedOptimizer<T>> SoftSignSgdFromOptions(                     \
      OptionTable&, const OptimizerContext&);
LEMMALAB_INSTANTIATE(float)
LEMMALAB_INSTANTIATE(double)
#undef LEMMALAB_INSTANTIATE

}  // namespace lemmalab
