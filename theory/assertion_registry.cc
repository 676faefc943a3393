// The assertion registry: adding an assertion is one function and one line in the table below.
#include "theory/assertion.h"
#include "theory/assertions.h"

namespace lemmalab {

std::string_view VerdictName(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::kHolds:
      return "holds";
    case VerdictKind::kViolated:
      return "violated";
    case VerdictKind::kInconclusive:
      break;
  }
  return "inconclusive";
}

const Registry<AssertionInfo>& Assertions() {
  static const Registry<AssertionInfo> registry(
      "assertion",
      {
          {"b-floor", "min_j (b_t,j + eps) >= rho for every worker and step",
           "birder.txt Thm 1 assumption and footnote 5", {"min-b"}, AssertionScope::kRun,
           &CheckDenominatorFloor},
          {"b-positive", "min_j b_t,j > 0 without the added constant",
           "birder.txt Thm 1 assumption (rho > 0), Eq. 4", {"min-b"}, AssertionScope::kRun,
           &CheckRawDenominatorPositive},
          {"birder-lemma2", "the z-sequence identity holds to rounding at every step",
           "birder.txt Lemma 2, Eq. 20-23", {"birder-z"}, AssertionScope::kRun, &CheckZSequence},
          {"birder-theorem1",
           "((1/T) sum ||grad f(x_t)||)^2 <= C1/sqrt(T) + C2 (1 + ln T)/sqrt(T) at every T",
           "birder.txt Thm 1, Eq. 6, 41-42", {"min-b", "birder-z"}, AssertionScope::kRun,
           &CheckBirderTheorem1},
          {"ef-norm", "E||e||^2 <= d for worker and server error feedback",
           "birder.txt Lemma 1, Eq. 16 and 19", {"ef-norm"}, AssertionScope::kRun,
           &CheckErrorNorm},
          {"linear-speedup",
           "the averaged squared gradient norm falls like n^-q with the theorem's q",
           "onebit-adam-icml-with-appendix.txt Cor. 1; spams.txt Cor. 1", {},
           AssertionScope::kAcrossWorkers, &CheckSpeedup},
          {"optimality-gap", "f(x_T) - f* <= tolerance at the end of the run",
           "convergence to a minimiser (the signSGD counterexamples violate it)", {},
           AssertionScope::kRun, &CheckOptimalityGap},
          {"q-deviate", "||C(u) - u|| <= q ||u|| with q < 1 for every compressor call",
           "spams.txt Assumption 1", {"q-deviate"}, AssertionScope::kRun, &CheckDeviation},
          {"q-domain", "every input of Q lies in [-1, 1]", "birder.txt Eq. 5, Lemma 1",
           {"q-domain"}, AssertionScope::kRun, &CheckQuantizerDomain},
          {"q-unbiased", "E[C(u)] = u on the run's own inputs (repeated draws)",
           "birder.txt Eq. 5, Lemma 1 Eq. 17", {"q-unbiased"}, AssertionScope::kRun,
           &CheckUnbiased},
          {"q-variance", "Var Q(u)_j = 1 - u_j^2 on |u_j| <= 1 (Birder's quantizer)",
           "birder.txt Lemma 1, Eq. 18", {"q-unbiased"}, AssertionScope::kRun,
           &CheckQuantizerVariance},
          {"rate", "the running average of ||grad f||^2 decays like T^-p with the theorem's p",
           "birder.txt Thm 1; spams.txt Thm 1; onebit-adam-icml-with-appendix.txt Thm 1", {},
           AssertionScope::kAcrossSeeds, &CheckRate},
          {"tracks-reference", "the run ends within tolerance of a reference run",
           "onebit-adam.txt Sec. 3.2, Fig. 6 (naive compression drifts from Adam)", {},
           AssertionScope::kRun, &CheckTracksReference},
      });
  return registry;
}

}  // namespace lemmalab
