// What the GPU tests share: the skip (or, with LEMMALAB_REQUIRE_GPU=1 in the environment, the
// failure) when there is no device, and copies to the device.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/runtime.h"

namespace lemmalab::testing {

// Empty when a device is there; else why not.
inline std::string MissingDevice() {
  const cuda::Devices devices = cuda::QueryDevices();
  return devices.list.empty() ? "no CUDA device: " + devices.why_none : std::string();
}

// On a machine meant to have a GPU, a test that cannot find one must fail, not pass as skipped.
inline bool GpuRequired() {
  const char* required = std::getenv("LEMMALAB_REQUIRE_GPU");
  return required != nullptr && std::string_view(required) == "1";
}

template <typename T>
cuda::DeviceBuffer<T> OnDevice(const std::vector<T>& host) {
  cuda::DeviceBuffer<T> device(host.size());
  device.CopyFrom(host);
  return device;
}

}  // namespace lemmalab::testing

#define LEMMALAB_REQUIRE_GPU()                                                                \
  do {                                                                                        \
    if (const std::string missing = ::lemmalab::testing::MissingDevice(); !missing.empty()) { \
      if (::lemmalab::testing::GpuRequired()) FAIL() << missing;                              \
      GTEST_SKIP() << missing << " (set LEMMALAB_REQUIRE_GPU=1 to fail instead)";             \
    }                                                                                         \
  } while (false)
