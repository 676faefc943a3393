// The message pattern that compressed algorithms share, written once.
//
//   worker i:  sends C_w(y^(i) + a e^(i)) and keeps e^(i) <- y^(i) + a e^(i) - C_w(...)
//   server:    y_bar = (1/n) sum_i decode(message_i), summed in worker order;
//              sends C_s(y_bar + a e_bar) and keeps e_bar <- y_bar + a e_bar - C_s(...)
//   replicas:  decode the reply
//
// y is whatever the algorithm sends: Birder's m/b (birder.txt Alg. 1 lines 8-14), 1-bit Adam's
// and 1-bit LAMB's momentum (onebit-adam.txt Alg. 1 lines 7-11, onebit-lamb.txt Alg. 1 lines
// 6-11), a gradient (EF-SGD, DoubleSqueeze, SPAMS Alg. 2 lines 7-12). The error feedback of
// each side is one of compressors/error_feedback.h's kinds (a = 1, or a = gamma_{t-1}/gamma_t
// for "scaled"); a side without feedback sends C(y). A server that does not re-compress uses
// the identity "compressor": it sends y_bar in the run's precision, and its error stays 0.
//
// The server error is computed from the messages actually received (docs/conventions.md §4).
// Streams: worker i draws from (seed, kWorkerCompression, i, t), the server from
// (seed, kServerCompression, kServerStream, t), so results do not depend on scheduling.
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "compressors/error_feedback.h"
#include "optimizers/full_precision_wire.h"
#include "optimizers/optimizer.h"

namespace lemmalab {

// Where a worker's momentum starts each compressed step in the algorithms that
// exchange a compressed momentum (1-bit Adam, 1-bit LAMB; docs/conventions.md §1).
enum class LocalMomentum {
  kSync,  // m^(i) = beta1 m_{t-1} + (1 - beta1) g^(i) from the synchronised m of line 13
          // (DeepSpeed: the fused buffer is overwritten by the allreduce)
  kOwn,   // m^(i) = beta1 m^(i)_{t-1} + (1 - beta1) g^(i), each worker's own m since the
          // end of warmup
          // (line 5's superscript read literally)
};

// Reads `local_momentum` ("sync" or "own"; default "sync").
LocalMomentum LocalMomentumFromOptions(OptionTable& options);

template <typename T>
struct ExchangeConfig {
  CompressorMaker<T> worker_compressor;
  FeedbackKind worker_feedback = FeedbackKind::kClassic;
  CompressorMaker<T> server_compressor;  // identity: the server sends the mean as is
  FeedbackKind server_feedback = FeedbackKind::kNone;
};

// One compressor configuration on both sides (Birder, 1-bit Adam, DoubleSqueeze).
template <typename T>
ExchangeConfig<T> Symmetric(CompressorMaker<T> compressor,
                            FeedbackKind worker_feedback = FeedbackKind::kClassic,
                            FeedbackKind server_feedback = FeedbackKind::kClassic) {
  return {compressor, worker_feedback, compressor, server_feedback};
}

// What an algorithm's exchange defaults to; every field is an option of the algorithm:
//   compressor       the worker compressor                        (default `compressor`)
//   worker_feedback  none | classic | scaled | scaled-as-printed  (default `worker_feedback`)
//   server_compressor  the server's; absent: the worker's configuration when the server
//                    re-compresses by default, "identity" otherwise
//   server_feedback  as worker_feedback                            (default `server_feedback`)
struct ExchangeDefaults {
  std::string_view compressor = "identity";
  FeedbackKind worker_feedback = FeedbackKind::kClassic;
  bool server_recompresses = false;
  FeedbackKind server_feedback = FeedbackKind::kNone;
  // false: the algorithm's server does something else with the mean (SPAMS's AMSGrad step), so
  // there are no server_* options and Reduce is not used.
  bool server_options = true;
};

template <typename T>
ExchangeConfig<T> ExchangeFromOptions(OptionTable& options, const ExchangeDefaults& defaults);

// The names a trace (optimizers/trace.h) gives the exchange's quantities: each algorithm names
// them as its paper does. A symbol with an empty name is not traced.
struct SenderSymbols {
  TraceSymbol input;   // what the compressor is given, y + a e
  TraceSymbol words;   // the draw word behind each element (stochastic compressors)
  TraceSymbol output;  // C(y + a e), as the receiver decodes it
  TraceSymbol scales;  // the message's scales, by block
  TraceSymbol error;   // e after the step

  bool any() const {
    return !(input.name.empty() && words.name.empty() && output.name.empty() &&
             scales.name.empty() && error.name.empty());
  }
};
struct ExchangeSymbols {
  SenderSymbols worker;
  TraceSymbol mean;  // the server's mean of the decoded worker messages
  SenderSymbols server;
};
// The streams behind a trace's draw words (the `words` symbols), as its legend states them.
inline constexpr std::string_view kWorkerWords =
    "word j of Philox stream (seed, worker-compression, i, t)";
inline constexpr std::string_view kServerWords =
    "word j of Philox stream (seed, server-compression, server, t); under a chunked scheme "
    "chunk c's stream is (seed, server-compression, server - c, t), from the chunk's start";

// One side's compression: its error feedback, its compressor instance, the statistics of its
// last Encode and, while a probe asks for it, the record of its last compression.
template <typename T>
struct CompressingSender {
  CompressingSender(ErrorFeedback<T> feedback, std::unique_ptr<Compressor<T>> instance)
      : ef(std::move(feedback)), compressor(std::move(instance)) {}

  ErrorFeedback<T> ef;
  std::unique_ptr<Compressor<T>> compressor;
  EncodeStats stats;
  std::unique_ptr<CompressionRecord<T>> record;
  Vector<T> input, output;  // C's input and decoded output, when traced without a record

  // stats = ef.Compress(y, ...), keeping the record when there is one and recording the
  // compression into `trace` when it is live; y's element 0 is coordinate `offset`.
  void Compress(ConstVectorRef<T> y, PhiloxStream& stream, Message& out, double lr,
                const TraceScope& trace, const SenderSymbols& symbols, std::int64_t offset);
  // Starts keeping records of compressions by `maker`'s configuration for `shape`.
  void KeepRecords(const CompressorMaker<T>& maker, const CompressorShape& shape);

  void Persist(StateArchive& archive) {
    archive.Nested("feedback", ef);
    archive.Nested("compressor", *compressor);
  }
};

// Under the chunked layouts (optimizers/optimizer.h) the same pattern is cut up:
//   flat chunked:  worker i compresses its whole y with one scale (docs/conventions.md §5) and
//                  its message is Split by chunk; the server of chunk c averages the n parts and
//                  re-compresses its chunk with its own error e_bar_c and scale.
//   hierarchical:  workers send y in full precision; node k's local rank r averages the node's
//                  range r and compresses it with that node range's error e^(k,r) (the workers'
//                  feedback, moved to the node: birder.txt Sec. 4 step (ii)), split into the
//                  range's server chunks; servers as above, averaging the nodes' parts.
// Server chunk c draws from (seed, kServerCompression, kServerStream - c, t), node k's rank r from
// (seed, kWorkerCompression, k m + r, t): with one chunk and no hierarchy, as before.
template <typename T>
class CompressedExchange {
 public:
  CompressedExchange(const ExchangeConfig<T>& config, const OptimizerContext& context);

  // Worker phase: compresses y (with the worker's error feedback) into `out`; hierarchical:
  // sends y in full precision.
  void Send(const StepContext& ctx, int worker, ConstVectorRef<T> y, Message& out);
  // The parts of a worker's message the layout sends.
  void Split(const Message& whole, std::vector<Message>& parts) const;
  // Hierarchical: node `node`'s compression of its range `part` (see above).
  void NodeStep(const StepContext& ctx, int node, int part, std::span<const Message> received,
                std::vector<Message>& out);
  // Server phase of chunk c: averages the received parts into mean()'s chunk c, then compresses
  // it (with the chunk's server error feedback) into `out`.
  void Reduce(const StepContext& ctx, int chunk, std::span<const Message> received, Message& out);
  // The first half of Reduce, for servers that compute something else from the mean (SPAMS's
  // AMSGrad step): averages the received parts into mean()'s chunk c.
  void Average(const StepContext& ctx, int chunk, std::span<const Message> received);
  // Apply phase: the servers' replies (one per chunk), decoded.
  void Receive(std::span<const Message> reply, Vector<T>& out) const;
  // acc += weight * worker `worker`'s own message of this step, decoded by the instance that
  // encoded it (flat layouts): what a method whose workers keep the sum of their corrections
  // (EF21's g_i, DIANA's h_i) adds to it.
  void DecodeOwn(int worker, const Message& sent, T weight, VectorRef<T> acc) const {
    workers_[static_cast<std::size_t>(worker)].compressor->DecodeAdd(sent, weight, acc);
  }

  // (1/n) sum of the decoded worker messages of the last Reduce (on the chunks served here).
  const Vector<T>& mean() const { return mean_; }
  Eigen::VectorBlock<const Vector<T>> MeanChunk(int chunk) const;
  std::pair<std::int64_t, std::int64_t> Chunk(int chunk) const {
    return layout_.Chunk(chunk, dimension_);
  }
  // Worker i's or the server's error after the last step; nullptr without feedback. Under a
  // hierarchical layout the workers' feedback lives at the nodes and is not a worker vector
  // (nullptr); with several chunks the server's is assembled from the chunks served here.
  const Vector<T>* WorkerError(int worker) const;
  const Vector<T>* ServerError() const;
  // Observe() and LastEncode() for the exchange's quantities (errors and encode statistics).
  const Vector<T>* Observe(Quantity quantity, int worker) const;
  const EncodeStats* LastEncode(int worker) const;
  // The senders' error feedback and compressor state (core/state.h).
  void Persist(StateArchive& archive);
  // The names the trace gives this exchange's quantities.
  void set_symbols(const ExchangeSymbols& symbols) {
    symbols_ = symbols;
    named_ = true;
  }

  // DistributedOptimizer's KeepCompressionRecords and LastCompression for the exchange's senders
  // (flat layouts only; kServer with one chunk only).
  bool KeepCompressionRecords();
  bool CanKeepCompressionRecords() const { return !layout_.hierarchical; }
  const CompressionRecord<T>* LastCompression(int worker) const;

 private:
  using Sender = CompressingSender<T>;
  ExchangeConfig<T> config_;
  // Each algorithm's own names (set_symbols); an empty one is deliberately not traced (1-bit
  // Adam's warmup sends the gradient the cluster traces already). There are no generic names.
  ExchangeSymbols symbols_;
  bool named_ = false;
  CompressorShape shape_;  // of the whole vector
  std::int64_t dimension_;
  ExchangeLayout layout_;
  std::vector<Sender> workers_;  // flat: one per worker; hierarchical: one per (node, rank)
  std::vector<Sender> servers_;  // one per chunk
  std::vector<std::unique_ptr<Compressor<T>>> decoders_;  // the worker messages' part c
  FullPrecisionWire<T> wire_;  // hierarchical: the workers' full-precision messages
  Vector<T> mean_;
  Vector<T> node_mean_;             // hierarchical: scratch
  mutable Vector<T> server_error_;  // assembled from the chunks (several chunks only)
  mutable EncodeStats server_stats_;
};
// Base of the optimizers whose every message goes through one CompressedExchange: they run under
// every layout, and their Split and NodeStep are the exchange's.
template <typename T>
class ExchangingOptimizer : public DistributedOptimizer<T> {
 public:
  bool SupportsChunks() const override { return true; }
  bool SupportsHierarchy() const override { return true; }
  void Split(const StepContext& /*ctx*/, int /*worker*/, const Message& whole,
             std::vector<Message>& parts) override {
    exchange_.Split(whole, parts);
  }
  void NodeStep(const StepContext& ctx, int node, int part, std::span<const Message> received,
                std::vector<Message>& out) override {
    exchange_.NodeStep(ctx, node, part, received, out);
  }
  bool KeepCompressionRecords() override { return exchange_.KeepCompressionRecords(); }
  bool CanKeepCompressionRecords() const override { return exchange_.CanKeepCompressionRecords(); }
  const CompressionRecord<T>* LastCompression(int worker) const override {
    return exchange_.LastCompression(worker);
  }

 protected:
  ExchangingOptimizer(const ExchangeConfig<T>& config, const OptimizerContext& context)
      : exchange_(config, context) {}

  CompressedExchange<T> exchange_;
};

// The full-precision wire with a CompressedExchange's methods, so that a phased optimizer (below)
// routes its two exchanges alike; it keeps each worker's last Send statistics.
template <typename T>
class WireExchange {
 public:
  explicit WireExchange(const OptimizerContext& context)
      : wire_(context), stats_(static_cast<std::size_t>(context.workers)) {}

  void Send(const StepContext& /*ctx*/, int worker, ConstVectorRef<T> y, Message& out) {
    stats_[static_cast<std::size_t>(worker)] = wire_.Send(y, out);
  }
  void Split(const Message& whole, std::vector<Message>& parts) const { wire_.Split(whole, parts); }
  void NodeStep(const StepContext& /*ctx*/, int /*node*/, int part,
                std::span<const Message> received, std::vector<Message>& out) {
    wire_.NodeReduce(part, received, out);
  }
  void Reduce(const StepContext& /*ctx*/, int chunk, std::span<const Message> received,
              Message& out) {
    wire_.Reduce(chunk, received, out);
  }
  void Receive(std::span<const Message> reply, Vector<T>& out) const { wire_.Receive(reply, out); }
  const EncodeStats* LastEncode(int worker) const {
    return worker == kServer ? &wire_.server_stats() : &stats_[static_cast<std::size_t>(worker)];
  }
  void Persist(StateArchive& /*archive*/) {}  // the wire keeps nothing from one step to the next

 private:
  FullPrecisionWire<T> wire_;
  std::vector<EncodeStats> stats_;
};

// Base of the optimizers whose steps each go over one of two exchanges: the full-precision one on
// the steps FullPrecisionAt names (1-bit Adam's and 1-bit LAMB's warmup, EF21's first step with
// init = "full", MARINA's full rounds), the compressed exchange on the others. The full-precision
// exchange is the wire (WireExchange), or a CompressedExchange of its own where the algorithm
// lets the warmup's values travel at another precision (1-bit Adam's warmup_compressor = "fp16").
// What only carries messages (the server phase, the layout's Split and NodeStep) and what a run
// checks of the last step (LastEncode, LastCompression) follow the step's exchange here, once;
// the optimizer's worker phase and Apply say what each kind of step sends and does with the reply.
template <typename T, typename FullPrecision = WireExchange<T>>
class PhasedExchangeOptimizer : public ExchangingOptimizer<T> {
 public:
  void ServerStep(const StepContext& ctx, int chunk, std::span<const Message> received,
                  Message& out) override {
    if (FullPrecisionAt(ctx)) {
      full_precision_.Reduce(ctx, chunk, received, out);
    } else {
      exchange_.Reduce(ctx, chunk, received, out);
    }
  }
  void Split(const StepContext& ctx, int /*worker*/, const Message& whole,
             std::vector<Message>& parts) override {
    if (FullPrecisionAt(ctx)) {
      full_precision_.Split(whole, parts);
    } else {
      exchange_.Split(whole, parts);
    }
  }
  void NodeStep(const StepContext& ctx, int node, int part, std::span<const Message> received,
                std::vector<Message>& out) override {
    if (FullPrecisionAt(ctx)) {
      full_precision_.NodeStep(ctx, node, part, received, out);
    } else {
      exchange_.NodeStep(ctx, node, part, received, out);
    }
  }
  const EncodeStats* LastEncode(int worker) const override {
    return applied_full_precision_ ? full_precision_.LastEncode(worker)
                                   : exchange_.LastEncode(worker);
  }
  // A full-precision step compresses nothing.
  const CompressionRecord<T>* LastCompression(int worker) const override {
    return applied_full_precision_ ? nullptr : exchange_.LastCompression(worker);
  }

 protected:
  // The wire for the full-precision steps.
  PhasedExchangeOptimizer(const ExchangeConfig<T>& config, const OptimizerContext& context) requires
      std::is_same_v<FullPrecision, WireExchange<T>> : ExchangingOptimizer<T>(config, context),
                                                       full_precision_(context) {}
  // A compressed exchange of its own, configured by `full_precision`, for those steps.
  PhasedExchangeOptimizer(
      const ExchangeConfig<T>& config, const ExchangeConfig<T>& full_precision,
      const OptimizerContext& context) requires std::is_same_v<FullPrecision, CompressedExchange<T>>
      : ExchangingOptimizer<T>(config, context), full_precision_(full_precision, context) {}

  // Whether step ctx.t goes over the full-precision exchange.
  virtual bool FullPrecisionAt(const StepContext& ctx) const = 0;

  // Apply phase: whether the step went over the full-precision exchange, remembered for
  // LastEncode and LastCompression.
  bool AppliesFullPrecision(const StepContext& ctx) {
    applied_full_precision_ = FullPrecisionAt(ctx);
    return applied_full_precision_;
  }
  // The exchanges' state and which one carried the last step.
  void DeclareExchanges(OptimizerState<T>& state) {
    state.Nested("full_precision_exchange", full_precision_);
    state.Nested("exchange", exchange_);
    state.Value("full_precision", applied_full_precision_);
  }

  using ExchangingOptimizer<T>::exchange_;
  FullPrecision full_precision_;

 private:
  bool applied_full_precision_ = false;  // whether the last step applied was full precision
};

}  // namespace lemmalab
