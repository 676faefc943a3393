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
          {"ef-norm", "E||e||^2 <= d for worker and server error feedback (running mean of ||e||^2/d <= 1)",
           "birder.txt Lemma 1, Eq. 16 and 19", {"ef-norm"}, AssertionScope::kRun,
           &CheckErrorNorm},
          {"onebit-error-bounded",
           "the compression errors ||delta^(i)_t||, ||delta_bar_t|| stay bounded in the "
           "compression phase (max over its second half <= (1 + tolerance) x max over the first)",
           "onebit-adam-icml-with-appendix.txt Assumption 1.3 (lines 720-740)",
           {"onebit-error"},
           AssertionScope::kRun,
           &CheckOnebitErrorBounded},
          {"onebit-lamb-clips",
           "c_t in [c_min, c_max] in warmup; then r_t in [r_min, r_max], within r_threshold of "
           "r_(t-1), and c_t = r_t c_avg, per layer",
           "onebit-lamb.txt Eq. (1) and Algorithm 1 lines 1-3, 18-20",
           {"lamb-ratios"},
           AssertionScope::kRun,
           &CheckOnebitLambClips},
          {"onebit-variance-stable",
           "||v_t|| changes by <= tolerance over a window of 1/(1-beta2) steps at T_w",
           "onebit-adam-icml-with-appendix.txt Sec. 3.3, Fig. 2, Sec. 7.1 (lines 962-974)",
           {"variance-norm"},
           AssertionScope::kRun,
           &CheckVarianceStable},
          {"spams-lemma2",
           "||e_t,i||^2 <= 4 q^2 G^2 / (1-q^2)^2 at every step and worker",
           "spams.txt Lemma 2 (lines 534-538, Eq. 3)",
           {"spams-ef"},
           AssertionScope::kRun,
           &CheckSpamsLemma2},
          {"spams-lemma4",
           "max_j v_hat_t,j <= 4 (1+q^2)^3 G^2 / (1-q^2)^2 at every step",
           "spams.txt Lemma 4 (lines 547-549)",
           {"spams-vhat"},
           AssertionScope::kRun,
           &CheckSpamsLemma4},
          {"spams-lemma5",
           "sum_t ||D_t||_1 <= d / sqrt(eps) and sum_t ||D_t||^2 <= d / eps at every step",
           "spams.txt Lemma 5 (lines 566-571)",
           {"spams-d"},
           AssertionScope::kRun,
           &CheckSpamsLemma5},
          {"spams-theorem1",
           "(1/T) sum_t ||grad f(theta_t)||^2 <= Theorem 1's bound (Markov at the confidence)",
           "spams.txt Theorem 1 (lines 221-222; proof lines 552-590)",
           {"spams-ef"},
           AssertionScope::kRun,
           &CheckSpamsTheorem1},
      });
  return registry;
}

}  // namespace lemmalab
