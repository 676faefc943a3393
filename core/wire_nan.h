// The one NaN a wire format carries. Hardware disagrees on which NaN an operation on NaN yields
// (x86 keeps an operand's payload and sign, NVIDIA GPUs return one canonical NaN), so a message
// that holds a computed NaN (a scale, a kept value) writes this one instead, and the same input
// gives the same bytes on every backend. Shared by the CPU and the CUDA kernels.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/host_device.h"

namespace lemmalab {

// v, or the quiet NaN 0x7fc00000 (float) / 0x7ff8000000000000 (double) when v is a NaN.
template <typename T>
LEMMALAB_HOST_DEVICE inline T WireNaN(T v) {
  if (v == v) return v;
  if constexpr (sizeof(T) == 4) {
    const std::uint32_t bits = 0x7fc00000u;
    T nan;
    std::memcpy(&nan, &bits, sizeof nan);
    return nan;
  } else {
    const std::uint64_t bits = 0x7ff8000000000000ull;
    T nan;
    std::memcpy(&nan, &bits, sizeof nan);
    return nan;
  }
}

}  // namespace lemmalab
