#include "engine/device.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "batched/device_optimizer.h"
#include "batched/optimizers.h"
#include "core/error.h"
#include "engine/spec.h"

namespace lemmalab {

void RequireDeviceFits(const RunSpec& spec, batched::Backend backend, bool multi_process,
                       bool traced) {
  if (spec.device == Device::kCpu) return;
  const std::string key = fmt::format("{}: device = \"cuda\"", spec.path.string());
  const auto refuse = [&](std::string_view why) {
    throw UserError(fmt::format("{}: {}", key, why));
  };
  if (backend == batched::Backend::kCuda) {
    if (!batched::HaveCudaBackend()) {
      refuse(
          "this lemmalab was built without CUDA (CMake found no CUDA toolkit), so it runs on the "
          "CPU only: remove the key, or build where nvcc is installed (docs/gpu.md)");
    }
    if (const std::string missing = batched::CudaDeviceUnavailable(); !missing.empty()) {
      refuse(fmt::format("no CUDA device: {} (lemmalab list devices says what this machine has)",
                         missing));
    }
  }
  if (multi_process) {
    refuse(
        "a GPU run is one process, its workers a batch dimension on one GPU: run it without "
        "mpirun");
  }
  if (spec.comm.scheme != Scheme::kParameterServer && spec.comm.scheme != Scheme::kAllgather) {
    refuse(
        fmt::format("scheme = \"{}\" does not run on the GPU yet; GPU runs use the "
                    "parameter-server or allgather scheme",
                    SchemeName(spec.comm.scheme)));
  }
  if (traced) refuse("lemmalab trace does not run on the GPU yet");
  // Every optimizer's options, read by its batched form, built on the measuring backend (nothing
  // allocated; a dimension of 64 stands for the problem's, which the data decides).
  for (const OptimizerSpec& o : spec.optimizers) {
    batched::MakeBatchedOptimizer<float>(*o.AlgorithmOptions(),
                                         {1, 64, batched::Backend::kMeasure});
  }
}

template <typename T>
MemoryEstimate EstimateDeviceMemory(const RunSpec& spec, const Problem<T>& problem,
                                    const OptimizerContext& context, bool device_gradients) {
  MemoryEstimate estimate;
  const char* precision = sizeof(T) == 4 ? "fp32" : "fp64";
  std::shared_ptr<const batched::DeviceSamples<T>> samples;
  if (device_gradients) {
    const batched::DeviceBytes tally;
    samples = batched::DeviceSamples<T>::Of(problem, batched::Backend::kMeasure);
    if (samples != nullptr) {
      estimate.Add("the training samples", tally.bytes(),
                   fmt::format("{} features of every shard's samples in {}, and their labels",
                               samples->features(), precision));
    }
  }
  for (const OptimizerSpec& o : spec.optimizers) {
    const batched::DeviceBytes tally;
    batched::MakeDeviceOptimizer<T>(*o.AlgorithmOptions(), context, batched::Backend::kMeasure,
                                    samples);
    estimate.Add(
        fmt::format("run '{}'", o.label), tally.bytes(),
        fmt::format("{} workers x d = {}: the optimizer's state, the gradients{}", context.workers,
                    context.dimension, samples != nullptr ? ", the minibatches' activations" : ""));
  }
  return estimate;
}

std::optional<MemoryLimit> DeviceMemoryLimit(const std::optional<MemoryLimit>& given,
                                             batched::Backend backend) {
  if (given) return given;
  if (backend != batched::Backend::kCuda) return std::nullopt;
  const auto memory = batched::DeviceMemory();
  if (!memory) return std::nullopt;
  return MemoryLimit{static_cast<double>(memory->first),
                     fmt::format("the GPU's free memory ({} of {})",
                                 FormatBytes(static_cast<double>(memory->first)),
                                 FormatBytes(static_cast<double>(memory->second)))};
}

template MemoryEstimate EstimateDeviceMemory(const RunSpec&, const Problem<float>&,
                                             const OptimizerContext&, bool);
template MemoryEstimate EstimateDeviceMemory(const RunSpec&, const Problem<double>&,
                                             const OptimizerContext&, bool);

std::string DescribeDevice(Device device, batched::Backend backend) {
  if (device == Device::kCpu) return "cpu";
  if (backend == batched::Backend::kHost) return "cuda (emulated on the host)";
  return "cuda: " + batched::DescribeCudaDevices();
}

}  // namespace lemmalab
