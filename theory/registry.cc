// The probe registry: adding a probe is one class and one line in the table below.
#include "theory/birder_probes.h"
#include "theory/probe.h"

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
      });
  return registry;
}

}  // namespace lemmalab
