// The SPAMS probes (theory/spams_probes.h) against an independent recomputation of Algorithms 2
// and 3 on a real run, and the SPAMS assertions (theory/spams_assertions.cc) on known answers:
// hand-built evidence that meets a bound, a planted point that breaks it, and missing inputs.
#include "theory/spams_probes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "comm/cluster.h"
#include "engine/spec.h"
#include "problems/dataset.h"
#include "problems/sharding.h"
#include "problems/supervised.h"
#include "tests/optimizer_test_util.h"
#include "tests/test_util.h"
#include "tests/theory_doubles.h"
#include "theory/assertion.h"
#include "theory/assertions.h"
#include "theory/bounds.h"

namespace lemmalab {
namespace {

using ::testing::HasSubstr;

using testing::EvidenceSink;
using testing::Judge;

// Runs `optimizer` for `steps` steps of a 4-worker logistic regression (d = 7) with the probes
// attached, calling `check` after every step; returns the evidence the probes left.
struct ProbeRun {
  std::unique_ptr<Problem<double>> problem;
  RunEvidence evidence;
  double largest_gradient = 0;
};

ProbeRun MakeProblem(int workers) {
  const Dataset data = MakeSyntheticLogistic(120, 6, 3.0, 1);
  SupervisedOptions logreg;
  logreg.batch_size = 4;
  ProbeRun run;
  run.problem = MakeSupervisedProblem<double>(MakeLogisticModel<double>(6, true), data,
                                              IidShards(120, workers, 1), logreg);
  run.evidence.status = "completed";
  run.evidence.workers = workers;
  run.evidence.dimension = run.problem->dimension();
  run.evidence.precision = Precision::kFp64;
  return run;
}

// Top-k with ties to the lower index (spams.txt Alg. 3 line 5; docs/conventions.md §6).
Eigen::VectorXd TopK(const Eigen::VectorXd& u, int k) {
  std::vector<int> order(static_cast<std::size_t>(u.size()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return std::abs(u[a]) > std::abs(u[b]); });
  Eigen::VectorXd out = Eigen::VectorXd::Zero(u.size());
  for (int j = 0; j < k; ++j)
    out[order[static_cast<std::size_t>(j)]] = u[order[static_cast<std::size_t>(j)]];
  return out;
}

constexpr double kEps = 1e-3;
constexpr double kLr = 0.05;

// Algorithm 2 with Top-2 on d = 7 and 3 workers: the probes' series equal the box written out
// (errors of lines 7-8, v_hat of lines 12-15, D_t of Lemma 5 from v_hat_0 = 0), and the declared
// q is Top-k's sqrt(1 - k/d).
TEST(SpamsProbes, SeriesEqualIndependentRecomputationOfAlgorithm2) {
  const int n = 3;
  ProbeRun run = MakeProblem(n);
  const Eigen::Index d = run.problem->dimension();
  auto spams = testing::MakeFromToml(
      "name = 'dist-spams'\ncompressor = { name = 'top-k', k = 2 }\neps = 1e-3\nbeta1 = 0.5", d, n);
  Cluster<double> cluster(*run.problem, *spams);
  const ProbeContext context{d, n};
  auto ef = MakeSpamsErrorProbe<double>(context);
  auto vhat = MakeSpamsMaxVarianceProbe<double>(context);
  auto dprobe = MakeSpamsDenominatorStepProbe<double>(context);
  Eigen::VectorXd x = run.problem->InitialPoint();
  for (auto* p : {ef.get(), vhat.get(), dprobe.get()}) {
    ASSERT_TRUE(p->AppliesTo(*spams)) << p->name();
    p->Attach(*spams, x);
  }
  std::vector<Eigen::VectorXd> e(n, Eigen::VectorXd::Zero(d));
  Eigen::VectorXd m = Eigen::VectorXd::Zero(d), v = m, v_hat = m;
  Eigen::VectorXd inverse_previous = Eigen::VectorXd::Constant(d, 1 / std::sqrt(kEps));
  for (std::int64_t t = 1; t <= 15; ++t) {
    cluster.Step({t, kLr, 3}, x);
    const ProbeStep<double> step{t, kLr, x, cluster.gradients(), *run.problem};
    EvidenceSink sink;
    sink.run = &run.evidence;
    sink.step = t;
    for (auto* p : {ef.get(), vhat.get(), dprobe.get()}) {
      sink.probe = std::string(p->name());
      p->Observe(step, *spams, sink);
    }
    Eigen::VectorXd g_bar = Eigen::VectorXd::Zero(d);
    for (int i = 0; i < n; ++i) {
      const Eigen::VectorXd& g = cluster.gradients()[static_cast<std::size_t>(i)];
      run.largest_gradient = std::max(run.largest_gradient, g.norm());
      const Eigen::VectorXd g_tilde = TopK(g + e[i], 2);  // line 7
      // What probe q-deviate records (Assumption 1 on this run's own compressions).
      run.evidence.probes["q-deviate/ratio"].Record(
          {t, i, (g_tilde - (g + e[i])).norm() / (g + e[i]).norm()});
      e[i] += g - g_tilde;   // line 8
      g_bar += g_tilde / n;  // line 12
    }
    double largest = 0;
    for (const Eigen::VectorXd& g : cluster.gradients()) largest = std::max(largest, g.norm());
    run.evidence.metrics["max_grad_norm"].Record({t, kRunWide, largest});
    m = 0.5 * m + 0.5 * g_bar;
    v = 0.999 * v + 0.001 * g_bar.cwiseAbs2();
    v_hat = v_hat.cwiseMax(v);
    const Eigen::VectorXd inverse = (v_hat.array() + kEps).sqrt().inverse().matrix();
    const Eigen::VectorXd D = inverse_previous - inverse;
    inverse_previous = inverse;

    const Series& sq = run.evidence.probes["spams-ef/sq_norm"];
    for (int i = 0; i < n; ++i) {
      const Series::Point& p = sq.points()[static_cast<std::size_t>((t - 1) * n + i)];
      EXPECT_EQ(p.step, t);
      EXPECT_EQ(p.worker, i);
      EXPECT_NEAR(p.value, e[i].squaredNorm(), 1e-12 * (1 + e[i].squaredNorm())) << "t " << t;
    }
    const auto last = [&](const char* key) { return run.evidence.probes[key].points().back(); };
    EXPECT_NEAR(last("spams-vhat/max_vhat").value, v_hat.maxCoeff(), 1e-15);
    EXPECT_NEAR(last("spams-d/l1").value, D.lpNorm<1>(), 1e-9);
    EXPECT_NEAR(last("spams-d/sq").value, D.squaredNorm(), 1e-6);
    EXPECT_EQ(last("spams-d/l1").worker, kServer);
  }
  // q recorded once, for the workers' compressor (worker 0).
  const Series& q = run.evidence.probes["spams-ef/q"];
  ASSERT_EQ(q.points().size(), 1u);
  EXPECT_EQ(q.points()[0].worker, 0);
  EXPECT_DOUBLE_EQ(q.points()[0].value, std::sqrt(1 - 2.0 / 7.0));
  EXPECT_EQ(run.evidence.probes["spams-vhat/q"].points().size(), 1u);

  // The assertions on this run, with G the largest gradient norm it saw (as `lemmalab run`
  // records G): every lemma holds.
  run.evidence.optimizer = "dist-spams";
  run.evidence.steps_done = 15;
  run.evidence.constants.push_back({"G", run.largest_gradient, Certainty::kEstimate, "observed"});
  run.evidence.hyperparameters = testing::MakeFromTomlHyperparameters(
      "name = 'dist-spams'\ncompressor = { name = 'top-k', k = 2 }\neps = 1e-3\nbeta1 = 0.5");
  for (const char* lemma : {"spams-lemma2", "spams-lemma4", "spams-lemma5"}) {
    const Verdict verdict = Judge(lemma, run.evidence);
    EXPECT_EQ(verdict.kind, VerdictKind::kHolds) << verdict.measured << " | " << verdict.detail;
  }
  // Negative control (the audit's over-claimed q): Top-2 of 7 is q-deviate only with q^2 = 5/7;
  // a check told q = 0.2 (a bound 25 times smaller) is contradicted by the run's own
  // compressions, so Lemmas 2 and 4 and Theorem 1 are all inconclusive, naming the premise (the
  // bound alone would say Lemma 2 is violated).
  for (const char* lemma : {"spams-lemma2", "spams-lemma4"}) {
    const Verdict broken = Judge(lemma, run.evidence, "q = 0.2");
    EXPECT_EQ(broken.kind, VerdictKind::kInconclusive) << broken.measured;
    EXPECT_THAT(broken.detail, HasSubstr("premise failed: spams.txt Assumption 1"));
  }
  EXPECT_THAT(Judge("spams-lemma2", run.evidence, "q = 0.2").detail,
              HasSubstr("the bound alone would say violated"));
  // A G the run contradicts (Assumption 3 given as half the largest gradient it saw).
  const Verdict small_g =
      Judge("spams-lemma2", run.evidence, fmt::format("G = {}", run.largest_gradient / 2));
  EXPECT_EQ(small_g.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(small_g.detail, HasSubstr("premise failed: spams.txt Assumption 3"));
}

// The proof's moving averages (Lemmas 1 and 3) against their definitions on a real run of
// Algorithm 2: m'_t of the averaged uncompressed gradients and E_t of the averaged worker errors.
TEST(SpamsProbes, MomentsEqualTheProofsMovingAverages) {
  const int n = 3;
  ProbeRun run = MakeProblem(n);
  const Eigen::Index d = run.problem->dimension();
  const std::string toml =
      "name = 'dist-spams'\ncompressor = { name = 'top-k', k = 2 }\neps = 1e-3\nbeta1 = 0.5";
  auto spams = testing::MakeFromToml(toml, d, n);
  Cluster<double> cluster(*run.problem, *spams);
  ProbeContext context{d, n};
  context.hyperparameters = testing::MakeFromTomlHyperparameters(toml, d, n);
  auto moments = MakeSpamsMomentsProbe<double>(context);
  ASSERT_TRUE(moments->AppliesTo(*spams));
  Eigen::VectorXd x = run.problem->InitialPoint();
  std::vector<Eigen::VectorXd> e(n, Eigen::VectorXd::Zero(d));
  Eigen::VectorXd m_prime = Eigen::VectorXd::Zero(d), average = m_prime;
  for (std::int64_t t = 1; t <= 10; ++t) {
    cluster.Step({t, kLr, 3}, x);
    EvidenceSink sink;
    sink.run = &run.evidence;
    sink.probe = "spams-moments";
    sink.step = t;
    moments->Observe({t, kLr, x, cluster.gradients(), *run.problem}, *spams, sink);
    Eigen::VectorXd g_bar = Eigen::VectorXd::Zero(d), e_bar = g_bar;
    for (int i = 0; i < n; ++i) {
      const Eigen::VectorXd& g = cluster.gradients()[static_cast<std::size_t>(i)];
      e[i] += g - TopK(g + e[i], 2);  // Alg. 2 lines 7-8
      g_bar += g / n;
      e_bar += e[i] / n;
    }
    m_prime = 0.5 * m_prime + 0.5 * g_bar;
    average = 0.5 * average + 0.5 * e_bar;
    EXPECT_NEAR(run.evidence.probes["spams-moments/momentum_sq"].points().back().value,
                m_prime.squaredNorm(), 1e-12 * (1 + m_prime.squaredNorm()));
    EXPECT_NEAR(run.evidence.probes["spams-moments/error_average_sq"].points().back().value,
                average.squaredNorm(), 1e-12 * (1 + average.squaredNorm()));
  }
}

// Algorithm 3 (spams): the one error lives at the server, so it is recorded as kServer, with the
// server compressor's q; the compression record the probe asks for holds C's input and output.
TEST(SpamsProbes, SingleMachineRecordsTheServersErrorAndCompression) {
  ProbeRun run = MakeProblem(2);
  const Eigen::Index d = run.problem->dimension();
  auto spams =
      testing::MakeFromToml("name = 'spams'\ncompressor = { name = 'top-k', k = 3 }", d, 2);
  Cluster<double> cluster(*run.problem, *spams);
  auto ef = MakeSpamsErrorProbe<double>({d, 2});
  Eigen::VectorXd x = run.problem->InitialPoint();
  ef->Attach(*spams, x);
  ASSERT_NE(spams->LastCompression(kServer), nullptr);
  Eigen::VectorXd e = Eigen::VectorXd::Zero(d);
  for (std::int64_t t = 1; t <= 6; ++t) {
    cluster.Step({t, kLr, 3}, x);
    EvidenceSink sink;
    sink.run = &run.evidence;
    sink.probe = "spams-ef";
    sink.step = t;
    ef->Observe({t, kLr, x, cluster.gradients(), *run.problem}, *spams, sink);
    const Eigen::VectorXd g = (cluster.gradients()[0] + cluster.gradients()[1]) / 2;
    const Eigen::VectorXd g_tilde = TopK(g + e, 3);  // Alg. 3 lines 5-6 on the mean
    const CompressionRecord<double>& record = *spams->LastCompression(kServer);
    EXPECT_NEAR((record.input - (g + e)).norm(), 0, 1e-14);
    EXPECT_NEAR((record.output - g_tilde).norm(), 0, 1e-14);
    e += g - g_tilde;
    const Series::Point p = run.evidence.probes["spams-ef/sq_norm"].points().back();
    EXPECT_EQ(p.worker, kServer);
    EXPECT_NEAR(p.value, e.squaredNorm(), 1e-12);
  }
  const Series& q = run.evidence.probes["spams-ef/q"];
  ASSERT_EQ(q.points().size(), 1u);
  EXPECT_EQ(q.points()[0].worker, kServer);
  EXPECT_DOUBLE_EQ(q.points()[0].value, std::sqrt(1 - 3.0 / 7.0));
}

// Hand-built evidence for the assertions, with the premises met: SPAMS with classic error
// feedback, gradients of norm 1 and compressions that keep to q = 0.5.
RunEvidence Evidence(std::string optimizer = "dist-spams") {
  RunEvidence run;
  run.optimizer = optimizer;
  run.status = "completed";
  run.workers = 2;
  run.dimension = 10;
  run.steps_done = 20;
  run.precision = Precision::kFp64;
  run.hyperparameters.Set("name", optimizer);
  run.hyperparameters.Set(optimizer == "spams" ? "feedback" : "worker_feedback", "classic");
  run.hyperparameters.Set("eps", 1e-8);
  run.hyperparameters.Set("beta1", 0.9);
  for (std::int64_t t = 1; t <= 20; ++t) {
    run.metrics["max_grad_norm"].Record({t, kRunWide, 1.0});
    for (int i = 0; i < 2; ++i) run.probes["q-deviate/ratio"].Record({t, i, 0.0});
  }
  return run;
}

// Lemma 2 at q = 0.5, G = 2: the bound is 4 q^2 G^2 / (1-q^2)^2 = 4 * 0.25 * 4 / 0.5625 = 7.11.
TEST(SpamsLemma2Check, KnownAnswers) {
  RunEvidence run = Evidence();
  run.constants.push_back({"G", 2, Certainty::kBound, "by construction"});
  Series& sq = run.probes["spams-ef/sq_norm"];
  for (std::int64_t t = 1; t <= 20; ++t) {
    for (int i = 0; i < 2; ++i) sq.Record({t, i, 7.0 * (1 - 1.0 / static_cast<double>(t))});
  }
  run.probes["spams-ef/q"].Record({1, 0, 0.5});
  const double bound = SpamsLemma2ErrorBound(0.5, 2);
  EXPECT_NEAR(bound, 64.0 / 9.0, 1e-12);

  Verdict v = Judge("spams-lemma2", run);
  EXPECT_EQ(v.kind, VerdictKind::kHolds) << v.detail;
  EXPECT_DOUBLE_EQ(v.bound_value, bound);
  EXPECT_THAT(v.detail, HasSubstr("G = 2 (bound"));

  // One planted point over the bound, at step 7, worker 1.
  sq.EditPoints()[2 * 6 + 1].value = 7.2;
  v = Judge("spams-lemma2", run);
  EXPECT_EQ(v.kind, VerdictKind::kViolated);
  EXPECT_EQ(v.worst_step, 7);
  EXPECT_EQ(v.worst_worker, 1);
  EXPECT_DOUBLE_EQ(v.measured_value, 7.2);

  // A larger q given to the check makes the same point admissible.
  EXPECT_EQ(Judge("spams-lemma2", run, "q = 0.6").kind, VerdictKind::kHolds);

  // Missing G, q, or the series.
  RunEvidence no_g = run;
  no_g.constants.clear();
  v = Judge("spams-lemma2", no_g);
  EXPECT_EQ(v.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(v.detail, HasSubstr("G"));
  RunEvidence no_q = run;
  no_q.probes.erase("spams-ef/q");
  v = Judge("spams-lemma2", no_q);
  EXPECT_EQ(v.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(v.detail, HasSubstr("declares no q"));
  EXPECT_EQ(Judge("spams-lemma2", Evidence()).kind, VerdictKind::kInconclusive);
  // q >= 1 is refused before anything runs: Assumption 1 needs q < 1.
  EXPECT_THAT(testing::UserErrorOf([&] { Judge("spams-lemma2", run, "q = 1.0"); }),
              HasSubstr("q must be in [0, 1)"));
}

// Lemma 4 with the server's q (spams, Alg. 3) and an estimated G, which the detail names.
TEST(SpamsLemma4Check, KnownAnswers) {
  RunEvidence run = Evidence("spams");
  run.constants.push_back({"G", 1, Certainty::kEstimate, "largest stochastic gradient"});
  run.probes["spams-vhat/q"].Record({1, kServer, 0.0});
  run.probes["q-deviate/ratio"].EditPoints() = {{1, kServer, 0.0}};
  Series& vhat = run.probes["spams-vhat/max_vhat"];
  for (std::int64_t t = 1; t <= 20; ++t) vhat.Record({t, kServer, 3.9});
  Verdict v = Judge("spams-lemma4", run);  // q = 0: bound 4 G^2 = 4
  EXPECT_EQ(v.kind, VerdictKind::kHolds);
  EXPECT_DOUBLE_EQ(v.bound_value, 4);
  EXPECT_THAT(v.detail, HasSubstr("estimate"));
  vhat.EditPoints()[11].value = 4.01;
  v = Judge("spams-lemma4", run);
  EXPECT_EQ(v.kind, VerdictKind::kViolated);
  EXPECT_EQ(v.worst_step, 12);
  // Rounding slack: 1e-13 over the bound is within fp64's 1e-12, 1e-11 is not.
  vhat.EditPoints()[11].value = 4 * (1 + 1e-13);
  EXPECT_EQ(Judge("spams-lemma4", run).kind, VerdictKind::kHolds);
  vhat.EditPoints()[11].value = 4 * (1 + 1e-11);
  EXPECT_EQ(Judge("spams-lemma4", run).kind, VerdictKind::kViolated);
}

// Lemma 5 at d = 10, eps = 0.01: sum ||D_t||_1 <= 100, sum ||D_t||^2 <= 1000.
TEST(SpamsLemma5Check, KnownAnswers) {
  RunEvidence run = Evidence();
  run.hyperparameters.Set("eps", 0.01);
  Series& l1 = run.probes["spams-d/l1"];
  Series& sq = run.probes["spams-d/sq"];
  for (std::int64_t t = 1; t <= 20; ++t) {
    l1.Record({t, kServer, 4.9});  // sums to 98
    sq.Record({t, kServer, 1.0});
  }
  Verdict v = Judge("spams-lemma5", run);
  EXPECT_EQ(v.kind, VerdictKind::kHolds) << v.measured;
  EXPECT_EQ(v.worst_step, 20);
  // A planted jump at step 4 puts the running l1 sum over 100 from there on.
  l1.EditPoints()[3].value = 90;
  v = Judge("spams-lemma5", run);
  EXPECT_EQ(v.kind, VerdictKind::kViolated);
  EXPECT_EQ(v.worst_step, 4);
  EXPECT_DOUBLE_EQ(v.bound_value, 100);
  // Missing series; an optimizer whose update is not SPAMS's (its eps sits elsewhere).
  RunEvidence none = Evidence();
  EXPECT_EQ(Judge("spams-lemma5", none).kind, VerdictKind::kInconclusive);
  RunEvidence other = run;
  other.optimizer = "amsgrad";
  v = Judge("spams-lemma5", other);
  EXPECT_EQ(v.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(v.detail, HasSubstr("premise failed: the algorithm is spams or dist-spams"));
  // The run's resolved eps is the one judged: SPAMS's default 1e-8 gives d / sqrt(eps) = 1e5.
  RunEvidence defaults = run;
  defaults.hyperparameters.Set("eps", 1e-8);
  EXPECT_EQ(Judge("spams-lemma5", defaults).kind, VerdictKind::kHolds);
}

// Theorem 1 on hand-built evidence: constants known, a constant admissible step size. At T = 50
// the bound is ~300, far above G^2 = 4 (the most the left side can be): vacuous whatever the run
// does. Over T = 10^4 steps at eta = eta_max it falls to ~0.96, below ||grad f(theta_1)||^2 =
// 3.9, and meeting it is evidence.
struct TheoremCase {
  RunEvidence run = Evidence();
  SpamsConstants k;
};
TheoremCase TheoremEvidence(double grad_sq, std::int64_t steps = 10000) {
  TheoremCase c;
  RunEvidence& run = c.run;
  run.workers = 2;
  run.dimension = 4;
  run.steps_done = steps;
  run.constants = {{"L", 1, Certainty::kExact, ""},
                   {"G", 2, Certainty::kBound, ""},
                   {"sigma", 0.5, Certainty::kExact, ""},
                   {"sigma_g", 0, Certainty::kExact, ""},
                   {"f_star", 0.25, Certainty::kBound, "f where L-BFGS stopped"}};
  run.hyperparameters.Set("eps", 0.1);
  run.hyperparameters.Set("beta1", 0.0);
  run.probes["spams-ef/q"].Record({1, 0, 0.5});
  c.k = {0.5, 2, 1, 0.1, 0.0, 0, 2, 4, 0.5, 0, 1.0};
  c.k.eta = SpamsTheorem1(c.k, static_cast<double>(steps)).eta_max;
  for (std::int64_t t = 1; t <= steps; ++t) {
    run.metrics["lr"].Record({t, kRunWide, c.k.eta});
  }
  for (std::int64_t s = 0; s <= steps; ++s) {
    run.metrics["grad_sq_norm"].Record({s, kRunWide, s == 0 ? 3.9 : grad_sq});
    run.metrics["train_loss"].Record({s, kRunWide, 1.25});  // f(theta_1) - f* = 1
  }
  return c;
}

TEST(SpamsTheorem1Check, KnownAnswers) {
  TheoremCase c = TheoremEvidence(0.01);
  const SpamsTheorem1Result r = SpamsTheorem1(c.k, 10000);
  // beta1 = 0 and q = 0.5: C2 = 4q^2/(1-q^2)^2 = 1.78 > C1 = 2q/(1-q^2) = 1.33, so the proof's
  // bound (the verdict's) is above the printed one (shown beside it).
  const double bound = r.bound_proof;
  ASSERT_LT(bound, 3.9);
  ASSERT_GT(bound, r.bound);
  Verdict v = Judge("spams-theorem1", c.run);
  EXPECT_EQ(v.kind, VerdictKind::kHolds) << v.detail;
  EXPECT_NEAR(v.bound_value, bound, 1e-9 * bound);
  ASSERT_EQ(v.other_forms.size(), 1u);
  EXPECT_NEAR(v.other_forms[0].bound_value, r.bound, 1e-9 * r.bound);
  EXPECT_NEAR(v.measured_value, (3.9 + 9999 * 0.01) / 10000, 1e-12);
  EXPECT_THAT(v.detail, HasSubstr("f_star = 0.25 (bound"));
  // Printed as the verdict's form on request. The printed statement replaces C2 by C1 "because
  // C2 <= C1", which fails here (beta1 = 0, q = 0.5: C1 = 1.33 < C2 = 1.78): the beta and q of
  // this run break the printed form's premise, so judged by it the theorem is inconclusive.
  const Verdict as_printed = Judge("spams-theorem1", c.run, "bound = \"printed\"");
  EXPECT_NEAR(as_printed.bound_value, r.bound, 1e-9 * r.bound);
  EXPECT_EQ(as_printed.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(as_printed.detail, HasSubstr("premise failed: C2 <= C1"));
  EXPECT_EQ(v.other_forms[0].kind, VerdictKind::kInconclusive);
  EXPECT_THAT(v.other_forms[0].detail, HasSubstr("does not follow from the proof"));
  // At q = 0.1 (C1 = 0.20 > C2 = 0.04) the printed form follows from the proof.
  TheoremCase small_q = TheoremEvidence(0.01);
  small_q.run.probes["spams-ef/q"].EditPoints() = {{1, 0, 0.1}};
  for (const Premise& p : Judge("spams-theorem1", small_q.run, "bound = \"printed\"").premises) {
    EXPECT_FALSE(p.failed()) << p.name << ": " << p.detail;
  }

  // One run against an expectation: above bound / (1 - 0.99) rejects it (Markov), between the
  // bound and that level one draw cannot decide. Only with the true f*: with an upper bound on it
  // (f where L-BFGS stopped) the true bound may be larger.
  TheoremCase over = TheoremEvidence(0);
  for (Series::Point& p : over.run.metrics["grad_sq_norm"].EditPoints()) p.value = 101 * bound;
  v = Judge("spams-theorem1", over.run);
  EXPECT_EQ(v.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(v.detail, HasSubstr("premise failed: f* exact, or an upper bound on it where the "
                                  "bound is met; the bound alone would say violated"));
  over.run.constants.back().certainty = Certainty::kExact;
  EXPECT_EQ(Judge("spams-theorem1", over.run).kind, VerdictKind::kViolated);
  // An estimate that may lie below f* backs no verdict at all.
  TheoremCase estimated = TheoremEvidence(0.01);
  estimated.run.constants.back().certainty = Certainty::kEstimate;
  EXPECT_EQ(Judge("spams-theorem1", estimated.run).kind, VerdictKind::kInconclusive);
  for (Series::Point& p : over.run.metrics["grad_sq_norm"].EditPoints()) p.value = 99 * bound;
  EXPECT_EQ(Judge("spams-theorem1", over.run).kind, VerdictKind::kInconclusive);
  // A bound a run standing still at theta_1 would meet is no evidence: vacuous.
  TheoremCase still = TheoremEvidence(0.01);
  still.run.metrics["grad_sq_norm"].EditPoints().front().value = 0.5;
  v = Judge("spams-theorem1", still.run);
  EXPECT_EQ(v.kind, VerdictKind::kVacuous);
  EXPECT_THAT(v.detail, HasSubstr("vacuous: not below min(G^2, ||grad f(theta_1)||^2)"));
  // Over 50 steps the bound (~300) is above G^2: vacuous too.
  EXPECT_EQ(Judge("spams-theorem1", TheoremEvidence(0.01, 50).run).kind, VerdictKind::kVacuous);

  // Inconclusive: a missing constant, an inadmissible or varying step size, a missing iterate,
  // gradients above the G the bound uses.
  TheoremCase no_sigma = TheoremEvidence(0.01);
  no_sigma.run.constants.erase(no_sigma.run.constants.begin() + 2);
  v = Judge("spams-theorem1", no_sigma.run);
  EXPECT_EQ(v.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(v.detail, HasSubstr("sigma"));
  TheoremCase big = TheoremEvidence(0.01);
  for (Series::Point& p : big.run.metrics["lr"].EditPoints()) p.value = 4 * c.k.eta;
  v = Judge("spams-theorem1", big.run);
  EXPECT_EQ(v.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(v.detail, HasSubstr("premise failed: eta <= eta_max"));
  TheoremCase varying = TheoremEvidence(0.01);
  varying.run.metrics["lr"].EditPoints()[5].value /= 2;
  EXPECT_EQ(Judge("spams-theorem1", varying.run).kind, VerdictKind::kInconclusive);
  TheoremCase gap = TheoremEvidence(0.01);
  gap.run.metrics["grad_sq_norm"].EditPoints().erase(
      gap.run.metrics["grad_sq_norm"].EditPoints().begin() + 3);
  v = Judge("spams-theorem1", gap.run);
  EXPECT_EQ(v.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(v.detail, HasSubstr("eval_every"));
  // The audit's "iterates leave the ball where G holds": a stochastic gradient of norm 38.8
  // against the problem's G = 2 at step 17.
  TheoremCase escaped = TheoremEvidence(0.01);
  escaped.run.metrics["max_grad_norm"].EditPoints()[16].value = 38.8;
  v = Judge("spams-theorem1", escaped.run);
  EXPECT_EQ(v.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(v.detail, HasSubstr("premise failed: spams.txt Assumption 3"));
  EXPECT_THAT(v.premises[3].detail, HasSubstr("38.8 at step 17 exceeds G = 2"));
}

// Lemmas 1 and 3 on hand-built sums: sigma = 0.5, T = 20, sum ||grad f||^2 = 20 * 0.1 = 2. Lemma
// 1's bound is T sigma^2 + 2 = 7; Lemma 3's at q = 0.5, sigma_g = 0: 4q^2/(1-q^2)^2 = 16/9, times
// (T sigma^2 + 2) = 7 gives 12.44. One draw: at or below holds, above bound / 0.01 is violated.
TEST(SpamsLemma1And3Check, KnownAnswers) {
  RunEvidence run = Evidence();
  run.constants = {{"sigma", 0.5, Certainty::kExact, ""}, {"sigma_g", 0, Certainty::kExact, ""}};
  run.probes["spams-ef/q"].Record({1, 0, 0.5});
  for (std::int64_t t = 1; t <= 20; ++t) {
    run.metrics["grad_sq_norm"].Record({t - 1, kRunWide, 0.1});
    run.probes["spams-moments/momentum_sq"].Record({t, kRunWide, 0.3});       // sum 6
    run.probes["spams-moments/error_average_sq"].Record({t, kRunWide, 0.5});  // 10
  }
  Verdict v = Judge("spams-lemma1", run);
  EXPECT_EQ(v.kind, VerdictKind::kHolds) << v.detail;
  EXPECT_DOUBLE_EQ(v.bound_value, 7.0);
  EXPECT_DOUBLE_EQ(v.measured_value, 6.0);
  v = Judge("spams-lemma3", run);
  EXPECT_EQ(v.kind, VerdictKind::kHolds) << v.detail;
  EXPECT_NEAR(v.bound_value, 16.0 / 9.0 * 7.0, 1e-12);
  // Planted: a moving average 100x larger than the bound allows (Markov rejects at 0.99).
  RunEvidence planted = run;
  for (auto& p : planted.probes["spams-moments/momentum_sq"].EditPoints()) p.value = 40;  // sum 800
  EXPECT_EQ(Judge("spams-lemma1", planted).kind, VerdictKind::kViolated);
  for (auto& p : planted.probes["spams-moments/momentum_sq"].EditPoints()) p.value = 0.4;  // sum 8
  EXPECT_EQ(Judge("spams-lemma1", planted).kind, VerdictKind::kInconclusive);
  // Lemma 3 needs the q the run keeps to: a compression that moved u by 0.9 ||u|| against q = 0.5.
  RunEvidence loose = run;
  loose.probes["q-deviate/ratio"].EditPoints()[7].value = 0.9;
  v = Judge("spams-lemma3", loose);
  EXPECT_EQ(v.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(v.detail, HasSubstr("premise failed: spams.txt Assumption 1"));
  // Error feedback off: Lemma 3's recursion is not the run's.
  RunEvidence no_feedback = run;
  no_feedback.hyperparameters.Set("worker_feedback", "none");
  EXPECT_THAT(Judge("spams-lemma3", no_feedback).detail,
              HasSubstr("premise failed: worker_feedback = classic"));
}

}  // namespace
}  // namespace lemmalab
