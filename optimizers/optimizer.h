// A distributed optimizer as three phases, and the optimizer registry.
//
// Every algorithm of the papers is written as
//   1. WorkerStep: what worker i computes from its stochastic gradient g_t^(i) and its local
//      state, and the message it sends;
//   2. ServerStep: what the aggregation point does with the n messages it receives (server
//      state, server error feedback, re-compression), and the message it sends back;
//   3. Apply: how every replica applies the message that comes back to its parameters x.
// The phases know nothing about who runs them: comm/ steps them as n simulated workers in one
// process or as MPI ranks, under one of its communication schemes. Hyper-parameters are
// validated when an optimizer is built; its state vectors are created then too, for every worker
// it simulates.
//
// The chunked schemes (comm/scheme.h) cut the aggregation into pieces, and an optimizer that
// supports them is built for the cut (OptimizerContext::layout):
//   - flat chunked (all-reduce, compressed all-reduce): server chunk c serves the coordinates
//     [bounds[c], bounds[c+1]); a worker's message is Split into one part per chunk, chunk c's
//     server runs ServerStep on the n parts c, and Apply receives every chunk's reply.
//   - hierarchical (Birder's Hierarchical-1-bit-All-Reduce): workers send their payload in full
//     precision, split into one part per local rank r of a node; NodeStep averages node k's
//     parts r and compresses them with the node's error feedback (the workers' compression,
//     moved to the node), split into that range's server chunks; servers and Apply as above.
// With one chunk and no hierarchy (the parameter-server and all-gather schemes, the default)
// this is the plain worker -> server -> broadcast pattern of the papers' analysis.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "compressors/compressor.h"
#include "core/options.h"
#include "core/registry.h"
#include "core/rng.h"
#include "core/state.h"
#include "core/types.h"
#include "optimizers/optimizer_state.h"
#include "optimizers/trace.h"

namespace lemmalab {

struct StepContext {
  std::int64_t t = 1;  // the step, 1-based as in the papers' "for t = 1, ..., T"
  double lr = 0.0;     // alpha_t
  std::uint64_t seed = 0;
  StepTrace* trace = nullptr;  // set when the run is traced (optimizers/trace.h)
  // Set (by SIGINT, say) to abandon the step: a worker that has not started yet throws
  // Interrupted instead (comm/cluster.h). Null where a step must run whole: under MPI, whose
  // ranks agree on a stop between steps.
  const std::atomic<bool>* stop = nullptr;

  PhiloxStream Stream(Purpose purpose, std::uint32_t worker) const {
    return PhiloxStream({seed, purpose, worker, static_cast<std::uint64_t>(t)});
  }
  // Where `worker` (or kServer) records this step's values; false when they are not traced.
  TraceScope Trace(int worker) const {
    return trace != nullptr && trace->Wants(t, worker) ? TraceScope(trace, t, worker)
                                                       : TraceScope();
  }
};

// The rule on the factor of an exponential moving average (beta, beta1, beta2, momentum): in
// [0, 1), since the convergence proofs divide by 1 - beta and beta = 1 would freeze the average
// at its start. One constant for every optimizer's reader and for the premises and bound
// calculators that state the same rule (theory/), so that none accepts what a run refuses.
inline constexpr Interval kMovingAverageFactor{0.0, 1.0, false, true};

// Worker field of values that belong to no sender (a probe's run-wide series, the metrics); the
// results store it as NULL.
inline constexpr int kRunWide = std::numeric_limits<int>::min();

// One sender's last compression, kept for the probes that test the compressor itself (repeated
// draws on the same input for unbiasedness, ||C(u) - u|| against the declared q) while
// KeepCompressionRecords is on. `input` is what the compressor was given (y + a e with error
// feedback), `output` what the receiver decodes; `maker` builds fresh instances of the same
// configuration for `shape`, so a probe can draw again without touching the run's instance.
template <typename T>
struct CompressionRecord {
  Vector<T> input;
  Vector<T> output;
  const Compressor<T>* compressor = nullptr;
  CompressorMaker<T> maker;
  CompressorShape shape;
};

// What probes may observe of an optimizer: its state vectors, its encode statistics and, on
// request, its compression records, reached through DistributedOptimizer::observable().
// sum v_j^2 in double, in compressors/one_bit_element.h's fixed order (16 partial sums, each in
// index order, combined pairwise), the order the GPU reproduces.
template <typename T>
double FixedOrderSquaredNorm(const Vector<T>& v);

template <typename T>
class Observable {
 public:
  virtual ~Observable() = default;

  // A state vector after the last step, or nullptr when the algorithm has no such quantity.
  // `worker` is a worker index or kServer. Found among the members DeclareState declares.
  const Vector<T>* Observe(Quantity quantity, int worker) const {
    OptimizerState<T> query(quantity, worker);
    // Observing only takes the members' addresses; DeclareState is not const because the same
    // declarations restore the members from a checkpoint.
    const_cast<Observable*>(this)->DeclareState(query);
    return query.found();
  }
  // ||v||^2 in double of the vector Observe(quantity, worker) would find, summed in
  // FixedOrderSquaredNorm's order, or nullopt when there is none or it is empty (another
  // process's worker). A GPU run computes it on the device for every worker at once, to the same
  // bits, instead of copying the vectors to the host.
  virtual std::optional<double> SquaredNorm(Quantity quantity, int worker) const {
    const Vector<T>* v = Observe(quantity, worker);
    if (v == nullptr || v->size() == 0) return std::nullopt;
    return FixedOrderSquaredNorm(*v);
  }
  // Statistics of the last Encode by `worker` (or kServer), or nullptr when it sends raw values.
  virtual const EncodeStats* LastEncode(int /*worker*/) const { return nullptr; }
  // Starts keeping a CompressionRecord per sender from the next step on; returns false when the
  // optimizer cannot (no compressor, or compression that lives at the nodes of a hierarchy).
  virtual bool KeepCompressionRecords() { return false; }
  // Whether KeepCompressionRecords would succeed.
  virtual bool CanKeepCompressionRecords() const { return false; }
  // Worker `worker`'s (or, with one server chunk, kServer's) last compression, or nullptr.
  virtual const CompressionRecord<T>* LastCompression(int /*worker*/) const { return nullptr; }

  // Declares the state a later step reads, each member with its tag and who holds it
  // (optimizers/optimizer_state.h): every worker's and the server's vectors, error feedback and
  // compressor state included, and step counters. Scratch that a step overwrites before reading
  // is not state. The state of workers another process runs is empty here and is saved as such,
  // so each MPI rank saves its own.
  virtual void DeclareState(OptimizerState<T>& state) = 0;
};

// Weight decay, in the two forms the literature uses (optimizers/weight_decay.h applies them):
//   decoupled (Loshchilov & Hutter, ICLR 2019, AdamW): every replica shrinks x <- (1 - alpha_t
//     lambda) x before applying the algorithm's update, as PyTorch's AdamW does;
//   l2: each worker adds lambda x to its stochastic gradient before its worker phase, i.e. the
//     objective gains (lambda/2)||x||^2 (PyTorch's `weight_decay` of SGD and Adam).
enum class WeightDecayMode { kDecoupled, kL2 };
struct WeightDecay {
  double lambda = 0;  // >= 0; 0 turns weight decay off
  WeightDecayMode mode = WeightDecayMode::kDecoupled;

  bool l2() const { return lambda != 0 && mode == WeightDecayMode::kL2; }
  bool decoupled() const { return lambda != 0 && mode == WeightDecayMode::kDecoupled; }
};

// What a trace calls a step's input and result, which the cluster records for every algorithm:
// the worker's stochastic gradient and the replicas' parameters after the update.
struct StepSymbols {
  TraceSymbol gradient = {"g", "the worker's stochastic gradient",
                          "g_t^(i) = grad f_i(x_t; xi_t^(i)), on the worker's minibatch"};
  TraceSymbol parameters = {"x", "the replicas' parameters", "x_{t+1}, after the step's update"};
};

template <typename T>
class DistributedOptimizer : public Observable<T> {
 public:
  // The names a trace gives the step's gradient and parameters: the paper's lines where the
  // algorithm cites them.
  virtual StepSymbols step_symbols() const { return {}; }

  // Worker `worker` at parameters x (its own replica, see LocalParameters) with its
  // stochastic gradient g computes the message it sends.
  virtual void WorkerStep(const StepContext& ctx, int worker, ConstVectorRef<T> x,
                          ConstVectorRef<T> g, Message& out) = 0;
  // The server of chunk `chunk` (0 with one chunk) with the workers' parts of that chunk, in
  // worker order (hierarchical: the nodes' parts, in node order), computes its reply.
  virtual void ServerStep(const StepContext& ctx, int chunk, std::span<const Message> received,
                          Message& out) = 0;
  // Every replica applies the replies of all chunks, in chunk order.
  virtual void Apply(const StepContext& ctx, std::span<const Message> reply, VectorRef<T> x) = 0;

  // Whether the optimizer runs under the chunked layouts: its server state is per coordinate
  // and its messages split (flat), and its workers' compression can move to the node
  // (hierarchical). Optimizers that cannot say so here are refused by those schemes.
  virtual bool SupportsChunks() const { return false; }
  virtual bool SupportsHierarchy() const { return false; }

  // Splits worker `worker`'s message of step ctx.t into the parts the layout sends: one per
  // server chunk (flat), one per local rank (hierarchical). The default serves one chunk.
  virtual void Split(const StepContext& ctx, int worker, const Message& whole,
                     std::vector<Message>& parts);
  // Hierarchical: node `node`'s step for its part `part` (a local rank's range): averages the
  // node's workers' full-precision parts (in worker order), compresses the mean with the node's
  // error feedback and splits it into the range's server chunks.
  virtual void NodeStep(const StepContext& ctx, int node, int part,
                        std::span<const Message> received, std::vector<Message>& out);

  // Saves or restores the state DeclareState declares, for checkpoints (core/state.h).
  void Persist(StateArchive& archive) {
    OptimizerState<T> state(archive);
    this->DeclareState(state);
  }

  // Algorithms whose replicas drift apart between synchronisations (local SGD) keep each
  // worker's parameters x^(i) and return them here; the runner evaluates worker i's gradient
  // there. nullptr (the default) means every replica equals the synchronised x.
  virtual const Vector<T>* LocalParameters(int /*worker*/) const { return nullptr; }

  // What probes may observe: the optimizer itself, which implements Observable's methods it has
  // state for. Probes and the run loop read an optimizer's state through this and nothing else.
  Observable<T>& observable() { return *this; }
  const Observable<T>& observable() const { return *this; }

  // The weight decay the `weight_decay` options ask for (MakeOptimizer sets it), which whoever
  // runs the phases applies around them (optimizers/weight_decay.h): no algorithm sees it but
  // through its gradients (l2) or its parameters (decoupled).
  const WeightDecay& weight_decay() const { return weight_decay_; }
  void set_weight_decay(const WeightDecay& decay) { weight_decay_ = decay; }

 private:
  WeightDecay weight_decay_;
};

// How the scheme cuts the aggregation (see the top of this file). The default, an empty
// `bounds`, is one chunk covering everything.
struct ExchangeLayout {
  // Server chunk c serves [bounds[c], bounds[c+1]); bounds run from 0 to the dimension, in
  // multiples of kChunkAlign in between. Empty: one chunk.
  std::vector<std::int64_t> bounds;
  // Hierarchical: workers_per_node ranges (one per local rank), each cut into `nodes` server
  // chunks, so range r consists of server chunks [r * nodes, (r + 1) * nodes).
  bool hierarchical = false;
  int nodes = 1;
  int workers_per_node = 1;

  int chunks() const { return bounds.empty() ? 1 : static_cast<int>(bounds.size()) - 1; }
  // The bounds of the parts a worker's message is split into (server chunks, or node ranges).
  std::vector<std::int64_t> WorkerBounds(std::int64_t dimension) const;
  // The bounds of the server chunks inside node range `part`, relative to that range.
  std::vector<std::int64_t> NodeBounds(int part) const;
  // [begin, end) of server chunk c.
  std::pair<std::int64_t, std::int64_t> Chunk(int c, std::int64_t dimension) const;
};

struct OptimizerContext {
  std::int64_t dimension = 0;
  int workers = 1;
  std::vector<Layer> layers = {};  // the problem's layers; empty means one layer
  ExchangeLayout layout = {};
  // The workers this process runs (under MPI, its rank's own); empty: all of them. Per-worker
  // state is allocated for these only, so a rank does not hold n workers' vectors.
  std::vector<int> local_workers = {};

  bool Runs(int worker) const {
    return local_workers.empty() ||
           std::find(local_workers.begin(), local_workers.end(), worker) != local_workers.end();
  }
  // The length of worker `worker`'s state vectors here: the dimension, or 0 elsewhere.
  std::int64_t LocalDimension(int worker) const { return Runs(worker) ? dimension : 0; }

  // The shape of the whole parameter vector, for compressors.
  CompressorShape shape() const {
    return layers.empty() ? CompressorShape::Flat(dimension) : CompressorShape{dimension, layers};
  }
};

// One zero vector per worker, of its LocalDimension.
template <typename T>
std::vector<Vector<T>> LocalStates(const OptimizerContext& context) {
  std::vector<Vector<T>> states;
  for (int i = 0; i < context.workers; ++i)
    states.push_back(Vector<T>::Zero(context.LocalDimension(i)));
  return states;
}

template <typename T>
using OptimizerFactory = std::unique_ptr<DistributedOptimizer<T>> (*)(
    OptionTable& options, const OptimizerContext& context);

struct OptimizerInfo {
  std::string_view name;
  std::string_view summary;
  std::string_view reference;  // the paper and the algorithm box or lines it implements
  OptimizerFactory<float> make_f32;
  OptimizerFactory<double> make_f64;
  // The default of the `weight_decay` option every optimizer has (optimizers/weight_decay.h):
  // 0 (off) except for AdamW.
  double weight_decay = 0.0;
};

const Registry<OptimizerInfo>& Optimizers();

// The options an optimizer reads, with their types, rules and defaults, found by building it
// from an empty table (so the listing is what the code reads).
std::vector<OptionTable::Use> OptimizerOptions(const OptimizerInfo& info);

// Builds the optimizer an [[optimizer]] table names, with the weight decay its `weight_decay`
// and `weight_decay_mode` options ask for, and rejects keys no one has read; callers read their
// own keys (label, schedule) from the table first.
template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeOptimizer(OptionTable& options,
                                                       const OptimizerContext& context);

}  // namespace lemmalab
