// Optimizers that step every worker at once, with the workers as a batch dimension: the state of
// n workers is one n x d array, and each phase of a step (worker phase, exchange, server phase,
// update) is one ForEach over all of them (batched/backend.h), on the CPU or as one CUDA launch.
// This is how a run uses a GPU: a loop of n small launches would leave it idle.
//
// A batched optimizer is the CPU optimizer of the same registry name, read from the same options
// by the same readers, and it computes the same bits from the same gradients
// (tests/batched_optimizer_test.cc feeds both the same gradients and compares every state
// vector): the CPU backend emulates the GPU exactly. What has no batched form yet is refused by
// MakeBatchedOptimizer with the list of what has.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "batched/backend.h"
#include "batched/device_state.h"
#include "core/options.h"
#include "optimizers/optimizer.h"

namespace lemmalab::batched {

struct BatchedContext {
  int workers = 1;
  std::int64_t dimension = 0;
  Backend backend = Backend::kHost;
  std::vector<Layer> layers = {};  // the problem's layers (block-sign's blocks); empty: one layer

  // The shape of the parameter vector, for compressors (OptimizerContext::shape).
  CompressorShape shape() const {
    return layers.empty() ? CompressorShape::Flat(dimension) : CompressorShape{dimension, layers};
  }
};

template <typename T>
class Senders;  // batched/senders.h

template <typename T>
class BatchedOptimizer {
 public:
  virtual ~BatchedOptimizer() = default;

  // Step ctx.t from the workers' stochastic gradients (n rows of d in the backend's memory, row
  // i worker i's): updates x (d elements, every replica's) in place. Draws come from the streams
  // the CPU optimizer draws from (ctx.seed, the purpose, the worker, ctx.t).
  virtual void Step(const StepContext& ctx, const Buffer<T>& gradients, Buffer<T>& x) = 0;

  // The bytes of the messages step t sends, as the CPU optimizer's wire carries them: what each
  // worker sends and what the server sends back.
  struct WireBytes {
    std::size_t worker = 0, server = 0;
  };
  virtual WireBytes Wire(std::int64_t t) const = 0;

  // Declares the state a later step reads, as the CPU optimizer's DeclareState does (the same
  // quantities, held by the same replicas): what probes observe and checkpoints save.
  virtual void DeclareState(DeviceState<T>& state) = 0;

  // What Observable::Observe shows of the CPU optimizer, copied to the host: `quantity` as
  // `worker` (or kServer) holds it, or nullopt when the algorithm has no such quantity there.
  std::optional<std::vector<T>> Observe(Quantity quantity, int worker) {
    HostCopies<T> copies;
    OptimizerState<T> query(quantity, worker);
    DeviceState<T> state(query, copies);
    DeclareState(state);
    if (query.found() == nullptr) return std::nullopt;
    return std::vector<T>(query.found()->begin(), query.found()->end());
  }

  // Every worker's own parameters x^(i), n rows of d, for an algorithm whose replicas drift
  // apart between synchronisations (DistributedOptimizer::LocalParameters); nullptr while every
  // replica's is x.
  virtual const Buffer<T>* LocalParameters() const { return nullptr; }

  // Statistics of the last encode of `worker` (or kServer): elements, finite inputs outside the
  // compressor's domain, non-finite inputs; nullopt when it sends nothing it counts.
  virtual std::optional<EncodeStats> LastEncode(int worker) const {
    (void)worker;
    return std::nullopt;
  }

  // Compression records (Observable's, what the compressor probes replay): whether the exchange
  // can keep them; keeping them from the next step on; `worker`'s (or kServer's) compression of
  // step t into `record`, false when it did not compress at step t or records are not kept.
  bool CanKeepCompressionRecords() const;
  void KeepCompressionRecords();
  bool LastCompression(int worker, std::int64_t t, CompressionRecord<T>& record) const;

 protected:
  // The exchange's senders: the workers', then the server's where it compresses; none for the
  // averaged-gradient baselines.
  virtual std::vector<Senders<T>*> ExchangeSenders() const { return {}; }
};

// The registry names of the optimizers that have a batched form.
std::span<const std::string_view> BatchedOptimizerNames();

// The batched form of the optimizer an [[optimizer]] table names (its "name" and options, as
// MakeOptimizer reads them). UserError naming the optimizer, option or compressor, and what is
// supported instead, for anything without a batched form; unknown keys are rejected as by
// MakeOptimizer.
template <typename T>
std::unique_ptr<BatchedOptimizer<T>> MakeBatchedOptimizer(OptionTable& options,
                                                          const BatchedContext& context);

}  // namespace lemmalab::batched
