// The per-layer scalar rules of LAMB and 1-bit LAMB (optimizers/lamb.cc), in one definition that
// the CPU optimizers and the batched (GPU) ones (batched/kernels.h) both compile, so that the two
// compute the same bits: Eq. (1)'s trust ratio c^(l) and Algorithm 1's variance ratio r^(l)
// (lines 17-19). The layer norms these read are summed in compressors/one_bit_element.h's fixed
// order (LayerNorm in lamb.cc, the partial sums of the batched form).
#pragma once

#include "core/host_device.h"
#include "core/host_device_math.h"

namespace lemmalab::lamb {

// The comparisons of std::max and std::min (a NaN first argument is kept, a NaN second one is
// not), which device code cannot call.
LEMMALAB_HOST_DEVICE inline double Larger(double a, double b) { return a < b ? b : a; }
LEMMALAB_HOST_DEVICE inline double Smaller(double a, double b) { return b < a ? b : a; }

// clip(x, a, b) := min{max{x, a}, b} (onebit-lamb.txt Sec. 2). A NaN x stays NaN, so a broken
// step shows.
LEMMALAB_HOST_DEVICE inline double Clip(double x, double lo, double hi) {
  return Smaller(Larger(x, lo), hi);
}

// c^(l) of Eq. (1) from ||x_{t-1}^(l)|| and ||u_t^(l)||. `zero_is_one`: apex FusedLAMB's and
// DeepSpeed's c = 1, unclipped, when either norm is 0 (LambZeroNorm::kOne); otherwise Eq. (1) as
// written (docs/conventions.md §8): ||x|| = 0 is the ratio 0, so c_min; ||u|| = 0 < ||x|| is its
// limit +infinity, so c_max. The 0/0 of an all-zero layer counts as ||x|| = 0.
LEMMALAB_HOST_DEVICE inline double ScalingCoefficient(double x_norm, double u_norm, double c_min,
                                                      double c_max, bool zero_is_one) {
  if (x_norm == 0 || u_norm == 0) {
    if (zero_is_one) return 1.0;
    return x_norm == 0 ? c_min : c_max;
  }
  return Clip(x_norm / u_norm, c_min, c_max);
}

// One coordinate's term of line 17's max over a layer, from its frozen and fresh variance:
// with `denominators` (OneBitLambRatio::kDenominator) (sqrt(v_Tw) + eps) / (sqrt(v_t) + eps),
// always defined; otherwise v_Tw / v_t, undefined where v_t = 0 (a coordinate whose
// reconstructed gradient has always been 0 has no ratio, rather than pinning the layer's r at a
// clip bound). Returns whether the term is defined; `term` is then set.
LEMMALAB_HOST_DEVICE inline bool RatioTerm(double frozen, double fresh, bool denominators,
                                           double eps, double& term) {
  if (denominators) {
    term = (hd::Sqrt(frozen) + eps) / (hd::Sqrt(fresh) + eps);
    return true;
  }
  if (fresh == 0) return false;
  term = frozen / fresh;
  return true;
}

// Lines 18-19: the target r clipped to r_{t-1} (1 +- threshold), then to [r_min, r_max].
LEMMALAB_HOST_DEVICE inline double ClippedRatio(double target, double previous, double threshold,
                                                double r_min, double r_max) {
  const double r = Clip(target, (1 - threshold) * previous, (1 + threshold) * previous);
  return Clip(r, r_min, r_max);
}

}  // namespace lemmalab::lamb
