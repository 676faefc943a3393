// The CUDA runtime as lemmalab uses it: which devices there are, errors turned into exceptions
// that say which call failed and why, and device memory owned by RAII buffers.
//
// Built only when CMake finds a CUDA toolkit (LEMMALAB_HAVE_CUDA is then defined for the code
// that links lemmalab::cuda). The runtime is linked statically, so a machine without an NVIDIA
// driver still runs the program: QueryDevices() then reports none, and says why.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace lemmalab::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;          // "NVIDIA H100 80GB HBM3"
  int major = 0, minor = 0;  // compute capability
  std::size_t memory_bytes = 0;
};

struct Devices {
  std::vector<DeviceInfo> list;
  std::string why_none;  // the runtime's reason when `list` is empty ("no CUDA-capable device")
};

Devices QueryDevices();

// "CUDA runtime 13.0, driver 13.0: NVIDIA H100 80GB HBM3 (sm_90, 79.2 GiB)", or
// "CUDA runtime 13.0: no device (<the runtime's reason>)".
std::string Describe(const Devices& devices);

// Throws an InternalError naming `call` and the runtime's message unless status is cudaSuccess.
void Check(cudaError_t status, const char* call, const char* file, int line);

}  // namespace lemmalab::cuda

#define LEMMALAB_CUDA_CHECK(call) ::lemmalab::cuda::Check((call), #call, __FILE__, __LINE__)

namespace lemmalab::cuda {

// `size` elements of T in device memory, freed with the buffer.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t size) : size_(size) {
    if (size_ > 0)
      LEMMALAB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), size_ * sizeof(T)));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }
  ~DeviceBuffer() {
    if (data_ != nullptr) cudaFree(data_);
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }

  void CopyFrom(std::span<const T> host) {
    LEMMALAB_CHECK(host.size() <= size_, "copy of {} elements into a device buffer of {}",
                   host.size(), size_);
    LEMMALAB_CUDA_CHECK(cudaMemcpy(data_, host.data(), host.size_bytes(), cudaMemcpyHostToDevice));
  }
  void CopyTo(std::span<T> host) const {
    LEMMALAB_CHECK(host.size() <= size_, "copy of {} elements out of a device buffer of {}",
                   host.size(), size_);
    LEMMALAB_CUDA_CHECK(cudaMemcpy(host.data(), data_, host.size_bytes(), cudaMemcpyDeviceToHost));
  }
  std::vector<T> ToHost() const {
    std::vector<T> host(size_);
    CopyTo(host);
    return host;
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace lemmalab::cuda
