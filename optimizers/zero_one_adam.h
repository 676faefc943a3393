// 0/1 Adam (Lu, Li, Zhang, De Sa, He, "Maximizing Communication Efficiency for Large-scale
// Training via 0/1 Adam", ICLR 2023, arXiv 2202.06009), Algorithm 1 with the variance-update and
// synchronisation policies of its experiments. Comments cite Algorithm 1's equations by their
// symbols, not by line numbers. The sources, where they differ from this code, and measured
// behaviour: docs/optimizers.md#zero-one-adam.
//
// Every replica holds v, the synchronised momentum m and x_{t'} (the model at the last
// synchronisation: x itself, which Apply changes only when the workers synchronise); worker i
// holds its own m^(i), x^(i) (LocalParameters) and u^(i). For t = 1..T:
//   worker i:   m_{t+1/2}^(i) = beta1 m_t^(i) + (1 - beta1) g_t^(i)
//               x_{t+1/2}^(i) = x_t^(i) - gamma_t m_{t+1/2}^(i) / (sqrt(v) + eps)
//               u_{t+1/2}^(i) = u_t^(i) + gamma_t m_{t+1/2}^(i)
//   t in T_v:   g-bar_t = (1/n) sum_i g_t^(i), a full-precision all-reduce;
//               v_{t+1} = beta2 v_t + (1 - beta2) g-bar_t^2        (else v_{t+1} = v_t)
//   t in T_u:   u-bar = 1-bit all-reduce of u_{t+1/2}^(i): C(u^(i) + delta^(i)) up with the
//               workers' error feedback, the server's C(mean + delta-bar) down with its own (1-bit
//               Adam's compressed all-reduce, the same CompressedExchange as onebit-adam);
//               m_{t+1}^(i) = u-bar / sum_{h=t'}^{t} gamma_h,  x_{t+1}^(i) = x_{t'} - u-bar /
//               (sqrt(v) + eps),  u_{t+1}^(i) = 0,  t' = t + 1
//   otherwise:  a local step: the workers keep m_{t+1/2}, x_{t+1/2}, u_{t+1/2} and send nothing
//               (an empty message: 0 bytes each way).
// Choices where the sources differ or are silent:
//   - At a step of T_v the update divides by the v just updated (v_{t+1}), as Adam does: read
//     with v_t, step 1 would divide by eps (v_0 = 0). eps goes outside the root by default,
//     inside with eps_placement = "inside".
//   - variance_sync: what moves m and x on a step of T_v. "full-precision" (default): the
//     full-precision mean gradient also gives m = beta1 m + (1 - beta1) g-bar and Adam's step
//     x -= gamma m / (sqrt(v) + eps), and no 1-bit message is sent. Every step of T_v lies before
//     the freeze, where every step synchronises (below), so u_t = 0 there and the mean gradient
//     determines u-bar exactly: this is the sync of u without compression. With it, 0/1 Adam
//     with T_v = {1..T_w} and T_u = every step is 1-bit Adam (onebit-adam, warmup T_w): bit for
//     bit at a constant power-of-two step size (scaling u = gamma m by a power of two is exact,
//     scaled sign included), to rounding otherwise (tests/zero_one_adam_test.cc). "one-bit"
//     reads Algorithm 1 literally: the T_v all-reduce feeds v only and the step's u goes through
//     the 1-bit sync as on any step of T_u, so such a step sends both (the raw gradient, then
//     the 1-bit u). That compresses the momentum from step 1, while v is still near 0, and
//     scaled sign gives every coordinate the same |m_j|, so coordinates with small v take huge
//     steps.
// Policies (k_j the step of the j-th update):
//   T_v: k_1 = 1, k_{j+1} - k_j = 2^floor(j / kappa) (kappa = var_update_scaler), up to
//        var_freeze_step (= max T_v): kappa updates one step apart, then kappa two apart, ...
//   T_u: every step up to var_freeze_step; then k_1 = var_freeze_step + 1,
//        k_{j+1} - k_j = min(2^floor(j / local_step_scaler), H) with H = local_step_clipper, the
//        largest interval: the interval is capped, not the exponent, and it doubles with the
//        number of synchronisations, not of steps.
// Each step's message is what its kind needs, nothing else, no header (the schedule says which
// parts a step has): [the raw gradient, d values of the run's precision, when t is in T_v]
// [the 1-bit u (scaled sign: 8 ceil(d/8) + 32 bits) when t is in T_u and is not a
// full-precision sync]; the server's reply has the same parts (the mean gradient, C(mean u +
// delta-bar)). Local steps send 0 bytes.
//
// One chunk only (SupportsChunks false): the message holds two differently encoded parts. The
// error feedback is 1-bit Adam's classic one on both sides, in u-space, and is not reset at the
// freeze: the messages are u before it and after. With a step size that changes, classic
// feedback on u = gamma m is 1-bit Adam's "scaled" feedback on m (the error is carried in the
// previous step's units). x is the model of the last sync, which Apply changes only at a sync;
// decoupled weight decay (optimizers/weight_decay.h) shrinks it at every Apply, local steps
// included, and does not reach the replicas x^(i) (as for local SGD); l2 decay acts on each
// replica's gradient.
#pragma once

#include <cstdint>
#include <memory>

#include "optimizers/adam.h"
#include "optimizers/optimizer.h"

namespace lemmalab {

enum class VarianceSync { kOneBit, kFullPrecision };

struct ZeroOneAdamOptions {
  double beta1 = 0.9;                                   // in [0, 1); zoadam.py's default betas
  double beta2 = 0.999;                                 // in [0, 1)
  double eps = 1e-8;                                    // > 0; zoadam.py
  EpsPlacement eps_placement = EpsPlacement::kOutside;  // zoadam.py: m / (sqrt(v) + eps)
  // max T_v, >= 0 (0: v is never updated and stays 0). The DeepSpeed tutorial's BERT
  // configuration uses 1000 (zoadam.py's class default is 100000).
  std::int64_t var_freeze_step = 1000;
  std::int64_t var_update_scaler = 16;  // kappa >= 1; the tutorial: 16 works on BERT, GPT, ImageNet
  // >= 1; the tutorial's configuration: 1000 (zoadam.py's class default 32678).
  std::int64_t local_step_scaler = 1000;
  std::int64_t local_step_clipper = 16;                       // H >= 1; zoadam.py and the tutorial
  VarianceSync variance_sync = VarianceSync::kFullPrecision;  // zoadam.py
};

// The options of zero-one-adam from its table, with the defaults above.
ZeroOneAdamOptions ReadZeroOneAdamOptions(OptionTable& options);

// Membership of step t (1-based) in the schedules the options define (see the top of this file).
bool InVarianceSchedule(const ZeroOneAdamOptions& options, std::int64_t t);  // t in T_v
bool InSyncSchedule(const ZeroOneAdamOptions& options, std::int64_t t);      // t in T_u

// What step t's messages carry: the full-precision gradient (t in T_v), the 1-bit u (t in T_u,
// unless a full-precision sync replaces it), or neither (a local step).
struct ZeroOneAdamStep {
  bool full_precision = false;
  bool one_bit = false;
};
ZeroOneAdamStep ZeroOneAdamStepAt(const ZeroOneAdamOptions& options, std::int64_t t);

template <typename T>
std::unique_ptr<DistributedOptimizer<T>> ZeroOneAdamFromOptions(OptionTable& options,
                                                                const OptimizerContext& context);

}  // namespace lemmalab
