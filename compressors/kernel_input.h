// What the compressors' kernels read and what they count, shared by the CPU kernels
// (compressors/one_bit.h, compressors/multibit.h) and the CUDA kernels (cuda/).
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace lemmalab {

// u_j = x_j, or with error feedback u_j = x_j + a e_j, computed in T with the product and the
// sum each rounded (as Eigen computes x + a * e; the build forbids contracting them into an FMA).
template <typename T>
struct KernelInput {
  const T* x = nullptr;
  const T* e = nullptr;  // optional error feedback
  T a = T(1);            // its factor (1 for classic EF, gamma_{t-1}/gamma_t for the scaled one)

  LEMMALAB_HOST_DEVICE T operator[](std::int64_t j) const {
    return e == nullptr ? x[j] : x[j] + a * e[j];
  }
};

// What a kernel saw of its input.
struct KernelCounts {
  std::int64_t out_of_domain = 0;  // finite u_j outside the compressor's domain
  std::int64_t non_finite = 0;     // NaN or infinite u_j

  KernelCounts& operator+=(const KernelCounts& other) {
    out_of_domain += other.out_of_domain;
    non_finite += other.non_finite;
    return *this;
  }
};

}  // namespace lemmalab
