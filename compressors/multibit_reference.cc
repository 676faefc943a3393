// The scalar definitions of compressors/multibit.h's kernels: what the SIMD kernels must equal
// bit for bit, and what double runs on.
#include <algorithm>
#include <cmath>

#include "compressors/multibit.h"
#include "compressors/quantization.h"

namespace lemmalab::multibit::reference {
namespace {

// float32 biased exponents of natural compression: code E stands for 2^(E - 127).
constexpr int kExponentBias = 127;
constexpr int kSmallestCode = 1;   // 2^-126, the smallest normal float
constexpr int kLargestCode = 254;  // 2^127, the largest power of two below float32's infinity
const double kSmallestPower = std::ldexp(1.0, kSmallestCode - kExponentBias);
const double kLargestPower = std::ldexp(1.0, kLargestCode - kExponentBias);

}  // namespace

template <typename T>
NormStats Norms(const Input<T>& in, std::int64_t n, bool sum_squares, T* u_out) {
  NormStats stats;
  for (std::int64_t j = 0; j < n; ++j) {
    const T u = in[j];
    if (u_out != nullptr) u_out[j] = u;
    const auto v = static_cast<double>(u);
    if (!std::isfinite(v)) {
      ++stats.non_finite;
      continue;
    }
    stats.largest = std::max(stats.largest, std::abs(v));
    if (sum_squares) stats.sum_squares += v * v;
  }
  return stats;
}

template <typename T>
double SumSquares(const T* u, std::int64_t n) {
  double sum = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    const auto v = static_cast<double>(u[j]);
    if (std::isfinite(v)) sum += v * v;
  }
  return sum;
}

template <typename T>
std::int64_t QuantizeQsgd(const Input<T>& in, const std::uint32_t* words, std::int64_t begin,
                          std::int64_t end, double n, int levels, int width, std::uint8_t* fields,
                          T* e_out) {
  const auto s = static_cast<double>(levels);
  std::int64_t out_of_domain = 0;
  quantization::BitWriter writer(fields + begin * (width + 1) / 8);
  for (std::int64_t j = begin; j < end; ++j) {
    const T u = in[j];
    const auto v = static_cast<double>(u);
    std::uint32_t level = 0;
    if (std::isfinite(v) && v != 0) {  // v != 0 also covers n = 0
      const double a = std::abs(v);
      if (a > n) {
        ++out_of_domain;
        level = static_cast<std::uint32_t>(levels);
      } else {
        // a / n <= 1 after rounding, so t <= s and level <= s.
        const double t = s * (a / n);
        const double r = std::floor(t);
        level = static_cast<std::uint32_t>(r) + quantization::DrawBelow(t - r, words[j - begin]);
      }
    }
    const std::uint32_t negative = level > 0 && v < 0 ? 1u : 0u;
    writer.Put(level | negative << width, width + 1);
    if (e_out != nullptr) {
      // The receiver's value (qsgd.cc's decoder), subtracted as DecodeAdd with weight -1 does.
      const auto value = static_cast<T>(n * static_cast<double>(level) / s);
      e_out[j] = u + T(-1) * (negative != 0 ? -value : value);
    }
  }
  writer.Finish();
  return out_of_domain;
}

template <typename T>
Counts QuantizeNatural(const Input<T>& in, const std::uint32_t* words, std::int64_t begin,
                       std::int64_t end, std::uint8_t* codes, std::uint8_t* signs, T* e_out) {
  Counts counts;
  for (std::int64_t j = begin; j < end; ++j) {
    const T u = in[j];
    const auto v = static_cast<double>(u);
    const std::uint32_t word = words[j - begin];
    int code = 0;
    bool negative = false;
    if (!std::isfinite(v)) {
      ++counts.non_finite;
    } else if (v != 0) {
      const double a = std::abs(v);
      if (a < kSmallestPower) {
        // 0 or 2^-126, up with probability a / 2^-126 (an exact scaling).
        ++counts.out_of_domain;
        code = quantization::DrawBelow(std::ldexp(a, -(kSmallestCode - kExponentBias)), word)
                   ? kSmallestCode
                   : 0;
      } else if (a > kLargestPower) {
        ++counts.out_of_domain;
        code = kLargestCode;
      } else {
        // a = m 2^k with m in [0.5, 1): 2^e = 2^(k-1) <= a < 2^(k+1), and a / 2^e - 1 =
        // 2m - 1 in [0, 1), exact; 0 for a power of two, which is then sent as it is.
        int k;
        const double m = std::frexp(a, &k);
        code = k - 1 + kExponentBias + quantization::DrawBelow(2 * m - 1, word);
      }
      negative = v < 0 && code != 0;
      if (negative) signs[j >> 3] |= static_cast<std::uint8_t>(1u << (j & 7));
    }
    codes[j] = static_cast<std::uint8_t>(code);
    if (e_out != nullptr) {
      // The receiver's value (natural.cc's decoder), subtracted as DecodeAdd with weight -1 does.
      const T value = code == 0 ? T(0) : static_cast<T>(std::ldexp(1.0, code - kExponentBias));
      e_out[j] = u + T(-1) * (negative ? -value : value);
    }
  }
  return counts;
}

#define LEMMALAB_MULTIBIT_REFERENCE(T)                                                    \
  template NormStats Norms(const Input<T>&, std::int64_t, bool, T*);                      \
  template double SumSquares(const T*, std::int64_t);                                     \
  template std::int64_t QuantizeQsgd(const Input<T>&, const std::uint32_t*, std::int64_t, \
                                     std::int64_t, double, int, int, std::uint8_t*, T*);  \
  template Counts QuantizeNatural(const Input<T>&, const std::uint32_t*, std::int64_t,    \
                                  std::int64_t, std::uint8_t*, std::uint8_t*, T*);
LEMMALAB_MULTIBIT_REFERENCE(float)
LEMMALAB_MULTIBIT_REFERENCE(double)
#undef LEMMALAB_MULTIBIT_REFERENCE

}  // namespace lemmalab::multibit::reference
