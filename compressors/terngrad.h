// TernGrad (Wen, Xu, Yan, Wu, Wang, Chen, Li, NeurIPS 2017, Sec. 3): stochastic ternarization
//
//   C(x)_j = s_max sign(x_j) b_j,   s_max = max_j |x_j|,   b_j ~ Bernoulli(|x_j| / s_max),
//
// so E[C(x)] = x (unbiased) and E[(C(x)_j - x_j)^2] = s_max |x_j| - x_j^2 per coordinate. This is
// exactly QSGD with the max-norm and s = 1 level (compressors/qsgd.h), and is built from that
// quantizer: the same draws, the same message bytes, the same handling of edge cases, and QSGD's
// omega = min(d, sqrt(d)) = sqrt(d) (E||C(x) - x||^2 = s_max ||x||_1 - ||x||^2 <= sqrt(d) ||x||^2
// by Cauchy-Schwarz, since s_max <= ||x||_2). The paper's
// refinements for training (layer-wise ternarizing, gradient clipping) are not part of this
// compressor.
//
// s_max is computed over the finite elements and rounded UP to float32 (so |x_j| / s_max <= 1
// holds for the scale on the wire), and b_j is drawn with that float32 s_max. Draws: element j
// uses word j of the stream from where Encode starts, b_j = 1 iff U_j < |x_j| / s_max with
// U_j = r_j / 2^32 (compressors/quantization.h: DrawBelow); exactly d words per Encode.
//
// Wire format (little-endian): s_max as float32, then 2 bits per element packed as a bit-stream
// (element j at stream bits 2j and 2j + 1, stream bit i in byte i / 8 at position i % 8): bit 2j
// is b_j, bit 2j + 1 the sign (1 = negative, set only when b_j = 1). So the codes are 00 = 0,
// 01 = +s_max, 11 = -s_max (10 is never sent). Size: 32 + 8 ceil(2d / 8) bits.
// Non-finite elements are counted in EncodeStats.non_finite and sent as 0. A double input beyond
// the float32 range is sent as +-(largest float) and counted in EncodeStats.out_of_domain.
// Split (chunked collectives): as QSGD's, part k is s_max of the whole vector, repeated, then
// the 2-bit codes of its range; always exact.
#pragma once

#include "compressors/compressor.h"

namespace lemmalab {

template <typename T>
std::unique_ptr<Compressor<T>> MakeTernGrad(std::int64_t dimension);

template <typename T>
CompressorMaker<T> TernGradFromOptions(OptionTable& options);

}  // namespace lemmalab
