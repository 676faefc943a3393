// The assertion registry: adding an assertion is one function and one line in the table below.
#include "theory/assertion.h"
#include "theory/assertions.h"
#include "theory/verdicts.h"

namespace lemmalab {

const Registry<AssertionInfo>& Assertions() {
  static const Registry<AssertionInfo> registry(
      "assertion",
      {
          {"b-floor",
           "min_j (b_t,j + eps) >= rho for every worker and step",
           "birder.txt Thm 1 assumption and footnote 5",
           {"min-b"},
           AssertionScope::kRun,
           &MakeDenominatorFloorCheck},
          {"b-positive",
           "min_j b_t,j > 0 without the added constant",
           "birder.txt Thm 1 assumption (rho > 0), Eq. 4",
           {"min-b"},
           AssertionScope::kRun,
           &MakeRawDenominatorPositiveCheck},
          {"birder-lemma2",
           "the z-sequence identity holds to rounding at every step",
           "birder.txt Lemma 2, Eq. 20-23",
           {"birder-z"},
           AssertionScope::kRun,
           &MakeZSequenceCheck},
          {"birder-theorem1",
           "((1/T) sum ||grad f(x_t)||)^2 <= C1/sqrt(T) + C2 (1 + ln T)/sqrt(T) at every T",
           "birder.txt Thm 1, Eq. 6, 41-42",
           {"min-b", "birder-z", "ef-norm"},
           AssertionScope::kRun,
           &MakeBirderTheorem1Check},
          {"ef-norm",
           "E||e||^2 <= d for worker and server error feedback",
           "birder.txt Lemma 1, Eq. 16 and 19",
           {"ef-norm", "q-domain"},
           AssertionScope::kRun,
           &MakeErrorNormCheck},
          {"linear-speedup",
           "the averaged squared gradient norm falls like n^-q with the corollary's q, at the step "
           "size it prescribes for each n",
           "the sigma/sqrt(nT) term of onebit-adam ICML Cor. 1, spams.txt Cor. 1, onebit-lamb Cor. "
           "1",
           {},
           AssertionScope::kAcrossWorkers,
           &MakeSpeedupCheck},
          {"optimality-gap",
           "f(x_T) - f* <= tolerance at the end of the run",
           "convergence to a minimiser (the signSGD counterexamples violate it)",
           {},
           AssertionScope::kRun,
           &MakeOptimalityGapCheck},
          {"q-deviate",
           "||C(u) - u|| <= q ||u|| with q < 1 for every compressor call",
           "spams.txt Assumption 1",
           {"q-deviate"},
           AssertionScope::kRun,
           &MakeDeviationCheck},
          {"q-domain",
           "every input of Q lies in [-1, 1]",
           "birder.txt Eq. 5, Lemma 1",
           {"q-domain"},
           AssertionScope::kRun,
           &MakeQuantizerDomainCheck},
          {"q-unbiased",
           "E[C(u)] = u on the run's own inputs (repeated draws)",
           "birder.txt Eq. 5, Lemma 1 Eq. 17",
           {"q-unbiased"},
           AssertionScope::kRun,
           &MakeUnbiasedCheck},
          {"q-variance",
           "Var Q(u)_j = 1 - u_j^2 on |u_j| <= 1 (Birder's quantizer)",
           "birder.txt Lemma 1, Eq. 18",
           {"q-unbiased"},
           AssertionScope::kRun,
           &MakeQuantizerVarianceCheck},
          {"rate",
           "the running average of ||grad f||^2 decays like T^-p with the theorem's p",
           "birder.txt Thm 1; spams.txt Thm 1; onebit-adam-icml-with-appendix.txt Thm 1",
           {},
           AssertionScope::kAcrossSeeds,
           &MakeRateCheck},
          {"tracks-reference",
           "the run ends within tolerance of a reference run",
           "onebit-adam.txt Sec. 3.2, Fig. 6 (naive compression drifts from Adam)",
           {},
           AssertionScope::kRun,
           &MakeTracksReferenceCheck},
          {"onebit-error-bounded",
           "the compression errors ||delta^(i)_t||, ||delta_bar_t|| stay bounded in the "
           "compression phase (max over its second half <= (1 + tolerance) x max over the first)",
           "onebit-adam-icml-with-appendix.txt Assumption 1.3 (lines 720-740)",
           {"onebit-error"},
           AssertionScope::kRun,
           &MakeOnebitErrorBoundedCheck},
          {"onebit-theorem1",
           "(1/(T+1)) sum ||grad f(x_t)||^2 over the compression phase <= Theorem 1's bound "
           "(Markov at the confidence)",
           "onebit-adam-icml-with-appendix.txt Thm 1, Eq. 6",
           {"onebit-error"},
           AssertionScope::kRun,
           &MakeOnebitAdamTheorem1Check},
          {"onebit-lamb-clips",
           "c_t in [c_min, c_max] in warmup; then r_t in [r_min, r_max], within r_threshold of "
           "r_(t-1), and c_t = r_t c_avg, per layer",
           "onebit-lamb.txt Eq. (1) and Algorithm 1 lines 1-3, 18-20",
           {"lamb-ratios"},
           AssertionScope::kRun,
           &MakeOnebitLambClipsCheck},
          {"onebit-lamb-ratio-adapts",
           "layers whose variance drifts more from the frozen one get larger scaling ratios r "
           "(Spearman's rho across layers > 0)",
           "onebit-lamb.txt Fig. 6, lines 300-306",
           {"lamb-ratios"},
           AssertionScope::kRun,
           &MakeRatioAdaptsCheck},
          {"onebit-lamb-theorem1",
           "(1/(T+1)) sum ||grad f(x_t)||^2 over the compression phase <= 1-bit LAMB's Theorem 1 "
           "bound (Markov at the confidence)",
           "onebit-lamb.txt Thm 1, Eq. 3 (App. A.9)",
           {"onebit-error", "lamb-ratios"},
           AssertionScope::kRun,
           &MakeOnebitLambTheorem1Check},
          {"onebit-variance-stable",
           "||v_t|| changes by <= tolerance over a window of 1/(1-beta2) steps at T_w",
           "onebit-adam-icml-with-appendix.txt Sec. 3.3, Fig. 2, Sec. 7.1 (lines 962-974)",
           {"variance-norm"},
           AssertionScope::kRun,
           &MakeVarianceStableCheck},
          {"spams-corollary1",
           "Theorem 1 at Corollary 1's step size eta = L sqrt(n/T) (Algorithm 2)",
           "spams.txt Corollary 1 (lines 266-270)",
           {"spams-ef", "q-deviate"},
           AssertionScope::kRun,
           &MakeSpamsCorollary1Check},
          {"spams-corollary2",
           "Theorem 1 at Corollary 2's step size eta = L / sqrt(T), n = 1 (Algorithm 3)",
           "spams.txt Corollary 2 (lines 311-316)",
           {"spams-ef", "q-deviate"},
           AssertionScope::kRun,
           &MakeSpamsCorollary2Check},
          {"spams-lemma1",
           "sum_t ||m'_t||^2 <= T sigma^2 + sum_t ||grad f(theta_t)||^2 (the proof's momentum of "
           "the averaged uncompressed gradients; Markov at the confidence)",
           "spams.txt Lemma 1 (lines 475-490)",
           {"spams-moments"},
           AssertionScope::kRun,
           &MakeSpamsLemma1Check},
          {"spams-lemma2",
           "||e_t,i||^2 <= 4 q^2 G^2 / (1-q^2)^2 at every step and worker",
           "spams.txt Lemma 2 (lines 498-513, Eq. 3)",
           {"spams-ef", "q-deviate"},
           AssertionScope::kRun,
           &MakeSpamsLemma2Check},
          {"spams-lemma3",
           "sum_t ||E_t||^2 <= 4Tq^2/(1-q^2)^2 (sigma^2 + sigma_g^2) + 4q^2/(1-q^2)^2 sum_t "
           "||grad f(theta_t)||^2 (E_t the moving average of the averaged errors; Markov)",
           "spams.txt Lemma 3 (lines 515-530)",
           {"spams-moments", "spams-ef", "q-deviate"},
           AssertionScope::kRun,
           &MakeSpamsLemma3Check},
          {"spams-lemma4",
           "max_j v_hat_t,j <= 4 (1+q^2)^3 G^2 / (1-q^2)^2 at every step",
           "spams.txt Lemma 4 (lines 536-549)",
           {"spams-vhat", "q-deviate"},
           AssertionScope::kRun,
           &MakeSpamsLemma4Check},
          {"spams-lemma5",
           "sum_t ||D_t||_1 <= d / sqrt(eps) and sum_t ||D_t||^2 <= d / eps at every step",
           "spams.txt Lemma 5 (lines 601-622)",
           {"spams-d"},
           AssertionScope::kRun,
           &MakeSpamsLemma5Check},
          {"ef21-theorem1",
           "(1/T) sum_{t<T} ||grad f(x^t)||^2 <= 2 (f(x^0) - f*) / (gamma T) + G^0 / (theta T) "
           "for C in C(alpha) and gamma <= 1 / (L + L~ sqrt(beta / theta)), full gradients "
           "(deterministic with a deterministic compressor, else Markov)",
           "Richtárik, Sokolov & Fatkhullin, NeurIPS 2021, EF21 Theorem 1",
           {"shift-error", "q-deviate"},
           AssertionScope::kRun,
           &MakeEf21Theorem1Check},
          {"ef21-sgdm-full-gradient",
           "(1/T) sum_{t<T} ||grad f(x^t)||^2 <= 2 (f(x^0) - f*) / (gamma T) + 2 G^0 / (theta T) "
           "for C in C(alpha), v_i^0 = grad f_i(x^0) and gamma <= 1 / (L + L~ sqrt(2 / eta^2 + "
           "4 beta (1 + eta^2) / theta)), full gradients (deterministic with a deterministic "
           "compressor, else Markov)",
           "EF21-SGDM (Fatkhullin, Tyurin & Richtárik, NeurIPS 2023); the full-gradient bound is "
           "proved in docs/ef21-diana-marina.md §4",
           {"shift-error", "q-deviate"},
           AssertionScope::kRun,
           &MakeEf21SgdmFullGradientCheck},
          {"marina-theorem21",
           "(1/T) sum_{t<T} ||grad f(x^t)||^2 <= 2 (f(x^0) - f*) / (gamma T) for independent C_i "
           "in U(omega) and gamma <= 1 / (L (1 + sqrt((1 - p) omega / (p n)))), full gradients "
           "(Markov)",
           "Gorbunov, Burlachenko, Li & Richtárik, ICML 2021, MARINA Theorem 2.1",
           {"q-deviate"},
           AssertionScope::kRun,
           &MakeMarinaTheorem21Check},
          {"diana-nonconvex",
           "(1/T) sum_{t<T} ||grad f(x^t)||^2 <= 2 (f(x^0) - f*) / (gamma T) + 4 L gamma omega "
           "H^0 / (n a T) for independent C_i in U(omega), a <= 1/(omega + 1) and gamma <= "
           "min(1/(2L), (a/L) sqrt(n / (4 omega (a + 2)))), full gradients (Markov)",
           "DIANA (Mishchenko, Gorbunov, Takáč & Richtárik 2019, Algorithm 1); the bound is "
           "re-derived in docs/ef21-diana-marina.md §3",
           {"shift-error", "q-deviate"},
           AssertionScope::kRun,
           &MakeDianaNonconvexCheck},
          {"spams-theorem1",
           "(1/T) sum_t ||grad f(theta_t)||^2 <= Theorem 1's bound (Markov at the confidence)",
           "spams.txt Theorem 1 (lines 221-222; proof lines 552-590)",
           {"spams-ef", "q-deviate"},
           AssertionScope::kRun,
           &MakeSpamsTheorem1Check},
          {"zero-one-adam-volume",
           "the bits a 0/1 Adam run sends and receives equal its schedule's count (raw gradient on "
           "T_v, 1-bit u on T_u, nothing on local steps) and are <= fraction x 1-bit Adam's on "
           "the same steps",
           "0/1 Adam (Lu et al., ICLR 2023) abstract (up to 87% less data volume than 1-bit Adam); "
           "its T_v, T_u policies (DeepSpeed tutorial)",
           {},
           AssertionScope::kRun,
           &MakeZeroOneAdamVolumeCheck},
      });
  return registry;
}

Verdict JudgeAssertion(std::string_view assertion, OptionTable& options,
                       const AssertionInput& input) {
  const AssertionInfo* info = Assertions().Find(assertion);
  LEMMALAB_CHECK(info != nullptr, "no assertion '{}'", assertion);
  AssertionContext context;
  for (const RunEvidence& run : input.experiment) context.labels.push_back(run.label);
  const Judgement judge = info->make(options, context);
  options.RejectUnknownKeys();
  return JudgeSafely(judge, input);
}

}  // namespace lemmalab
