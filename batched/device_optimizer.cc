#include "batched/device_optimizer.h"

#include <cstring>
#include <vector>

#include "batched/device_state.h"
#include "batched/optimizers.h"

namespace lemmalab::batched {
namespace {

template <typename T>
class DeviceOptimizer final : public DistributedOptimizer<T> {
 public:
  DeviceOptimizer(std::unique_ptr<BatchedOptimizer<T>> batched, const OptimizerContext& context,
                  Backend backend)
      : batched_(std::move(batched)),
        workers_(context.workers),
        dimension_(context.dimension),
        gradients_(static_cast<std::size_t>(context.workers * context.dimension)),
        x_(static_cast<std::size_t>(context.dimension)),
        device_gradients_(backend, gradients_.size()),
        device_x_(backend, x_.size()),
        stats_(static_cast<std::size_t>(context.workers) + 1) {}

  void WorkerStep(const StepContext& ctx, int worker, ConstVectorRef<T> x, ConstVectorRef<T> g,
                  Message& out) override {
    // Workers run concurrently, each on its own row; every replica's x is the same.
    std::memcpy(gradients_.data() + static_cast<std::size_t>(worker * dimension_), g.data(),
                static_cast<std::size_t>(dimension_) * sizeof(T));
    if (worker == 0) std::memcpy(x_.data(), x.data(), x_.size() * sizeof(T));
    out.bytes.assign(batched_->Wire(ctx.t).worker, 0);
  }

  void ServerStep(const StepContext& ctx, int /*chunk*/, std::span<const Message> /*received*/,
                  Message& out) override {
    device_gradients_.Upload(gradients_);
    device_x_.Upload(x_);
    batched_->Step(ctx, device_gradients_, device_x_);
    copies_.Invalidate();
    device_x_.Download(x_);
    for (int w = 0; w < workers_; ++w) {
      stats_[static_cast<std::size_t>(w)] = batched_->LastEncode(w).value_or(EncodeStats{});
    }
    stats_.back() = batched_->LastEncode(kServer).value_or(EncodeStats{});
    out.bytes.assign(batched_->Wire(ctx.t).server, 0);
  }

  void Apply(const StepContext& /*ctx*/, std::span<const Message> /*reply*/,
             VectorRef<T> x) override {
    std::memcpy(x.data(), x_.data(), x_.size() * sizeof(T));
  }

  const EncodeStats* LastEncode(int worker) const override {
    return &stats_[worker == kServer ? stats_.size() - 1 : static_cast<std::size_t>(worker)];
  }

  // The batched optimizer's state through host copies (batched/device_state.h): probes and
  // checkpoints see what they see of the CPU optimizer.
  void DeclareState(OptimizerState<T>& state) override {
    DeviceState<T> device(state, copies_);
    batched_->DeclareState(device);
  }

 private:
  std::unique_ptr<BatchedOptimizer<T>> batched_;
  int workers_;
  std::int64_t dimension_;
  std::vector<T> gradients_;  // n x d, filled by the worker phases
  std::vector<T> x_;          // the replicas' x, before and after the step
  Buffer<T> device_gradients_, device_x_;
  std::vector<EncodeStats> stats_;  // of the last step: the workers', then the server's
  HostCopies<T> copies_;            // of the device state, for probes and checkpoints
};

}  // namespace

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeDeviceOptimizer(OptionTable& options,
                                                             const OptimizerContext& context,
                                                             Backend backend) {
  std::unique_ptr<BatchedOptimizer<T>> batched = MakeBatchedOptimizer<T>(
      options, {context.workers, context.dimension, backend, context.layers});
  return std::make_unique<DeviceOptimizer<T>>(std::move(batched), context, backend);
}

template std::unique_ptr<DistributedOptimizer<float>> MakeDeviceOptimizer(OptionTable&,
                                                                          const OptimizerContext&,
                                                                          Backend);
template std::unique_ptr<DistributedOptimizer<double>> MakeDeviceOptimizer(OptionTable&,
                                                                           const OptimizerContext&,
                                                                           Backend);

}  // namespace lemmalab::batched
