// lemmalab check and the assertions: each claim against a case whose answer is known, with
// negative controls (a planted fault the check must catch).
#include "cli/check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "comm/cluster.h"
#include "compressors/identity.h"
#include "compressors/stochastic_binary.h"
#include "compressors/top_k.h"
#include "optimizers/birder.h"
#include "optimizers/ef_sgd.h"
#include "problems/quadratic.h"
#include "tests/optimizer_test_util.h"
#include "tests/test_util.h"
#include "tests/theory_doubles.h"
#include "theory/assertions.h"
#include "theory/bounds.h"
#include "theory/compressor_probes.h"
#include "theory/statistics.h"

namespace lemmalab {
namespace {

using ::testing::HasSubstr;

// A noisy quadratic with exactly known constants, fp64, 4 workers; `tail` adds optimizers and
// [[assert]] tables.
std::string QuadraticSpec(const std::string& tail, int steps = 60) {
  return fmt::format(R"(seed = 7
steps = {}
workers = 4
precision = "fp64"

[problem]
name = "quadratic"
dimension = 40
L = 1.0
mu = 0.01
rotate = true
noise = "sphere"
sigma = 0.1
heterogeneity = 0.5

[schedule]
name = "inv-sqrt"
lr = 0.05
{})",
                     steps, tail);
}

CheckReport Check(const std::string& text, const testing::TempDir& dir, bool from = false) {
  return testing::CheckSpecText(text, dir.path(), from);
}

using testing::RowOf;

TEST(Check, BirderLemma2HoldsToRoundingAndBreaksWithoutServerFeedback) {
  testing::TempDir dir;
  const CheckReport report = Check(QuadraticSpec(R"(
[[optimizer]]
name = "birder"
beta = 0.9

[[optimizer]]
name = "birder"
label = "no-server-ef"
server_feedback = "none"

[[optimizer]]
name = "birder"
label = "no-worker-ef"
worker_feedback = "none"

[[assert]]
assertion = "birder-lemma2"
runs = ["birder"]

[[assert]]
assertion = "birder-lemma2"
runs = ["no-server-ef", "no-worker-ef"]
expect = "inconclusive"
)"),
                                   dir);
  EXPECT_EQ(report.mismatches(), 0) << FormatCheck(report);
  // In fp64 the identity's residual is a few units of rounding relative to |z|.
  EXPECT_LT(RowOf(report, "birder-lemma2", "birder").verdict.measured_value, 1e-14);
  // Without an error feedback the run is outside the lemma (its premise names the option), and
  // the residual shows by how much: the dropped error, order alpha, not rounding.
  for (const char* run : {"no-server-ef", "no-worker-ef"}) {
    const Verdict& v = RowOf(report, "birder-lemma2", run).verdict;
    EXPECT_GT(v.measured_value, 1e-3);
    EXPECT_THAT(v.detail, HasSubstr("the bound alone would say violated"));
  }
  EXPECT_THAT(RowOf(report, "birder-lemma2", "no-server-ef").verdict.detail,
              HasSubstr("premise failed: server_feedback = classic"));
  EXPECT_EQ(RowOf(report, "birder-lemma2", "no-server-ef").verdict.worst_step, 1);
}

TEST(Check, FromReadsTheSameVerdictsAndWritesJsonAndMarkdown) {
  testing::TempDir dir;
  const std::string spec = QuadraticSpec(R"(
[[optimizer]]
name = "birder"

[[assert]]
assertion = "birder-lemma2"

[[assert]]
assertion = "b-floor"
expect = "vacuous"
)");
  const CheckReport ran = Check(spec, dir);
  WriteCheckFiles(ran, dir / "out");
  const std::string json = testing::ReadFile(dir / "out/check.json");
  const CheckReport read = Check(spec, dir, /*from=*/true);
  WriteCheckFiles(read, dir / "out");
  EXPECT_EQ(testing::ReadFile(dir / "out/check.json"), json);
  EXPECT_THAT(json, HasSubstr("\"assertion\": \"birder-lemma2\""));
  EXPECT_THAT(json, HasSubstr("\"as_expected\": true"));
  EXPECT_THAT(json, HasSubstr("\"verdict\": \"vacuous\""));
  EXPECT_THAT(json, HasSubstr("\"status\": \"met\""));
  EXPECT_THAT(testing::ReadFile(dir / "out/check.md"),
              HasSubstr("| birder-lemma2 | birder.txt Lemma 2, Eq. 20-23 | birder | completed, "));
  EXPECT_FALSE(std::filesystem::exists(dir / "out/check.json.partial"));
}

TEST(Check, SpecErrorsNameTheTableAndTheRule) {
  testing::TempDir dir;
  const std::string birder = "\n[[optimizer]]\nname = \"birder\"\n";
  EXPECT_THAT(testing::UserErrorOf([&] { Check(QuadraticSpec(birder), dir); }),
              HasSubstr("no [[assert]] table: nothing to check"));
  EXPECT_THAT(testing::UserErrorOf([&] {
                Check(QuadraticSpec(birder + "[[assert]]\nassertion = \"ef-nrom\"\n"), dir);
              }),
              HasSubstr("unknown assertion 'ef-nrom' (did you mean 'ef-norm'?)"));
  EXPECT_THAT(
      testing::UserErrorOf([&] {
        Check(QuadraticSpec(birder + "[[assert]]\nassertion = \"ef-norm\"\nruns = [\"adam\"]\n"),
              dir);
      }),
      HasSubstr("no [[optimizer]] is labelled 'adam'"));
  EXPECT_THAT(
      testing::UserErrorOf([&] {
        Check(QuadraticSpec(birder + "[[assert]]\nassertion = \"ef-norm\"\nexpect = \"fine\"\n"),
              dir);
      }),
      HasSubstr("expect"));
  EXPECT_THAT(testing::UserErrorOf([&] {
                Check(QuadraticSpec(birder + "[check]\nconfidence = 1.5\n[[assert]]\nassertion "
                                             "= \"ef-norm\"\n"),
                      dir);
              }),
              HasSubstr("confidence"));
  // A typo in an [[assert]] table is reported before anything runs (no results are written).
  EXPECT_THAT(testing::UserErrorOf([&] {
                Check(QuadraticSpec(birder + "[[assert]]\nassertion = \"q-unbiased\"\n"
                                             "tolerence = 1\n"),
                      dir);
              }),
              HasSubstr("unknown key 'tolerence' (did you mean 'tolerance'?)"));
  EXPECT_THAT(testing::UserErrorOf([&] {
                Check(QuadraticSpec(birder + "[[assert]]\nassertion = \"birder-theorem1\"\n"
                                             "bound = \"as-printed\"\n"),
                      dir);
              }),
              HasSubstr("bound must be one of"));
  EXPECT_FALSE(std::filesystem::exists(dir / "out"));
}

// An assertion that finds nothing to judge says why, and its own keys are not mistaken for typos.
TEST(Check, InconclusiveVerdictsSayWhyAndKeepTheirKeys) {
  testing::TempDir dir;
  const CheckReport report = Check(QuadraticSpec(R"(
[[optimizer]]
name = "birder"
schedule = { name = "constant", lr = 0.01 }

[[assert]]
assertion = "birder-theorem1"
bound = "rederived"
expect = "inconclusive"
)",
                                                 20),
                                   dir);
  ASSERT_EQ(report.rows.size(), 1u);
  EXPECT_EQ(report.mismatches(), 0);
  EXPECT_THAT(report.rows[0].verdict.detail, HasSubstr("alpha_t = c / sqrt(t)"));
}

// The command's exit code: 0 when every verdict is the expected one, 1 when one is not, 2 for
// a user error.
TEST(Check, ExitCodeSaysWhetherEveryVerdictWasExpected) {
  testing::TempDir dir;
  const std::string base = QuadraticSpec(R"(
[[optimizer]]
name = "birder"

[[assert]]
assertion = "birder-lemma2"
)",
                                         20);
  testing::WriteFile(dir / "ok.toml", base);
  testing::WriteFile(dir / "wrong.toml", base + "expect = \"violated\"\n");
  const auto ok =
      testing::RunLemmalab({"check", (dir / "ok.toml").string(), "--out", (dir / "a").string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("1 of 1 verdicts as expected"));
  const auto wrong =
      testing::RunLemmalab({"check", (dir / "wrong.toml").string(), "--out", (dir / "b").string()});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_THAT(wrong.out, HasSubstr("NO (violated)"));
  const auto missing = testing::RunLemmalab(
      {"check", (dir / "ok.toml").string(), "--from", (dir / "nowhere").string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("no results for seed 7 with 4 workers"));
}

// Runs ef-sgd (error feedback, no server compression) with `maker` on a quadratic for 30 steps
// under `probe`, and returns what it recorded.
RunEvidence ProbeCompressor(const CompressorMaker<double>& maker,
                            std::unique_ptr<Probe<double>> (*make_probe)(const ProbeContext&),
                            std::string probe_name) {
  QuadraticOptions q;
  q.spectrum.dimension = 64;
  q.noise.sigma = 0.1;
  const auto problem = MakeQuadratic<double>(BuildQuadraticModel(q, 4, 3));
  const OptimizerContext context{64, 4};
  ExchangeConfig<double> exchange{maker, FeedbackKind::kClassic, nullptr, FeedbackKind::kNone};
  exchange.server_compressor = [](const CompressorShape&) { return MakeIdentity<double>(); };
  auto optimizer = MakeEfSgd<double>(exchange, context);
  Cluster<double> cluster(*problem, *optimizer);
  RunEvidence run;
  run.label = "planted";
  run.dimension = 64;
  run.status = "completed";
  run.hyperparameters.Set("compressor.name", std::string(maker(CompressorShape::Flat(64))->name()));
  testing::EvidenceSink sink;
  sink.run = &run;
  sink.probe = probe_name;
  auto probe = make_probe({64, 4, 11});
  EXPECT_TRUE(probe->AppliesTo(*optimizer));
  Eigen::VectorXd x = problem->InitialPoint();
  probe->Attach(*optimizer, x);
  for (std::int64_t t = 1; t <= 30; ++t) {
    cluster.Step({t, 0.1, 3}, x);
    sink.step = t;
    probe->Observe({t, 0.1, x, cluster.gradients(), *problem}, *optimizer, sink);
  }
  return run;
}

using testing::Judge;

TEST(CompressorChecks, CompressorThatBreaksItsDeclaredQIsFlagged) {
  const RunEvidence honest =
      ProbeCompressor([](const CompressorShape&) { return MakeTopK<double>(64, 8); },
                      &MakeDeviationProbe<double>, "q-deviate");
  // Top-k's own declared q, sqrt(1 - k/d), holds on every call.
  EXPECT_EQ(Judge("q-deviate", honest).kind, VerdictKind::kHolds);
  // Top-k with k = 8 of 64 declaring q = 0.5: on the quadratic's gradients it removes far more
  // than half the norm.
  const RunEvidence lying = ProbeCompressor(
      [](const CompressorShape&) {
        return std::make_unique<testing::Overclaiming>(MakeTopK<double>(64, 8), 0.5, false);
      },
      &MakeDeviationProbe<double>, "q-deviate");
  const Verdict v = Judge("q-deviate", lying);
  EXPECT_EQ(v.kind, VerdictKind::kViolated);
  EXPECT_EQ(v.worst_step, 1);
  EXPECT_GT(v.measured_value, 1.0);  // ||C(u) - u|| / (q ||u||) with the declared q = 0.5
  EXPECT_THAT(v.bound, HasSubstr("worker 0 0.5"));
}

TEST(CompressorChecks, BiasedQuantizerIsFlaggedAndBirdersIsNot) {
  const RunEvidence fair = ProbeCompressor(
      [](const CompressorShape& shape) {
        return MakeStochasticBinary<double>(QuantizerDomain::kClip, shape.dimension);
      },
      &MakeUnbiasednessProbe<double>, "q-unbiased");
  EXPECT_EQ(Judge("q-unbiased", fair, "coordinates = \"inside\"").kind, VerdictKind::kHolds);
  const Verdict variance = Judge("q-variance", fair);
  EXPECT_EQ(variance.kind, VerdictKind::kHolds) << variance.measured;
  // The planted fault: the quantizer draws +1 with probability p + 0.05.
  const RunEvidence leaning = ProbeCompressor(
      [](const CompressorShape& shape) {
        return std::make_unique<testing::LeaningBinary>(shape.dimension);
      },
      &MakeUnbiasednessProbe<double>, "q-unbiased");
  const Verdict v = Judge("q-unbiased", leaning, "coordinates = \"inside\"");
  EXPECT_EQ(v.kind, VerdictKind::kViolated);
  EXPECT_GT(v.measured_value, 10.0);
}

// Hand-built series: every branch of the generic assertions.
RunEvidence CurveRun(double p, std::uint64_t seed, int steps = 400, int workers = 4) {
  RunEvidence run;
  run.label = "sgd";
  run.status = "completed";
  run.steps_done = steps;
  run.seed = seed;
  run.workers = workers;
  Series& gsq = run.metrics["grad_sq_norm"];
  PhiloxStream noise({seed, Purpose::kProbe, 0, 0});
  // Values whose running mean (1/T) sum_{t <= T} is 3 T^-p / sqrt(n) exactly, times a jitter
  // of +-10%: the paper's t = step + 1.
  for (int step = 0; step <= steps; ++step) {
    const double t = step + 1.0;
    const double jitter = 1 + 0.2 * (noise() / 4294967296.0 - 0.5);
    const double value = 3.0 * (std::pow(t, 1 - p) - std::pow(t - 1, 1 - p)) / std::sqrt(workers);
    gsq.Record({step, kRunWide, value * jitter});
  }
  return run;
}

TEST(RateChecks, FittedExponentIsComparedWithTheTheorems) {
  std::vector<RunEvidence> half, quarter;
  for (std::uint64_t s = 1; s <= 4; ++s) {
    half.push_back(CurveRun(0.5, s));
    quarter.push_back(CurveRun(0.25, s));
  }
  const Verdict holds = Judge("rate", half, "offset = false\ncompare = \"equal\"");
  EXPECT_EQ(holds.kind, VerdictKind::kHolds) << holds.measured;
  EXPECT_NEAR(holds.measured_value, 0.5, 0.05);
  // Negative control: a curve decaying like T^-1/4 is slower than the theorem's T^-1/2.
  const Verdict slow = Judge("rate", quarter, "offset = false");
  EXPECT_EQ(slow.kind, VerdictKind::kViolated) << slow.measured;
  // One seed gives no interval.
  EXPECT_EQ(Judge("rate", std::span(half).first(1), "offset = false").kind,
            VerdictKind::kInconclusive);
}

// A run that stalls (the audit's majority-vote signSGD: ||grad f||^2 about 1.3 for ever) once
// passed `rate`, the offset c absorbing the level and a T^-p fitted to the transient. The values'
// own decay over the tail is judged now: a quantity that does not go to zero is violated.
TEST(RateChecks, StalledRunDoesNotPass) {
  std::vector<RunEvidence> stalled;
  for (std::uint64_t s = 1; s <= 4; ++s) {
    RunEvidence run = CurveRun(0.5, s, 1000);
    for (Series::Point& p : run.metrics["grad_sq_norm"].EditPoints()) p.value += 1.3;
    stalled.push_back(std::move(run));
  }
  const Verdict v = Judge("rate", stalled);
  EXPECT_EQ(v.kind, VerdictKind::kViolated) << v.measured << " | " << v.detail;
  EXPECT_THAT(v.detail, HasSubstr("more slowly than T^-0.45 (or not at all)"));
}

TEST(RateChecks, SpeedupFitsTheDependenceOnWorkers) {
  std::vector<RunEvidence> runs;
  for (const int n : {1, 2, 4, 8}) {
    for (std::uint64_t s = 1; s <= 3; ++s) runs.push_back(CurveRun(0.5, s, 400, n));
  }
  const Verdict v = Judge("linear-speedup", runs, "offset = false\ncompare = \"equal\"");
  EXPECT_EQ(v.kind, VerdictKind::kHolds) << v.measured;  // the curves scale like n^-1/2
  EXPECT_NEAR(v.measured_value, 0.5, 0.05);
  EXPECT_EQ(Judge("linear-speedup", runs, "offset = false\ncompare = \"equal\"\nexponent = 1").kind,
            VerdictKind::kViolated);
}

TEST(EndPointChecks, OptimalityGapAndReference) {
  RunEvidence a;
  a.label = "signsgd";
  a.status = "completed";
  a.metrics["optimality_gap"].EditPoints() = {{0, kRunWide, 5.0}, {100, kRunWide, 0.3}};
  a.metrics["train_loss"].EditPoints() = {{100, kRunWide, 1.3}};
  RunEvidence b = a;
  b.label = "ef-signsgd";
  b.metrics["optimality_gap"].EditPoints().back().value = 1e-5;
  b.metrics["train_loss"].EditPoints().back().value = 1.00001;
  EXPECT_EQ(Judge("optimality-gap", a, "tolerance = 1e-3").kind, VerdictKind::kViolated);
  EXPECT_EQ(Judge("optimality-gap", b, "tolerance = 1e-3").kind, VerdictKind::kHolds);
  RunEvidence c = b;
  c.label = "ef-signsgd-2";
  c.metrics["train_loss"].EditPoints().back().value = 1.05;
  const std::vector<RunEvidence> both = {a, b, c};
  const auto tracks = [&](const RunEvidence& run) {
    const auto options = ParseOptionTable("reference = \"ef-signsgd\"\ntolerance = 0.1", "x");
    return JudgeAssertion("tracks-reference", *options, {std::span(&run, 1), both, 0.99}).kind;
  };
  EXPECT_EQ(tracks(both[0]), VerdictKind::kViolated);
  EXPECT_EQ(tracks(both[2]), VerdictKind::kHolds);
  // The reference against itself is no evidence of anything.
  EXPECT_EQ(tracks(both[1]), VerdictKind::kInconclusive);
}

TEST(Statistics, BatchMeansStandardError) {
  // 10 batches of 2: batch means 0.5, 2.5, ..., 18.5 (mean 9.5, sample variance 36.67), so the
  // standard error is sqrt(36.67 / 10) = 1.915 with 9 degrees of freedom.
  std::vector<double> values(20);
  for (int k = 0; k < 20; ++k) values[static_cast<std::size_t>(k)] = k;
  const MeanEstimate e = BatchMeans(values);
  EXPECT_DOUBLE_EQ(e.mean, 9.5);
  EXPECT_NEAR(e.standard_error, std::sqrt(110.0 / 3 / 10), 1e-12);
  EXPECT_EQ(e.dof, 9);
  // Fewer than two values per batch: no interval.
  EXPECT_TRUE(std::isinf(BatchMeans(std::span(values).first(19)).standard_error));
}

TEST(BirderChecks, ErrorNormAndTheoremPreconditions) {
  RunEvidence run;
  run.label = "birder";
  run.optimizer = "birder";
  run.status = "completed";
  run.dimension = 10;
  run.hyperparameters.Set("compressor.name", "stochastic-binary");
  Series& sq = run.probes["ef-norm/worker_sq_norm"];
  Series& outside = run.probes["q-domain/worker_fraction"];
  for (int t = 1; t <= 200; ++t) {
    sq.Record({t, 0, 5.0 + (t % 3)});  // mean 0.6 d
    outside.Record({t, 0, 0.0});
  }
  EXPECT_EQ(Judge("ef-norm", run).kind, VerdictKind::kHolds);
  // Lemma 1 speaks about inputs of Q inside [-1, 1]: one outside makes the mean no evidence.
  RunEvidence escaped = run;
  escaped.probes["q-domain/worker_fraction"].EditPoints()[40].value = 0.25;
  const Verdict outside_domain = Judge("ef-norm", escaped);
  EXPECT_EQ(outside_domain.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(outside_domain.detail, HasSubstr("Q's inputs lie in [-1, 1]"));
  EXPECT_EQ(outside_domain.premises[2].step, 41);
  // Another compressor (QSGD in Birder): Lemma 1 is not about it.
  RunEvidence qsgd = run;
  qsgd.hyperparameters.Set("compressor.name", "qsgd");
  EXPECT_EQ(Judge("ef-norm", qsgd).kind, VerdictKind::kInconclusive);
  // A series that keeps growing has no mean to bound (finding 1: a diverging run whose batch-means
  // interval once said "holds"): inconclusive, with the drift named.
  RunEvidence growing = run;
  for (auto& p : growing.probes["ef-norm/worker_sq_norm"].EditPoints()) p.value = 1e-3 * p.step;
  const Verdict drift = Judge("ef-norm", growing);
  EXPECT_EQ(drift.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(drift.detail, HasSubstr("is stationary"));
  for (auto& p : sq.EditPoints()) p.value += 8.0;  // mean 1.4 d: Lemma 1 broken
  const Verdict broken = Judge("ef-norm", run);
  EXPECT_EQ(broken.kind, VerdictKind::kViolated);
  EXPECT_NEAR(broken.measured_value, 1.4, 0.01);
  // Too few values to judge a mean, or a run that diverged: inconclusive, not "holds".
  RunEvidence few = run;
  few.probes["ef-norm/worker_sq_norm"].EditPoints().resize(19);
  EXPECT_EQ(Judge("ef-norm", few).kind, VerdictKind::kInconclusive);
  RunEvidence diverged = run;
  diverged.status = "diverged at step 200: the parameters are not finite";
  EXPECT_EQ(Judge("ef-norm", diverged).kind, VerdictKind::kInconclusive);
  // Theorem 1 assumes alpha_t = c / sqrt(t): a constant rate is inconclusive, not a verdict.
  run.steps_done = 2;
  run.metrics["grad_sq_norm"].EditPoints() = {{0, kRunWide, 1}, {1, kRunWide, 1}, {2, kRunWide, 1}};
  run.metrics["lr"].EditPoints() = {{1, kRunWide, 0.1}, {2, kRunWide, 0.1}};
  const Verdict theorem = Judge("birder-theorem1", run);
  EXPECT_EQ(theorem.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(theorem.detail, HasSubstr("c / sqrt(t)"));
}

// 1-bit Adam's Theorem 1 from hand-built series: the bound is exactly OneBitAdamTheorem1 at the
// run's constants, a left-hand side 1000 times larger is violated, a varying rate inconclusive.
TEST(OneBitTheoremCheck, BoundFromTheRunsConstants) {
  RunEvidence run;
  run.label = "onebit-adam";
  run.optimizer = "onebit-adam";
  run.status = "completed";
  run.steps_done = 62;
  run.workers = 2;
  run.hyperparameters.Set("warmup_steps", std::int64_t{2});
  run.hyperparameters.Set("beta1", 0.9);
  run.hyperparameters.Set("eps", 1e-8);
  run.hyperparameters.Set("worker_feedback", "classic");
  run.hyperparameters.Set("server_feedback", "classic");
  run.constants = {{"L", 1.0, Certainty::kExact, ""},
                   {"sigma", 0.1, Certainty::kExact, ""},
                   {"f_star", 0.0, Certainty::kExact, ""}};
  OneBitAdamConstants k;
  k.lipschitz = 1;
  k.sigma = 0.1;
  k.eps = 0.1;
  k.beta = 0.9;
  k.n = 2;
  k.denominator_min = 0.5 + 1e-8;  // eta outside the root (the default)
  k.denominator_max = 1.0 + 1e-8;
  k.f_gap = 2;
  k.gamma = 0.01;
  const OneBitAdamTheorem1Result expected = OneBitAdamTheorem1(k, 60);
  const double bound = expected.euclidean_mean_bound_rederived;
  // ||grad f(x_Tw)||^2 = 2 B at the start of the compression phase and B / 100 after: the mean
  // is below the bound B, which is itself below the start (a bound above what a run standing
  // still would show is vacuous).
  for (int s = 0; s <= 62; ++s) {
    run.metrics["grad_sq_norm"].Record({s, kRunWide, s == 2 ? 2 * bound : bound / 100});
    run.metrics["train_loss"].Record({s, kRunWide, 2.0});
    if (s > 0) run.metrics["lr"].Record({s, kRunWide, 0.01});
    if (s > 2) run.probes["onebit-error/combined_norm"].Record({s, kRunWide, 0.1});
  }
  run.probes["onebit-error/frozen_sqrt_min"].EditPoints() = {{3, kRunWide, 0.5}};
  run.probes["onebit-error/frozen_sqrt_max"].EditPoints() = {{3, kRunWide, 1.0}};
  Verdict v = Judge("onebit-theorem1", run);
  EXPECT_EQ(v.kind, VerdictKind::kHolds) << v.detail;
  EXPECT_NEAR(v.measured_value, (2 * bound + 60 * bound / 100) / 61, 1e-12 * bound);  // 2..62
  // The proof's bound is the verdict's; the statement as printed is shown beside it.
  EXPECT_DOUBLE_EQ(v.bound_value, expected.euclidean_mean_bound_rederived);
  ASSERT_EQ(v.other_forms.size(), 1u);
  EXPECT_DOUBLE_EQ(v.other_forms[0].bound_value, expected.euclidean_mean_bound);
  EXPECT_EQ(Judge("onebit-theorem1", run, "bound = \"printed\"").bound_value,
            expected.euclidean_mean_bound);
  for (auto& p : run.metrics["grad_sq_norm"].EditPoints()) p.value = 1e3 * bound;
  EXPECT_EQ(Judge("onebit-theorem1", run).kind, VerdictKind::kViolated);
  run.metrics["lr"].EditPoints()[4].value = 0.02;
  const Verdict varying = Judge("onebit-theorem1", run);
  EXPECT_EQ(varying.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(varying.detail, HasSubstr("premise failed: a constant step size"));
}

// 1-bit LAMB's Theorem 1 reads the compression phase as 1-bit Adam's does, with the step
// gamma c_(t-1): the bound is OneBitLambTheorem1 at the run's constants and c's range, and its
// proof's premise is one c over the phase and the layers.
TEST(OneBitTheoremCheck, LambBoundAndItsConstantCoefficientPremise) {
  RunEvidence run;
  run.label = "onebit-lamb";
  run.optimizer = "onebit-lamb";
  run.status = "completed";
  run.steps_done = 62;
  run.workers = 2;
  run.hyperparameters =
      testing::MakeFromTomlHyperparameters("name = 'onebit-lamb'\nwarmup_steps = 2");
  run.constants = {{"L", 1.0, Certainty::kExact, ""},
                   {"sigma", 0.1, Certainty::kExact, ""},
                   {"f_star", 0.0, Certainty::kExact, ""}};
  OneBitLambConstants k;
  k.lipschitz = 1;
  k.sigma = 0.1;
  k.eps = 0.1;
  k.beta = 0.9;  // 1-bit LAMB's default beta1
  k.n = 2;
  k.denominator_min = 2 + 1e-6;  // sqrt(v_Tw) = 2 and 4, eta = 1e-6 outside the root
  k.denominator_max = 4 + 1e-6;
  k.f_gap = 2;
  k.gamma = 0.01;
  k.c_min = k.c_max = 0.5;
  const OneBitLambTheorem1Result expected = OneBitLambTheorem1(k, 60);
  const double bound = expected.euclidean_mean_bound_rederived;
  ASSERT_TRUE(std::isfinite(bound));
  for (int s = 0; s <= 62; ++s) {
    run.metrics["grad_sq_norm"].Record({s, kRunWide, s == 2 ? 2 * bound : bound / 100});
    run.metrics["train_loss"].Record({s, kRunWide, 2.0});
    if (s > 0) run.metrics["lr"].Record({s, kRunWide, 0.01});
    if (s > 2) run.probes["onebit-error/combined_norm"].Record({s, kRunWide, 0.1});
    if (s > 0) run.probes["lamb-ratios/c"].Record({s, 0, 0.5});
  }
  run.probes["onebit-error/frozen_sqrt_min"].EditPoints() = {{3, kRunWide, 2.0}};
  run.probes["onebit-error/frozen_sqrt_max"].EditPoints() = {{3, kRunWide, 4.0}};
  Verdict v = Judge("onebit-lamb-theorem1", run);
  EXPECT_EQ(v.kind, VerdictKind::kHolds) << v.detail;
  EXPECT_DOUBLE_EQ(v.bound_value, bound);
  ASSERT_EQ(v.other_forms.size(), 1u);
  EXPECT_DOUBLE_EQ(v.other_forms[0].bound_value, expected.euclidean_mean_bound);
  // Planted: the left side 1000 times the bound.
  RunEvidence over = run;
  for (auto& p : over.metrics["grad_sq_norm"].EditPoints()) p.value = 1e3 * bound;
  EXPECT_EQ(Judge("onebit-lamb-theorem1", over).kind, VerdictKind::kViolated);
  // c adapting in the compression phase (r moves it): the proof does not cover the run.
  RunEvidence adaptive = run;
  adaptive.probes["lamb-ratios/c"].EditPoints()[30].value = 0.55;
  const Verdict moved = Judge("onebit-lamb-theorem1", adaptive);
  EXPECT_EQ(moved.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(moved.detail, HasSubstr("premise failed: one scaling coefficient c"));
}

}  // namespace
}  // namespace lemmalab
