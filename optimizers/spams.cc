#include "optimizers/spams.h"

#include <cmath>

#include "optimizers/compressed_exchange.h"

namespace lemmalab {
namespace {

// The trace's names (optimizers/trace.h) for spams.txt Algorithm 2 (distributed) and Algorithm 3
// (single machine, compression at the server).
constexpr TraceSymbol kMean = {"g_bar", "spams.txt Alg. 2 line 12", "(1/n) sum_i g~_{t,i}"};
// The server's state (AmsGradServer): probes see it as kServer.
constexpr StateTag kMomentum = {
    {"m", "spams.txt Alg. 2 line 13", "m_t = beta1 m_{t-1} + (1 - beta1) g_bar_t"},
    Quantity::kMomentum};
constexpr StateTag kVariance = {
    {"v", "spams.txt Alg. 2 line 14", "v_t = beta2 v_{t-1} + (1 - beta2) g_bar_t^2"},
    Quantity::kVariance};
constexpr StateTag kMaxVariance = {
    {"v_hat", "spams.txt Alg. 2 line 15", "v_hat_t = max(v_t, v_hat_{t-1})"},
    Quantity::kMaxVariance};
// sqrt(eps) before step 1 (v_hat_0 = 0).
constexpr StateTag kDenominator = {
    {"sqrt(v_hat+eps)", "spams.txt Alg. 2 line 16", "the denominator of the server's direction"},
    Quantity::kDenominator};
constexpr TraceSymbol kDirection = {"m/sqrt(v_hat+eps)", "spams.txt Alg. 2 line 16",
                                    "the direction the server sends back"};
const ExchangeSymbols kSpamsExchange = {
    .worker = {{"g+e", "spams.txt Alg. 2 line 7", "g_{t,i} + e_{t,i}: the compressor's input"},
               {"r", "the compressor's draw rule", kWorkerWords},
               {"C(g+e)", "spams.txt Alg. 2 line 7", "g~_{t,i} = C(g_{t,i} + e_{t,i}, k)"},
               {"s", "spams.txt Definition 2 (block-sign)", "the message's scales, per block"},
               {"e", "spams.txt Alg. 2 line 8", "e_{t+1,i} = e_{t,i} + g_{t,i} - g~_{t,i}"}},
    .mean = kMean,
    .server = {},
};
const SenderSymbols kServerCompression = {
    {"g+e", "spams.txt Alg. 3 line 5", "g_t + e_t: the server compressor's input"},
    {"r", "the compressor's draw rule", kServerWords},
    {"C(g+e)", "spams.txt Alg. 3 line 5", "g~_t = Top-k(g_t + e_t)"},
    {"s", "spams.txt Definition 2 (block-sign)", "the message's scales, per block"},
    {"e", "spams.txt Alg. 3 line 6", "e_{t+1} = e_t + g_t - g~_t"}};
constexpr StepSymbols kSpamsStep = {
    .gradient = {"g", "spams.txt Alg. 2 line 6", "g_{t,i}: the stochastic gradient at theta_t"},
    .parameters = {"theta", "spams.txt Alg. 2 line 16",
                   "theta_{t+1} = theta_t - eta_t m_t / sqrt(v_hat_t + eps)"}};

// The server half both forms share: AMSGrad on the gradient the server ends up with, and the
// direction m / sqrt(v_hat + eps) it sends back (spams.txt Alg. 2 lines 13-16, Alg. 3 7-10).
template <typename T>
class AmsGradServer {
 public:
  AmsGradServer(const SpamsOptions& options, const OptimizerContext& context)
      : beta1_(static_cast<T>(options.beta1)),
        beta2_(static_cast<T>(options.beta2)),
        eps_(static_cast<T>(options.eps)),
        m_(Vector<T>::Zero(context.dimension)),
        v_(m_),
        v_hat_(m_),
        denominator_(Vector<T>::Constant(context.dimension, std::sqrt(eps_))),
        direction_(m_),
        wire_(context) {}

  // The server of chunk c with the chunk of the gradient it ends up with; its state is per
  // coordinate, so the chunks' servers together are the one server of the algorithm.
  void Step(const StepContext& ctx, int chunk, const ConstVectorRef<T>& g, Message& out) {
    const auto [begin, end] = wire_.Chunk(chunk);
    const Eigen::Index n = end - begin;
    auto m = m_.segment(begin, n), v = v_.segment(begin, n), v_hat = v_hat_.segment(begin, n);
    auto denominator = denominator_.segment(begin, n), direction = direction_.segment(begin, n);
    m = beta1_ * m + (T(1) - beta1_) * g;              // line 13
    v = beta2_ * v + (T(1) - beta2_) * g.cwiseAbs2();  // line 14
    v_hat = v_hat.cwiseMax(v);                         // line 15
    denominator = (v_hat.array() + eps_).sqrt();       // line 16
    direction = m.array() / denominator.array();
    if (const TraceScope trace = ctx.Trace(kServer)) {
      trace.Vector<T>(kMomentum.symbol, m, begin);
      trace.Vector<T>(kVariance.symbol, v, begin);
      trace.Vector<T>(kMaxVariance.symbol, v_hat, begin);
      trace.Vector<T>(kDirection, direction, begin);
    }
    wire_.SendChunk(chunk, direction, out);
  }

  void Apply(const StepContext& ctx, std::span<const Message> reply, VectorRef<T> x) {
    wire_.Receive(reply, direction_);
    x -= static_cast<T>(ctx.lr) * direction_;  // line 16: theta_{t+1} = theta_t - eta_t (...)
  }

  void DeclareState(OptimizerState<T>& state) {
    state.Server(kMomentum, m_);
    state.Server(kVariance, v_);
    state.Server(kMaxVariance, v_hat_);
    state.Server(kDenominator, denominator_);
  }

 private:
  T beta1_, beta2_, eps_;
  // The update's denominator is kept (not only used) for the probes of spams.txt Lemma 5, whose
  // D_t = 1/sqrt(v_hat_{t-1} + eps) - 1/sqrt(v_hat_t + eps) needs it in the run's precision.
  Vector<T> m_, v_, v_hat_, denominator_, direction_;
  FullPrecisionWire<T> wire_;
};

template <typename T>
class DistSpams final : public ExchangingOptimizer<T> {
 public:
  DistSpams(const SpamsOptions& options, const ExchangeConfig<T>& exchange,
            const OptimizerContext& context)
      : ExchangingOptimizer<T>(exchange, context), server_(options, context) {
    exchange_.set_symbols(kSpamsExchange);
  }

  StepSymbols step_symbols() const override { return kSpamsStep; }

  void WorkerStep(const StepContext& ctx, int worker, ConstVectorRef<T> /*x*/, ConstVectorRef<T> g,
                  Message& out) override {
    exchange_.Send(ctx, worker, g, out);  // lines 7-9: g~ = C(g + e), e <- e + g - g~
  }

  void ServerStep(const StepContext& ctx, int chunk, std::span<const Message> received,
                  Message& out) override {
    exchange_.Average(ctx, chunk, received);                    // line 12
    server_.Step(ctx, chunk, exchange_.MeanChunk(chunk), out);  // lines 13-16
  }

  void Apply(const StepContext& ctx, std::span<const Message> reply, VectorRef<T> x) override {
    server_.Apply(ctx, reply, x);
  }

  void DeclareState(OptimizerState<T>& state) override {
    state.Nested("server", server_);
    state.Nested("exchange", exchange_);
  }

  const EncodeStats* LastEncode(int worker) const override {
    return worker == kServer ? nullptr : exchange_.LastEncode(worker);
  }

 private:
  AmsGradServer<T> server_;
  using ExchangingOptimizer<T>::exchange_;
};

template <typename T>
class Spams final : public DistributedOptimizer<T> {
 public:
  Spams(const SpamsOptions& options, const CompressorMaker<T>& compressor, FeedbackKind feedback,
        const OptimizerContext& context)
      : wire_(context),
        maker_(compressor),
        shape_(context.shape()),
        sender_(ErrorFeedback<T>(feedback, context.dimension), compressor(shape_)),
        g_(Vector<T>::Zero(context.dimension)),
        g_tilde_(g_),
        server_(options, context) {}

  StepSymbols step_symbols() const override { return kSpamsStep; }

  void WorkerStep(const StepContext& /*ctx*/, int /*worker*/, ConstVectorRef<T> /*x*/,
                  ConstVectorRef<T> g, Message& out) override {
    wire_.Send(g, out);
  }

  // One chunk only: Top-k acts on the whole mean.
  void ServerStep(const StepContext& ctx, int /*chunk*/, std::span<const Message> received,
                  Message& out) override {
    MeanOfRawMessages<T>(received, g_);  // g_t
    const TraceScope trace = ctx.Trace(kServer);
    if (trace) trace.Vector<T>(kMean, g_);
    // Lines 5-6: g~ = Top-k(g + e), e <- e + g - g~, with the error kept where the compression
    // happens; the compressed message never leaves the server, so it is decoded in place.
    PhiloxStream stream = ctx.Stream(Purpose::kServerCompression, kServerStream);
    sender_.Compress(g_, stream, compressed_, ctx.lr, trace, kServerCompression, 0);
    sender_.compressor->Decode(compressed_, g_tilde_);
    server_.Step(ctx, 0, g_tilde_, out);  // lines 7-10
  }

  void Apply(const StepContext& ctx, std::span<const Message> reply, VectorRef<T> x) override {
    server_.Apply(ctx, reply, x);
  }

  void DeclareState(OptimizerState<T>& state) override {
    state.Nested("sender", sender_);
    state.ServerShows(Quantity::kServerError, sender_.ef.error(), sender_.ef.enabled());
    state.Nested("server", server_);
  }

  const EncodeStats* LastEncode(int worker) const override {
    return worker == kServer ? &sender_.stats : nullptr;
  }

  // The one compression happens at the server (kServer), as in CompressedExchange's records:
  // the input g_t + e_t, the decoded g~_t, and the compressor (whose q() spams.txt Lemma 2 uses).
  bool CanKeepCompressionRecords() const override { return true; }
  bool KeepCompressionRecords() override {
    sender_.KeepRecords(maker_, shape_);
    return true;
  }
  const CompressionRecord<T>* LastCompression(int worker) const override {
    return worker == kServer ? sender_.record.get() : nullptr;
  }

 private:
  FullPrecisionWire<T> wire_;  // workers' full-precision gradients
  CompressorMaker<T> maker_;
  CompressorShape shape_;
  CompressingSender<T> sender_;
  Vector<T> g_, g_tilde_;
  Message compressed_;
  AmsGradServer<T> server_;
};

}  // namespace

SpamsOptions ReadSpamsOptions(OptionTable& options) {
  SpamsOptions o;
  o.beta1 = options.GetDouble("beta1", o.beta1, kMovingAverageFactor);
  o.beta2 = options.GetDouble("beta2", o.beta2, kMovingAverageFactor);
  o.eps = options.GetDouble("eps", o.eps, Interval::Positive());
  return o;
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> DistSpamsFromOptions(OptionTable& options,
                                                              const OptimizerContext& context) {
  const SpamsOptions o = ReadSpamsOptions(options);
  ExchangeConfig<T> exchange = ExchangeFromOptions<T>(options, kDistSpamsDefaults);
  return std::make_unique<DistSpams<T>>(o, exchange, context);
}

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> SpamsFromOptions(OptionTable& options,
                                                          const OptimizerContext& context) {
  const SpamsOptions o = ReadSpamsOptions(options);
  const CompressorMaker<T> compressor =
      MakeCompressorMaker<T>(*options.GetComponent("compressor", "block-sign"));
  const FeedbackKind feedback = FeedbackFromOptions(options, "feedback", FeedbackKind::kClassic);
  return std::make_unique<Spams<T>>(o, compressor, feedback, context);
}

#define LEMMALAB_INSTANTIATE(T)                                                                    \
  template std::unique_ptr<DistributedOptimizer<T>> DistSpamsFromOptions(OptionTable&,             \
                                                                         const OptimizerContext&); \
  template std::unique_ptr<DistributedOptimizer<T>> SpamsFromOptions(OptionTable&,                 \
                                                                     const OptimizerContext&);
LEMMALAB_INSTANTIATE(float)
LEMMALAB_INSTANTIATE(double)
#undef LEMMALAB_INSTANTIATE

}  // namespace lemmalab
