#include "batched/device_optimizer.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "batched/device_state.h"
#include "batched/kernels.h"
#include "batched/optimizers.h"

namespace lemmalab::batched {
namespace {

template <typename T>
class DeviceOptimizer final : public DistributedOptimizer<T>, public GradientSource<T> {
 public:
  DeviceOptimizer(std::unique_ptr<BatchedOptimizer<T>> batched, const OptimizerContext& context,
                  Backend backend, std::shared_ptr<const DeviceSamples<T>> samples)
      : batched_(std::move(batched)),
        device_gradient_source_(samples != nullptr ? std::make_unique<BatchedGradients<T>>(
                                                         std::move(samples), context.dimension)
                                                   : nullptr),
        workers_(context.workers),
        dimension_(context.dimension),
        // The CPU's gradients pass through the host; the device's never do (nor does anything
        // of an adapter built only to measure its device memory).
        gradients_(device_gradient_source_ != nullptr || backend == Backend::kMeasure
                       ? 0
                       : static_cast<std::size_t>(context.workers * context.dimension)),
        device_gradients_(backend, static_cast<std::size_t>(context.workers * context.dimension)),
        device_x_(backend, static_cast<std::size_t>(context.dimension)),
        stats_(static_cast<std::size_t>(context.workers) + 1),
        records_(static_cast<std::size_t>(context.workers) + 1) {}

  void WorkerStep(const StepContext& ctx, int worker, ConstVectorRef<T> /*x*/, ConstVectorRef<T> g,
                  Message& out) override {
    // Workers run concurrently, each on its own row.
    if (!gradients_on_device_) {
      std::memcpy(gradients_.data() + static_cast<std::size_t>(worker * dimension_), g.data(),
                  static_cast<std::size_t>(dimension_) * sizeof(T));
    }
    out = Message::Elsewhere(static_cast<std::int64_t>(batched_->Wire(ctx.t).worker));
  }

  void ServerStep(const StepContext& ctx, int /*chunk*/, std::span<const Message> /*received*/,
                  Message& out) override {
    out = Message::Elsewhere(static_cast<std::int64_t>(batched_->Wire(ctx.t).server));
  }

  // The whole batched step, from the synchronised x the cluster holds (a worker's x may be its
  // own, LocalParameters).
  void Apply(const StepContext& ctx, std::span<const Message> /*reply*/, VectorRef<T> x) override {
    t_ = ctx.t;
    if (!gradients_on_device_) device_gradients_.Upload(gradients_);
    gradients_on_device_ = false;
    // x has not changed since Compute uploaded it (the cluster applies nothing in between).
    if (!x_on_device_) {
      device_x_.Upload(std::span<const T>(x.data(), static_cast<std::size_t>(x.size())));
    }
    x_on_device_ = false;
    batched_->Step(ctx, device_gradients_, device_x_);
    copies_.Invalidate();
    ++state_version_;
    device_x_.Download(std::span<T>(x.data(), static_cast<std::size_t>(x.size())));
    for (int w = 0; w < workers_; ++w) {
      stats_[static_cast<std::size_t>(w)] = batched_->LastEncode(w).value_or(EncodeStats{});
    }
    stats_.back() = batched_->LastEncode(kServer).value_or(EncodeStats{});
    CopyLocalParameters();
  }

  // Probes' squared norms (Observable::SquaredNorm), reduced on the device in the CPU's fixed
  // order: every row of the buffer that holds the quantity at once, at most once per step, and
  // only the sums go to the host, not the vectors.
  std::optional<double> SquaredNorm(Quantity quantity, int worker) const override {
    DeviceLocation<T> where;
    OptimizerState<T> query(quantity, worker);
    DeviceState<T> locate(query, where);
    batched_->DeclareState(locate);
    if (where.buffer == nullptr || where.d == 0) return std::nullopt;
    RowNorms& norms = norms_[where.buffer];
    if (norms.version != state_version_) {
      const Backend backend = where.buffer->backend();
      const auto rows = static_cast<std::int64_t>(where.buffer->size()) / where.d;
      if (norms.sums.size() != static_cast<std::size_t>(rows)) {
        norms.partials =
            Buffer<double>(backend, static_cast<std::size_t>(rows * one_bit::kPartials));
        norms.sums = Buffer<double>(backend, static_cast<std::size_t>(rows));
      }
      ForEach(backend, rows * one_bit::kPartials,
              SquaredNormPartials<T>{where.buffer->data(), where.d, norms.partials.data()});
      ForEach(backend, rows, CombineRowPartials{norms.partials.data(), norms.sums.data()});
      norms.values = norms.sums.ToHost();
      norms.version = state_version_;
    }
    return norms.values[static_cast<std::size_t>(std::max<std::int64_t>(where.row, 0))];
  }

  const EncodeStats* LastEncode(int worker) const override {
    return &stats_[worker == kServer ? stats_.size() - 1 : static_cast<std::size_t>(worker)];
  }

  // Compression records: the device's inputs and decoded messages, copied to the host when a
  // probe asks, at most once per step and sender.
  bool CanKeepCompressionRecords() const override { return batched_->CanKeepCompressionRecords(); }
  bool KeepCompressionRecords() override {
    if (!batched_->CanKeepCompressionRecords()) return false;
    batched_->KeepCompressionRecords();
    return true;
  }
  const CompressionRecord<T>* LastCompression(int worker) const override {
    const std::size_t slot =
        worker == kServer ? records_.size() - 1 : static_cast<std::size_t>(worker);
    Copied& copied = records_[slot];
    if (copied.step != t_) {
      copied.step = t_;
      copied.present = batched_->LastCompression(worker, t_, copied.record);
    }
    return copied.present ? &copied.record : nullptr;
  }

  // GradientSource: every worker's gradient on the device, at its own x^(i) where the algorithm
  // keeps one, else at x.
  void Compute(const StepContext& ctx, ConstVectorRef<T> x, std::span<double> losses,
               std::span<double> norms) override {
    WorkerParameters<T> at{device_x_.data(), 0};
    if (const Buffer<T>* local = batched_->LocalParameters()) {
      at = {local->data(), dimension_};
    } else {
      device_x_.Upload(std::span<const T>(x.data(), static_cast<std::size_t>(x.size())));
      x_on_device_ = true;
    }
    device_gradient_source_->Compute(ctx, at, device_gradients_, losses, norms);
    gradients_on_device_ = true;
  }
  void CopyTo(std::span<Vector<T>> gradients) const override {
    for (std::size_t i = 0; i < gradients.size(); ++i) {
      gradients[i].resize(dimension_);
      device_gradients_.Download({gradients[i].data(), static_cast<std::size_t>(dimension_)},
                                 i * static_cast<std::size_t>(dimension_));
    }
  }
  bool ComputesGradients() const { return device_gradient_source_ != nullptr; }

  // Host copies of the workers' own models, taken after each step, before the next step's
  // workers read them concurrently.
  const Vector<T>* LocalParameters(int worker) const override {
    return local_.empty() ? nullptr : &local_[static_cast<std::size_t>(worker)];
  }

  // The batched optimizer's state through host copies (batched/device_state.h): probes and
  // checkpoints see what they see of the CPU optimizer.
  void DeclareState(OptimizerState<T>& state) override {
    DeviceState<T> device(state, copies_);
    batched_->DeclareState(device);
    if (state.restoring()) {
      CopyLocalParameters();
      ++state_version_;
    }
  }

 private:
  // (Only the CPU's gradients are taken there: the device's read the device's copy.)
  void CopyLocalParameters() {
    const Buffer<T>* rows = batched_->LocalParameters();
    if (rows == nullptr || device_gradient_source_ != nullptr) {
      local_.clear();
      return;
    }
    local_.resize(static_cast<std::size_t>(workers_));
    for (std::size_t i = 0; i < local_.size(); ++i) {
      local_[i].resize(dimension_);
      rows->Download({local_[i].data(), static_cast<std::size_t>(dimension_)},
                     i * static_cast<std::size_t>(dimension_));
    }
  }

  std::unique_ptr<BatchedOptimizer<T>> batched_;
  std::unique_ptr<BatchedGradients<T>> device_gradient_source_;  // null: the CPU's gradients
  bool gradients_on_device_ = false;  // this step's gradients were computed on the device
  bool x_on_device_ = false;          // this step's x was uploaded for them
  int workers_;
  std::int64_t dimension_;
  std::vector<T> gradients_;  // n x d, filled by the worker phases (the CPU's gradients only)
  Buffer<T> device_gradients_, device_x_;
  std::vector<EncodeStats> stats_;   // of the last step: the workers', then the server's
  HostCopies<T> copies_;             // of the device state, for probes and checkpoints
  std::uint64_t state_version_ = 0;  // changes whenever the state does
  struct RowNorms {
    std::uint64_t version = ~std::uint64_t{0};  // of the state they were computed from
    Buffer<double> partials, sums;              // rows x kPartials, rows
    std::vector<double> values;                 // the sums, on the host
  };
  mutable std::map<const Buffer<T>*, RowNorms> norms_;  // per state buffer, for SquaredNorm
  std::vector<Vector<T>> local_;  // the workers' own x^(i); empty while they are x
  std::int64_t t_ = 0;            // the last step
  struct Copied {
    std::int64_t step = -1;  // the step it was copied at
    bool present = false;    // the sender compressed at that step
    CompressionRecord<T> record;
  };
  mutable std::vector<Copied> records_;  // per sender: the workers', then the server's
};

}  // namespace

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> MakeDeviceOptimizer(
    OptionTable& options, const OptimizerContext& context, Backend backend,
    std::shared_ptr<const DeviceSamples<T>> samples) {
  std::unique_ptr<BatchedOptimizer<T>> batched = MakeBatchedOptimizer<T>(
      options, {context.workers, context.dimension, backend, context.layers});
  return std::make_unique<DeviceOptimizer<T>>(std::move(batched), context, backend,
                                              std::move(samples));
}

template <typename T>
GradientSource<T>* GradientSourceOf(DistributedOptimizer<T>& optimizer) {
  auto* device = dynamic_cast<DeviceOptimizer<T>*>(&optimizer);
  return device != nullptr && device->ComputesGradients() ? device : nullptr;
}

#define LEMMALAB_INSTANTIATE(T)                                                                 \
  template std::unique_ptr<DistributedOptimizer<T>> MakeDeviceOptimizer(                        \
      OptionTable&, const OptimizerContext&, Backend, std::shared_ptr<const DeviceSamples<T>>); \
  template GradientSource<T>* GradientSourceOf(DistributedOptimizer<T>&);
LEMMALAB_INSTANTIATE(float)
LEMMALAB_INSTANTIATE(double)
#undef LEMMALAB_INSTANTIATE

}  // namespace lemmalab::batched
