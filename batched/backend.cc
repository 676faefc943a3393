#include "batched/backend.h"

#if defined(LEMMALAB_HAVE_CUDA)
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "core/resources.h"
#include "cuda/blas.h"
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

namespace detail {

template <typename T>
void HostGemm(const cuda::GemmStridedBatched<T>& call) {
  // Column-major, as cuBLAS: element (i, l) of op(A) is a[i + l lda], or a[l + i lda] transposed.
  const auto at = [](const T* matrix, std::int64_t ld, bool transposed, std::int64_t row,
                     std::int64_t column) {
    return transposed ? matrix[column + row * ld] : matrix[row + column * ld];
  };
  for (std::int64_t item = 0; item < call.batch; ++item) {
    const T* a = call.a + item * call.stride_a;
    const T* b = call.b + item * call.stride_b;
    T* c = call.c + item * call.stride_c;
    for (std::int64_t j = 0; j < call.n; ++j) {
      for (std::int64_t i = 0; i < call.m; ++i) {
        T sum = T(0);
        for (std::int64_t l = 0; l < call.k; ++l) {
          sum += at(a, call.lda, call.transpose_a, i, l) * at(b, call.ldb, call.transpose_b, l, j);
        }
        c[i + j * call.ldc] = sum;
      }
    }
  }
}

template void HostGemm(const cuda::GemmStridedBatched<float>&);
template void HostGemm(const cuda::GemmStridedBatched<double>&);

}  // namespace detail

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

std::string ProductsUnavailable(Backend backend) {
  return backend == Backend::kCuda ? cuda::BlasUnavailable() : std::string();
}

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

template <typename T>
void CudaGemm(const cuda::GemmStridedBatched<T>& call) {
  cuda::Run(call);
}
template void CudaGemm(const cuda::GemmStridedBatched<float>&);
template void CudaGemm(const cuda::GemmStridedBatched<double>&);

}  // namespace detail

#else  // a build without the CUDA toolkit: nothing can ask for the CUDA backend and reach here

bool HaveCudaBackend() { return false; }

std::string CudaDeviceUnavailable() {
  return "this build has no CUDA backend (CMake found no CUDA toolkit)";
}

std::string DescribeCudaDevices() { return CudaDeviceUnavailable(); }

std::string ProductsUnavailable(Backend backend) {
  return backend == Backend::kCuda ? CudaDeviceUnavailable() : std::string();
}

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
template <typename T>
void CudaGemm(const cuda::GemmStridedBatched<T>& /*call*/) {
  NoCudaBackend();
}
template void CudaGemm(const cuda::GemmStridedBatched<float>&);
template void CudaGemm(const cuda::GemmStridedBatched<double>&);
}  // namespace detail

#endif

}  // namespace lemmalab::batched
