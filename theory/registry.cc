// The probe registry: adding a probe is one class and one line in the table below.
#include "theory/birder_probes.h"
#include "theory/onebit_probes.h"
#include "theory/probe.h"
#include "theory/spams_probes.h"

namespace lemmalab {

const Registry<ProbeInfo>& Probes() {
  static const Registry<ProbeInfo> registry(
      "probe",
      {
          {"ef-norm", "||e||^2 of worker and server error feedback against d (birder Lemma 1)",
           &MakeErrorNormProbe<float>, &MakeErrorNormProbe<double>},
          {"min-b", "min_j b_t,j per worker against rho (birder Thm 1, footnote 5)",
           &MakeMinDenominatorProbe<float>, &MakeMinDenominatorProbe<double>},
          {"q-domain", "fraction of quantizer inputs outside [-1, 1] (birder Eq. 5)",
           &MakeQuantizerDomainProbe<float>, &MakeQuantizerDomainProbe<double>},
          {"lamb-ratios",
           "r_t and c_t per layer (onebit-lamb Alg. 1 lines 17-20, Fig. 6; worker = layer)",
           &MakeLambRatiosProbe<float>, &MakeLambRatiosProbe<double>},
          {"onebit-error", "||delta_t^(i)|| and ||delta_bar_t|| (onebit-adam ICML Assumption 1.3)",
           &MakeOnebitErrorProbe<float>, &MakeOnebitErrorProbe<double>},
          {"spams-d",
           "||D_t||_1 and ||D_t||^2, D_t = 1/sqrt(v_hat_{t-1}+eps) - 1/sqrt(v_hat_t+eps) (spams "
           "Lemma 5)",
           &MakeSpamsDenominatorStepProbe<float>, &MakeSpamsDenominatorStepProbe<double>},
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
