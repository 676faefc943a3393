// The element-wise arithmetic of the 1-bit compressors, and the rules that turn a block's
// reduction into its float32 scale: one definition shared by the CPU's scalar kernels
// (compressors/one_bit_reference.cc, which the SIMD kernels equal bit for bit) and the CUDA
// kernels (cuda/one_bit.cu), so that a GPU message is the CPU's by construction.
//
// Nothing here depends on Eigen or the standard library's containers: nvcc compiles it for the
// device.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"
#include "core/wire_nan.h"

namespace lemmalab::one_bit {

// How a format decides a bit.
enum class Draw {
  kStochastic,  // Birder's Q: +1 with probability (v + 1) / 2
  kSign,        // +1 iff u >= 0
};

// Which scale each block sends (float32).
enum class Scale {
  kNone,     // value 1, nothing sent
  kMaxAbs,   // s = max(1, max |u_j|) rounded up to float32; Q sees u / s (Birder "rescale")
  kRms,      // s = ||u_B||_2 / sqrt(d_B) = ||u_B|| / ||sign(u_B)|| (1-bit Adam)
  kMeanAbs,  // s = ||u_B||_1 / d_B (Block-Sign, spams.txt Definition 2)
};

template <typename T>
LEMMALAB_HOST_DEVICE inline bool IsFinite(T u) {
#if defined(__CUDA_ARCH__)
  return isfinite(u);
#else
  return std::isfinite(u);
#endif
}

// Birder's draw (Eq. 5) for v in [-1, 1] and a 32-bit word r: +1 iff r - 2^31 < v * 2^31,
// compared exactly. With U = r / 2^32 this is U < (v + 1) / 2, so P(+1) = (v + 1) / 2 up to less
// than 2^-32 (exactly whenever v * 2^31 is an integer).
template <typename T>
LEMMALAB_HOST_DEVICE inline bool DrawPlusOne(T v, std::uint32_t r) {
  const auto centred = static_cast<std::int32_t>(r ^ 0x80000000u);  // r - 2^31
  return static_cast<double>(centred) < static_cast<double>(v) * 2147483648.0;
}

// Birder's Q of one element: +1 (true) or -1 for v = clamp(u * inverse, -1, 1) and draw word r.
// A non-finite u sends -1. (inverse = 1 / scale; u * 1 = u exactly.)
template <typename T>
LEMMALAB_HOST_DEVICE inline bool StochasticBit(T u, T inverse, std::uint32_t r) {
  if (!IsFinite(u)) return false;
  T v = u * inverse;
  v = v < T(-1) ? T(-1) : (T(1) < v ? T(1) : v);
  return DrawPlusOne(v, r);
}

// Sign with zero sent as +1.
template <typename T>
LEMMALAB_HOST_DEVICE inline bool SignBit(T u) {
  return u >= T(0);
}

// What error feedback keeps of u once the bit is sent: u - C(u).
template <typename T>
LEMMALAB_HOST_DEVICE inline T Residual(T u, bool plus, T scale) {
  return u - (plus ? scale : -scale);
}

// A finite input outside Q's domain [-1, 1].
template <typename T>
LEMMALAB_HOST_DEVICE inline bool OutOfDomain(T u) {
  return IsFinite(u) && (u > T(1) || u < T(-1));
}

// The fixed summation order of the scales' norms: element j of a block starting at `begin` goes
// to partial sum (j - begin) % kPartials, each partial adds its elements in index order, and the
// partials are combined pairwise, ((p0 + p1) + (p2 + p3)) + ...
inline constexpr int kPartials = 16;

LEMMALAB_HOST_DEVICE inline double CombinePartials(const double* partials) {
  double level[kPartials];
  for (int i = 0; i < kPartials; ++i) level[i] = partials[i];
  for (int width = kPartials; width > 1; width /= 2) {
    for (int i = 0; i < width / 2; ++i) level[i] = level[2 * i] + level[2 * i + 1];
  }
  return level[0];
}

// The float32 scale of a block of `size` elements from its reduction: max |u_j| over its finite
// elements (kMaxAbs), sum u_j^2 (kRms) or sum |u_j| (kMeanAbs), in double; 1 for kNone. A NaN
// scale (the block held a NaN) is the wire's NaN (core/wire_nan.h).
LEMMALAB_HOST_DEVICE inline float ScaleFromReduction(Scale kind, double reduction, double size) {
  switch (kind) {
    case Scale::kNone:
      return 1.0f;
    case Scale::kMaxAbs: {
      // Rounded up, so that |u_j| / s <= 1 still holds after rounding to float32.
      const double largest = reduction > 1.0 ? reduction : 1.0;
      float s = static_cast<float>(largest);
#if defined(__CUDA_ARCH__)
      if (static_cast<double>(s) < largest) s = nextafterf(s, INFINITY);
#else
      if (static_cast<double>(s) < largest) s = std::nextafter(s, INFINITY);
#endif
      return s;
    }
    case Scale::kRms:
      return WireNaN(static_cast<float>(sqrt(reduction) / sqrt(size)));
    case Scale::kMeanAbs:
      return WireNaN(static_cast<float>(reduction / size));
  }
  return 1.0f;
}

}  // namespace lemmalab::one_bit
