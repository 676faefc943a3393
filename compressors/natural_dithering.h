// Natural dithering D_nat^{p,s} (Horvath, Ho, Horvath, Sahu, Canini, Richtarik, "Natural
// compression for distributed deep learning", MSML 2022 / arXiv:1905.10988, Sec. 3): QSGD's
// random dithering (compressors/qsgd.h) with the s + 1 levels of [0, 1] placed at powers of two,
//
//   0,  2^(1-s),  2^(2-s),  ...,  1/2,  1,
//
// so that s levels reach down to 2^(1-s) where QSGD's uniform levels would need 2^(s-1). With
// N = ||x||_p and y_j = |x_j| / N in [0, 1], between the adjacent levels l_lo <= y_j <= l_hi,
//
//   C(x)_j = N sign(x_j) l_hi  with probability (y_j - l_lo) / (l_hi - l_lo),  else N sign(x_j)
//   l_lo,
//
// so E[C(x)] = x (unbiased). A level is sent exactly (probability 0 of moving). With s = 1 the
// levels are {0, 1}: TernGrad for p = inf (compressors/terngrad.h); with s = 2 they are
// {0, 1/2, 1}, QSGD's with s = 2; this compressor then sends those compressors' very bytes.
//
// Variance: omega() is the paper's Theorem 7, D_nat^{p,s} in B(omega) with
//   omega = 1/8 + d^(1/r) 2^(1-s) min(1, d^(1/r) 2^(1-s)),   r = min(p, 2) = 2 for p = 2, inf.
// Checked here (a tighter bound follows): per coordinate the variance is
// N^2 (l_hi - y_j)(y_j - l_lo). For y_j >= 2^(1-s) the levels are a and 2a, and
// (2a - y)(y - a) <= y^2/8 (natural compression's bound, attained at y = 4a/3), which sums to at
// most ||x||^2 / 8. For y_j < delta = 2^(1-s) the levels are 0 and delta, and
// (delta - y) y <= min(delta y, delta^2/4); summed, at most N^2 min(delta ||x||_1 / N, d delta^2/4)
// <= min(sqrt(d) delta, d delta^2 / 4) ||x||^2, since N <= ||x||_2 (p = 2 or inf) and
// ||x||_1 <= sqrt(d) ||x||_2. So E||C(x) - x||^2 <= (1/8 + min(sqrt(d) delta, d delta^2/4))
// ||x||^2, within the theorem's constant. Like QSGD's, the constants are those of the exact
// quantizer: the float32 N_f (rounded up, at most a relative 2^-23 above N; the 1/8 term does not
// depend on it), the 2^-32 draw granularity and the rounding of decoded values to T are not
// included.
//
// Options: levels = s (integer in [1, 64], default 8, the D_nat^{2,8} of the paper's Sec. 5
// experiments; 2^(1-64) ~ 1e-19 relative is below either precision); norm = "2" (default) or
// "inf".
//
// The scale: N over the finite elements, rounded UP to float32 and capped at the largest float,
// N_f, exactly as QSGD's (compressors/multibit.h: NormScale), and y_j = |x_j| / N_f in double.
// y_j >= 2^(1-s): y_j = m 2^k with m in [0.5, 1) (frexp), l_lo = 2^(k-1), and the probability of
// going up is 2m - 1, exact; y_j < 2^(1-s): l_lo = 0, probability y_j 2^(s-1), exact. Elements
// with |x_j| > N_f (only for double inputs beyond the float32 range) are sent at level 1 and
// counted in EncodeStats.out_of_domain; non-finite elements are counted in
// EncodeStats.non_finite, left out of the norm, and sent as 0.
//
// Draws: element j uses word j of the stream from where Encode starts, going up iff
// U_j < probability (compressors/quantization.h: DrawBelow); exactly d words per Encode.
//
// Wire format (little-endian), QSGD's layout: N_f as float32, then one (w + 1)-bit field per
// element, w = ceil(log2(s + 1)) (4 for s = 8): bits 0..w-1 the level code c in [0, s], c = 0 for
// 0 and c >= 1 for 2^(c - s), bit w the sign (1 = negative, set only when c > 0), packed as a
// bit-stream (field j at stream bits [j (w + 1), (j + 1) (w + 1)), stream bit i in byte i / 8 at
// position i % 8). Size: 32 + 8 ceil(d (w + 1) / 8) bits (5 bits per element for s = 8).
// Decoding: N_f 2^(c - s), exact in double, rounded to T.
// Split (chunked collectives): as QSGD's, part k is N_f of the whole vector, repeated, then the
// fields of its range; always exact.
#pragma once

#include "compressors/compressor.h"
#include "compressors/qsgd.h"

namespace lemmalab {

inline constexpr int kMaxNaturalDitheringLevels = 64;

template <typename T>
std::unique_ptr<Compressor<T>> MakeNaturalDithering(int levels, QsgdNorm norm,
                                                    std::int64_t dimension);

template <typename T>
CompressorMaker<T> NaturalDitheringFromOptions(OptionTable& options);

}  // namespace lemmalab
