// The assertion registry: adding an assertion is one function and one line in the table below.
#include "theory/assertion.h"
#include "theory/assertions.h"
#include "theory/evidence_rule.h"
#include "theory/verdicts.h"

namespace lemmalab {

const Registry<AssertionInfo>& Assertions() {
  static const Registry<AssertionInfo> registry(
      "assertion",
      {
          {.name = "b-floor",
           .summary = "min_j (b_t,j + eps) >= rho for every worker and step",
           .source = "birder.txt Thm 1 assumption and footnote 5",
           .probes = {"min-b"},
           .make = &MakeDenominatorFloorCheck,
           .algorithms = {"birder", "softsign-sgd"}},
          {.name = "b-positive",
           .summary = "min_j b_t,j > 0 without the added constant",
           .source = "birder.txt Thm 1 assumption (rho > 0), Eq. 4",
           .probes = {"min-b"},
           .make = &MakeRawDenominatorPositiveCheck,
           .algorithms = {"birder", "softsign-sgd"}},
          {.name = "birder-lemma2",
           .summary = "the z-sequence identity holds to rounding at every step",
           .source = "birder.txt Lemma 2, Eq. 20-23",
           .probes = {"birder-z"},
           .make = &MakeZSequenceCheck,
           .algorithms = {"birder", "softsign-sgd"}},
          {.name = "birder-theorem1",
           .summary =
               "((1/T) sum ||grad f(x_t)||)^2 <= C1/sqrt(T) + C2 (1 + ln T)/sqrt(T) at every T",
           .source = "birder.txt Thm 1, Eq. 6, 41-42",
           .probes = {"min-b", "birder-z", "ef-norm"},
           .make = &MakeBirderTheorem1Check,
           .algorithms = {"birder"}},
          {.name = "ef-norm",
           .summary = "E||e||^2 <= d for worker and server error feedback",
           .source = "birder.txt Lemma 1, Eq. 16 and 19",
           .probes = {"ef-norm", "q-domain"},
           .make = &MakeErrorNormCheck},
          {.name = "linear-speedup",
           .summary = "the averaged squared gradient norm falls like n^-q with the corollary's q, "
                      "at the step "
                      "size it prescribes for each n",
           .source = "the sigma/sqrt(nT) term of onebit-adam ICML Cor. 1, spams.txt Cor. 1, "
                     "onebit-lamb Cor. "
                     "1",
           .scope = AssertionScope::kAcrossWorkers,
           .make = &MakeSpeedupCheck,
           .premise_probes = {"min-b", "birder-z", "ef-norm", "spams-ef", "q-deviate",
                              "onebit-error", "lamb-ratios"}},
          {.name = "optimality-gap",
           .summary = "f(x_T) - f* <= tolerance at the end of the run",
           .source = "convergence to a minimiser (the signSGD counterexamples violate it)",
           .make = &MakeOptimalityGapCheck,
           .judges_failure = true},
          {.name = "q-deviate",
           .summary = "||C(u) - u|| <= q ||u|| with q < 1 for every compressor call",
           .source = "spams.txt Assumption 1",
           .probes = {"q-deviate"},
           .make = &MakeDeviationCheck},
          {.name = "q-domain",
           .summary = "every input of Q lies in [-1, 1]",
           .source = "birder.txt Eq. 5, Lemma 1",
           .probes = {"q-domain"},
           .make = &MakeQuantizerDomainCheck},
          {.name = "q-unbiased",
           .summary = "E[C(u)] = u on the run's own inputs (repeated draws)",
           .source = "birder.txt Eq. 5, Lemma 1 Eq. 17",
           .probes = {"q-unbiased"},
           .make = &MakeUnbiasedCheck},
          {.name = "q-variance",
           .summary = "Var Q(u)_j = 1 - u_j^2 on |u_j| <= 1 (Birder's quantizer)",
           .source = "birder.txt Lemma 1, Eq. 18",
           .probes = {"q-unbiased"},
           .make = &MakeQuantizerVarianceCheck},
          {.name = "rate",
           .summary = "the running average of ||grad f||^2 decays like T^-p with the theorem's p",
           .source = "birder.txt Thm 1; spams.txt Thm 1; onebit-adam-icml-with-appendix.txt Thm 1",
           .scope = AssertionScope::kAcrossSeeds,
           .make = &MakeRateCheck,
           .premise_probes = {"min-b", "birder-z", "ef-norm", "spams-ef", "q-deviate",
                              "onebit-error", "lamb-ratios"}},
          {.name = "tracks-reference",
           .summary = "the run ends within tolerance of a reference run",
           .source = "onebit-adam.txt Sec. 3.2, Fig. 6 (naive compression drifts from Adam)",
           .make = &MakeTracksReferenceCheck,
           .judges_failure = true},
          {.name = "onebit-error-bounded",
           .summary =
               "heuristic (no statement of the paper): the compression errors ||delta^(i)_t||, "
               "||delta_bar_t|| stop growing in the compression phase (max over its second half <= "
               "(1 + tolerance) x max over the first)",
           .source =
               "lemmalab's growth heuristic for onebit-adam-icml-with-appendix.txt Assumption 1.3 "
               "(lines 720-740), which the paper assumes and never shows",
           .probes = {"onebit-error"},
           .make = &MakeOnebitErrorBoundedCheck,
           .judges_failure = true},
          {.name = "onebit-theorem1",
           .summary =
               "(1/(T+1)) sum ||grad f(x_t)||^2 over the compression phase <= Theorem 1's bound "
               "(Markov at the confidence)",
           .source = "onebit-adam-icml-with-appendix.txt Thm 1, Eq. 6",
           .probes = {"onebit-error"},
           .make = &MakeOnebitAdamTheorem1Check,
           .algorithms = {"onebit-adam", "onebit-adam-fp32"}},
          {.name = "onebit-lamb-clips",
           .summary =
               "c_t in [c_min, c_max] in warmup; then r_t in [r_min, r_max], within r_threshold of "
               "r_(t-1), and c_t = r_t c_avg, per layer",
           .source = "onebit-lamb.txt Eq. (1) and Algorithm 1 lines 1-3, 18-20",
           .probes = {"lamb-ratios"},
           .make = &MakeOnebitLambClipsCheck,
           .algorithms = {"lamb", "onebit-lamb"}},
          {.name = "onebit-lamb-ratio-adapts",
           .summary =
               "layers whose variance drifts more from the frozen one get larger scaling ratios r "
               "(Spearman's rho across layers > 0)",
           .source = "onebit-lamb.txt Fig. 6, lines 300-306",
           .probes = {"lamb-ratios"},
           .make = &MakeRatioAdaptsCheck,
           .algorithms = {"onebit-lamb"}},
          {.name = "onebit-lamb-theorem1",
           .summary = "(1/(T+1)) sum ||grad f(x_t)||^2 over the compression phase <= 1-bit LAMB's "
                      "Theorem 1 "
                      "bound (Markov at the confidence)",
           .source = "onebit-lamb.txt Thm 1, Eq. 3 (App. A.9)",
           .probes = {"onebit-error", "lamb-ratios"},
           .make = &MakeOnebitLambTheorem1Check,
           .algorithms = {"onebit-lamb"}},
          {.name = "onebit-variance-stable",
           .summary = "||v_t|| changes by <= tolerance over a window of 1/(1-beta2) steps at T_w",
           .source =
               "onebit-adam-icml-with-appendix.txt Sec. 3.3, Fig. 2, Sec. 7.1 (lines 962-974)",
           .probes = {"variance-norm"},
           .make = &MakeVarianceStableCheck},
          {.name = "spams-corollary1",
           .summary = "Theorem 1 at Corollary 1's step size eta = L sqrt(n/T) (Algorithm 2)",
           .source = "spams.txt Corollary 1 (lines 266-270)",
           .probes = {"spams-ef", "q-deviate"},
           .make = &MakeSpamsCorollary1Check,
           .algorithms = {"spams", "dist-spams"}},
          {.name = "spams-corollary2",
           .summary = "Theorem 1 at Corollary 2's step size eta = L / sqrt(T), n = 1 (Algorithm 3)",
           .source = "spams.txt Corollary 2 (lines 311-316)",
           .probes = {"spams-ef", "q-deviate"},
           .make = &MakeSpamsCorollary2Check,
           .algorithms = {"spams"}},
          {.name = "spams-lemma1",
           .summary = "sum_t ||m'_t||^2 <= T sigma^2 + sum_t ||grad f(theta_t)||^2 (the proof's "
                      "momentum of "
                      "the averaged uncompressed gradients; Markov at the confidence)",
           .source = "spams.txt Lemma 1 (lines 475-490)",
           .probes = {"spams-moments"},
           .make = &MakeSpamsLemma1Check,
           .algorithms = {"spams", "dist-spams"}},
          {.name = "spams-lemma2",
           .summary = "||e_t,i||^2 <= 4 q^2 G^2 / (1-q^2)^2 at every step and worker",
           .source = "spams.txt Lemma 2 (lines 498-513, Eq. 3)",
           .probes = {"spams-ef", "q-deviate"},
           .make = &MakeSpamsLemma2Check,
           .algorithms = {"spams", "dist-spams"}},
          {.name = "spams-lemma3",
           .summary =
               "sum_t ||E_t||^2 <= 4Tq^2/(1-q^2)^2 (sigma^2 + sigma_g^2) + 4q^2/(1-q^2)^2 sum_t "
               "||grad f(theta_t)||^2 (E_t the moving average of the averaged errors; Markov)",
           .source = "spams.txt Lemma 3 (lines 515-530)",
           .probes = {"spams-moments", "spams-ef", "q-deviate"},
           .make = &MakeSpamsLemma3Check,
           .algorithms = {"spams", "dist-spams"}},
          {.name = "spams-lemma4",
           .summary = "max_j v_hat_t,j <= 4 (1+q^2)^3 G^2 / (1-q^2)^2 at every step",
           .source = "spams.txt Lemma 4 (lines 536-549)",
           .probes = {"spams-vhat", "q-deviate"},
           .make = &MakeSpamsLemma4Check,
           .algorithms = {"spams", "dist-spams"}},
          {.name = "spams-lemma5",
           .summary =
               "sum_t ||D_t||_1 <= d / sqrt(eps) and sum_t ||D_t||^2 <= d / eps at every step",
           .source = "spams.txt Lemma 5 (lines 601-622)",
           .probes = {"spams-d"},
           .make = &MakeSpamsLemma5Check,
           .algorithms = {"spams", "dist-spams"}},
          {.name = "ef21-theorem1",
           .summary =
               "(1/T) sum_{t<T} ||grad f(x^t)||^2 <= 2 (f(x^0) - f*) / (gamma T) + G^0 / (theta T) "
               "for C in C(alpha) and gamma <= 1 / (L + L~ sqrt(beta / theta)), full gradients "
               "(deterministic with a deterministic compressor, else Markov)",
           .source = "Richtárik, Sokolov & Fatkhullin, NeurIPS 2021, EF21 Theorem 1",
           .probes = {"shift-error", "q-deviate"},
           .make = &MakeEf21Theorem1Check,
           .algorithms = {"ef21"}},
          {.name = "ef21-sgdm-full-gradient",
           .summary =
               "(1/T) sum_{t<T} ||grad f(x^t)||^2 <= 2 (f(x^0) - f*) / (gamma T) + 2 G^0 / (theta "
               "T) "
               "for C in C(alpha), v_i^0 = grad f_i(x^0) and gamma <= 1 / (L + L~ sqrt(2 / eta^2 + "
               "4 beta (1 + eta^2) / theta)), full gradients (deterministic with a deterministic "
               "compressor, else Markov)",
           .source = "EF21-SGDM (Fatkhullin, Tyurin & Richtárik, NeurIPS 2023); the full-gradient "
                     "bound is "
                     "proved in docs/ef21-diana-marina.md §4",
           .probes = {"shift-error", "q-deviate"},
           .make = &MakeEf21SgdmFullGradientCheck,
           .algorithms = {"ef21-sgdm"}},
          {.name = "marina-theorem21",
           .summary =
               "(1/T) sum_{t<T} ||grad f(x^t)||^2 <= 2 (f(x^0) - f*) / (gamma T) for independent "
               "C_i "
               "in U(omega) and gamma <= 1 / (L (1 + sqrt((1 - p) omega / (p n)))), full gradients "
               "(Markov)",
           .source = "Gorbunov, Burlachenko, Li & Richtárik, ICML 2021, MARINA Theorem 2.1",
           .probes = {"q-deviate"},
           .make = &MakeMarinaTheorem21Check,
           .algorithms = {"marina"}},
          {.name = "diana-nonconvex",
           .summary =
               "(1/T) sum_{t<T} ||grad f(x^t)||^2 <= 2 (f(x^0) - f*) / (gamma T) + 4 L gamma omega "
               "H^0 / (n a T) for independent C_i in U(omega), a <= 1/(omega + 1) and gamma <= "
               "min(1/(2L), (a/L) sqrt(n / (4 omega (a + 2)))), full gradients (Markov)",
           .source =
               "DIANA (Mishchenko, Gorbunov, Takáč & Richtárik 2019, Algorithm 1); the bound is "
               "re-derived in docs/ef21-diana-marina.md §3",
           .probes = {"shift-error", "q-deviate"},
           .make = &MakeDianaNonconvexCheck,
           .algorithms = {"diana"}},
          {.name = "spams-theorem1",
           .summary =
               "(1/T) sum_t ||grad f(theta_t)||^2 <= Theorem 1's bound (Markov at the confidence)",
           .source = "spams.txt Theorem 1 (lines 221-222; proof lines 552-590)",
           .probes = {"spams-ef", "q-deviate"},
           .make = &MakeSpamsTheorem1Check,
           .algorithms = {"spams", "dist-spams"}},
          {.name = "zero-one-adam-volume",
           .summary =
               "the bits a 0/1 Adam run sends and receives equal its schedule's count (raw "
               "gradient on "
               "T_v, 1-bit u on T_u, nothing on local steps) and are <= fraction x 1-bit Adam's on "
               "the same steps",
           .source = "0/1 Adam (Lu et al., ICLR 2023) abstract (up to 87% less data volume than "
                     "1-bit Adam); "
                     "its T_v, T_u policies (DeepSpeed tutorial)",
           .make = &MakeZeroOneAdamVolumeCheck,
           .algorithms = {"zero-one-adam"}},
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
  return JudgeClaim(*info, judge, input);
}

}  // namespace lemmalab
