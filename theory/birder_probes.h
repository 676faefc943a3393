// The probes of Birder's analysis (birder.txt Sec. 3 and App. A):
//   q-domain  fraction of Q's inputs outside [-1, 1] (Eq. 5 defines Q only inside), per worker
//             and at the server; those inputs are clipped or rescaled (the quantizer's policy).
//             Only for Birder's quantizer (compressor stochastic-binary)
//   ef-norm   ||e_t^(i)||^2 per worker and ||e_bar_t||^2 at the server, against d
//             (Lemma 1: E||e||^2 <= d when the input lies in [-1, 1])
//   min-b     min_j b_t,j per worker, the denominator min_j (b_t,j + eps) >= rho (Theorem 1's
//             assumption, footnote 5), how many coordinates sit at the added constant (b = 0),
//             max_j b_t,j (the proof uses b <= G) and `step_ratio` = max_j (alpha_t / (b_t,j +
//             eps)) / (alpha_{t-1} / (b_{t-1},j + eps)) from step 2 on (the proof's step (iii)
//             needs it <= 1: the effective step never grows on any coordinate)
//   birder-z  the residual of Lemma 2's identity (Eq. 21-22; Eq. 23 at t = 1), computed from the
//             run's own x, m^(i), b^(i) + eps, g^(i), e^(i) and e_bar (App. A Eq. 9-12 average
//             them over the workers): `residual` = ||R_t||_inf and `relative` = residual / the
//             largest |entry| of z_t, z_{t+1}; f(z_1) as `f_z1` (Theorem 1's C1 needs
//             f(z_1) - f*). The identity is algebra on the update rule, so it holds to rounding
//             for a correct implementation; a missing error feedback (a server that compresses
//             without e_bar) breaks it by the error it drops
#pragma once

#include "theory/probe.h"

namespace lemmalab {

// Which senders quantize with Birder's Q (compressor stochastic-binary), from a run's resolved
// options: the workers by `compressor`, the server by `server_compressor` when the run read one,
// else by the same configuration as the workers (Birder's server re-compresses with it).
struct BirderQuantizerSides {
  bool workers = false;
  bool server = false;
};
BirderQuantizerSides BirderQuantizerOf(const Hyperparameters& options);

template <typename T>
std::unique_ptr<Probe<T>> MakeQuantizerDomainProbe(const ProbeContext& context);
template <typename T>
std::unique_ptr<Probe<T>> MakeErrorNormProbe(const ProbeContext& context);
template <typename T>
std::unique_ptr<Probe<T>> MakeMinDenominatorProbe(const ProbeContext& context);
template <typename T>
std::unique_ptr<Probe<T>> MakeZSequenceProbe(const ProbeContext& context);

}  // namespace lemmalab
