// The probe registry: adding a probe is one class and one line in the table below.
#include "theory/birder_probes.h"
#include "theory/compressor_probes.h"
#include "theory/one_bit_probes.h"
#include "theory/probe.h"
#include "theory/shift_probes.h"
#include "theory/spams_probes.h"

namespace lemmalab {

const Registry<ProbeInfo>& Probes() {
  static const Registry<ProbeInfo> registry(
      "probe",
      {
          {"birder-z",
           "residual of Lemma 2's z-sequence identity from the run's iterates, and f(z_1) (birder "
           "Eq. 20-23)",
           &MakeZSequenceProbe<float>, &MakeZSequenceProbe<double>},
          {"ef-norm", "||e||^2 of worker and server error feedback against d (birder Lemma 1)",
           &MakeErrorNormProbe<float>, &MakeErrorNormProbe<double>},
          {"min-b", "min_j b_t,j per worker against rho (birder Thm 1, footnote 5)",
           &MakeMinDenominatorProbe<float>, &MakeMinDenominatorProbe<double>},
          {"q-domain", "fraction of quantizer inputs outside [-1, 1] (birder Eq. 5)",
           &MakeQuantizerDomainProbe<float>, &MakeQuantizerDomainProbe<double>},
          {"q-deviate",
           "||C(u) - u|| / ||u|| per compressor call against the declared q (spams "
           "Assumption 1)",
           &MakeDeviationProbe<float>, &MakeDeviationProbe<double>},
          {"q-unbiased",
           "E[C(u)] = u by repeated draws on the run's own inputs, and Var C(u)_j against 1 - "
           "u_j^2 "
           "(birder Eq. 5, Lemma 1)",
           &MakeUnbiasednessProbe<float>, &MakeUnbiasednessProbe<double>},
          {"lamb-ratios",
           "r_t and c_t per layer (onebit-lamb Alg. 1 lines 17-20, Fig. 6; worker = layer)",
           &MakeLambRatiosProbe<float>, &MakeLambRatiosProbe<double>},
          {"onebit-error", "||delta_t^(i)|| and ||delta_bar_t|| (onebit-adam ICML Assumption 1.3)",
           &MakeOneBitErrorProbe<float>, &MakeOneBitErrorProbe<double>},
          {"shift-error",
           "||s_i - g_i||^2 of the workers' gradient estimates (EF21's g_i, DIANA's h_i) against "
           "their gradients, and ||g_i||^2 (EF21 Theorem 1's G^0; DIANA's H^0)",
           &MakeShiftErrorProbe<float>, &MakeShiftErrorProbe<double>},
          {"spams-d",
           "||D_t||_1 and ||D_t||^2, D_t = 1/sqrt(v_hat_{t-1}+eps) - 1/sqrt(v_hat_t+eps) (spams "
           "Lemma 5)",
           &MakeSpamsDenominatorStepProbe<float>, &MakeSpamsDenominatorStepProbe<double>},
          {"spams-moments",
           "||m'_t||^2 and ||E_t||^2, the proof's moving averages of the averaged gradients and "
           "errors (spams Lemmas 1 and 3)",
           &MakeSpamsMomentsProbe<float>, &MakeSpamsMomentsProbe<double>},
          {"spams-ef", "||e_t,i||^2 and the declared q (spams Lemma 2, Assumption 1)",
           &MakeSpamsErrorProbe<float>, &MakeSpamsErrorProbe<double>},
          {"spams-vhat", "max_j v_hat_t,j and the declared q (spams Lemma 4)",
           &MakeSpamsMaxVarianceProbe<float>, &MakeSpamsMaxVarianceProbe<double>},
          {"variance-norm", "||v_t||_1 and ||v_t||_2 per step (onebit-adam ICML Sec. 3.3, Fig. 2)",
           &MakeVarianceNormProbe<float>, &MakeVarianceNormProbe<double>},
      });
  return registry;
}

}  // namespace lemmalab
