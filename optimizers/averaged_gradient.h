// The data-parallel pattern of the uncompressed baselines: every worker sends its gradient
// g^(i) in full precision (the run's scalar type), the server averages the n messages in worker
// order and sends the mean back, and every replica applies its own update rule to that mean.
// Subclasses supply only the update rule (ApplyMean). The server state is per coordinate (there
// is none), so every scheme runs them. A trace shows the mean as g_bar.
#pragma once

#include <vector>

#include "optimizers/full_precision_wire.h"
#include "optimizers/optimizer.h"

namespace lemmalab {

template <typename T>
class AveragedGradientOptimizer : public DistributedOptimizer<T> {
 public:
  explicit AveragedGradientOptimizer(const OptimizerContext& context)
      : wire_(context), mean_(context.dimension) {}

  void WorkerStep(const StepContext& /*ctx*/, int /*worker*/, ConstVectorRef<T> /*x*/,
                  ConstVectorRef<T> g, Message& out) final {
    wire_.Send(g, out);
  }

  void ServerStep(const StepContext& /*ctx*/, int chunk, std::span<const Message> received,
                  Message& out) final {
    wire_.Reduce(chunk, received, out);
  }

  void Apply(const StepContext& ctx, std::span<const Message> reply, VectorRef<T> x) final {
    wire_.Receive(reply, mean_);
    if (const TraceScope trace = ctx.Trace(kServer)) {
      trace.Vector<T>({"g_bar", "the averaged gradient", "(1/n) sum_i g_t^(i), in full precision"},
                      mean_);
    }
    ApplyMean(ctx, mean_, x);
  }

  bool SupportsChunks() const final { return true; }
  bool SupportsHierarchy() const final { return true; }
  void Split(const StepContext& /*ctx*/, int /*worker*/, const Message& whole,
             std::vector<Message>& parts) final {
    wire_.Split(whole, parts);
  }
  void NodeStep(const StepContext& /*ctx*/, int /*node*/, int part,
                std::span<const Message> received, std::vector<Message>& out) final {
    wire_.NodeReduce(part, received, out);
  }

 protected:
  // x <- update(x, g_mean) on every replica.
  virtual void ApplyMean(const StepContext& ctx, const Vector<T>& g_mean, VectorRef<T> x) = 0;

 private:
  FullPrecisionWire<T> wire_;
  Vector<T> mean_;
};

}  // namespace lemmalab
