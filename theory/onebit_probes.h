// The probes of 1-bit Adam's and 1-bit LAMB's analyses:
//   onebit-error     ||delta_t^(i)|| per worker and ||delta_bar_t|| at the server
//                    (onebit-adam-icml-with-appendix.txt Assumption 1.3: both bounded by a
//                    constant for all t); recorded at every step, so the warmup's (zero, no
//                    feedback) values are there too and the assertion picks the compression phase
//   variance-norm    ||v_t||_1 and ||v_t||_2 of the second-moment estimate per step
//                    (onebit-adam-icml-with-appendix.txt Sec. 3.3 and Fig. 2, and the l1 ratio of
//                    Sec. 7.1 used to choose T_w); after 1-bit Adam's warmup v is frozen, so the
//                    series is flat there
//   lamb-ratios      r_t^(l) and c_t^(l) per layer (onebit-lamb.txt Alg. 1 lines 17-20, Fig. 6;
//                    c_t^(l) of Eq. (1) during warmup and for LAMB), and in 1-bit LAMB's
//                    compression phase `target`, line 17's ratio of frozen to fresh variance
//                    before the clips (what r follows: the layer's variance drift)
// Series (probe/series, worker):
//   onebit-error/worker_norm (i), onebit-error/server_norm (kServer),
//   variance-norm/l1 and variance-norm/l2 (kServer),
//   lamb-ratios/r, lamb-ratios/c and lamb-ratios/target: the `worker` field holds the LAYER index l
//   (0-based, in the problem's layer order), not a worker: these are replica-wide per-layer
//   scalars.
#pragma once

#include "theory/probe.h"

namespace lemmalab {

template <typename T>
std::unique_ptr<Probe<T>> MakeOnebitErrorProbe(const ProbeContext& context);
template <typename T>
std::unique_ptr<Probe<T>> MakeVarianceNormProbe(const ProbeContext& context);
template <typename T>
std::unique_ptr<Probe<T>> MakeLambRatiosProbe(const ProbeContext& context);

}  // namespace lemmalab
