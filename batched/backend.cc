#include "batched/backend.h"

#if defined(LEMMALAB_HAVE_CUDA)
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "core/resources.h"
#include "cuda/runtime.h"
#endif

namespace lemmalab::batched {

std::string_view BackendName(Backend backend) {
  switch (backend) {
    case Backend::kHost:
      return "host";
    case Backend::kCuda:
      return "cuda";
    case Backend::kMeasure:
      return "measure";
  }
  return "?";
}

namespace {
thread_local DeviceBytes* innermost_tally = nullptr;
}  // namespace

DeviceBytes::DeviceBytes() : outer_(innermost_tally) { innermost_tally = this; }
DeviceBytes::~DeviceBytes() { innermost_tally = outer_; }
void DeviceBytes::Count(std::size_t bytes) {
  if (innermost_tally != nullptr) innermost_tally->bytes_ += static_cast<double>(bytes);
}

#if defined(LEMMALAB_HAVE_CUDA)

bool HaveCudaBackend() { return true; }

std::string CudaDeviceUnavailable() {
  const cuda::Devices devices = cuda::QueryDevices();
  return devices.list.empty() ? devices.why_none : std::string();
}

std::string DescribeCudaDevices() { return cuda::Describe(cuda::QueryDevices()); }

std::optional<std::pair<std::size_t, std::size_t>> DeviceMemory() {
  std::size_t free = 0, total = 0;
  if (!CudaDeviceUnavailable().empty() || cudaMemGetInfo(&free, &total) != cudaSuccess) {
    cudaGetLastError();  // clears the error
    return std::nullopt;
  }
  return std::pair{free, total};
}

namespace detail {

void CheckLaunch(cudaError_t status, const char* kernel) {
  ::lemmalab::cuda::Check(status, kernel, __FILE__, __LINE__);
}

void* DeviceAllocate(std::size_t bytes) {
  void* pointer = nullptr;
  const cudaError_t status = cudaMalloc(&pointer, bytes);
  if (status == cudaErrorMemoryAllocation) {
    // The run's state does not fit: a limit of the spec (workers x dimension x runs), not a
    // fault. Every run's optimizer is allocated before the first step, so nothing has run yet.
    cudaGetLastError();  // clears the error
    std::size_t free = 0, total = 0;
    cudaMemGetInfo(&free, &total);
    throw UserError(fmt::format(
        "device = \"cuda\": the GPU's memory is exhausted: {} more did not fit ({} free of {}); "
        "use fewer workers or [[optimizer]] runs, or a smaller problem",
        FormatBytes(static_cast<double>(bytes)), FormatBytes(static_cast<double>(free)),
        FormatBytes(static_cast<double>(total))));
  }
  LEMMALAB_CUDA_CHECK(status);
  return pointer;
}
void DeviceFree(void* pointer) { cudaFree(pointer); }
void CopyToDevice(void* to, const void* from, std::size_t bytes) {
  LEMMALAB_CUDA_CHECK(cudaMemcpy(to, from, bytes, cudaMemcpyHostToDevice));
}
void CopyToHost(void* to, const void* from, std::size_t bytes) {
  LEMMALAB_CUDA_CHECK(cudaMemcpy(to, from, bytes, cudaMemcpyDeviceToHost));
}
void DeviceZero(void* pointer, std::size_t bytes) {
  LEMMALAB_CUDA_CHECK(cudaMemset(pointer, 0, bytes));
}
void DeviceSynchronize() { LEMMALAB_CUDA_CHECK(cudaDeviceSynchronize()); }

}  // namespace detail

#else  // a build without the CUDA toolkit: nothing can ask for the CUDA backend and reach here

bool HaveCudaBackend() { return false; }

std::string CudaDeviceUnavailable() {
  return "this build has no CUDA backend (CMake found no CUDA toolkit)";
}

std::string DescribeCudaDevices() { return CudaDeviceUnavailable(); }

std::optional<std::pair<std::size_t, std::size_t>> DeviceMemory() { return std::nullopt; }

namespace detail {
void NoCudaBackend() {
  internal::CheckFailed("HaveCudaBackend()", __FILE__, __LINE__,
                        "the CUDA backend was used in a build without CUDA");
}
void* DeviceAllocate(std::size_t /*bytes*/) { NoCudaBackend(); }
void DeviceFree(void* /*pointer*/) {}
void CopyToDevice(void* /*to*/, const void* /*from*/, std::size_t /*bytes*/) { NoCudaBackend(); }
void CopyToHost(void* /*to*/, const void* /*from*/, std::size_t /*bytes*/) { NoCudaBackend(); }
void DeviceZero(void* /*pointer*/, std::size_t /*bytes*/) { NoCudaBackend(); }
void DeviceSynchronize() { NoCudaBackend(); }
}  // namespace detail

#endif

}  // namespace lemmalab::batched
