// Kernels of the multi-bit quantizers (qsgd and terngrad, natural) and of the sparse compressors'
// error feedback (compressors/sparse.h): SIMD versions for float in compressors/multibit.cc
// (Google Highway, dispatched at run time to the CPU's best target), and their scalar definitions
// in multibit_reference.cc, which double uses and against which tests/multibit_test.cc checks
// every target bit for bit.
//
// Each kernel reads u = x, or u = x + a e (error feedback; computed in T as x[j] + a * e[j],
// as Eigen computes x + a * e), and a kernel that is given e_out writes e_out[j] = u_j - C(u)_j,
// what Compressor::EncodeWithFeedback's default (e = u, then DecodeAdd with weight -1) stores.
// e_out may be e itself: element j is read before it is written.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "compressors/kernel_input.h"
#include "compressors/quantization.h"

namespace lemmalab::multibit {

template <typename T>
using Input = KernelInput<T>;
using Counts = KernelCounts;

// QSGD's norm pass over u_0..u_{n-1}, skipping non-finite elements: the largest |u_j|, the count
// of non-finite elements, and (sum_squares) the sum of the u_j^2 in double, added in an order of
// the kernel's choosing: within kSumSlack n 2^-53 (relative) of the index-order sum SumSquares
// gives, both being within (n - 1) 2^-53 / (1 - (n - 1) 2^-53) of the exact sum of those terms.
// When u_out is given, u is also stored there.
struct NormStats {
  double largest = 0;
  double sum_squares = 0;
  std::int64_t non_finite = 0;
};
inline constexpr double kSumSlack = 2.01;

template <typename T>
NormStats Norms(const Input<T>& in, std::int64_t n, bool sum_squares, T* u_out);

// The sum of u_j^2 over the finite u_j in double, added in index order (sum = sum + u_j * u_j,
// exactly as a plain loop).
template <typename T>
double SumSquares(const T* u, std::int64_t n);

// The float32 scale N_f of the norm-scaled quantizers (qsgd, terngrad, natural-dithering) for
// u = `in` over n elements, and the count of its non-finite elements, which the norm leaves out;
// u is stored in u_out when given (it must be when `in` has e). N = max |u_j| (two_norm false),
// or max(sqrt(sum u_j^2), max |u_j|) with the squares added in index order (equal in exact
// arithmetic, and N >= |u_j| after rounding), rounded UP to float32 and capped at the largest
// float. Norms adds the squares in its own order, within kSumSlack n 2^-53 of the index-order
// sum, and the scale is monotone in the sum: where both ends of that interval give one scale it
// is the definition's; otherwise the index-order sum is taken (the 4 2^-53 covers the rounding of
// the bounds themselves).
struct Scale {
  float value = 0;
  std::int64_t non_finite = 0;
};

template <typename T>
Scale NormScale(const Input<T>& in, std::int64_t n, bool two_norm, T* u_out) {
  const NormStats norms = Norms(in, n, two_norm, u_out);
  const auto scale_for = [&](double sum_squares) {
    const double norm = two_norm ? std::max(std::sqrt(sum_squares), norms.largest) : norms.largest;
    return std::min(quantization::FloatAtLeast(norm), std::numeric_limits<float>::max());
  };
  if (!two_norm) return {scale_for(0), norms.non_finite};
  const double slack = (kSumSlack * static_cast<double>(n) + 4) * 0x1p-53;
  const float scale = scale_for(norms.sum_squares * (1 - slack));
  if (scale == scale_for(norms.sum_squares * (1 + slack))) return {scale, norms.non_finite};
  return {scale_for(SumSquares(u_out != nullptr ? u_out : in.x, n)), norms.non_finite};
}

// QSGD's quantizer (compressors/qsgd.h) on [begin, end), begin a multiple of 64: element j uses
// words[j - begin], scale n (the float32 norm, as a double: n must be a float), `levels` levels of
// `width` bits, and writes its (width + 1)-bit field at stream bit j (width + 1) of `fields`: every
// byte from bit begin (width + 1) to the one holding the last field, so they need not be zeroed.
// Counts out-of-domain elements only (non-finite ones are counted by Norms).
template <typename T>
std::int64_t QuantizeQsgd(const Input<T>& in, const std::uint32_t* words, std::int64_t begin,
                          std::int64_t end, double n, int levels, int width, std::uint8_t* fields,
                          T* e_out);

// Natural compression (compressors/natural.h) on [begin, end), begin a multiple of 64: element j
// uses words[j - begin] and writes codes[j] and bit j of `signs` (zeroed).
template <typename T>
Counts QuantizeNatural(const Input<T>& in, const std::uint32_t* words, std::int64_t begin,
                       std::int64_t end, std::uint8_t* codes, std::uint8_t* signs, T* e_out);

namespace reference {
template <typename T>
NormStats Norms(const Input<T>& in, std::int64_t n, bool sum_squares, T* u_out);
template <typename T>
double SumSquares(const T* u, std::int64_t n);
template <typename T>
std::int64_t QuantizeQsgd(const Input<T>& in, const std::uint32_t* words, std::int64_t begin,
                          std::int64_t end, double n, int levels, int width, std::uint8_t* fields,
                          T* e_out);
template <typename T>
Counts QuantizeNatural(const Input<T>& in, const std::uint32_t* words, std::int64_t begin,
                       std::int64_t end, std::uint8_t* codes, std::uint8_t* signs, T* e_out);
}  // namespace reference

}  // namespace lemmalab::multibit
