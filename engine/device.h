// Where a run computes: `device = "cpu"` (every run), or `device = "cuda"`: the optimizers step
// every worker at once on one NVIDIA GPU (batched/optimizers.h, driven through the cluster by
// batched/device_optimizer.h), and a supervised problem's gradients are computed there too
// (batched/gradients.h); other problems' are computed on the CPU and copied.
//
// What a GPU run cannot do yet is refused before the data load, by RequireDeviceFits, naming the
// key and what is supported: a build without CUDA, a machine without a device, mpirun, traces,
// the chunked and hierarchical schemes, and every optimizer, compressor and option without a
// batched form. Probes, checks, sweeps and checkpoints run as on the CPU.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "batched/backend.h"
#include "core/resources.h"

namespace lemmalab {

struct RunSpec;
template <typename T>
class Problem;
struct OptimizerContext;

enum class Device { kCpu, kCuda };

// The spec key's values; inline, so that the spec parser alone (fuzz/spec_fuzzer.cc) needs no
// more than this header.
inline std::span<const std::string> DeviceNames() {
  static const std::vector<std::string> names = {"cpu", "cuda"};
  return names;
}
// One of DeviceNames() (the spec reads the key as a choice among them first).
inline Device DeviceNamed(std::string_view name) {
  return name == "cuda" ? Device::kCuda : Device::kCpu;
}
inline std::string_view DeviceName(Device device) {
  return device == Device::kCuda ? "cuda" : "cpu";
}

// UserError (exit 2) unless the spec's runs can run on its device, on `backend` (the GPU; tests
// run the same path on the host emulation, batched/backend.h), in one process unless
// `multi_process`, traced or not. Checks options only: call it before the data load.
void RequireDeviceFits(const RunSpec& spec, batched::Backend backend, bool multi_process,
                       bool traced);

// What preparing the spec's runs allocates on the GPU, part by part: the training samples (with
// `device_gradients`, for a problem whose gradients are computed there) and each run's
// optimizer, gradients and activations, measured by building them on batched::Backend::kMeasure,
// which allocates nothing. Call it after the data load and before the runs are prepared.
template <typename T>
MemoryEstimate EstimateDeviceMemory(const RunSpec& spec, const Problem<T>& problem,
                                    const OptimizerContext& context, bool device_gradients);

// The GPU memory the runs may take: `given` (a test's limit), else the GPU's free memory;
// nullopt where there is none to check (the host emulation without a given limit).
std::optional<MemoryLimit> DeviceMemoryLimit(const std::optional<MemoryLimit>& given,
                                             batched::Backend backend);

// What the results record as the run's device: "cpu", or "cuda: <the runtime and the card>".
std::string DescribeDevice(Device device, batched::Backend backend);

}  // namespace lemmalab
