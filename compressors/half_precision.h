// fp16 and bf16: a deterministic cast of every element to a 16-bit float, rounded to nearest with
// ties to even by Eigen (Eigen::half = IEEE binary16: 11 significant bits, largest finite 65504,
// smallest normal 2^-14; Eigen::bfloat16: 8 significant bits with float32's exponent range,
// largest finite (2 - 2^-7) 2^127, smallest normal 2^-126). Used for the 16-bit baselines of the
// papers (e.g. onebit-adam.txt's fp16 volume ratio). Two compressors, registered separately:
// "fp16" and "bf16". Neither is unbiased.
//
// Double input goes through float32 first (Eigen's constructors cast to float), so a double
// element is rounded twice; the result can differ from a direct rounding of the double in rare
// near-ties, by one 16-bit ulp, and the relative error bound grows by at most 2^-23.
//
// Out of range (EncodeStats.out_of_domain counts these finite inputs, nonzero magnitudes outside
// the format's normal range):
//   - finite values whose rounding would give infinity (fp16: |x| >= 65520; bf16:
//     |x| >= (2 - 2^-8) 2^127, including doubles beyond float32's range) are sent as +-(largest
//     finite value), so a finite input never decodes to infinity;
//   - nonzero |x| below the smallest normal become 16-bit subnormals (kept by both formats) or 0:
//     only their absolute error, at most half the subnormal spacing (fp16 2^-25, bf16 2^-134), is
//     bounded, not the relative one.
// NaN and infinite inputs are counted in EncodeStats.non_finite and sent as 16-bit NaN / infinity.
//
// q (spams.txt Assumption 1): within the normal range, |C(x)_j - x_j| <= u |x_j| with unit
// roundoff u = 2^-11 (fp16) or 2^-8 (bf16).
//   - fp16: q() = nullopt. Its normal range [2^-14, 65504] misses typical gradients (1e-6 is an
//     fp16 subnormal with ~4 significant bits) and saturation errors are unbounded, so no q < 1
//     holds for every x.
//   - bf16: q() = 2^-8 for float input, 2^-8 + 2^-23 for double input (the extra rounding through
//     float32). It holds for every x whose elements are all in range (out_of_domain = 0), which
//     is every finite float vector without subnormals; for float input, saturation stays within
//     it too (1 - bf16 max / FLT_MAX < 2^-8).
//
// Wire format: d little-endian uint16 words, the raw binary16 / bfloat16 bits of the elements in
// order. Size: 16 d bits. No draws: the stream is not touched (deterministic() is true).
// Split (chunked collectives): part k is the words of its range, a byte slice of the message.
#pragma once

#include "compressors/compressor.h"

namespace lemmalab {

enum class HalfFormat { kFp16, kBf16 };

template <typename T>
std::unique_ptr<Compressor<T>> MakeHalfPrecision(HalfFormat format, std::int64_t dimension);

template <typename T>
CompressorMaker<T> Fp16FromOptions(OptionTable& options);
template <typename T>
CompressorMaker<T> Bf16FromOptions(OptionTable& options);

}  // namespace lemmalab
