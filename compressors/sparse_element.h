// The element-wise rules of the sparse compressors (top-k, random-k), shared by the CPU
// (compressors/top_k.cc, compressors/sparse.cc) and the CUDA kernels (cuda/sparse.cu), so that a
// GPU message is the CPU's by construction.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/host_device.h"
#include "core/wire_nan.h"

namespace lemmalab::sparse {

// Top-k's rank key of x_j: the bits of |x_j| as an unsigned integer, whose order is the order of
// the magnitudes (IEEE 754 non-negative values sort as their bit patterns), with NaN mapped to the
// key of +inf. Equal magnitudes have equal keys (+0 and -0 included).
LEMMALAB_HOST_DEVICE inline std::uint32_t MagnitudeKey(float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  bits &= 0x7fffffffu;
  return bits < 0x7f800000u ? bits : 0x7f800000u;
}
LEMMALAB_HOST_DEVICE inline std::uint64_t MagnitudeKey(double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  bits &= 0x7fffffffffffffffull;
  return bits < 0x7ff0000000000000ull ? bits : 0x7ff0000000000000ull;
}

// One pass of a radix selection of the need-th largest key (need >= 1), 8 bits at a time from the
// top: given the counts of the next digit among the keys that match the digits chosen so far,
// returns the digit of the need-th largest and lowers `need` by the count of keys above it. After
// the last pass the digits spell the threshold key tau, and `need` says how many keys equal to
// tau belong to the top (the lowest-indexed ones, for top-k). The CUDA top-k (cuda/sparse.cu)
// runs it; tests/sparse_element_test.cc runs the same procedure on the CPU.
LEMMALAB_HOST_DEVICE inline std::uint32_t PickDigit(const std::uint32_t* histogram,
                                                    unsigned long long& need) {
  std::uint32_t digit = 255;
  for (; digit > 0 && histogram[digit] < need; --digit) need -= histogram[digit];
  return digit;
}

// Lemire's multiply-and-reject method for a uniform integer below `range` (1 <= range <= 2^32;
// sparse.h's UniformBelow): the candidate is the high half of word * range, which `product` is,
// and the word is rejected when the low half falls below 2^32 mod range (computed only when the
// low half is below range, which it must be to fall below the remainder).
LEMMALAB_HOST_DEVICE inline bool LemireRejects(std::uint64_t product, std::uint64_t range) {
  const auto low = static_cast<std::uint32_t>(product);
  return low < range && low < (std::uint64_t{1} << 32) % range;
}

// Error feedback at a kept coordinate: e holds u, and keeps u - C(u) with C(u) = scale u, in the
// expression the default's full decoding pass would evaluate (e + (-1) (scale u)).
template <typename T>
LEMMALAB_HOST_DEVICE inline T KeptResidual(T u, T scale) {
  return u + T(-1) * (scale * u);
}

}  // namespace lemmalab::sparse
