#include "engine/device.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

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
  // Every optimizer's options, read by its batched form (a dimension of 64 stands for the
  // problem's, which the data decides).
  for (const OptimizerSpec& o : spec.optimizers) {
    batched::MakeBatchedOptimizer<float>(*o.AlgorithmOptions(), {1, 64, batched::Backend::kHost});
  }
}

std::string DescribeDevice(Device device, batched::Backend backend) {
  if (device == Device::kCpu) return "cpu";
  if (backend == batched::Backend::kHost) return "cuda (emulated on the host)";
  return "cuda: " + batched::DescribeCudaDevices();
}

}  // namespace lemmalab
