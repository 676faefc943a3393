// The audit of lemmalab check's verdicts, finding by finding: each case reproduces what was
// observed (a verdict of "holds" where the honest answer was violated or inconclusive) and pins
// the outcome it gets now. The planted faults of the audit flip verdicts; honest runs still hold.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>

#include "cli/check.h"
#include "tests/test_util.h"
#include "tests/theory_doubles.h"

namespace lemmalab {
namespace {

using ::testing::HasSubstr;

CheckReport Check(const std::string& text, const testing::TempDir& dir, bool from = false) {
  return testing::CheckSpecText(text, dir.path(), from);
}

using testing::RowOf;

// The premise of a verdict whose name starts with `name`.
const Premise& PremiseNamed(const Verdict& v, std::string_view name) {
  for (const Premise& p : v.premises) {
    if (p.name.starts_with(name)) return p;
  }
  throw std::runtime_error(fmt::format("no premise '{}'", name));
}

// The quadratic of runs/theory/birder-rate.toml (seed 1: ||grad f(x_1)||^2 = 25.58), one data
// distribution, T steps.
std::string BirderQuadratic(int steps, const std::string& tail) {
  return fmt::format(R"(seed = 1
steps = {}
workers = 4
precision = "fp64"

[problem]
name = "quadratic"
dimension = 50
L = 1.0
mu = 0.01
rotate = true
noise = "sphere"
sigma = 0.1
{})",
                     steps, tail);
}

// Finding 1, first half: Birder with QSGD on the Fashion-MNIST MLP (784-32-10, 4 workers,
// Dirichlet 0.3 shards) blows up (the minibatch loss grows by 10^4 and more) while its numbers
// stay finite; its status once said "completed" and ef-norm's batch-means interval "holds". Now
// the runner stops it as diverged (BlowUpLimit, theory/evidence.h), every statistical claim on it
// is inconclusive, naming the blow-up, and ef-norm also names that Lemma 1 is not about QSGD.
TEST(VerdictFindings, BlownUpRunGivesNoStatisticalHolds) {
  testing::TempDir dir;
  const CheckReport report = Check(R"(seed = 1
steps = 12
workers = 4

[data]
source = "idx"
dir = "/usr/share/datasets/fashion-mnist"
normalize = "pixels"

[problem]
name = "mlp"
hidden = [32]
batch_size = 64
shards = { name = "dirichlet", alpha = 0.3 }

[schedule]
name = "constant"
lr = 0.01

[[optimizer]]
name = "birder"
compressor = "qsgd"

[[assert]]
assertion = "ef-norm"
expect = "inconclusive"

[[assert]]
assertion = "q-unbiased"
expect = "inconclusive"
)",
                                   dir);
  EXPECT_EQ(report.mismatches(), 0) << FormatCheck(report);
  for (const char* assertion : {"ef-norm", "q-unbiased"}) {
    const CheckRow& row = RowOf(report, assertion, "birder");
    EXPECT_THAT(row.status, HasSubstr("diverged at step 7: the minibatch loss"));
    EXPECT_TRUE(PremiseNamed(row.verdict, "the run completed without diverging").failed());
    EXPECT_THAT(row.verdict.premises[0].detail, HasSubstr("the run blew up"));
  }
  EXPECT_TRUE(PremiseNamed(RowOf(report, "ef-norm", "birder").verdict, "compressor.name").failed());
}

// Finding 1, second half: Birder with domain = "rescale" on the shipped quadratic diverges (its
// loss passes 1000 (1 + |f(x_0)|) at step 13 and stops being finite at step 164); q-unbiased
// once held there. A diverged run is inconclusive, with its status.
TEST(VerdictFindings, DivergedRunIsInconclusive) {
  testing::TempDir dir;
  const CheckReport report = Check(R"(seed = 7
steps = 200
workers = 4
precision = "fp64"

[problem]
name = "quadratic"
dimension = 50
L = 1.0
mu = 0.01
rotate = true
noise = "sphere"
sigma = 0.1
heterogeneity = 0.5

[schedule]
name = "inv-sqrt"
lr = 0.05

[[optimizer]]
name = "birder"
beta = 0.9
compressor = { name = "stochastic-binary", domain = "rescale" }

[[assert]]
assertion = "q-unbiased"
expect = "inconclusive"
)",
                                   dir);
  EXPECT_EQ(report.mismatches(), 0) << FormatCheck(report);
  const CheckRow& row = RowOf(report, "q-unbiased", "birder");
  EXPECT_THAT(row.status, HasSubstr("diverged at step 13: the minibatch loss"));
  EXPECT_THAT(row.verdict.detail, HasSubstr("premise failed: the run completed without diverging"));
}

// Finding 2: Birder Theorem 1's premises. Without the max rule the effective step alpha_t / b_t
// grows on some coordinate (the proof's step (iii)), and the theorem says nothing about the run;
// with it from step 1 every premise holds. The verdict shows both the re-derived and the printed
// bound.
TEST(VerdictFindings, BirderTheoremNamesTheMonotoneStepPremise) {
  testing::TempDir dir;
  const CheckReport report = Check(BirderQuadratic(200, R"(
[schedule]
name = "inv-sqrt"
lr = 0.05

[[optimizer]]
name = "birder"
beta = 0.9

[[optimizer]]
name = "birder"
label = "max-rule"
beta = 0.9
t0 = 0

[[assert]]
assertion = "birder-theorem1"
runs = ["birder"]
expect = "inconclusive"

[[assert]]
assertion = "birder-theorem1"
runs = ["max-rule"]
expect = "vacuous"
)"),
                                   dir);
  EXPECT_EQ(report.mismatches(), 0) << FormatCheck(report);
  const Verdict& without = RowOf(report, "birder-theorem1", "birder").verdict;
  const Premise& step = PremiseNamed(without, "alpha_(t-1)/b_(t-1) >= alpha_t/b_t");
  EXPECT_TRUE(step.failed());
  EXPECT_THAT(step.detail, HasSubstr("no max rule (t0 unset)"));
  const Verdict& with = RowOf(report, "birder-theorem1", "max-rule").verdict;
  EXPECT_FALSE(PremiseNamed(with, "alpha_(t-1)/b_(t-1) >= alpha_t/b_t").failed());
  EXPECT_FALSE(PremiseNamed(with, "max_j b_t,j <= G").failed());
  for (const Premise& p : with.premises) EXPECT_FALSE(p.failed()) << p.name << ": " << p.detail;
  ASSERT_EQ(with.other_forms.size(), 1u);
  EXPECT_EQ(with.other_forms[0].name, "as printed");
  EXPECT_THAT(with.bound, HasSubstr("re-derived"));
}

// Finding 2: with c = 0.001 and eps = 0.1 the printed bound is violated at T = 1 (25.58 > 4.20
// in the audit's reading; the left side at T = 1 is ||grad f(x_1)||^2, deterministic), which the
// default of judging the printed bound used to hide. The re-derived bound decides now, and the
// printed one's violation is shown beside it.
TEST(VerdictFindings, PrintedBirderBoundFailsAtTheFirstStep) {
  testing::TempDir dir;
  const CheckReport report = Check(BirderQuadratic(60, R"(
[schedule]
name = "inv-sqrt"
lr = 0.001

[[optimizer]]
name = "birder"
beta = 0.9
eps = 0.1
t0 = 0

[[assert]]
assertion = "birder-theorem1"
expect = "vacuous"

[[assert]]
assertion = "birder-theorem1"
bound = "printed"
expect = "violated"
)"),
                                   dir);
  EXPECT_EQ(report.mismatches(), 0) << FormatCheck(report);
  const Verdict& printed = report.rows[1].verdict;
  EXPECT_EQ(printed.worst_step, 1);
  EXPECT_NEAR(printed.measured_value, 25.5757, 1e-3);
  EXPECT_LT(printed.bound_value, 4.2);
  const Verdict& rederived = report.rows[0].verdict;
  ASSERT_EQ(rederived.other_forms.size(), 1u);
  EXPECT_EQ(rederived.other_forms[0].kind, VerdictKind::kViolated);
}

// The SPAMS quadratic of runs/theory/spams.toml with `tail` appended.
std::string SpamsQuadratic(const std::string& tail) {
  return fmt::format(R"(seed = 3
steps = 60
workers = 4
precision = "fp64"

[problem]
name = "quadratic"
dimension = 50
L = 1.0
mu = 0.1
rotate = true
noise = "sphere"
sigma = 0.1
heterogeneity = 0.5
{})",
                     tail);
}

// Finding 2: an over-claimed q (top-10 of 50 keeps to q = 0.894; the audit told the check 0.3)
// made Lemma 2 violated but Lemma 4 and Theorem 1 hold. The run's own compressions contradict
// the q, so all three are inconclusive, naming Assumption 1.
TEST(VerdictFindings, OverClaimedQIsContradictedByTheRun) {
  testing::TempDir dir;
  const CheckReport report = Check(SpamsQuadratic(R"(
[[optimizer]]
name = "dist-spams"
compressor = { name = "top-k", k = 10 }
eps = 1.0
schedule = { name = "constant", lr = 5e-5 }

[[assert]]
assertion = "spams-lemma2"
q = 0.3
expect = "inconclusive"

[[assert]]
assertion = "spams-lemma4"
q = 0.3
expect = "inconclusive"

[[assert]]
assertion = "spams-theorem1"
q = 0.3
expect = "inconclusive"

[[assert]]
assertion = "spams-lemma2"
)"),
                                   dir);
  EXPECT_EQ(report.mismatches(), 0) << FormatCheck(report);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_THAT(report.rows[k].verdict.detail, HasSubstr("premise failed: spams.txt Assumption 1"));
  }
  EXPECT_THAT(report.rows[0].verdict.detail, HasSubstr("the bound alone would say violated"));
}

// Finding 2: at eta = 2 the iterates of dist-SPAMS leave the ball ||x - x*|| <= ||x_0 - x*|| on
// which the problem's G bounds the gradients (the audit saw ||g|| = 38.8 against G = 8.1, still
// labelled a bound, verdict holds). Assumption 3 fails, naming the step and value.
TEST(VerdictFindings, IteratesLeavingGsBallAreNamed) {
  testing::TempDir dir;
  const CheckReport report = Check(SpamsQuadratic(R"(
[[optimizer]]
name = "dist-spams"
compressor = { name = "top-k", k = 10 }
schedule = { name = "constant", lr = 2.0 }

[[assert]]
assertion = "spams-lemma2"
expect = "inconclusive"

[[assert]]
assertion = "spams-lemma4"
expect = "inconclusive"
)"),
                                   dir);
  EXPECT_EQ(report.mismatches(), 0) << FormatCheck(report);
  const Premise& g = PremiseNamed(report.rows[0].verdict, "spams.txt Assumption 3");
  EXPECT_TRUE(g.failed());
  EXPECT_TRUE(g.step.has_value());
  EXPECT_THAT(g.detail, HasSubstr("left the region where G bounds the gradients"));
}

// Findings 4 and 5: q-domain applies only to Birder's quantizer (it printed "0.00% ... first at
// no step" for others); with weight decay a Birder run kept neither q-unbiased nor birder-z.
// Each assertion now judges the run it names, and q-unbiased cites the run's compressor.
TEST(VerdictFindings, ProbesApplyWhereTheyMeanSomethingAndSurviveWeightDecay) {
  testing::TempDir dir;
  const CheckReport report = Check(BirderQuadratic(40, R"(
[schedule]
name = "inv-sqrt"
lr = 0.05

[[optimizer]]
name = "birder"
label = "decayed"
weight_decay = 0.01

[[optimizer]]
name = "birder"
label = "qsgd"
compressor = "qsgd"

[[assert]]
assertion = "birder-lemma2"
runs = ["decayed"]
expect = "inconclusive"     # decoupled decay shrinks x outside Eq. 14

[[assert]]
assertion = "q-unbiased"
runs = ["decayed", "qsgd"]
tolerance = 0.2

[[assert]]
assertion = "q-domain"
)"),
                                   dir);
  EXPECT_THAT(RowOf(report, "birder-lemma2", "decayed").verdict.detail,
              HasSubstr("premise failed: no decoupled weight decay"));
  EXPECT_NE(RowOf(report, "q-unbiased", "decayed").verdict.kind, VerdictKind::kInconclusive)
      << RowOf(report, "q-unbiased", "decayed").verdict.detail;
  EXPECT_THAT(RowOf(report, "q-unbiased", "qsgd").source, HasSubstr("the qsgd compressor"));
  EXPECT_THAT(RowOf(report, "q-unbiased", "decayed").source, HasSubstr("birder.txt Eq. 5"));
  // q-domain judged the Birder-quantizer run only.
  int domain_rows = 0;
  for (const CheckRow& row : report.rows) domain_rows += row.assertion == "q-domain" ? 1 : 0;
  EXPECT_EQ(domain_rows, 1);
  EXPECT_EQ(RowOf(report, "q-domain", "decayed").verdict.kind, VerdictKind::kViolated);
}

// The resolved options are stored with the results: a reader of the database sees beta, the
// compressor and its options and the schedule without parsing TOML, defaults filled in.
TEST(VerdictFindings, ResultsHoldTheResolvedHyperparameters) {
  testing::TempDir dir;
  Check(BirderQuadratic(5, R"(
[schedule]
name = "inv-sqrt"
lr = 0.05

[[optimizer]]
name = "dist-spams"
compressor = { name = "top-k", k = 7 }

[[assert]]
assertion = "spams-lemma2"
)"),
        dir);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir / "out/results.sqlite").string().c_str(), &db), SQLITE_OK);
  std::map<std::string, std::string> values;
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db, "SELECT key, value, type FROM hyperparameters WHERE run_id = 1", -1, &s,
                     nullptr);
  while (sqlite3_step(s) == SQLITE_ROW) {
    values[reinterpret_cast<const char*>(sqlite3_column_text(s, 0))] =
        fmt::format("{} ({})", reinterpret_cast<const char*>(sqlite3_column_text(s, 1)),
                    reinterpret_cast<const char*>(sqlite3_column_text(s, 2)));
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  EXPECT_EQ(values["beta1"], "0.9 (number)");  // SPAMS's default, filled in
  EXPECT_EQ(values["compressor.name"], "top-k (string)");
  EXPECT_EQ(values["compressor.k"], "7 (integer)");
  EXPECT_EQ(values["worker_feedback"], "classic (string)");
  EXPECT_EQ(values["schedule.name"], "inv-sqrt (string)");
  EXPECT_EQ(values["schedule.lr"], "0.05 (number)");
  EXPECT_EQ(values["weight_decay"], "0.0 (number)");
}

}  // namespace
}  // namespace lemmalab
