// Birder's stochastic binary quantizer Q (birder.txt Eq. 5, Lemma 1).
//
//   Q(u)_j = +1 with probability p_j = (u_j + 1) / 2, else -1,     for u_j in [-1, 1],
// so E[Q(u)] = u and E[(u_j - Q(u)_j)^2] = 1 - u_j^2 <= 1.
//
// Draw rule (part of the format, so other implementations can reproduce it): element j uses word
// j of the stream, r_j; with U_j = r_j / 2^32 (Boost's uniform_01<double>, exact), Q(u)_j = +1
// iff U_j < p_j, p_j computed in double. P(+1) differs from p_j by less than 2^-32.
//
// Wire format: ceil(d/8) bytes of packed bits (core/bits.h: bit j in byte j/8 at position j%8,
// set = +1), preceded, under the "rescale" policy only, by one float32 scale.
//
// Outside [-1, 1] the paper's Q is undefined; error feedback pushes inputs there (DOMAIN.md).
// The policy is an option, and Encode counts the inputs it applies to (EncodeStats):
//   domain = "clip"     clamp u_j to [-1, 1] first (default; 1 bit per element; biased
//                       outside the interval, so unbiased() is false);
//   domain = "rescale"  s = max(1, ||u||_inf) rounded up to float32, send s and Q(u / s);
//                       the receiver decodes s * (+-1). Unbiased for every finite input, at the
//                       cost of 32 bits per message.
// Non-finite inputs are counted (never silently quantized as if valid) and sent as -1.
#pragma once

#include "compressors/compressor.h"

namespace lemmalab {

enum class QuantizerDomain { kClip, kRescale };

template <typename T>
std::unique_ptr<Compressor<T>> MakeStochasticBinary(QuantizerDomain domain);

template <typename T>
CompressorMaker<T> StochasticBinaryFromOptions(OptionTable& options);

}  // namespace lemmalab
