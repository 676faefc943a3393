// Probes of the compressor itself, on the inputs the run actually gives it (every worker's and,
// with one server chunk, the server's, per call):
//   q-unbiased  E[C(u)] = u (birder.txt Eq. 5, Lemma 1 Eq. 17; the unbiased compressors'
//               contract): `kDraws` fresh draws of C on the recorded input u from the probe's own
//               Philox stream (seed, kProbe, sender, t), so the run itself is untouched. The
//               statistic is a split-sample test: the first half of the draws picks the direction
//               w = sign(mean_k C_k(u) - u), the second half tests <C_k(u) - u, w>, whose mean is 0
//               for every fixed w when C is unbiased and positive when C leans the way the first
//               half saw (any bias). Recorded per call: z (the t statistic of the second half;
//               +inf for a deterministic compressor that moves u), z_inside (the same on the
//               coordinates with |u_j| <= 1, where Lemma 1 speaks: Birder's Q clips outside
//               them, which is biased there, docs/conventions.md), bias (||mean_k C_k(u) - u|| /
//               ||u|| over all draws), sq_bias and sq_bias_inside (unbiased estimates of the
//               relative squared bias, which pooled over calls bound it from above: the positive
//               evidence of unbiasedness) and, on the coordinates with |u_j| <= 1, variance_sum =
//               sum_j s_j^2 (the draws' sample variances) and variance_expected =
//               sum_j (1 - u_j^2) (Lemma 1 Eq. 18: Var Q(u)_j = 1 - u_j^2 for Birder's
//               quantizer; recorded only for senders whose compressor is stochastic-binary).
//   q-deviate   ||C(u) - u|| / ||u|| for every call (spams.txt Assumption 1: <= q < 1), from the
//               run's own compression, and what the compressor declares at each sender's first
//               compression: q (`declared_q`), alpha and omega (`declared_alpha`,
//               `declared_omega`; each absent when it declares none), and whether it ignores its
//               stream (`deterministic`) or shares draws across senders (`correlated_senders`),
//               which the EF21, DIANA and MARINA checks read (theory/estimator_assertions.cc).
// Both need the optimizer's compression records (Observable::KeepCompressionRecords).
#pragma once

#include "theory/probe.h"

namespace lemmalab {

// Draws per call of q-unbiased, and the most coordinate-draws one step may cost: on large
// problems the probe runs every k-th step, k = ceil(kDraws d (n + 1) / kDrawBudget), so a run of
// the Fashion-MNIST MLP stays within a few times its unprobed time.
inline constexpr int kUnbiasednessDraws = 64;
inline constexpr std::int64_t kUnbiasednessDrawBudget = std::int64_t{1} << 22;

template <typename T>
std::unique_ptr<Probe<T>> MakeUnbiasednessProbe(const ProbeContext& context);
template <typename T>
std::unique_ptr<Probe<T>> MakeDeviationProbe(const ProbeContext& context);

// The q-unbiased statistics of one input: `draws` encodes of `compressor` on u.
struct UnbiasednessSample {
  double z = 0;         // split-sample t statistic (see above)
  double z_inside = 0;  // the same with w restricted to the coordinates |u_j| <= 1
  double bias = 0;      // ||mean C(u) - u|| / ||u||
  // (||mean C(u) - u||^2 - sum_j s_j^2 / draws) / ||u||^2: unbiased for the relative squared bias
  // ||E C(u) - u||^2 / ||u||^2 (may be negative), and the same on the coordinates |u_j| <= 1
  double sq_bias = 0;
  double sq_bias_inside = 0;
  double variance_sum = 0;       // sum_j s_j^2 over |u_j| <= 1
  double variance_expected = 0;  // sum_j (1 - u_j^2) over the same coordinates
};
template <typename T>
UnbiasednessSample SampleUnbiasedness(Compressor<T>& compressor, const Vector<T>& u, int draws,
                                      PhiloxStream& stream);

}  // namespace lemmalab
