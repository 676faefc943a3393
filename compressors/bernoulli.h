// Bernoulli (lazy) sending, the "Bernoulli" or "lazy" compressor of the compressed-optimisation
// literature: the whole vector with probability p, nothing otherwise,
//
//   scaled = true  (default): C(x) = (b / p) x,  b ~ Bernoulli(p): unbiased, and
//       E||C(x) - x||^2 = (p (1/p - 1)^2 + 1 - p) ||x||^2 = (1/p - 1) ||x||^2,
//       so omega() = 1/p - 1 (the class U(omega) of DIANA and MARINA);
//   scaled = false:           C(x) = b x: biased and contractive,
//       E||C(x) - x||^2 = (1 - p) ||x||^2, so alpha() = p (EF21's class C(alpha)).
// Both hold with equality for every x (up to the rounding of 1/p to T and the draw's 2^-32
// granularity below).
//
// Options: p (probability of sending, in (0, 1], default 0.5); scaled (bool, default true).
//
// Draw rule: one word r of the stream decides, b = 1 iff r / 2^32 < p
// (compressors/quantization.h: DrawBelow), so P(b = 1) = ceil(p 2^32) / 2^32, exactly p when
// p 2^32 is an integer (p = 0.5, p = 1); Encode consumes exactly that one word.
//
// Wire format: a 1-byte flag (1 = sent, 0 = not), then, when sent, the d raw values x_j in the
// run's precision T (little-endian, a NaN as the wire's NaN, core/wire_nan.h). An unsent message
// is that 1 byte; a sent one 8 + 8 d sizeof(T) bits. The receiver applies the factor 1/p (rounded
// to T) of the scaled variant, since both ends know p: the two variants send the same bytes.
// Non-finite inputs are counted over all d coordinates, sent or not.
// Split (chunked collectives): part k is the flag, repeated in every part, then the values of its
// range when sent (a byte slice); always exact.
#pragma once

#include "compressors/compressor.h"

namespace lemmalab {

template <typename T>
std::unique_ptr<Compressor<T>> MakeBernoulli(std::int64_t dimension, double p, bool scaled);

template <typename T>
CompressorMaker<T> BernoulliFromOptions(OptionTable& options);

}  // namespace lemmalab
