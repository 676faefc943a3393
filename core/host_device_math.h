// The math functions that code compiled for both the CPU and the GPU calls (LEMMALAB_HOST_DEVICE,
// core/host_device.h): the C library's on the host, CUDA's on the device, in one place. sqrt and
// fabs are correctly rounded on both; exp, log, log1p and tanh may differ between them by an ulp
// or two (what uses them is compared to a tolerance, not bit for bit).
#pragma once

#include <cmath>

#include "core/host_device.h"

namespace lemmalab::hd {

#if defined(__CUDA_ARCH__)
#define LEMMALAB_HD_MATH(name, fn)          \
  template <typename T>                     \
  LEMMALAB_HOST_DEVICE inline T name(T v) { \
    return fn(v);                           \
  }
#else
#define LEMMALAB_HD_MATH(name, fn)          \
  template <typename T>                     \
  LEMMALAB_HOST_DEVICE inline T name(T v) { \
    return std::fn(v);                      \
  }
#endif
LEMMALAB_HD_MATH(Sqrt, sqrt)
LEMMALAB_HD_MATH(Abs, fabs)
LEMMALAB_HD_MATH(Exp, exp)
LEMMALAB_HD_MATH(Log, log)
LEMMALAB_HD_MATH(Log1p, log1p)
LEMMALAB_HD_MATH(Tanh, tanh)
#undef LEMMALAB_HD_MATH

}  // namespace lemmalab::hd
