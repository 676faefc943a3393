// The assertion registry: adding an assertion is one function and one line in the table below,
// with an example the claim holds on (and runs outside its scope) for the contract test.
#include <fmt/format.h>

#include <string>

#include "theory/assertion.h"
#include "theory/assertions.h"
#include "theory/evidence_rule.h"
#include "theory/verdicts.h"

namespace lemmalab {
namespace {

// The examples' settings: small, quick, every step evaluated and recorded.

// A noisy quadratic with exact L, G (on the ball ||x - x*|| <= ||x_0 - x*||), sigma, sigma_g = 0
// and f*.
constexpr std::string_view kNoisyQuadratic = R"(seed = 1
steps = 200
workers = 2
precision = "fp64"

[problem]
name = "quadratic"
dimension = 10
L = 1.0
mu = 0.1
rotate = true
noise = "sphere"
sigma = 0.1
)";

// Full gradients on heterogeneous workers: the setting of EF21's, DIANA's and MARINA's theorems.
constexpr std::string_view kFullGradients = R"(seed = 6
steps = 200
workers = 4
precision = "fp64"

[problem]
name = "quadratic"
dimension = 20
L = 1.0
mu = 0.1
rotate = true
sigma = 0
heterogeneity = 2.0
)";

// Noise that dominates the gradient, so that Adam's variance settles (1-bit Adam and LAMB).
constexpr std::string_view kNoiseDominated = R"(seed = 5
steps = 300
workers = 4
precision = "fp64"

[problem]
name = "quadratic"
dimension = 16
L = 1.0
mu = 0.1
rotate = true
noise = "sphere"
sigma = 10.0

[schedule]
name = "constant"
lr = 0.01
)";

constexpr std::string_view kBirder = R"(
[[optimizer]]
name = "birder"
schedule = { name = "inv-sqrt", lr = 0.05 }
)";

constexpr std::string_view kDistSpams = R"(
[[optimizer]]
name = "dist-spams"
compressor = { name = "top-k", k = 5 }
schedule = { name = "constant", lr = 0.01 }
)";

// SPAMS where Theorem 1's step-size condition can hold: eps = 1e4 makes eta_max large.
constexpr std::string_view kDistSpamsLargeEps = R"(
[[optimizer]]
name = "dist-spams"
compressor = { name = "top-k", k = 9 }
eps = 1e4
beta1 = 0.0
beta2 = 0.5
schedule = { name = "constant", lr = 16 }
)";

// A spec of `setting`, `optimizers` and one [[assert]] table of `assertion` with `keys`, last, so
// that an out-of-scope variant may add keys to it.
std::string Spec(std::string_view setting, std::string_view optimizers, std::string_view assertion,
                 std::string_view keys = "") {
  return fmt::format("{}{}\n[[assert]]\nassertion = \"{}\"\n{}", setting, optimizers, assertion,
                     keys);
}

}  // namespace

const Registry<AssertionInfo>& Assertions() {
  static const Registry<AssertionInfo> registry(
      "assertion",
      {
          {.name = "b-floor",
           .summary = "min_j (b_t,j + eps) >= rho for every worker and step",
           .source = "birder.txt Thm 1 assumption and footnote 5",
           .probes = {"min-b"},
           .make = &MakeDenominatorFloorCheck,
           .algorithms = {"birder", "softsign-sgd"},
           .example = {Spec(kNoisyQuadratic, kBirder, "b-floor", "rho = 1e-6\n")}},
          {.name = "b-positive",
           .summary = "min_j b_t,j > 0 without the added constant",
           .source = "birder.txt Thm 1 assumption (rho > 0), Eq. 4",
           .probes = {"min-b"},
           .make = &MakeRawDenominatorPositiveCheck,
           .algorithms = {"birder", "softsign-sgd"},
           .example = {Spec(kNoisyQuadratic, kBirder, "b-positive")}},
          {.name = "birder-lemma2",
           .summary = "the z-sequence identity holds to rounding at every step",
           .source = "birder.txt Lemma 2, Eq. 20-23",
           .probes = {"birder-z"},
           .make = &MakeZSequenceCheck,
           .algorithms = {"birder", "softsign-sgd"},
           .example = {Spec(kNoisyQuadratic, kBirder, "birder-lemma2"),
                       {{"no server error feedback: Eq. 14 telescopes the errors",
                         {"optimizer.server_feedback=none"}}}}},
          {.name = "birder-theorem1",
           .summary =
               "((1/T) sum ||grad f(x_t)||)^2 <= C1/sqrt(T) + C2 (1 + ln T)/sqrt(T) at every T",
           .source = "birder.txt Thm 1, Eq. 6, 41-42",
           .probes = {"min-b", "birder-z", "ef-norm"},
           .make = &MakeBirderTheorem1Check,
           .algorithms = {"birder"},
           .example = {Spec(kNoisyQuadratic, R"(
[[optimizer]]
name = "birder"
t0 = 0
schedule = { name = "inv-sqrt", lr = 0.05 }
)",
                            "birder-theorem1", "expect = \"vacuous\"\n"),
                       {{"no max rule: the proof's step (iii) fails", {"optimizer.t0=100000"}},
                        {"a constant step, not c / sqrt(t)",
                         {"optimizer.schedule.name=constant"}}}}},
          {.name = "ef-norm",
           .summary = "E||e||^2 <= d for worker and server error feedback",
           .source = "birder.txt Lemma 1, Eq. 16 and 19",
           .probes = {"ef-norm", "q-domain"},
           .make = &MakeErrorNormCheck,
           .example = {Spec(kNoisyQuadratic, kBirder, "ef-norm"),
                       {{"a compressor other than Birder's quantizer",
                         {"optimizer.compressor=qsgd"}}},
                       "error feedback pushes Q's inputs out of [-1, 1] on every Birder run, where "
                       "Lemma 1 says nothing, and without it there is no error to measure"}},
          {.name = "linear-speedup",
           .summary = "the averaged squared gradient norm falls like n^-q with the corollary's q, "
                      "at the step "
                      "size it prescribes for each n",
           .source = "the sigma/sqrt(nT) term of onebit-adam ICML Cor. 1, spams.txt Cor. 1, "
                     "onebit-lamb Cor. "
                     "1",
           .probes = {},
           .scope = AssertionScope::kAcrossWorkers,
           .make = &MakeSpeedupCheck,
           .premise_probes = {"min-b", "birder-z", "ef-norm", "spams-ef", "q-deviate",
                              "onebit-error", "lamb-ratios"},
           .example = {R"(seed = 1
steps = 600
workers = 1
precision = "fp64"

[check]
seeds = [1, 2, 3, 4, 5, 6, 7, 8]
workers = [1, 2, 4, 8, 16]

[problem]
name = "quadratic"
dimension = 50
L = 1.0
mu = 0.1
rotate = true
noise = "gaussian"
sigma = 1.0

[[optimizer]]
name = "sgd"
schedule = { name = "constant", lr = 1.0, workers_exponent = 0.5, steps_exponent = -0.5 }

[[assert]]
assertion = "linear-speedup"
exponent = 0.5
lr_workers_exponent = 0.5
from = 300
offset = false
)",
                       {{"exact gradients: no noise for n workers to average",
                         {"problem.sigma=0"}}}}},
          {.name = "optimality-gap",
           .summary = "f(x_T) - f* <= tolerance at the end of the run",
           .source = "convergence to a minimiser (the signSGD counterexamples violate it)",
           .probes = {},
           .make = &MakeOptimalityGapCheck,
           .judges_failure = true,
           .example = {Spec(kFullGradients, R"(
[[optimizer]]
name = "sgd"
schedule = { name = "constant", lr = 0.5 }
)",
                            "optimality-gap")}},
          {.name = "q-deviate",
           .summary = "||C(u) - u|| <= q ||u|| with q < 1 for every compressor call",
           .source = "spams.txt Assumption 1",
           .probes = {"q-deviate"},
           .make = &MakeDeviationCheck,
           .example = {Spec(kNoisyQuadratic, kDistSpams, "q-deviate"),
                       {{"a compressor that declares no q",
                         {"optimizer.compressor.name=random-k"}}}}},
          {.name = "q-domain",
           .summary = "every input of Q lies in [-1, 1]",
           .source = "birder.txt Eq. 5, Lemma 1",
           .probes = {"q-domain"},
           .make = &MakeQuantizerDomainCheck,
           .example = {Spec(kNoisyQuadratic, R"(
[[optimizer]]
name = "birder"
worker_feedback = "none"
server_feedback = "none"
schedule = { name = "inv-sqrt", lr = 0.05 }
)",
                            "q-domain"),
                       {{"error feedback, which pushes the inputs out",
                         {"optimizer.worker_feedback=classic"}}}}},
          {.name = "q-unbiased",
           .summary = "E[C(u)] = u on the run's own inputs (repeated draws)",
           .source = "birder.txt Eq. 5, Lemma 1 Eq. 17",
           .probes = {"q-unbiased"},
           .make = &MakeUnbiasedCheck,
           .example = {Spec(kNoisyQuadratic, R"(
[[optimizer]]
name = "ef-sgd"
compressor = { name = "qsgd" }
schedule = { name = "constant", lr = 0.05 }
)",
                            "q-unbiased"),
                       {{"a deterministic compressor that moves its inputs (top-9 of 10)",
                         {"optimizer.compressor.name=top-k", "optimizer.compressor.k=9"}},
                        {"a cast to bf16", {"optimizer.compressor.name=bf16"}}}}},
          {.name = "q-variance",
           .summary = "Var Q(u)_j = 1 - u_j^2 on |u_j| <= 1 (Birder's quantizer)",
           .source = "birder.txt Lemma 1, Eq. 18",
           .probes = {"q-unbiased"},
           .make = &MakeQuantizerVarianceCheck,
           .example = {Spec(kNoisyQuadratic, kBirder, "q-variance"),
                       {{"QSGD, whose variance is not Eq. 18's", {"optimizer.compressor=qsgd"}}}}},
          {.name = "rate",
           .summary = "the running average of ||grad f||^2 decays like T^-p with the theorem's p",
           .source = "birder.txt Thm 1; spams.txt Thm 1; onebit-adam-icml-with-appendix.txt Thm 1",
           .probes = {},
           .scope = AssertionScope::kAcrossSeeds,
           .make = &MakeRateCheck,
           .premise_probes = {"min-b", "birder-z", "ef-norm", "spams-ef", "q-deviate",
                              "onebit-error", "lamb-ratios"},
           .example = {R"(seed = 1
steps = 800
workers = 1
precision = "fp64"

[check]
seeds = [1, 2, 3, 4, 5, 6, 7, 8]

[problem]
name = "quadratic"
dimension = 10
L = 1.0
mu = 0.1
rotate = true
noise = "gaussian"
sigma = 1.0

[[optimizer]]
name = "sgd"
schedule = { name = "inv-sqrt", lr = 0.5 }

[[assert]]
assertion = "rate"
)",
                       {{"a constant step: the values stop falling at the noise floor",
                         {"optimizer.schedule.name=constant"}}}}},
          {.name = "tracks-reference",
           .summary = "the run ends within tolerance of a reference run",
           .source = "onebit-adam.txt Sec. 3.2, Fig. 6 (naive compression drifts from Adam)",
           .probes = {},
           .make = &MakeTracksReferenceCheck,
           .judges_failure = true,
           .example = {Spec(kNoisyQuadratic, R"(
[[optimizer]]
name = "adam"
schedule = { name = "constant", lr = 0.05 }

[[optimizer]]
name = "onebit-adam"
warmup_steps = 50
schedule = { name = "constant", lr = 0.05 }
)",
                            "tracks-reference",
                            "runs = [\"onebit-adam\"]\nreference = \"adam\"\nmetric = "
                            "\"optimality_gap\"\ntolerance = 0.05\n")}},
          {.name = "onebit-error-bounded",
           .summary =
               "heuristic (no statement of the paper): the compression errors ||delta^(i)_t||, "
               "||delta_bar_t|| stop growing in the compression phase (max over its second half <= "
               "(1 + tolerance) x max over the first)",
           .source =
               "lemmalab's growth heuristic for onebit-adam-icml-with-appendix.txt Assumption 1.3 "
               "(lines 720-740), which the paper assumes and never shows",
           .probes = {"onebit-error"},
           .make = &MakeOneBitErrorBoundedCheck,
           .judges_failure = true,
           .example = {Spec(kNoiseDominated, R"(
[[optimizer]]
name = "onebit-adam"
beta2 = 0.98
warmup_steps = 100
)",
                            "onebit-error-bounded", "tolerance = 1.0\n"),
                       {{"too few compression steps for two halves",
                         {"optimizer.warmup_steps=290"}}}}},
          {.name = "onebit-theorem1",
           .summary =
               "(1/(T+1)) sum ||grad f(x_t)||^2 over the compression phase <= Theorem 1's bound "
               "(Markov at the confidence)",
           .source = "onebit-adam-icml-with-appendix.txt Thm 1, Eq. 6",
           .probes = {"onebit-error"},
           .make = &MakeOneBitAdamTheorem1Check,
           .algorithms = {"onebit-adam", "onebit-adam-fp32"},
           .example = {Spec(kNoiseDominated, R"(
[[optimizer]]
name = "onebit-adam"
beta2 = 0.98
warmup_steps = 150
)",
                            "onebit-theorem1", "expect = \"vacuous\"\n"),
                       {{"no worker error feedback: Lemma 2's recursion",
                         {"optimizer.worker_feedback=none"}}}}},
          {.name = "onebit-lamb-clips",
           .summary =
               "c_t in [c_min, c_max] in warmup; then r_t in [r_min, r_max], within r_threshold of "
               "r_(t-1), and c_t = r_t c_avg, per layer",
           .source = "onebit-lamb.txt Eq. (1) and Algorithm 1 lines 1-3, 18-20",
           .probes = {"lamb-ratios"},
           .make = &MakeOneBitLambClipsCheck,
           .algorithms = {"lamb", "onebit-lamb"},
           .example = {Spec(kNoiseDominated, R"(
[[optimizer]]
name = "onebit-lamb"
warmup_steps = 100
)",
                            "onebit-lamb-clips")}},
          {.name = "onebit-lamb-ratio-adapts",
           .summary =
               "layers whose variance drifts more from the frozen one get larger scaling ratios r "
               "(Spearman's rho across layers > 0)",
           .source = "onebit-lamb.txt Fig. 6, lines 300-306",
           .probes = {"lamb-ratios"},
           .make = &MakeRatioAdaptsCheck,
           .algorithms = {"onebit-lamb"},
           .example = {R"(seed = 2023
steps = 300
workers = 4
precision = "fp64"

[data]
source = "synthetic-logistic"
samples = 400
features = 20

[problem]
name = "mlp"
hidden = [16, 8]
activation = "tanh"
batch_size = 16

[schedule]
name = "constant"
lr = 0.01

[[optimizer]]
name = "onebit-lamb"
warmup_steps = 100

[[assert]]
assertion = "onebit-lamb-ratio-adapts"
)",
                       {{"r clipped to 1: no ratio to adapt",
                         {"optimizer.r_min=1.0", "optimizer.r_max=1.0"}}}}},
          {.name = "onebit-lamb-theorem1",
           .summary = "(1/(T+1)) sum ||grad f(x_t)||^2 over the compression phase <= 1-bit LAMB's "
                      "Theorem 1 "
                      "bound (Markov at the confidence)",
           .source = "onebit-lamb.txt Thm 1, Eq. 3 (App. A.9)",
           .probes = {"onebit-error", "lamb-ratios"},
           .make = &MakeOneBitLambTheorem1Check,
           .algorithms = {"onebit-lamb"},
           .example = {Spec(kNoiseDominated, R"(
[[optimizer]]
name = "onebit-lamb"
warmup_steps = 100
r_min = 1.0
r_max = 1.0
)",
                            "onebit-lamb-theorem1", "expect = \"vacuous\"\n"),
                       {{"r adapting, so c takes more than one value", {"optimizer.r_max=4.0"}}}}},
          {.name = "onebit-variance-stable",
           .summary = "||v_t|| changes by <= tolerance over a window of 1/(1-beta2) steps at T_w",
           .source =
               "onebit-adam-icml-with-appendix.txt Sec. 3.3, Fig. 2, Sec. 7.1 (lines 962-974)",
           .probes = {"variance-norm"},
           .make = &MakeVarianceStableCheck,
           .example =
               {Spec(kNoiseDominated, R"(
[[optimizer]]
name = "onebit-adam"
beta2 = 0.98
warmup_steps = 250
)",
                     "onebit-variance-stable"),
                {{"a step after T_w, where v is frozen and compared with itself", {}, "at = 280\n"},
                 {"a window shorter than v's time constant", {}, "window = 5\n"}}}},
          {.name = "spams-corollary1",
           .summary = "Theorem 1 at Corollary 1's step size eta = L sqrt(n/T) (Algorithm 2)",
           .source = "spams.txt Corollary 1 (lines 266-270)",
           .probes = {"spams-ef", "q-deviate"},
           .make = &MakeSpamsCorollary1Check,
           .algorithms = {"spams", "dist-spams"},
           .example = {Spec(kNoisyQuadratic, R"(
[[optimizer]]
name = "dist-spams"
compressor = { name = "top-k", k = 9 }
beta1 = 0.0
eps = 1e4
schedule = { name = "constant", lr = 1.0, workers_exponent = 0.5, steps_exponent = -0.5 }
)",
                            "spams-corollary1", "expect = \"vacuous\"\n"),
                       {{"a step size that is not the corollary's",
                         {"optimizer.schedule.workers_exponent=0.0"}}}}},
          {.name = "spams-corollary2",
           .summary = "Theorem 1 at Corollary 2's step size eta = L / sqrt(T), n = 1 (Algorithm 3)",
           .source = "spams.txt Corollary 2 (lines 311-316)",
           .probes = {"spams-ef", "q-deviate"},
           .make = &MakeSpamsCorollary2Check,
           .algorithms = {"spams"},
           .example = {Spec(R"(seed = 2
steps = 300
workers = 1
precision = "fp64"

[problem]
name = "quadratic"
dimension = 10
L = 1.0
mu = 0.1
rotate = true
noise = "sphere"
sigma = 0.1
)",
                            R"(
[[optimizer]]
name = "spams"
compressor = { name = "top-k", k = 9 }
eps = 1e4
beta1 = 0.0
schedule = { name = "constant", lr = 1.0, steps_exponent = -0.5 }
)",
                            "spams-corollary2", "expect = \"vacuous\"\n"),
                       {{"two workers: Corollary 2 is about one", {"workers=2"}}}}},
          {.name = "spams-lemma1",
           .summary = "sum_t ||m'_t||^2 <= T sigma^2 + sum_t ||grad f(theta_t)||^2 (the proof's "
                      "momentum of "
                      "the averaged uncompressed gradients; Markov at the confidence)",
           .source = "spams.txt Lemma 1 (lines 475-490)",
           .probes = {"spams-moments"},
           .make = &MakeSpamsLemma1Check,
           .algorithms = {"spams", "dist-spams"},
           .example = {Spec(kNoisyQuadratic, kDistSpamsLargeEps, "spams-lemma1")}},
          {.name = "spams-lemma2",
           .summary = "||e_t,i||^2 <= 4 q^2 G^2 / (1-q^2)^2 at every step and worker",
           .source = "spams.txt Lemma 2 (lines 498-513, Eq. 3)",
           .probes = {"spams-ef", "q-deviate"},
           .make = &MakeSpamsLemma2Check,
           .algorithms = {"spams", "dist-spams"},
           .example = {Spec(kNoisyQuadratic, kDistSpams, "spams-lemma2"),
                       {{"a q the compressor does not keep", {}, "q = 0.1\n"},
                        {"iterates that leave the ball where G holds",
                         {"optimizer.compressor.k=2", "optimizer.schedule.lr=2.0"}}}}},
          {.name = "spams-lemma3",
           .summary =
               "sum_t ||E_t||^2 <= 4Tq^2/(1-q^2)^2 (sigma^2 + sigma_g^2) + 4q^2/(1-q^2)^2 sum_t "
               "||grad f(theta_t)||^2 (E_t the moving average of the averaged errors; Markov)",
           .source = "spams.txt Lemma 3 (lines 515-530)",
           .probes = {"spams-moments", "spams-ef", "q-deviate"},
           .make = &MakeSpamsLemma3Check,
           .algorithms = {"spams", "dist-spams"},
           .example = {Spec(kNoisyQuadratic, kDistSpamsLargeEps, "spams-lemma3"),
                       {{"a q the compressor does not keep", {}, "q = 0.1\n"}}}},
          {.name = "spams-lemma4",
           .summary = "max_j v_hat_t,j <= 4 (1+q^2)^3 G^2 / (1-q^2)^2 at every step",
           .source = "spams.txt Lemma 4 (lines 536-549)",
           .probes = {"spams-vhat", "q-deviate"},
           .make = &MakeSpamsLemma4Check,
           .algorithms = {"spams", "dist-spams"},
           .example = {Spec(kNoisyQuadratic, kDistSpams, "spams-lemma4"),
                       {{"a q the compressor does not keep", {}, "q = 0.1\n"}}}},
          {.name = "spams-lemma5",
           .summary =
               "sum_t ||D_t||_1 <= d / sqrt(eps) and sum_t ||D_t||^2 <= d / eps at every step",
           .source = "spams.txt Lemma 5 (lines 601-622)",
           .probes = {"spams-d"},
           .make = &MakeSpamsLemma5Check,
           .algorithms = {"spams", "dist-spams"},
           .example = {Spec(kNoisyQuadratic, kDistSpams, "spams-lemma5")}},
          {.name = "ef21-theorem1",
           .summary =
               "(1/T) sum_{t<T} ||grad f(x^t)||^2 <= 2 (f(x^0) - f*) / (gamma T) + G^0 / (theta T) "
               "for C in C(alpha) and gamma <= 1 / (L + L~ sqrt(beta / theta)), full gradients "
               "(deterministic with a deterministic compressor, else Markov)",
           .source = "Richtárik, Sokolov & Fatkhullin, NeurIPS 2021, EF21 Theorem 1",
           .probes = {"shift-error", "q-deviate"},
           .make = &MakeEf21Theorem1Check,
           .algorithms = {"ef21"},
           .example = {Spec(kFullGradients, R"(
[[optimizer]]
name = "ef21"
compressor = { name = "top-k", k = 4 }
schedule = { name = "constant", lr = 0.1 }
)",
                            "ef21-theorem1"),
                       {{"a step size above the rule", {"optimizer.schedule.lr=0.3"}},
                        {"noisy gradients", {"problem.noise=sphere", "problem.sigma=0.5"}}}}},
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
           .algorithms = {"ef21-sgdm"},
           .example = {Spec(kFullGradients, R"(
[[optimizer]]
name = "ef21-sgdm"
compressor = { name = "top-k", k = 4 }
eta = 0.5
schedule = { name = "constant", lr = 0.045 }
)",
                            "ef21-sgdm-full-gradient"),
                       {{"a step size above the rule", {"optimizer.schedule.lr=0.1"}},
                        {"noisy gradients", {"problem.noise=sphere", "problem.sigma=0.5"}}}}},
          {.name = "marina-theorem21",
           .summary =
               "(1/T) sum_{t<T} ||grad f(x^t)||^2 <= 2 (f(x^0) - f*) / (gamma T) for independent "
               "C_i "
               "in U(omega) and gamma <= 1 / (L (1 + sqrt((1 - p) omega / (p n)))), full gradients "
               "(Markov)",
           .source = "Gorbunov, Burlachenko, Li & Richtárik, ICML 2021, MARINA Theorem 2.1",
           .probes = {"q-deviate"},
           .make = &MakeMarinaTheorem21Check,
           .algorithms = {"marina"},
           .example = {Spec(kFullGradients, R"(
[[optimizer]]
name = "marina"
compressor = { name = "random-k", k = 4 }
p = 0.2
schedule = { name = "constant", lr = 0.3 }
)",
                            "marina-theorem21"),
                       {{"a step size above the rule", {"optimizer.schedule.lr=0.9"}},
                        {"senders that share their draws (PermK)",
                         {"optimizer.compressor=permk"}}}}},
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
           .algorithms = {"diana"},
           .example = {Spec(kFullGradients, R"(
[[optimizer]]
name = "diana"
compressor = { name = "random-k", k = 4 }
schedule = { name = "constant", lr = 0.06 }
)",
                            "diana-nonconvex"),
                       {{"a step size above the rule", {"optimizer.schedule.lr=0.2"}},
                        {"senders that share their draws (PermK)",
                         {"optimizer.compressor=permk"}}}}},
          {.name = "spams-theorem1",
           .summary =
               "(1/T) sum_t ||grad f(theta_t)||^2 <= Theorem 1's bound (Markov at the confidence)",
           .source = "spams.txt Theorem 1 (lines 221-222; proof lines 552-590)",
           .probes = {"spams-ef", "q-deviate"},
           .make = &MakeSpamsTheorem1Check,
           .algorithms = {"spams", "dist-spams"},
           .example = {Spec(kNoisyQuadratic, kDistSpamsLargeEps, "spams-theorem1"),
                       {{"a step size above eta_max", {"optimizer.schedule.lr=100"}}}}},
          {.name = "zero-one-adam-volume",
           .summary =
               "the bits a 0/1 Adam run sends and receives equal its schedule's count (raw "
               "gradient on "
               "T_v, 1-bit u on T_u, nothing on local steps) and are <= fraction x 1-bit Adam's on "
               "the same steps",
           .source = "0/1 Adam (Lu et al., ICLR 2023) abstract (up to 87% less data volume than "
                     "1-bit Adam); "
                     "its T_v, T_u policies (DeepSpeed tutorial)",
           .probes = {},
           .make = &MakeZeroOneAdamVolumeCheck,
           .algorithms = {"zero-one-adam"},
           .example = {Spec(kNoisyQuadratic, R"(
[[optimizer]]
name = "zero-one-adam"
var_freeze_step = 50
var_update_scaler = 4
local_step_scaler = 20
local_step_clipper = 8
schedule = { name = "constant", lr = 0.01 }
)",
                            "zero-one-adam-volume", "fraction = 0.5\n"),
                       {{"all-gather instead of a parameter server",
                         {"communication.scheme=allgather"}}}}},
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
