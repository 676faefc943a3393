// The data-parallel pattern of the uncompressed baselines: every worker sends its gradient
// g^(i) in full precision (the run's scalar type), the server averages the n messages in worker
// order and sends the mean back, and every replica applies its own update rule to that mean.
// Subclasses supply only the update rule (ApplyMean).
#pragma once

#include <vector>

#include "compressors/identity.h"
#include "optimizers/optimizer.h"

namespace lemmalab {

template <typename T>
class AveragedGradientOptimizer : public DistributedOptimizer<T> {
 public:
  explicit AveragedGradientOptimizer(const OptimizerContext& context)
      : server_wire_(MakeIdentity<T>()), mean_(context.dimension) {
    for (int i = 0; i < context.workers; ++i) worker_wire_.push_back(MakeIdentity<T>());
  }

  void WorkerStep(const StepContext& ctx, int worker, ConstVectorRef<T> /*x*/, ConstVectorRef<T> g,
                  Message& out) final {
    PhiloxStream stream =
        ctx.Stream(Purpose::kWorkerCompression, static_cast<std::uint32_t>(worker));
    worker_wire_[static_cast<std::size_t>(worker)]->Encode(g, stream, out);
  }

  void ServerStep(const StepContext& ctx, std::span<const Message> received, Message& out) final {
    MeanOfMessages(*server_wire_, received, mean_);
    PhiloxStream stream = ctx.Stream(Purpose::kServerCompression, kServerStream);
    server_wire_->Encode(mean_, stream, out);
  }

  void Apply(const StepContext& ctx, const Message& broadcast, VectorRef<T> x) final {
    server_wire_->Decode(broadcast, mean_);
    ApplyMean(ctx, mean_, x);
  }

 protected:
  // x <- update(x, g_mean) on every replica.
  virtual void ApplyMean(const StepContext& ctx, const Vector<T>& g_mean, VectorRef<T> x) = 0;

 private:
  std::vector<std::unique_ptr<Compressor<T>>> worker_wire_;
  std::unique_ptr<Compressor<T>> server_wire_;
  Vector<T> mean_;
};

}  // namespace lemmalab
