#include "cuda/runtime.h"

#include <fmt/format.h>

#include "core/error.h"

namespace lemmalab::cuda {
namespace {

std::string VersionText(int version) {
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

}  // namespace

void Check(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  throw InternalError(fmt::format("{}:{}: {} failed: {} ({})", file, line, call,
                                  cudaGetErrorString(status), cudaGetErrorName(status)));
}

Devices QueryDevices() {
  Devices devices;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    devices.why_none = cudaGetErrorString(status);
    cudaGetLastError();  // the query's error is the answer, not a sticky failure
    return devices;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    LEMMALAB_CUDA_CHECK(cudaGetDeviceProperties(&prop, i));
    devices.list.push_back({i, prop.name, prop.major, prop.minor, prop.totalGlobalMem});
  }
  if (count == 0) devices.why_none = "the CUDA runtime reports no device";
  return devices;
}

std::string Describe(const Devices& devices) {
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  std::string text = fmt::format("CUDA runtime {}", VersionText(runtime));
  if (driver > 0) text += fmt::format(", driver {}", VersionText(driver));
  if (devices.list.empty()) return text + ": no device (" + devices.why_none + ")";
  for (std::size_t i = 0; i < devices.list.size(); ++i) {
    const DeviceInfo& d = devices.list[i];
    text += fmt::format("{} {} (sm_{}{}, {:.1f} GiB)", i == 0 ? ":" : ";", d.name, d.major, d.minor,
                        static_cast<double>(d.memory_bytes) / (1 << 30));
  }
  return text;
}

}  // namespace lemmalab::cuda
