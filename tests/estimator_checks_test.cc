// ef21-theorem1, marina-theorem21 and diana-nonconvex (theory/estimator_assertions.cc) on
// hand-built evidence with hand-computed bounds, each premise broken once (the planted faults
// the specs in runs/theory/ also show on real runs).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tests/theory_doubles.h"

namespace lemmalab {
namespace {

using ::testing::HasSubstr;
using testing::Judge;

// A completed fp64 run of `optimizer` on n = 4 workers for T = 10 steps with L = 1, f* = 0,
// sigma = 0 (exact), f(x^0) = 5, a constant lr, ||grad f(x^t)||^2 = 8 at t = 0 then 0.5, and a
// compressor whose every call has ||C(u) - u||^2 / ||u||^2 = ratio_sq.
RunEvidence HandRun(std::string optimizer, double lr, double ratio_sq, bool deterministic) {
  RunEvidence run;
  run.label = optimizer;
  run.optimizer = optimizer;
  run.status = "completed";
  run.steps_done = 10;
  run.workers = 4;
  run.dimension = 20;
  run.precision = Precision::kFp64;
  run.constants = {{"L", 1.0, Certainty::kExact, "by hand"},
                   {"f_star", 0.0, Certainty::kExact, "by hand"},
                   {"sigma", 0.0, Certainty::kExact, "exact gradients"}};
  for (std::int64_t s = 0; s <= 10; ++s) {
    run.metrics["grad_sq_norm"].Record({s, kRunWide, s == 0 ? 8.0 : 0.5});
    run.metrics["train_loss"].Record({s, kRunWide, s == 0 ? 5.0 : 1.0});
    run.metrics["lr"].Record({s + 1, kRunWide, lr});
  }
  run.hyperparameters.Set("compressor.name", std::string("by-hand"));
  for (int i = 0; i < 4; ++i) {
    for (std::int64_t s = 1; s <= 10; ++s) {
      run.probes["q-deviate/ratio"].Record({s, i, std::sqrt(ratio_sq)});
    }
    // The running totals at the last step: 10 calls, each with ratio^2 = ratio_sq.
    run.probes["q-deviate/max_ratio"].Record({10, i, std::sqrt(ratio_sq)});
    run.probes["q-deviate/calls"].Record({10, i, 10.0});
    run.probes["q-deviate/sq_ratio_sum"].Record({10, i, 10 * ratio_sq});
    run.probes["q-deviate/sq_ratio_sq_sum"].Record({10, i, 10 * ratio_sq * ratio_sq});
    run.probes["q-deviate/deterministic"].Record({1, i, deterministic ? 1.0 : 0.0});
    run.probes["q-deviate/correlated_senders"].Record({1, i, 0.0});
    // G^0 = mean_i ||g_i^0 - grad f_i(x^0)||^2 = (1 + 2 + 3 + 4) / 4 = 2.5; H^0 = mean ||g_i||^2
    // = 6.
    run.probes["shift-error/sq_error"].Record({1, i, i + 1.0});
    run.probes["shift-error/gradient_sq"].Record({1, i, 6.0});
  }
  return run;
}

// Every premise's name and detail, for the reason a verdict is inconclusive.
std::string Premises(const Verdict& v) {
  std::string text;
  for (const Premise& p : v.premises) text += p.name + ": " + p.detail + "\n";
  return text;
}

// Every worker's compressor declares `name` (alpha or omega) = `value` (probe q-deviate).
void Declare(RunEvidence& run, const std::string& name, double value) {
  for (int i = 0; i < 4; ++i) {
    run.probes["q-deviate/declared_" + name].Record({1, i, value});
  }
}

// `run` with every step's lr set to `lr`.
RunEvidence WithStepSize(RunEvidence run, double lr) {
  for (auto& p : run.metrics["lr"].EditPoints()) p.value = lr;
  return run;
}

// The left side: (8 + 9 * 0.5) / 10 = 1.25.
constexpr double kMeasured = 1.25;

TEST(Ef21Theorem1, BoundAndStepRuleByHand) {
  // top-k with alpha = 0.36: sqrt(1 - alpha) = 0.8, theta = 0.2, beta = 0.64 / 0.2 = 3.2,
  // sqrt(beta / theta) = 4, rule gamma <= 1 / (1 + 4) = 0.2; the run's gamma is 0.19.
  RunEvidence run = HandRun("ef21", 0.19, 0.5, true);
  Declare(run, "alpha", 0.36);
  run.metrics["train_loss"].EditPoints().front().value = 10;
  const Verdict v = Judge("ef21-theorem1", run);
  // Bound: 2 * 10 / (0.19 * 10) + 2.5 / (0.2 * 10) = 10.53 + 1.25: met, but not below
  // ||grad f(x^0)||^2 = 8, so vacuous.
  EXPECT_NEAR(v.bound_value, 2 * 10 / (0.19 * 10) + 2.5 / (0.2 * 10), 1e-12);
  EXPECT_NEAR(v.measured_value, kMeasured, 1e-12);
  EXPECT_EQ(v.kind, VerdictKind::kVacuous) << v.detail;
  // f(x^0) = 1.5 gives 1.579 + 1.25 < 8: evidence.
  run.metrics["train_loss"].EditPoints().front().value = 1.5;
  const Verdict holds = Judge("ef21-theorem1", run);
  EXPECT_NEAR(holds.bound_value, 2 * 1.5 / (0.19 * 10) + 1.25, 1e-12);
  EXPECT_EQ(holds.kind, VerdictKind::kHolds) << holds.detail;
  // A deterministic run above its bound is violated, with no Markov slack: G^0 = 0 and
  // f(x^0) = 0.1 give 0.1053 < 1.25.
  run.metrics["train_loss"].EditPoints().front().value = 0.1;
  for (auto& p : run.probes["shift-error/sq_error"].EditPoints()) p.value = 0;
  const Verdict violated = Judge("ef21-theorem1", run);
  EXPECT_NEAR(violated.bound_value, 2 * 0.1 / (0.19 * 10), 1e-12);
  EXPECT_EQ(violated.kind, VerdictKind::kViolated);
  // From a stochastic compressor the step-1 G^0 is one draw; the bound takes its expectation's
  // bound (1 - alpha) (1/n) sum ||grad f_i(x^0)||^2 = 0.64 * 6 (init = compressed) ...
  for (auto& p : run.probes["q-deviate/deterministic"].EditPoints()) p.value = 0;
  const Verdict stochastic = Judge("ef21-theorem1", run);
  EXPECT_NEAR(stochastic.bound_value, 2 * 0.1 / (0.19 * 10) + 0.64 * 6 / (0.2 * 10), 1e-12);
  EXPECT_EQ(stochastic.kind, VerdictKind::kHolds);
  // ... or 0 when the first round sends full precision: then 1.25 is one draw above the bound
  // but below bound / (1 - 0.99): inconclusive.
  run.hyperparameters.Set("init", std::string("full"));
  const Verdict full = Judge("ef21-theorem1", run);
  EXPECT_NEAR(full.bound_value, 2 * 0.1 / (0.19 * 10), 1e-12);
  EXPECT_EQ(full.kind, VerdictKind::kInconclusive);
}

// A constant the compressor declares is proven for it; one the check claims must be shown by the
// run's calls: here their mean is 3 with standard error 0.32 (40 calls), so omega = 3.2 is not
// contradicted (the lower bound is 2.25) but not shown either (the upper bound is 3.75).
TEST(CompressorErrorWithin, AClaimMustBeShownADeclarationNeedOnlyNotBeContradicted) {
  RunEvidence run = HandRun("marina", 0.2, 3.0, false);
  run.hyperparameters.Set("p", 0.25);
  for (auto& p : run.probes["q-deviate/sq_ratio_sq_sum"].EditPoints()) p.value = 10 * (9 + 4);
  Declare(run, "omega", 3.2);
  const Verdict declared = Judge("marina-theorem21", run);
  EXPECT_THAT(Premises(declared), HasSubstr("consistent with it"));
  const Verdict claimed = Judge("marina-theorem21", run, "omega = 3.2");
  EXPECT_EQ(claimed.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(Premises(claimed), HasSubstr("does not show the claim"));
  // An estimated L (a power iteration's, of f) is not every f_i's: the rule cannot be judged.
  RunEvidence estimated = run;
  estimated.constants[0].certainty = Certainty::kEstimate;
  EXPECT_EQ(Judge("marina-theorem21", estimated).kind, VerdictKind::kInconclusive);
}

TEST(Ef21Theorem1, PlantedFaultsAreInconclusive) {
  RunEvidence run = HandRun("ef21", 0.19, 0.5, true);
  run.metrics["train_loss"].EditPoints().front().value = 1.5;
  Declare(run, "alpha", 0.36);
  ASSERT_EQ(Judge("ef21-theorem1", run).kind, VerdictKind::kHolds);
  // A step size above the rule: the bound alone would hold.
  const RunEvidence fast = WithStepSize(run, 0.25);
  const Verdict v = Judge("ef21-theorem1", fast);
  EXPECT_EQ(v.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(v.detail, HasSubstr("gamma <= 1 / (L + L~ sqrt(beta / theta))"));
  // An over-claimed alpha: every call has ||C(u) - u||^2 = 0.5 ||u||^2 > (1 - 0.9) ||u||^2.
  const Verdict claimed = Judge("ef21-theorem1", run, "alpha = 0.9");
  EXPECT_EQ(claimed.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(Premises(claimed), HasSubstr("contradicts the constant"));
  // Stochastic gradients: the theorem is for full ones.
  RunEvidence noisy = run;
  noisy.constants[2].value = 0.1;
  EXPECT_EQ(Judge("ef21-theorem1", noisy).kind, VerdictKind::kInconclusive);
  // The wrong algorithm.
  RunEvidence other = run;
  other.optimizer = "ef-sgd";
  EXPECT_EQ(Judge("ef21-theorem1", other).kind, VerdictKind::kInconclusive);
}

TEST(Ef21SgdmFullGradient, BoundAndStepRuleByHand) {
  // alpha = 0.36 (theta = 0.2, beta = 3.2) and eta = 0.5: K = 2 / 0.25 + 4 * 3.2 * 1.25 / 0.2 = 88,
  // rule gamma <= 1 / (1 + sqrt(88)) = 0.096332. At gamma = 0.09 the bound is
  // 2 * 1.5 / (0.09 * 10) + 2 * 2.5 / (0.2 * 10) = 3.333 + 2.5 < 8: evidence.
  RunEvidence run = HandRun("ef21-sgdm", 0.09, 0.5, true);
  run.metrics["train_loss"].EditPoints().front().value = 1.5;
  run.hyperparameters.Set("eta", 0.5);
  Declare(run, "alpha", 0.36);
  const Verdict v = Judge("ef21-sgdm-full-gradient", run);
  EXPECT_NEAR(v.bound_value, 2 * 1.5 / (0.09 * 10) + 2 * 2.5 / (0.2 * 10), 1e-12);
  EXPECT_EQ(v.kind, VerdictKind::kHolds) << v.detail;
  // Planted faults: gamma = 0.1 above the rule; EF21's Theorem 1 does not cover EF21-SGDM.
  const RunEvidence fast = WithStepSize(run, 0.1);
  const Verdict over = Judge("ef21-sgdm-full-gradient", fast);
  EXPECT_EQ(over.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(Premises(over), HasSubstr("0.0963"));
  EXPECT_EQ(Judge("ef21-theorem1", run).kind, VerdictKind::kInconclusive);
}

TEST(MarinaTheorem21, BoundStepRuleAndMarkov) {
  // omega = 3, p = 0.25, n = 4: sqrt((1 - p) omega / (p n)) = sqrt(2.25 / 1) = 1.5, rule
  // gamma <= 1 / 2.5 = 0.4. Bound 2 * 1.5 / (0.4 * 10) = 0.75 < 1.25: one draw above the bound
  // of an expectation but below bound / (1 - 0.99) = 75 is inconclusive.
  RunEvidence run = HandRun("marina", 0.4, 3.0, false);
  run.metrics["train_loss"].EditPoints().front().value = 1.5;
  run.hyperparameters.Set("p", 0.25);
  Declare(run, "omega", 3.0);
  const Verdict between = Judge("marina-theorem21", run);
  EXPECT_NEAR(between.bound_value, 0.75, 1e-12);
  EXPECT_EQ(between.kind, VerdictKind::kInconclusive) << between.detail;
  // f(x^0) = 5: bound 2.5 >= 1.25 holds, and is below 8.
  run.metrics["train_loss"].EditPoints().front().value = 5;
  const Verdict holds = Judge("marina-theorem21", run);
  EXPECT_NEAR(holds.bound_value, 2.5, 1e-12);
  EXPECT_EQ(holds.kind, VerdictKind::kHolds) << holds.detail;
  // Planted faults: over the rule; omega over-claimed (the calls' mean 3 is far above 1); the
  // workers' compressors correlated (PermK).
  const RunEvidence fast = WithStepSize(run, 0.5);
  EXPECT_EQ(Judge("marina-theorem21", fast).kind, VerdictKind::kInconclusive);
  const Verdict claimed = Judge("marina-theorem21", run, "omega = 1");
  EXPECT_EQ(claimed.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(Premises(claimed), HasSubstr("contradicts the constant"));
  RunEvidence correlated = run;
  for (auto& p : correlated.probes["q-deviate/correlated_senders"].EditPoints()) p.value = 1;
  EXPECT_THAT(Premises(Judge("marina-theorem21", correlated)), HasSubstr("shares its draws"));
}

TEST(DianaNonconvex, BoundAndRulesByHand) {
  // omega = 1, a = 0.5, n = 4, L = 1: rules gamma <= 1/2 and gamma <= 0.5 sqrt(4 / (4 * 2.5))
  // = 0.5 sqrt(0.4) = 0.316228. Bound (2 * 5 / gamma + 4 * gamma * 1 * 6 / (4 * 0.5)) / 10 at
  // gamma = 0.3: (33.3333 + 3.6) / 10 = 3.69333.
  RunEvidence run = HandRun("diana", 0.3, 1.0, false);
  run.hyperparameters.Set("a", 0.5);
  Declare(run, "omega", 1.0);
  const Verdict v = Judge("diana-nonconvex", run);
  EXPECT_NEAR(v.bound_value, (2 * 5 / 0.3 + 4 * 0.3 * 6 / 2) / 10, 1e-12);
  EXPECT_EQ(v.kind, VerdictKind::kHolds) << v.detail;
  // Planted faults: gamma above the second rule; a above 1 / (omega + 1).
  const RunEvidence fast = WithStepSize(run, 0.32);
  const Verdict over = Judge("diana-nonconvex", fast);
  EXPECT_EQ(over.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(Premises(over), HasSubstr("0.316228"));
  RunEvidence greedy = run;
  greedy.hyperparameters.Set("a", 0.6);
  const Verdict g = Judge("diana-nonconvex", greedy);
  EXPECT_EQ(g.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(g.detail, HasSubstr("a <= 1 / (omega + 1)"));
}

}  // namespace
}  // namespace lemmalab
