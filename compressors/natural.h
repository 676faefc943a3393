// Natural compression (Horvath, Ho, Horvath, Sahu, Canini, Richtarik, "Natural compression for
// distributed deep learning", 2019, arXiv:1905.10988, the operator C_nat): each element is rounded
// at random to one of the two powers of two around it,
//
//   C(x)_j = sign(x_j) 2^e        with probability p_j = (2^(e+1) - |x_j|) / 2^e,
//            sign(x_j) 2^(e+1)    otherwise,                e = floor(log2 |x_j|),
//
// and C(0) = 0. So E[C(x)] = x (unbiased), E[(C(x)_j - x_j)^2] = (2^(e+1) - |x_j|)(|x_j| - 2^e),
// at most x_j^2 / 8 (attained at |x_j| = (4/3) 2^e): E||C(x) - x||^2 <= (1/8) ||x||^2, the
// paper's omega = 1/8. A power of two is sent exactly.
//
// The float32 exponent range (the paper sends the sign and exponent bits of a float32):
//   - powers 2^-126 .. 2^127 are representable (exponent codes 1..254; code 0 is zero);
//   - 0 < |x_j| < 2^-126 (float32 subnormals, or smaller double values): rounded at random to 0
//     or 2^-126 with P(2^-126) = |x_j| / 2^-126, still unbiased but with variance
//     |x_j| (2^-126 - |x_j|), above x_j^2 / 8; counted in EncodeStats.out_of_domain;
//   - |x_j| > 2^127 (floats within a factor 2 of the largest one, or larger double values):
//     2^128 does not fit (and is infinite in float32), so the element is sent as
//     sign(x_j) 2^127, biased, and counted in EncodeStats.out_of_domain.
// So unbiasedness holds for every |x_j| <= 2^127 and the omega = 1/8 bound for the elements that
// are 0 or in [2^-126, 2^127]: exactly the inputs with out_of_domain = 0. omega() declares the
// paper's 1/8 (Theorem 3: C_nat in B(1/8)), for those inputs, and like unbiasedness without the
// 2^-32 draw granularity (which adds at most 2^-32 ||x||^2; the decoded powers of two are exact).
// Non-finite elements are counted in EncodeStats.non_finite and sent as 0.
//
// Draws: element j uses word j of the stream from where Encode starts (rounding up iff
// U_j < 1 - p_j, U_j = r_j / 2^32, compressors/quantization.h: DrawBelow), whether or not it
// needs one; Encode consumes exactly d words and leaves the stream after them. 1 - p_j =
// |x_j| / 2^e - 1 is exact in double.
//
// Wire format: 9 bits per element, as the paper counts, laid out byte-aligned: d bytes of
// float32 biased exponents E_j (element j decodes to 2^(E_j - 127), or 0 when E_j = 0; 255 is
// never sent), then ceil(d / 8) bytes of sign bits (bit j in byte j / 8 at position j % 8, set =
// negative, as in float32; clear when the element is sent as 0). Size: 8 d + 8 ceil(d / 8) bits,
// which equals 8 ceil(9 d / 8), a packed 9-bit stream's size.
// Split (chunked collectives): part k is the exponent bytes of its range followed by its sign
// bits, byte slices of the two sections; always exact.
#pragma once

#include "compressors/compressor.h"

namespace lemmalab {

template <typename T>
std::unique_ptr<Compressor<T>> MakeNatural(std::int64_t dimension);

template <typename T>
CompressorMaker<T> NaturalFromOptions(OptionTable& options);

}  // namespace lemmalab
