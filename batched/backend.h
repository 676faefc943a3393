// Where a batched step runs (batched/optimizers.h): on the CPU, one element after another, or on
// an NVIDIA GPU, one CUDA launch per phase for all workers. Both run the same functors
// (batched/kernels.h), so the CPU backend is an exact emulation of the GPU's arithmetic that
// every machine can test.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"
#include "cuda/blas.h"  // (a plain header: the product's description, no CUDA)

namespace lemmalab::batched {

enum class Backend {
  kHost,     // the CPU: a loop over the range
  kCuda,     // the GPU (builds with LEMMALAB_HAVE_CUDA only)
  kMeasure,  // nothing runs and nothing is allocated: buffers count their bytes (DeviceBytes)
};

std::string_view BackendName(Backend backend);  // "host", "cuda", "measure"

// The bytes the buffers made on Backend::kMeasure by this thread while it lives would take on
// the device: what building a batched optimizer or gradient source allocates, measured exactly
// without allocating it (the GPU memory estimate, engine/estimates.h).
class DeviceBytes {
 public:
  DeviceBytes();
  ~DeviceBytes();
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  double bytes() const { return bytes_; }

  // Adds to the innermost live tally of this thread, if any.
  static void Count(std::size_t bytes);

 private:
  double bytes_ = 0;
  DeviceBytes* outer_;
};

// The free and total memory of the GPU a run uses, or nullopt without one.
std::optional<std::pair<std::size_t, std::size_t>> DeviceMemory();

// Whether this build has the CUDA backend (it still needs a device to run).
bool HaveCudaBackend();
// Empty when the CUDA backend can run here; else why not (no backend, no device, an old driver).
std::string CudaDeviceUnavailable();
// The CUDA runtime and its devices in words (cuda::Describe), or why there are none.
std::string DescribeCudaDevices();

namespace detail {
#if defined(LEMMALAB_HAVE_CUDA)
// One launch of f over [0, n) on the default stream: cuda/batched_loops.cu instantiates it for
// every functor of LEMMALAB_BATCHED_FUNCTORS.
template <typename F>
void CudaForEach(std::int64_t n, const F& f);
#else
[[noreturn]] void NoCudaBackend();  // an internal error: the CUDA backend in a build without it
template <typename F>
void CudaForEach(std::int64_t /*n*/, const F& /*f*/) {
  NoCudaBackend();
}
#endif

void* DeviceAllocate(std::size_t bytes);
void DeviceFree(void* pointer);
void CopyToDevice(void* to, const void* from, std::size_t bytes);
void CopyToHost(void* to, const void* from, std::size_t bytes);
void DeviceZero(void* pointer, std::size_t bytes);
void DeviceSynchronize();

// The products' two sides: a reference of cuBLAS's strided-batched GEMM that sums every element
// over k in order (the host backend), and cuBLAS itself (cuda/blas.h).
template <typename T>
void HostGemm(const cuda::GemmStridedBatched<T>& call);
template <typename T>
void CudaGemm(const cuda::GemmStridedBatched<T>& call);
}  // namespace detail

// Waits until the backend has done the work queued so far (the host backend always has): what a
// benchmark times.
inline void Synchronize(Backend backend) {
  if (backend == Backend::kCuda) detail::DeviceSynchronize();
}

// f(i) for every i in [0, n), each exactly once, in any order: a functor of batched/kernels.h.
template <typename F>
void ForEach(Backend backend, std::int64_t n, const F& f) {
  if (n <= 0 || backend == Backend::kMeasure) return;
  if (backend == Backend::kHost) {
    for (std::int64_t i = 0; i < n; ++i) f(i);
    return;
  }
  detail::CudaForEach(n, f);
}

// One side of a BatchedProduct: a row-major, packed matrix per batch item, item b at
// data + b * stride (stride 0: the same matrix for every item), used as stored or transposed.
template <typename T>
struct Operand {
  const T* data;
  std::int64_t stride;
  bool transposed = false;
};

// C_b = op(A_b) op(B_b) for every b < batch: op(A_b) is m x k, op(B_b) k x n, and C_b (m x n,
// row-major, packed) at c + b * c_stride is overwritten. On the host each element is summed
// over k in order; on the GPU cuBLAS sums in its own order, so the two agree to rounding.
// Both run the same column-major call (cuBLAS's terms: row-major C is column-major C^T =
// op(B)^T op(A)^T), so the host tests check the translation the GPU uses.
template <typename T>
void BatchedProduct(Backend backend, std::int64_t batch, std::int64_t m, std::int64_t n,
                    std::int64_t k, Operand<T> a, Operand<T> b, T* c, std::int64_t c_stride) {
  if (batch <= 0 || m <= 0 || n <= 0 || backend == Backend::kMeasure) return;
  // A stored row-major matrix read column-major is its transpose; its rows are its leading
  // dimension: k x n (or n x k transposed) for B, m x k (or k x m) for A.
  const cuda::GemmStridedBatched<T> call{.transpose_a = b.transposed,
                                         .transpose_b = a.transposed,
                                         .m = n,
                                         .n = m,
                                         .k = k,
                                         .a = b.data,
                                         .lda = b.transposed ? k : n,
                                         .stride_a = b.stride,
                                         .b = a.data,
                                         .ldb = a.transposed ? m : k,
                                         .stride_b = a.stride,
                                         .c = c,
                                         .ldc = n,
                                         .stride_c = c_stride,
                                         .batch = batch};
  if (backend == Backend::kHost) {
    detail::HostGemm(call);
  } else {
    detail::CudaGemm(call);
  }
}

// Empty when BatchedProduct can run on `backend`; else why not (the GPU's cuBLAS not found).
std::string ProductsUnavailable(Backend backend);

// `size` elements of T in the backend's memory, zero when made.
template <typename T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(Backend backend, std::size_t size) : backend_(backend), size_(size) {
    if (backend_ == Backend::kHost) {
      host_.assign(size, T{});
    } else if (backend_ == Backend::kMeasure) {
      DeviceBytes::Count(size_ * sizeof(T));
    } else if (size_ > 0) {
      device_ = static_cast<T*>(detail::DeviceAllocate(size_ * sizeof(T)));
      detail::DeviceZero(device_, size_ * sizeof(T));
    }
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    std::swap(backend_, other.backend_);
    std::swap(size_, other.size_);
    std::swap(host_, other.host_);
    std::swap(device_, other.device_);
    return *this;
  }
  ~Buffer() {
    if (device_ != nullptr) detail::DeviceFree(device_);
  }

  T* data() { return backend_ == Backend::kHost ? host_.data() : device_; }
  const T* data() const { return backend_ == Backend::kHost ? host_.data() : device_; }
  std::size_t size() const { return size_; }
  Backend backend() const { return backend_; }

  // Elements [offset, offset + host.size()) from or to the host.
  void Upload(std::span<const T> host, std::size_t offset = 0) {
    LEMMALAB_CHECK(offset + host.size() <= size_, "upload of {} elements at {} into a buffer of {}",
                   host.size(), offset, size_);
    if (host.empty() || backend_ == Backend::kMeasure) return;
    if (backend_ == Backend::kHost) {
      std::copy(host.begin(), host.end(), host_.begin() + static_cast<std::ptrdiff_t>(offset));
    } else {
      detail::CopyToDevice(device_ + offset, host.data(), host.size_bytes());
    }
  }
  void Download(std::span<T> host, std::size_t offset = 0) const {
    LEMMALAB_CHECK(offset + host.size() <= size_,
                   "download of {} elements at {} from a buffer of {}", host.size(), offset, size_);
    if (host.empty() || backend_ == Backend::kMeasure) return;  // (the host's zeros stay)
    if (backend_ == Backend::kHost) {
      std::copy_n(host_.begin() + static_cast<std::ptrdiff_t>(offset), host.size(), host.begin());
    } else {
      detail::CopyToHost(host.data(), device_ + offset, host.size_bytes());
    }
  }
  std::vector<T> ToHost(std::size_t offset = 0, std::size_t count = SIZE_MAX) const {
    std::vector<T> host(std::min(count, size_ - offset));
    Download(host, offset);
    return host;
  }
  void SetZero() {
    if (backend_ == Backend::kHost) {
      std::fill(host_.begin(), host_.end(), T{});
    } else if (backend_ == Backend::kCuda && size_ > 0) {
      detail::DeviceZero(device_, size_ * sizeof(T));
    }
  }

 private:
  Backend backend_ = Backend::kHost;
  std::size_t size_ = 0;
  std::vector<T> host_;
  T* device_ = nullptr;
};

}  // namespace lemmalab::batched
