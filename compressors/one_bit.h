// Kernels of the 1-bit compressors (Birder's Q, sign, scaled sign, Block-Sign): quantize and pack
// with error feedback fused into the same pass, unpack and accumulate, and the norms their scales
// need.
//
// The input is u_j = x_j + a e_j (error feedback, fused: e may be null, then u = x), evaluated in
// the vector's precision T. Bits are packed as core/bits.h says (bit j of the vector in byte j/8
// at position j%8, set = +1), indexed by the global position j, so a kernel can work on any range
// [begin, end) of a vector, e.g. one chunk or block.
//
// For float, every kernel runs on the CPU's best SIMD target through Google Highway; the
// `reference` namespace holds the scalar versions, which double uses, and which the SIMD ones
// equal bit for bit on every target (tests/one_bit_test.cc): only exact operations (compare,
// ceil, scaling by 2^31, the same rounded add and subtract) decide a bit, and reductions sum
// in a fixed order that does not depend on the vector width.
#pragma once

#include <cstdint>

#include "compressors/kernel_input.h"
#include "compressors/one_bit_element.h"
#include "core/stream_words.h"

namespace lemmalab::one_bit {

template <typename T>
using Input = KernelInput<T>;
using Counts = KernelCounts;

// sum u_j^2 and sum |u_j| over [begin, end), in double, in one_bit_element.h's fixed order.
template <typename T>
double SumSquares(const Input<T>& in, std::int64_t begin, std::int64_t end);
template <typename T>
double SumAbs(const Input<T>& in, std::int64_t begin, std::int64_t end);
// max |u_j| over the finite u_j of [begin, end), or 0 when there is none.
template <typename T>
double MaxAbsFinite(const Input<T>& in, std::int64_t begin, std::int64_t end);

// Birder's Q (StochasticBit with inverse = 1 / scale) of u_j with draw words[j - begin]: sets bit
// j of `bits` (which must be clear) when the draw is +1. When e_out is set (it may be in.e),
// e_out[j] = Residual(u_j, bit, scale).
template <typename T>
Counts QuantizeStochastic(const Input<T>& in, T scale, const std::uint32_t* words,
                          std::int64_t begin, std::int64_t end, std::uint8_t* bits, T* e_out);
// QuantizeStochastic for float, generating its words itself: element j of [begin, end) uses word
// words.first + (j - begin) of the stream. Each group of 64 words is generated next to the 64
// elements it quantizes, so that memory traffic and Philox arithmetic overlap instead of taking
// turns (and no word buffer goes through memory). Equal bit for bit to QuantizeStochastic with the
// same words.
Counts QuantizeStochasticFused(const Input<float>& in, float scale, const StreamAt& words,
                               std::int64_t begin, std::int64_t end, std::uint8_t* bits,
                               float* e_out);

// Sign with zero sent as +1: sets bit j iff u_j >= 0; e_out as above. Counts non-finite u_j
// only.
template <typename T>
Counts QuantizeSign(const Input<T>& in, T scale, std::int64_t begin, std::int64_t end,
                    std::uint8_t* bits, T* e_out);

// out_j = bit_j ? value : -value, and acc_j += bit_j ? value : -value, for j in [begin, end).
template <typename T>
void Expand(const std::uint8_t* bits, T value, std::int64_t begin, std::int64_t end, T* out);
template <typename T>
void ExpandAdd(const std::uint8_t* bits, T value, std::int64_t begin, std::int64_t end, T* acc);

namespace reference {
template <typename T>
double SumSquares(const Input<T>& in, std::int64_t begin, std::int64_t end);
template <typename T>
double SumAbs(const Input<T>& in, std::int64_t begin, std::int64_t end);
template <typename T>
double MaxAbsFinite(const Input<T>& in, std::int64_t begin, std::int64_t end);
template <typename T>
Counts QuantizeStochastic(const Input<T>& in, T scale, const std::uint32_t* words,
                          std::int64_t begin, std::int64_t end, std::uint8_t* bits, T* e_out);
template <typename T>
Counts QuantizeSign(const Input<T>& in, T scale, std::int64_t begin, std::int64_t end,
                    std::uint8_t* bits, T* e_out);
template <typename T>
void Expand(const std::uint8_t* bits, T value, std::int64_t begin, std::int64_t end, T* out);
template <typename T>
void ExpandAdd(const std::uint8_t* bits, T value, std::int64_t begin, std::int64_t end, T* acc);
}  // namespace reference

}  // namespace lemmalab::one_bit
