// The probes of SPAMS's analysis (spams.txt App. A and B), for spams and dist-spams (and, where
// the quantity exists, any optimizer exposing it):
//   spams-ef    ||e_t,i||^2 per worker (dist-spams, Alg. 2 line 8) or of the one error at the
//               server (spams, Alg. 3 line 6, worker kServer), against Lemma 2's
//               4 q^2 G^2 / (1-q^2)^2; also the compressor's declared q (Assumption 1)
//   spams-vhat  max_j v_hat_t,j at the server (Alg. 2 line 15), against Lemma 4's
//               4 (1+q^2)^3 G^2 / (1-q^2)^2; also the declared q
//   spams-d     ||D_t||_1 and ||D_t||^2 of D_t = 1/sqrt(v_hat_{t-1} + eps) - 1/sqrt(v_hat_t + eps)
//               (Lemma 5), from the update's own denominator sqrt(v_hat_t + eps)
//   spams-moments  the proof's two virtual moving averages (App. A, lines 527-545):
//               ||m'_t||^2 with m'_t = beta1 m'_{t-1} + (1-beta1) g_bar_t of the averaged
//               uncompressed gradients (Lemma 1), and ||E_t||^2 with E_t = beta1 E_{t-1} +
//               (1-beta1) e_bar_t of the averaged errors (Lemma 3; the server's one error for
//               Algorithm 3), both from 0
// Series (probe/series, worker):
//   spams-ef/sq_norm (i or kServer); spams-ef/q (0: the workers' compressor's q, kServer: the
//   server's); spams-vhat/q (kServer: the q of the compressor whose output v_hat averages); the
//   q series are recorded once, at the first step, and are absent when the compressor declares
//   no q; spams-vhat/max_vhat (kServer);
//   spams-d/l1 and spams-d/sq (kServer); spams-moments/momentum_sq and
//   spams-moments/error_average_sq (run-wide). The value at step t is the state after step t:
//   e_{t+1,i} in the paper's indexing, v_hat_t, D_t.
#pragma once

#include "theory/probe.h"

namespace lemmalab {

template <typename T>
std::unique_ptr<Probe<T>> MakeSpamsErrorProbe(const ProbeContext& context);
template <typename T>
std::unique_ptr<Probe<T>> MakeSpamsMaxVarianceProbe(const ProbeContext& context);
template <typename T>
std::unique_ptr<Probe<T>> MakeSpamsDenominatorStepProbe(const ProbeContext& context);
template <typename T>
std::unique_ptr<Probe<T>> MakeSpamsMomentsProbe(const ProbeContext& context);

}  // namespace lemmalab
