#include "theory/probe_series.h"

#include <algorithm>
#include <iterator>

namespace lemmalab {
namespace {

// Every series every probe records (theory/*_probes.cc), with what it holds. The value at step t
// is the state after step t, stored as recorded (never divided by d); per_dimension marks the
// series whose probe summary shows them divided by d (ef-norm's). The worker column: a worker
// index i, -1 for the server (kServer), NULL for a run-wide value (kRunWide); lamb-ratios put the
// layer index l there.
constexpr SeriesInfo kSeries[] = {
    // birder_probes.cc
    {"q-domain", "worker_fraction",
     "fraction (0..1) of worker i's inputs to Birder's Q outside [-1, 1] at step t (birder Eq. 5); "
     "worker = i; a fraction, not per d"},
    {"q-domain", "server_fraction",
     "fraction (0..1) of the server's inputs to Birder's Q outside [-1, 1] at step t (birder Eq. "
     "5); worker = -1; a fraction, not per d"},
    {"ef-norm", "worker_sq_norm",
     "||e^(i)||^2, worker i's EF residual after step t (birder's e_{t+1}^(i)); worker = i; NOT "
     "divided by d (summary: /d, birder Lemma 1: E||e||^2 <= d)",
     true},
    {"ef-norm", "server_sq_norm",
     "||e_bar||^2, the server's EF residual after step t (birder's e_bar_{t+1}); worker = -1; NOT "
     "divided by d (summary: /d, birder Lemma 1)",
     true},
    {"min-b", "min_b",
     "min_j b_t,j, worker i's denominator before the added eps (birder Thm 1, footnote 5: b >= rho "
     "> 0); worker = i; not per d"},
    {"min-b", "max_b",
     "max_j b_t,j, worker i's denominator before the added eps (birder Thm 1's proof uses b <= G); "
     "worker = i; not per d"},
    {"min-b", "min_denominator",
     "min_j (b_t,j + eps), the denominator worker i's update divides by (birder footnote 5); "
     "worker = i; not per d"},
    {"min-b", "at_constant",
     "number of worker i's coordinates j with b_t,j = 0 (denominator = eps alone); worker = i; a "
     "count out of d, not divided by d"},
    {"min-b", "step_ratio",
     "max_j (alpha_t/(b_t,j+eps)) / (alpha_{t-1}/(b_{t-1},j+eps)), from step 2 (birder Thm 1 proof "
     "step (iii): <= 1); worker = i"},
    {"birder-z", "f_z1",
     "f(z_1), z_1 = x_1 + alpha_1 (delta_1 - e_1) (birder Lemma 2 Eq. 20; Thm 1's C1); once, at "
     "step 1; worker NULL (run-wide)"},
    {"birder-z", "residual",
     "||R_t||_inf, residual of birder Lemma 2's z-sequence identity (Eq. 22; Eq. 23 at t = 1), "
     "rounding when exact; worker NULL (run-wide)"},
    {"birder-z", "relative",
     "residual / max(||z_t||_inf, ||z_{t+1}||_inf) (birder Lemma 2, Eq. 21-23); worker NULL "
     "(run-wide); not per d"},
    // compressor_probes.cc: sender = worker i, or -1 for the server; `draws` = 64 fresh draws of
    // C on the sender's recorded input u at step t (every k-th step on large problems).
    {"q-unbiased", "z",
     "split-sample t statistic of <C_k(u) - u, w> over the draws (birder Eq. 5, Lemma 1: E C(u) = "
     "u); when all draws agree, the normal quantile of the chance an unbiased quantizer would "
     "(finite, at most 37); worker = sender"},
    {"q-unbiased", "z_inside",
     "z with w restricted to the coordinates |u_j| <= 1 (where birder Lemma 1 speaks; Q clips "
     "outside); worker = sender (i or -1)"},
    {"q-unbiased", "bias",
     "||mean_k C_k(u) - u|| / ||u|| over the 64 draws; relative, not per d; worker = sender (i or "
     "-1)"},
    {"q-unbiased", "sq_bias",
     "(||mean_k C_k(u) - u||^2 - sum_j s_j^2 / 64) / ||u||^2, unbiased for ||E C(u) - u||^2 / "
     "||u||^2 (may be < 0); worker = sender"},
    {"q-unbiased", "sq_bias_inside",
     "sq_bias on the coordinates |u_j| <= 1 only (over sum_{|u_j|<=1} u_j^2); worker = sender (i "
     "or -1)"},
    {"q-unbiased", "variance_sum",
     "sum_{j: |u_j|<=1} s_j^2, the draws' sample variances of C(u)_j (birder Lemma 1 Eq. 18); "
     "stochastic-binary senders only; worker = sender"},
    {"q-unbiased", "variance_expected",
     "sum_{j: |u_j|<=1} (1 - u_j^2), Lemma 1's variance (birder Eq. 18); stochastic-binary senders "
     "only; worker = sender; not per d"},
    {"q-deviate", "declared_q",
     "q the sender's compressor declares (spams Assumption 1: ||C(u) - u|| <= q ||u||); once, at "
     "the sender's first compression; absent if none; worker = i or -1"},
    {"q-deviate", "max_ratio",
     "the largest ||C(u) - u|| / ||u|| of the sender's calls up to step t, every call counted "
     "whatever probe_every keeps (its last value covers the whole run); worker = i or -1"},
    {"q-deviate", "calls",
     "the number of the sender's calls with u != 0 up to step t, every call counted; worker = i "
     "or -1"},
    {"q-deviate", "sq_ratio_sum",
     "sum of (||C(u) - u|| / ||u||)^2 over the sender's calls up to step t, every call counted "
     "(the mean E||C(u) - u||^2 / ||u||^2 the omega and alpha premises estimate); worker = i or "
     "-1"},
    {"q-deviate", "sq_ratio_sq_sum",
     "sum of (||C(u) - u|| / ||u||)^4 over the sender's calls up to step t (for the mean's "
     "standard error); worker = i or -1"},
    {"q-deviate", "declared_alpha",
     "alpha the sender's compressor declares (EF21's class C(alpha): E||C(u) - u||^2 <= (1 - "
     "alpha) ||u||^2); once, at the sender's first compression; absent if none; worker = i or -1"},
    {"q-deviate", "declared_omega",
     "omega the sender's unbiased compressor declares (DIANA's, MARINA's U(omega): E||C(u) - "
     "u||^2 <= omega ||u||^2); once, at the sender's first compression; absent if none"},
    {"q-deviate", "deterministic",
     "1 when the sender's compressor ignores its stream (the message is a function of u), else 0; "
     "once, at the sender's first compression; worker = i or -1"},
    {"q-deviate", "correlated_senders",
     "1 when the senders of a step share their compressors' draws (PermK), else 0; once, at the "
     "sender's first compression; worker = i or -1"},
    {"q-deviate", "ratio",
     "||C(u) - u|| / ||u|| of the run's own compression of the sender's input u (spams Assumption "
     "1: <= q < 1); skipped if u = 0; worker = i or -1"},
    // shift_probes.cc
    {"shift-error", "sq_error",
     "||s_i - g_i||^2, worker i's gradient estimate after step t (EF21's g_i^t, DIANA's h_i) "
     "against the gradient the step consumed; with full gradients at step 1, EF21 Theorem 1's "
     "G^0 term; worker = i; not per d"},
    {"shift-error", "gradient_sq",
     "||g_i||^2, the gradient worker i's step consumed (at step 1: DIANA's H^0 term with h_i^0 = "
     "0); worker = i; not per d"},
    // one_bit_probes.cc
    {"onebit-error", "worker_norm",
     "||delta_t^(i)||, worker i's compression error after step t, not squared (onebit-adam "
     "Assumption 1.3); worker = i; not per d"},
    {"onebit-error", "server_norm",
     "||delta_bar_t||, the server's compression error after step t, not squared (onebit-adam "
     "Assumption 1.3); worker = -1; not per d"},
    {"onebit-error", "combined_norm",
     "||delta_t||, delta_t = (1/n) sum_i delta_t^(i) + delta_bar_t (onebit-adam Thm 1, Lemma 2: "
     "E||delta_t||^2 <= eps^2); both sides' EF only; worker NULL"},
    {"onebit-error", "frozen_sqrt_min",
     "min_j sqrt(v_Tw,j) of the frozen variance (onebit-adam Thm 1); once, at the first step v is "
     "frozen; worker NULL (run-wide)"},
    {"onebit-error", "frozen_sqrt_max",
     "max_j sqrt(v_Tw,j) of the frozen variance (onebit-adam Thm 1); once, at the first step v is "
     "frozen; worker NULL (run-wide)"},
    {"variance-norm", "l1",
     "||v_t||_1, the second-moment estimate after step t (onebit-adam Sec. 3.3: v stabilises); "
     "worker = -1 (server); not per d"},
    {"variance-norm", "l2",
     "||v_t||_2 (not squared), the second-moment estimate after step t (onebit-adam Sec. 3.3, Fig. "
     "2); worker = -1 (server); not per d"},
    {"lamb-ratios", "r",
     "r_t^(l), layer l's clipped ratio (onebit-lamb Alg. 1 lines 17-19), in the compression "
     "phase (t > T_w; it is 1 before); worker column = layer index l"},
    {"lamb-ratios", "target",
     "layer l's line-17 ratio before the clips (onebit-lamb Alg. 1), in the compression phase "
     "(t > T_w, v frozen); worker column = layer index l"},
    {"lamb-ratios", "c",
     "c_t^(l), layer l's scaling (onebit-lamb Eq. 1's clip in warmup and LAMB; Alg. 1 line 20 r "
     "c_avg after); worker column = layer index l"},
    {"lamb-ratios", "c_clip_excess",
     "how far c_t^(l) lies outside [c_min, c_max] in warmup (every step for LAMB; onebit-lamb Eq. "
     "1), relative to the bound it passes: 0 inside, +inf past a bound of 0; worker column = "
     "layer index l"},
    {"lamb-ratios", "r_clip_excess",
     "how far r_t^(l) lies outside [r_min, r_max] after the warmup (onebit-lamb Alg. 1 line 19), "
     "relative to the bound it passes; worker column = layer index l"},
    {"lamb-ratios", "r_step_excess",
     "how far r_t^(l) lies outside [(1 - r_threshold) r_(t-1), (1 + r_threshold) r_(t-1)] "
     "(onebit-lamb Alg. 1 line 18; only where r_(t-1) is in [r_min, r_max]), relative; the "
     "previous step's r, whatever probe_every keeps; worker column = layer index l"},
    {"lamb-ratios", "c_product_excess",
     "|c_t - r_t c_avg| / |r_t c_avg| after the warmup (onebit-lamb Alg. 1 line 20), c_avg the "
     "beta3-average of every warmup step's c; worker column = layer index l"},
    {"q-unbiased", "deterministic",
     "1 when the sender's compressor ignores its stream (its draws are one value, whose bias is "
     "exact), else 0; once, at the sender's first sampled call; worker = sender"},
    // spams_probes.cc
    {"spams-ef", "sq_norm",
     "||e_{t+1,i}||^2 after step t: worker i's EF error (dist-spams) or the server's one error "
     "(spams); worker = i or -1; NOT divided by d (spams Lemma 2)"},
    {"spams-ef", "q",
     "q the compressor declares (spams Assumption 1); once, at step 1; worker 0 = the workers' "
     "compressor, -1 = the server's; absent if none"},
    {"spams-vhat", "max_vhat",
     "max_j v_hat_t,j, the AMSGrad server's running-max variance after step t (spams Lemma 4); "
     "worker = -1; not per d"},
    {"spams-vhat", "q",
     "q declared by the compressor that produced g~ (workers' for dist-spams, server's for spams; "
     "spams Lemma 4); once, at step 1; worker = -1"},
    {"spams-d", "l1",
     "||D_t||_1, D_t = 1/sqrt(v_hat_{t-1}+eps) - 1/sqrt(v_hat_t+eps) (spams Lemma 5: sum_t <= "
     "d/sqrt(eps)); worker = -1; not per d"},
    {"spams-d", "sq",
     "||D_t||^2 of the same D_t (spams Lemma 5: sum_t <= d/eps); worker = -1; not divided by d"},
    {"spams-moments", "momentum_sq",
     "||m'_t||^2, m'_t = beta1 m'_{t-1} + (1-beta1) g_bar_t of the uncompressed mean gradients, "
     "m'_0 = 0 (spams Lemma 1); worker NULL"},
    {"spams-moments", "error_average_sq",
     "||E_t||^2, E_t = beta1 E_{t-1} + (1-beta1) e_bar_t, the workers' mean error (spams: the "
     "server's), E_0 = 0 (spams Lemma 3); worker NULL"},
};

}  // namespace

std::span<const SeriesInfo> ProbeSeries() { return kSeries; }

const SeriesInfo* FindProbeSeries(std::string_view probe, std::string_view series) {
  const auto it = std::find_if(std::begin(kSeries), std::end(kSeries), [&](const SeriesInfo& s) {
    return s.probe == probe && s.series == series;
  });
  return it == std::end(kSeries) ? nullptr : &*it;
}

}  // namespace lemmalab
