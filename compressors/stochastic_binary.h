// Birder's stochastic binary quantizer Q (birder.txt Eq. 5, Lemma 1).
//
//   Q(u)_j = +1 with probability p_j = (u_j + 1) / 2, else -1,     for u_j in [-1, 1],
// so E[Q(u)] = u and E[(u_j - Q(u)_j)^2] = 1 - u_j^2 <= 1.
//
// Draw rule (part of the format, so other implementations can reproduce it): element j uses
// word j of the stream from where Encode starts, r_j, and Q(u)_j = +1 iff r_j - 2^31 < u_j 2^31,
// compared exactly; that is U_j < p_j for U_j = r_j / 2^32, so P(+1) differs from p_j by less
// than 2^-32. The words come from the vectorised Philox and the decision from exact operations,
// so the SIMD encoder equals the scalar one bit for bit.
//
// Wire format (compressors/one_bit_compressor.h): ceil(d/8) bytes of packed bits, preceded,
// under the "rescale" policy only, by one float32 scale.
//
// Outside [-1, 1] the paper's Q is undefined; error feedback pushes inputs there
// (docs/conventions.md §11). The policy is an option, and Encode counts the inputs it applies to
// (EncodeStats):
//   domain = "clip"     clamp u_j to [-1, 1] first (default; 1 bit per element; biased
//                       outside the interval, so unbiased() is false);
//   domain = "rescale"  s = max(1, ||u||_inf) rounded up to float32, send s and Q(u / s);
//                       the receiver decodes s * (+-1). Unbiased for every finite input, at the
//                       cost of 32 bits per message. (u / s is evaluated as u * (1 / s).)
// Non-finite inputs are counted (never silently quantized as if valid) and sent as -1.
// Neither policy has an omega or alpha (compressors/compressor.h): under "rescale",
// E||C(u) - u||^2 = d s^2 - ||u||^2, unbounded relative to ||u||^2 as u -> 0 (s stays >= 1);
// "clip" is biased and sends +-1 for u = 0.
//
// Split (Birder's hierarchical all-reduce, birder.txt Sec. 4): part k is the bits of its range (a
// byte slice), preceded under "rescale" by the whole vector's scale s, repeated in every part;
// always exact (compressors/one_bit_compressor.h).
#pragma once

#include "compressors/compressor.h"

namespace lemmalab {

enum class QuantizerDomain { kClip, kRescale };

// The wire format (compressors/one_bit_compressor.h), for the CPU and CUDA encoders alike.
struct OneBitFormat;
OneBitFormat StochasticBinaryFormat(QuantizerDomain domain, std::int64_t dimension);

template <typename T>
std::unique_ptr<Compressor<T>> MakeStochasticBinary(QuantizerDomain domain, std::int64_t dimension);

template <typename T>
CompressorMaker<T> StochasticBinaryFromOptions(OptionTable& options);

}  // namespace lemmalab
