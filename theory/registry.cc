// The probe registry: adding a probe is one class and one line in the table below.
#include "theory/birder_probes.h"
#include "theory/compressor_probes.h"
#include "theory/probe.h"

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
          {"q-deviate", "||C(u) - u|| / ||u|| per compressor call against the declared q (spams "
           "Assumption 1)",
           &MakeDeviationProbe<float>, &MakeDeviationProbe<double>},
          {"q-unbiased",
           "E[C(u)] = u by repeated draws on the run's own inputs, and Var C(u)_j against 1 - u_j^2 "
           "(birder Eq. 5, Lemma 1)",
           &MakeUnbiasednessProbe<float>, &MakeUnbiasednessProbe<double>},
      });
  return registry;
}

}  // namespace lemmalab
