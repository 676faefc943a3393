// What the GPU tests share: the skip (or, with LEMMALAB_REQUIRE_GPU=1 in the environment, the
// failure) when the CUDA backend cannot run here, in any build (without the CUDA toolkit there is
// no backend, which is a reason like a missing device), and copies to the device.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "batched/backend.h"

#if defined(LEMMALAB_HAVE_CUDA)
#include "cuda/runtime.h"
#endif

namespace lemmalab::testing {

// Empty when the CUDA backend can run here; else why not.
inline std::string MissingDevice() {
  const std::string why = batched::CudaDeviceUnavailable();
  return why.empty() ? why : "no CUDA device: " + why;
}

// On a machine meant to have a GPU, a test that cannot find one must fail, not pass as skipped.
inline bool GpuRequired() {
  const char* required = std::getenv("LEMMALAB_REQUIRE_GPU");
  return required != nullptr && std::string_view(required) == "1";
}

#if defined(LEMMALAB_HAVE_CUDA)
template <typename T>
cuda::DeviceBuffer<T> OnDevice(const std::vector<T>& host) {
  cuda::DeviceBuffer<T> device(host.size());
  device.CopyFrom(host);
  return device;
}
#endif

}  // namespace lemmalab::testing

#define LEMMALAB_REQUIRE_GPU()                                                                \
  do {                                                                                        \
    if (const std::string missing = ::lemmalab::testing::MissingDevice(); !missing.empty()) { \
      if (::lemmalab::testing::GpuRequired()) FAIL() << missing;                              \
      GTEST_SKIP() << missing << " (set LEMMALAB_REQUIRE_GPU=1 to fail instead)";             \
    }                                                                                         \
  } while (false)
