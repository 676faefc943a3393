// The third audit of lemmalab check's verdicts (issue 32), class by class: each case reproduces
// what was observed, a "holds" on evidence that did not support it, and pins the outcome the
// evidence rule (theory/evidence_rule.h) gives now; the honest variants still hold.
// tests/assertion_contract_test.cc checks the same rule on every registered assertion.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli/check.h"
#include "tests/test_util.h"
#include "tests/theory_doubles.h"

namespace lemmalab {
namespace {

using ::testing::HasSubstr;
using testing::RowOf;

CheckReport Check(const std::string& text, const testing::TempDir& dir, bool from = false) {
  return testing::CheckSpecText(text, dir.path(), from);
}

// A quadratic whose gradient noise dominates its gradient, so that Adam's variance settles.
constexpr std::string_view kNoisyQuadratic = R"(seed = 5
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

// The premise of a verdict whose name starts with `name`.
const Premise& PremiseNamed(const Verdict& v, std::string_view name) {
  for (const Premise& p : v.premises) {
    if (p.name.starts_with(name)) return p;
  }
  throw std::runtime_error(fmt::format("no premise '{}'", name));
}

// Class 1. dist-SPAMS with block-sign (blocks of 2) on a quadratic, q = 0.68 given: recorded every
// 10th step the largest recorded ratio was 0.678 and q-deviate held, though call 491 of worker 2
// reached 0.68975. The extents keep every call's extreme, so the verdict is the same whatever
// probe_every records, and says what it covered.
std::string BlockSignSpams(int probe_every) {
  return fmt::format(R"(seed = 3
steps = 1500
workers = 4
precision = "fp64"
probe_every = {}

[problem]
name = "quadratic"
dimension = 10
L = 1.0
mu = 0.1
rotate = true
noise = "sphere"
sigma = 0.1

[[optimizer]]
name = "dist-spams"
compressor = {{ name = "block-sign", blocks = "fixed", block_size = 2 }}
eps = 1e4
beta1 = 0.0
beta2 = 0.5
schedule = {{ name = "constant", lr = 16 }}

[[assert]]
assertion = "q-deviate"
q = 0.68
expect = "violated"

[[assert]]
assertion = "spams-lemma2"
q = 0.68
expect = "inconclusive"
)",
                     probe_every);
}

TEST(EvidenceFindings, EveryCallCountsWhateverProbeEveryRecords) {
  for (const int every : {1, 10}) {
    testing::TempDir dir;
    const CheckReport report = Check(BlockSignSpams(every), dir);
    EXPECT_EQ(report.mismatches(), 0) << FormatCheck(report);
    const Verdict& v = RowOf(report, "q-deviate", "dist-spams").verdict;
    EXPECT_NEAR(v.measured_value, 0.68975, 5e-6);
    EXPECT_EQ(v.worst_step, 491);
    EXPECT_EQ(v.worst_worker, 2);
    EXPECT_THAT(v.measured, HasSubstr("over all 6000 values"));
    // Lemma 2's premise reads the same extremes: the given q is contradicted by the run.
    EXPECT_THAT(
        PremiseNamed(RowOf(report, "spams-lemma2", "dist-spams").verdict, "spams.txt Assumption 1")
            .detail,
        HasSubstr("0.68975 at step 491 (worker 2)"));
  }
}

// Class 1, a rule between consecutive steps: 1-bit LAMB's r_t within r_threshold of r_(t-1),
// judged on points 10 steps apart, was a false violation. The probe computes each rule's excess
// at every step; the verdict does not depend on probe_every.
TEST(EvidenceFindings, RulesBetweenConsecutiveStepsSeeEveryStep) {
  for (const int every : {1, 10}) {
    testing::TempDir dir;
    const CheckReport report =
        Check(fmt::format("probe_every = {}\n{}", every, kNoisyQuadratic) + R"(
[[optimizer]]
name = "onebit-lamb"
warmup_steps = 100

[[assert]]
assertion = "onebit-lamb-clips"
)",
              dir);
    EXPECT_EQ(report.mismatches(), 0) << FormatCheck(report);
  }
}

// Class 2. Birder with eps = 0 on data whose second feature is 0 in every sample: b = 0 there,
// Q gets 0/0 at step 1 and the run stops. q-domain once held (a NaN is not outside [-1, 1]) and
// Lemma 2 held with residual 0 (an infinity norm that skipped the NaN).
TEST(EvidenceFindings, NonFiniteEvidenceHoldsNothing) {
  testing::TempDir dir;
  const CheckReport report =
      Check(fmt::format(R"(seed = 1
steps = 50
workers = 2
precision = "fp64"

[data]
source = "csv"
path = "{}"
label = "label"

[problem]
name = "logreg"
intercept = false
batch_size = 2

[[optimizer]]
name = "birder"
eps = 0
schedule = {{ name = "constant", lr = 0.01 }}

[[assert]]
assertion = "q-domain"
expect = "inconclusive"

[[assert]]
assertion = "birder-lemma2"
expect = "inconclusive"
)",
                        (testing::SourceDir() / "data/skewed_signs.csv").string()),
            dir);
  EXPECT_EQ(report.mismatches(), 0) << FormatCheck(report);
  for (const char* assertion : {"q-domain", "birder-lemma2"}) {
    const CheckRow& row = RowOf(report, assertion, "birder");
    EXPECT_THAT(row.status, HasSubstr("diverged at step 1"));
    EXPECT_THAT(row.verdict.detail, HasSubstr("is nan at step 1"));
  }
}

// Class 3. Rosenbrock's L and G hold on the box |x_j| <= radius; radius = 1 left out x_0 =
// (-1.2, 1, ...) and EF21, MARINA and DIANA held with L = 2602. The problem refuses such a box;
// within one that holds x_0, a run whose iterates leave it breaks the premise every constant
// carries.
TEST(EvidenceFindings, ConstantsHoldOnlyWhereTheyAreCertified) {
  constexpr std::string_view rosenbrock = R"(seed = 1
steps = 300
workers = 2
precision = "fp64"

[problem]
name = "rosenbrock"
dimension = 4
radius = {}
noise = "sphere"
sigma = 0.1

[[optimizer]]
name = "onebit-adam"
warmup_steps = 100
schedule = {{ name = "constant", lr = 0.01 }}

[[assert]]
assertion = "onebit-theorem1"
expect = "inconclusive"
)";
  testing::TempDir refused;
  EXPECT_THAT(testing::UserErrorOf([&] { Check(fmt::format(rosenbrock, 1.0), refused); }),
              HasSubstr("problem 'rosenbrock': radius = 1 leaves out the initial point"));
  testing::TempDir dir;
  const CheckReport report = Check(fmt::format(rosenbrock, 1.2), dir);
  EXPECT_EQ(report.mismatches(), 0) << FormatCheck(report);
  const Premise& box =
      PremiseNamed(RowOf(report, "onebit-theorem1", "onebit-adam").verdict, "the iterates stay in");
  EXPECT_TRUE(box.failed());
  EXPECT_THAT(box.detail, HasSubstr("x_max_abs reached 1.21"));
  EXPECT_THAT(box.name, HasSubstr("the box |x_j| <= 1.2, where L = 3370"));
}

// Class 4. Claims applied outside their scope.
TEST(EvidenceFindings, ClaimsOutsideTheirScopeAreNotHeld) {
  testing::TempDir dir;
  const CheckReport report = Check(std::string(kNoisyQuadratic) + R"(
[[optimizer]]
name = "onebit-adam"
beta2 = 0.98
warmup_steps = 250

[[optimizer]]
name = "ef-sgd"
label = "top-15"
compressor = { name = "top-k", k = 15 }

[[optimizer]]
name = "ef-sgd"
label = "bf16"
compressor = { name = "bf16" }

[[assert]]
assertion = "onebit-variance-stable"
runs = ["onebit-adam"]
at = 280                  # frozen since T_w = 250: v compared with itself gave "holds, 0"
expect = "inconclusive"

[[assert]]
assertion = "onebit-variance-stable"
runs = ["onebit-adam"]
window = 1                # once "holds" on a v still growing
at = 20
expect = "inconclusive"

[[assert]]
assertion = "onebit-variance-stable"
runs = ["onebit-adam"]

[[assert]]
assertion = "q-unbiased"
runs = ["top-15", "bf16"]
expect = "violated"       # deterministic: every call that moved its input is a bias
)",
                                   dir);
  EXPECT_EQ(report.mismatches(), 0) << FormatCheck(report);
  EXPECT_THAT(report.rows[0].verdict.measured, HasSubstr("at step 280 (the check's `at`)"));
  EXPECT_THAT(RowOf(report, "q-unbiased", "bf16").verdict.detail,
              HasSubstr("compress deterministically, so E C(u) = C(u)"));
}

// Class 4, linear speedup: SGD with exact, identical gradients and lr ~ sqrt(n) once held (the
// larger step, not averaging, made it faster), and 1-bit LAMB at sigma = 0 was "violated" citing
// a corollary that predicts nothing there. Without noise the claim has no premise to stand on.
TEST(EvidenceFindings, SpeedupNeedsNoiseToAverage) {
  testing::TempDir dir;
  const CheckReport report = Check(R"(seed = 1
steps = 200
workers = 1
precision = "fp64"

[check]
seeds = [1, 2, 3]
workers = [1, 2, 4, 8]

[problem]
name = "quadratic"
dimension = 20
L = 1.0
mu = 0.01
rotate = true

[[optimizer]]
name = "sgd"
schedule = { name = "constant", lr = 0.05, workers_exponent = 0.5 }

[[optimizer]]
name = "onebit-lamb"
warmup_steps = 50
r_min = 1.0
r_max = 1.0
schedule = { name = "constant", lr = 0.01, workers_exponent = 0.5 }

[[assert]]
assertion = "linear-speedup"
exponent = 0.5
lr_workers_exponent = 0.5
from = 100
offset = false
expect = "inconclusive"
)",
                                   dir);
  EXPECT_EQ(report.mismatches(), 0) << FormatCheck(report);
  for (const CheckRow& row : report.rows) {
    EXPECT_TRUE(PremiseNamed(row.verdict, "noisy gradients, sigma > 0").failed()) << row.runs;
  }
}

// Class 4, rate citing a theorem: dist-SPAMS at Corollary 1's step size, ~1e9 times Theorem 1's
// eta_max, once got SPAMS's rate cited. The citation now carries the theorem's premises; without
// them (theorem = "none") the claim is the empirical one and cites nothing.
TEST(EvidenceFindings, RatesCiteTheoremsWithTheirPremises) {
  testing::TempDir dir;
  const CheckReport report = Check(R"(seed = 1
steps = 400
workers = 2
precision = "fp64"

[check]
seeds = [1, 2, 3]

[problem]
name = "quadratic"
dimension = 10
L = 1.0
mu = 0.1
rotate = true
noise = "gaussian"
sigma = 1.0

[[optimizer]]
name = "dist-spams"
compressor = { name = "top-k", k = 5 }
beta1 = 0.0
schedule = { name = "constant", lr = 1.0, workers_exponent = 0.5, steps_exponent = -0.5 }

[[assert]]
assertion = "rate"
expect = "inconclusive"

[[assert]]
assertion = "rate"
theorem = "none"
expect = "inconclusive"
)",
                                   dir);
  const Verdict& cited = report.rows[0].verdict;
  EXPECT_EQ(cited.kind, VerdictKind::kInconclusive) << cited.detail;
  EXPECT_THAT(report.rows[0].source, HasSubstr("spams.txt"));
  EXPECT_TRUE(PremiseNamed(cited, "spams-corollary1: eta <= eta_max").failed());
  EXPECT_THAT(report.rows[1].source, HasSubstr("citing no theorem"));
  for (const Premise& p : report.rows[1].verdict.premises) {
    EXPECT_FALSE(p.name.starts_with("spams-corollary1")) << p.name;
  }
}

// Class 5. Rates judged on the tail. SGD at a constant step: ||grad f||^2 flat at 0.33 for the
// last three quarters of the run, under a running mean that a huge transient makes decay like
// 1/T, once held with p = 1. SGD at 0.5 / sqrt(t), which converges, was called "may stall".
TEST(EvidenceFindings, RatesAreJudgedOnTheTail) {
  constexpr std::string_view spec = R"(seed = 1
steps = 1500
workers = 1
precision = "fp64"

[check]
seeds = [1, 2, 3, 4, 5]

[problem]
name = "quadratic"
dimension = {}
L = {}
mu = {}
rotate = true
noise = "gaussian"
sigma = 1.0

[[optimizer]]
name = "sgd"
schedule = {{ name = "{}", lr = {} }}

[[assert]]
assertion = "rate"
expect = "{}"
)";
  testing::TempDir flat, converging;
  const CheckReport stall =
      Check(fmt::format(spec, 100, 100.0, 0.5, "constant", 0.009, "violated"), flat);
  EXPECT_EQ(stall.mismatches(), 0) << FormatCheck(stall);
  EXPECT_THAT(stall.rows[0].verdict.detail, HasSubstr("more slowly than T^-0.45 (or not at all)"));
  EXPECT_GT(stall.rows[0].verdict.measured_value, 0.99);  // the running mean's own fit: p ~ 1
  const CheckReport sqrt_t =
      Check(fmt::format(spec, 20, 1.0, 0.1, "inv-sqrt", 0.5, "holds"), converging);
  EXPECT_EQ(sqrt_t.mismatches(), 0) << FormatCheck(sqrt_t);
}

// Class 6. Premises the run can refute: label-sorted shards once left Birder's Assumption 3 "on
// trust"; the shards' full gradients now measure their spread. An f* from L-BFGS (f at a point,
// so an upper bound on inf f) was refused even where it keeps a bound conservative.
TEST(EvidenceFindings, PremisesTheRunCanRefuteAreChecked) {
  constexpr std::string_view birder = R"(seed = 1
steps = 100
workers = 4
precision = "fp64"
reference = true

[data]
source = "csv"
path = "{}"
label = "target"
normalize = "standardize"

[problem]
name = "logreg"
batch_size = 16
shards = {{ name = "{}" }}

[[optimizer]]
name = "birder"
t0 = 0
schedule = {{ name = "inv-sqrt", lr = 0.05 }}

[[assert]]
assertion = "birder-theorem1"
expect = "{}"
)";
  const std::string data = (testing::SourceDir() / "data/breast_cancer.csv").string();
  testing::TempDir sorted_dir, iid_dir;
  const CheckReport sorted = Check(fmt::format(birder, data, "sorted", "inconclusive"), sorted_dir);
  EXPECT_EQ(sorted.mismatches(), 0) << FormatCheck(sorted);
  const Premise& one = PremiseNamed(sorted.rows[0].verdict, "Assumption 3");
  EXPECT_TRUE(one.failed());
  EXPECT_THAT(one.detail, HasSubstr("sorted shards: (1/n) sum_i ||grad f_i - grad f||^2 up to"));
  const CheckReport iid = Check(fmt::format(birder, data, "iid", "vacuous"), iid_dir);
  EXPECT_EQ(iid.mismatches(), 0) << FormatCheck(iid);
  EXPECT_EQ(PremiseNamed(iid.rows[0].verdict, "Assumption 3").status, Premise::Status::kUnchecked);

  // EF21 with full-shard gradients on the same data, f* from L-BFGS: the bound computed with it
  // is at most the true one, so meeting it is evidence.
  testing::TempDir ef21_dir;
  const CheckReport ef21 = Check(fmt::format(R"(seed = 1
steps = 200
workers = 4
precision = "fp64"
reference = true

[data]
source = "csv"
path = "{}"
label = "target"
normalize = "standardize"

[problem]
name = "logreg"
batch_size = 0

[[optimizer]]
name = "ef21"
compressor = {{ name = "top-k", k = 8 }}
schedule = {{ name = "constant", lr = 0.03 }}

[[assert]]
assertion = "ef21-theorem1"
)",
                                             data),
                                 ef21_dir);
  EXPECT_EQ(ef21.mismatches(), 0) << FormatCheck(ef21);
  const Premise& f_star = PremiseNamed(ef21.rows[0].verdict, "f* exact, or an upper bound");
  EXPECT_FALSE(f_star.failed());
  EXPECT_THAT(f_star.detail, HasSubstr("(bound: f at the point Ceres L-BFGS reached"));
}

// Class 7. Provenance: check --from judged a folder another spec produced, and a [check] sweep
// over workers = [2, 4, 1000] ran n = 2 and 4 before refusing 300.
TEST(EvidenceFindings, ResultsAreJudgedOnlyAsTheSpecsOwn) {
  constexpr std::string_view spec = R"(seed = 1
steps = 30
workers = 2

[problem]
name = "quadratic"
dimension = 10

[[optimizer]]
name = "dist-spams"
compressor = {{ name = "top-k", k = 5 }}
schedule = {{ name = "constant", lr = {} }}

[[assert]]
assertion = "q-deviate"
)";
  testing::TempDir dir;
  Check(fmt::format(spec, 0.01), dir);
  EXPECT_EQ(Check(fmt::format(spec, 0.01), dir, /*from=*/true).mismatches(), 0);
  EXPECT_THAT(
      testing::UserErrorOf([&] { Check(fmt::format(spec, 0.5), dir, /*from=*/true); }),
      HasSubstr("its spec (" + (dir / "spec.toml").string() + ") differs from " +
                (dir / "spec.toml").string() + ": optimizer[0].schedule.lr: 0.01 then, 0.5 now"));

  testing::TempDir sweep;
  const std::string error = testing::UserErrorOf([&] {
    Check(fmt::format(R"(seed = 1
steps = 30
workers = 2

[check]
workers = [2, 4, 1000]

[data]
source = "csv"
path = "{}"
label = "target"

[problem]
name = "logreg"

[[optimizer]]
name = "sgd"
schedule = {{ name = "constant", lr = 0.01 }}

[[assert]]
assertion = "optimality-gap"
)",
                      (testing::SourceDir() / "data/breast_cancer.csv").string()),
          sweep);
  });
  EXPECT_THAT(error, HasSubstr("the [check] sweep's seed 1 with 1000 workers cannot run"));
  EXPECT_FALSE(std::filesystem::exists(sweep / "out"));  // nothing ran
}

// Class 8. Words that said more than was measured: EF21-SGDM with noisy gradients was called "a
// function of x^0 alone"; onebit-error-bounded cited the paper for a heuristic of its own.
TEST(EvidenceFindings, VerdictsSayWhatWasMeasured) {
  testing::TempDir dir;
  const CheckReport report = Check(R"(seed = 6
steps = 200
workers = 4
precision = "fp64"

[problem]
name = "quadratic"
dimension = 20
L = 1.0
mu = 0.1
rotate = true
noise = "sphere"
sigma = 0.5
heterogeneity = 2.0

[[optimizer]]
name = "ef21-sgdm"
compressor = { name = "top-k", k = 4 }
eta = 0.5
schedule = { name = "constant", lr = 0.045 }

[[assert]]
assertion = "ef21-sgdm-full-gradient"
expect = "inconclusive"
)",
                                   dir);
  EXPECT_EQ(report.mismatches(), 0) << FormatCheck(report);
  EXPECT_THAT(report.rows[0].verdict.detail, ::testing::Not(HasSubstr("x^0 alone")));
  EXPECT_THAT(report.rows[0].verdict.detail, HasSubstr("one run against an expectation bound"));
  const AssertionInfo& heuristic = *Assertions().Find("onebit-error-bounded");
  EXPECT_THAT(heuristic.summary, HasSubstr("heuristic (no statement of the paper)"));
  EXPECT_THAT(heuristic.source, HasSubstr("which the paper assumes and never shows"));
  // Every verdict lists what it read, over how many values.
  EXPECT_FALSE(report.rows[0].verdict.evidence.empty());
  EXPECT_THAT(fmt::format("{}", fmt::join(report.rows[0].verdict.evidence, "\n")),
              HasSubstr("metric grad_sq_norm: all 201 values, recorded"));
}

}  // namespace
}  // namespace lemmalab
