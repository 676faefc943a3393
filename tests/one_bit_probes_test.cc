// The 1-bit Adam and 1-bit LAMB probes (theory/one_bit_probes.h) against independent
// recomputations of the algorithm boxes on real runs, and their assertions
// (theory/one_bit_assertions.cc) on known answers, with planted violations.
#include "theory/one_bit_probes.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "comm/cluster.h"
#include "problems/dataset.h"
#include "problems/sharding.h"
#include "problems/supervised.h"
#include "tests/optimizer_test_util.h"
#include "tests/theory_doubles.h"
#include "theory/assertion.h"
#include "theory/assertions.h"

namespace lemmalab {
namespace {

using ::testing::HasSubstr;

using testing::EvidenceSink;

std::unique_ptr<Problem<double>> Logistic(int workers) {
  const Dataset data = MakeSyntheticLogistic(120, 6, 3.0, 1);
  SupervisedOptions logreg;
  logreg.batch_size = 4;
  return MakeSupervisedProblem<double>(MakeLogisticModel<double>(6, true), data,
                                       IidShards(120, workers, 1), logreg);
}

// Scaled sign with one float32 scale, zero sent as +1 (docs/conventions.md §5).
Eigen::VectorXd ScaledSign(const Eigen::VectorXd& u) {
  const double scale = static_cast<float>(u.norm() / std::sqrt(static_cast<double>(u.size())));
  return u.unaryExpr([&](double x) { return x < 0 ? -scale : scale; });
}

// Observes every probe of `probes` after step t into `run`.
void ObserveAll(const std::vector<Probe<double>*>& probes, const ProbeStep<double>& step,
                const DistributedOptimizer<double>& optimizer, RunEvidence& run) {
  EvidenceSink sink;
  sink.run = &run;
  sink.step = step.t;
  for (Probe<double>* p : probes) {
    sink.probe = std::string(p->name());
    p->Observe(step, optimizer, sink);
  }
}

// onebit-adam with T_w = 3 and 2 workers: Adam on the mean gradient for 3 steps (Eq. 1, no bias
// correction), then Algorithm 1 lines 6-13 with scaled sign and EF on both sides. The probes'
// ||delta^(i)||, ||delta_bar|| and ||v||_1, ||v||_2 equal the box written out.
TEST(OneBitProbes, ErrorAndVarianceSeriesEqualIndependentRecomputation) {
  const int n = 2;
  const auto problem = Logistic(n);
  const Eigen::Index d = problem->dimension();
  auto adam = testing::MakeFromToml("name = 'onebit-adam'\nwarmup_steps = 3", d, n);
  Cluster<double> cluster(*problem, *adam);
  auto error = MakeOneBitErrorProbe<double>({d, n});
  auto variance = MakeVarianceNormProbe<double>({d, n});
  ASSERT_TRUE(error->AppliesTo(*adam));
  ASSERT_TRUE(variance->AppliesTo(*adam));
  RunEvidence run;
  Eigen::VectorXd x = problem->InitialPoint();
  Eigen::VectorXd m = Eigen::VectorXd::Zero(d), v = m, delta_bar = m;
  std::vector<Eigen::VectorXd> delta(n, Eigen::VectorXd::Zero(d));
  for (std::int64_t t = 1; t <= 14; ++t) {
    cluster.Step({t, 0.01, 5}, x);
    ObserveAll({error.get(), variance.get()}, {t, 0.01, x, cluster.gradients(), *problem}, *adam,
               run);
    const auto& g = cluster.gradients();
    if (t <= 3) {
      const Eigen::VectorXd g_bar = (g[0] + g[1]) / 2;
      m = 0.9 * m + 0.1 * g_bar;
      v = 0.999 * v + 0.001 * g_bar.cwiseAbs2();
    } else {
      Eigen::VectorXd mean = Eigen::VectorXd::Zero(d);
      for (int i = 0; i < n; ++i) {
        const Eigen::VectorXd u = 0.9 * m + 0.1 * g[static_cast<std::size_t>(i)] + delta[i];
        const Eigen::VectorXd m_hat = ScaledSign(u);  // line 7
        delta[i] = u - m_hat;
        mean += m_hat / n;
      }
      const Eigen::VectorXd w = mean + delta_bar;  // line 10
      m = ScaledSign(w);
      delta_bar = w - m;
    }
    const auto value = [&](const char* key, int worker) {
      const Series& s = run.probes[key];
      const auto it =
          std::find_if(s.points().rbegin(), s.points().rend(),
                       [&](const Series::Point& p) { return p.step == t && p.worker == worker; });
      EXPECT_NE(it, s.points().rend()) << key << " at step " << t;
      return it == s.points().rend() ? NAN : it->value;
    };
    for (int i = 0; i < n; ++i) {
      EXPECT_NEAR(value("onebit-error/worker_norm", i), delta[i].norm(),
                  1e-6 * (1 + delta[i].norm()))
          << "t " << t;
    }
    EXPECT_NEAR(value("onebit-error/server_norm", kServer), delta_bar.norm(),
                1e-6 * (1 + delta_bar.norm()));
    EXPECT_NEAR(value("variance-norm/l1", kServer), v.lpNorm<1>(), 1e-15);
    EXPECT_NEAR(value("variance-norm/l2", kServer), v.norm(), 1e-15);
    if (t <= 3) {
      EXPECT_EQ(value("onebit-error/worker_norm", 0), 0.0);  // no feedback in warmup
    }
  }
}

// onebit-lamb with T_w = 4 on a model with two layers (weight, bias): during warmup c_t^(l) is
// Eq. (1)'s clip(||x_{t-1}^(l)|| / ||u_t^(l)||, c_min, c_max) on the mean gradient; after it the
// recorded c_t^(l) is r_t^(l) times c_avg^(l), the beta3-average of the warmup's c (line 2, 20).
// The layer index is the `worker` field. The onebit-lamb-clips assertion holds on the run.
TEST(OneBitProbes, LambRatiosEqualIndependentRecomputation) {
  const int n = 2;
  const auto problem = Logistic(n);
  const Eigen::Index d = problem->dimension();
  OptimizerContext context{d, n, problem->Layers()};
  auto lamb = testing::MakeNamed("onebit-lamb", {{"warmup_steps", testing::Int(4)}}, context);
  Cluster<double> cluster(*problem, *lamb);
  RunEvidence run;
  run.optimizer = "onebit-lamb";
  run.status = "completed";
  run.precision = Precision::kFp64;
  run.hyperparameters =
      testing::MakeFromTomlHyperparameters("name = 'onebit-lamb'\nwarmup_steps = 4");
  auto ratios = MakeLambRatiosProbe<double>({d, n, 0, run.hyperparameters});
  ASSERT_TRUE(ratios->AppliesTo(*lamb));
  Eigen::VectorXd x = problem->InitialPoint();
  ratios->Attach(*lamb, x);
  Eigen::VectorXd m = Eigen::VectorXd::Zero(d), v = m;
  const std::vector<std::pair<Eigen::Index, Eigen::Index>> layers = {{0, 6}, {6, 1}};
  std::vector<double> c_avg(2, 0.0);
  const int steps = 12;
  for (std::int64_t t = 1; t <= steps; ++t) {
    const Eigen::VectorXd x_previous = x;
    cluster.Step({t, 0.05, 5}, x);
    ObserveAll({ratios.get()}, {t, 0.05, x, cluster.gradients(), *problem}, *lamb, run);
    const Series& c = run.probes["lamb-ratios/c"];
    ASSERT_EQ(c.points().size(), static_cast<std::size_t>(2 * t));
    if (t <= 4) {
      const Eigen::VectorXd g_bar = (cluster.gradients()[0] + cluster.gradients()[1]) / 2;
      m = 0.9 * m + 0.1 * g_bar;
      v = 0.999 * v + 0.001 * g_bar.cwiseAbs2();
      const Eigen::VectorXd u = (m.array() / (v.array().sqrt() + 1e-6)).matrix();
      for (int l = 0; l < 2; ++l) {
        const auto [begin, size] = layers[static_cast<std::size_t>(l)];
        const double x_norm = x_previous.segment(begin, size).norm();
        const double expected =
            x_norm == 0 ? 0.01 : std::clamp(x_norm / u.segment(begin, size).norm(), 0.01, 0.3);
        const Series::Point& p = c.points()[static_cast<std::size_t>(2 * (t - 1) + l)];
        EXPECT_EQ(p.worker, l);
        EXPECT_NEAR(p.value, expected, 1e-12) << "t " << t << " layer " << l;
        c_avg[static_cast<std::size_t>(l)] =
            0.9 * c_avg[static_cast<std::size_t>(l)] + 0.1 * expected;
      }
    } else {
      const Series& r = run.probes["lamb-ratios/r"];
      for (int l = 0; l < 2; ++l) {
        // r is recorded from the compression phase on (t > T_w = 4).
        const Series::Point& rp = r.points()[static_cast<std::size_t>(2 * (t - 5) + l)];
        const Series::Point& cp = c.points()[static_cast<std::size_t>(2 * (t - 1) + l)];
        EXPECT_EQ(rp.worker, l);
        EXPECT_EQ(rp.value, (*lamb->Observe(Quantity::kLayerRatio, kServer))[l]);
        EXPECT_NEAR(cp.value, rp.value * c_avg[static_cast<std::size_t>(l)], 1e-12);
      }
    }
  }
  run.steps_done = steps;
  const Verdict verdict = testing::Judge("onebit-lamb-clips", run);
  EXPECT_EQ(verdict.kind, VerdictKind::kHolds) << verdict.measured << " | " << verdict.detail;
}

// ---------------------------------------------------------------------------------------------
// The assertions on hand-built evidence.

RunEvidence Evidence(std::string optimizer, std::int64_t steps, std::int64_t warmup) {
  RunEvidence run;
  run.optimizer = std::move(optimizer);
  run.status = "completed";
  run.workers = 2;
  run.dimension = 7;
  run.steps_done = steps;
  run.precision = Precision::kFp64;
  // The options the run resolved, as `lemmalab run` stores them (the algorithm's defaults).
  run.hyperparameters = testing::MakeFromTomlHyperparameters(
      fmt::format("name = '{}'\nwarmup_steps = {}", run.optimizer, warmup));
  return run;
}

using testing::Judge;

// Errors of 2 workers and the server over 60 steps with T_w = 10.
RunEvidence ErrorEvidence(double (*worker1)(std::int64_t t)) {
  RunEvidence run = Evidence("onebit-adam", 60, 10);
  for (std::int64_t t = 1; t <= 60; ++t) {
    const double level = t <= 10 ? 0.0 : 1 + 0.1 * std::sin(static_cast<double>(t));
    run.probes["onebit-error/worker_norm"].Record({t, 0, level});
    run.probes["onebit-error/worker_norm"].Record({t, 1, t <= 10 ? 0.0 : worker1(t)});
    run.probes["onebit-error/server_norm"].Record({t, kServer, 0.5 * level});
  }
  return run;
}

TEST(OneBitErrorBoundedCheck, KnownAnswers) {
  // Hovering at a level: holds.
  Verdict v =
      Judge("onebit-error-bounded",
            ErrorEvidence([](std::int64_t t) { return 2 + std::cos(static_cast<double>(t)); }));
  EXPECT_EQ(v.kind, VerdictKind::kHolds) << v.measured;
  // A ramp from delta = 0 that levels off within the first half: holds (the maximum, not the
  // mean, of the first half).
  v = Judge("onebit-error-bounded", ErrorEvidence([](std::int64_t t) {
              return std::min(static_cast<double>(t - 10), 8.0);
            }));
  EXPECT_EQ(v.kind, VerdictKind::kHolds) << v.measured;
  // A planted growing error (worker 1's ||delta|| = t): the second half's max is 60, the
  // first's 35; flagged at the step of the largest value.
  v = Judge("onebit-error-bounded",
            ErrorEvidence([](std::int64_t t) { return static_cast<double>(t); }));
  EXPECT_EQ(v.kind, VerdictKind::kViolated);
  EXPECT_EQ(v.worst_step, 60);
  EXPECT_EQ(v.worst_worker, 1);
  EXPECT_NEAR(v.measured_value, 60.0 / 35.0, 1e-12);
  // sqrt growth (x1.41 from half to half here) is caught at the default 0.25, not at 0.5.
  RunEvidence sqrt_growth =
      ErrorEvidence([](std::int64_t t) { return std::sqrt(static_cast<double>(t - 10)); });
  EXPECT_EQ(Judge("onebit-error-bounded", sqrt_growth).kind, VerdictKind::kViolated);
  EXPECT_EQ(Judge("onebit-error-bounded", sqrt_growth, "tolerance = 0.5").kind,
            VerdictKind::kHolds);
  // Too few compression steps, a diverged run, no series.
  RunEvidence short_run = ErrorEvidence([](std::int64_t) { return 1.0; });
  short_run.hyperparameters.Set("warmup_steps", std::int64_t{45});
  v = Judge("onebit-error-bounded", short_run);
  EXPECT_EQ(v.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(v.detail, HasSubstr("min_steps"));
  RunEvidence diverged = ErrorEvidence([](std::int64_t) { return 1.0; });
  diverged.status = "diverged at step 60: NaN";
  EXPECT_EQ(Judge("onebit-error-bounded", diverged).kind, VerdictKind::kInconclusive);
  EXPECT_EQ(Judge("onebit-error-bounded", Evidence("onebit-adam", 60, 10)).kind,
            VerdictKind::kInconclusive);
}

// ||v_t||_1 = f(t) for t = 1..80 with T_w = 50 and beta2 = 0.9 (window 1/(1-beta2) = 10).
RunEvidence VarianceEvidence(double (*f)(double t), double beta2 = 0.9) {
  RunEvidence run = Evidence("onebit-adam", 80, 50);
  if (beta2 != 0) run.hyperparameters.Set("beta2", beta2);
  for (std::int64_t t = 1; t <= 80; ++t) {
    run.probes["variance-norm/l1"].Record({t, kServer, f(static_cast<double>(t))});
    run.probes["variance-norm/l2"].Record({t, kServer, f(static_cast<double>(t))});
  }
  return run;
}

TEST(VarianceStableCheck, KnownAnswers) {
  const auto saturating = [](double t) { return 1 - std::exp(-t / 5); };
  Verdict v = Judge("onebit-variance-stable", VarianceEvidence(saturating));
  EXPECT_EQ(v.kind, VerdictKind::kHolds) << v.measured;
  EXPECT_EQ(v.worst_step, 50);
  EXPECT_NEAR(v.measured_value, saturating(50) / saturating(40) - 1, 1e-12);
  // The first step whose change over 10 steps is within 0.04, found here by brute force.
  std::int64_t first = 11;
  while (std::abs(saturating(static_cast<double>(first)) /
                      saturating(static_cast<double>(first - 10)) -
                  1) > 0.04) {
    ++first;
  }
  EXPECT_THAT(v.detail, HasSubstr(fmt::format("(steps <= 50) within the tolerance: {} ", first)));
  // The rule the verdict applies is the two-sided one, and its bound says so.
  EXPECT_THAT(v.bound, HasSubstr("|r - 1| <= tolerance = 0.04 (two-sided"));

  // v still ramping up (v ~ t): 50 / 40 - 1 = 0.25 > 0.04 at T_w.
  v = Judge("onebit-variance-stable", VarianceEvidence([](double t) { return t; }));
  EXPECT_EQ(v.kind, VerdictKind::kViolated);
  EXPECT_EQ(v.worst_step, 50);
  EXPECT_NEAR(v.measured_value, 0.25, 1e-12);

  // The default beta2 = 0.999 asks for a 1000-step window; T_w = 50 fits 49, and says so.
  v = Judge("onebit-variance-stable", VarianceEvidence([](double t) { return t; }, 0));
  EXPECT_EQ(v.kind, VerdictKind::kViolated);
  EXPECT_THAT(v.detail, HasSubstr("does not fit"));
  EXPECT_NEAR(v.measured_value, 50.0 - 1, 1e-12);

  // The `window`, `at` and `tolerance` options: 40 / 30 - 1 = 0.33 over the paper's window.
  v = Judge("onebit-variance-stable", VarianceEvidence([](double t) { return t; }),
            "at = 40\ntolerance = 0.34");
  EXPECT_EQ(v.kind, VerdictKind::kHolds);
  EXPECT_EQ(v.worst_step, 40);
  EXPECT_THAT(v.measured, HasSubstr("at step 40 (the check's `at`)"));
  // Out of the claim's scope: a step after T_w compares the frozen v with itself (the audit's
  // "holds, 0"), and a window shorter than 1/(1-beta2) cannot show that v settled (50 / 45 - 1
  // = 0.11 on a v still growing) though it still shows that v moved.
  v = Judge("onebit-variance-stable", VarianceEvidence([](double t) { return t <= 50 ? t : 50; }),
            "at = 70");
  EXPECT_EQ(v.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(v.detail, HasSubstr("premise failed: the judged step lies where v is still updated"));
  v = Judge("onebit-variance-stable", VarianceEvidence([](double t) { return t; }),
            "window = 5\ntolerance = 0.12");
  EXPECT_EQ(v.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(v.detail, HasSubstr("shorter than the paper's horizon"));
  EXPECT_EQ(
      Judge("onebit-variance-stable", VarianceEvidence([](double t) { return t; }), "window = 5")
          .kind,
      VerdictKind::kViolated);

  // No warmup to judge (plain Adam without `at`), no series.
  RunEvidence adam = VarianceEvidence(saturating);
  adam.optimizer = "adam";
  adam.hyperparameters = testing::MakeFromTomlHyperparameters("name = 'adam'");
  v = Judge("onebit-variance-stable", adam);
  EXPECT_EQ(v.kind, VerdictKind::kInconclusive);
  EXPECT_THAT(v.detail, HasSubstr("`at`"));
  EXPECT_EQ(Judge("onebit-variance-stable", Evidence("onebit-adam", 80, 50)).kind,
            VerdictKind::kInconclusive);
}

// Two layers, T_w = 4, 10 steps, the default clips (c in [0.01, 0.3], r in [0.5, 4], r_threshold
// 0.1, beta3 0.9): the values of c and r, after `plant` (step, layer, c, r) changed what it
// wants, turned into the rule excesses by LambRules as the probe lamb-ratios records them.
using Plant = std::function<void(std::int64_t, int, double&, double&)>;
RunEvidence LambEvidence(const Plant& plant = {}, std::string optimizer = "onebit-lamb") {
  RunEvidence run = Evidence("onebit-lamb", 10, 4);
  if (optimizer == "lamb") {
    run.optimizer = "lamb";
    run.hyperparameters = testing::MakeFromTomlHyperparameters("name = 'lamb'");
  }
  LambRules rules(run.hyperparameters);
  rules.SetLayers(2);
  const std::vector<std::vector<double>> warmup_c = {{0.01, 0.1, 0.3, 0.2},
                                                     {0.05, 0.05, 0.06, 0.3}};
  const std::vector<double> ratios = {1.05, 1.1, 1.2, 1.3, 1.4, 1.5};
  for (std::int64_t t = 1; t <= 10; ++t) {
    for (int l = 0; l < 2; ++l) {
      const auto& warmup = warmup_c[static_cast<std::size_t>(l)];
      double c_avg = 0;
      for (const double value : warmup) c_avg = 0.9 * c_avg + 0.1 * value;
      double r = t <= 4 ? 1.0 : ratios[static_cast<std::size_t>(t - 5)];
      double c = t <= 4 ? warmup[static_cast<std::size_t>(t - 1)] : r * c_avg;
      if (optimizer == "lamb") c = warmup[static_cast<std::size_t>((t - 1) % 4)];
      if (plant) plant(t, l, c, r);
      run.probes["lamb-ratios/c"].Record({t, l, c});
      rules.Step(t, static_cast<std::size_t>(l), c,
                 optimizer == "lamb" ? std::nullopt : std::optional<double>(r),
                 [&](std::string_view rule, double excess) {
                   run.probes["lamb-ratios/" + std::string(rule)].Record({t, l, excess});
                 });
    }
  }
  return run;
}

TEST(OneBitLambClipsCheck, KnownAnswers) {
  Verdict v = Judge("onebit-lamb-clips", LambEvidence());
  EXPECT_EQ(v.kind, VerdictKind::kHolds) << v.detail;

  const auto planted = [](const char* what, std::int64_t step, int layer, double value) {
    return Judge("onebit-lamb-clips",
                 LambEvidence([=](std::int64_t t, int l, double& c, double& r) {
                   if (t != step || l != layer) return;
                   (std::string_view(what) == "c" ? c : r) = value;
                 }));
  };
  // c over c_max during warmup (step 3, layer 1): 0.31 is 1/30 above 0.3.
  v = planted("c", 3, 1, 0.31);
  EXPECT_EQ(v.kind, VerdictKind::kViolated);
  EXPECT_EQ(v.worst_step, 3);
  EXPECT_EQ(v.worst_worker, 1);
  EXPECT_NEAR(v.measured_value, 0.01 / 0.3, 1e-12);
  EXPECT_THAT(v.detail, HasSubstr("c in [c_min, c_max]"));
  // r jumping by more than r_threshold (1.2 -> 1.5 at step 7, with c following it).
  v = Judge("onebit-lamb-clips", LambEvidence([](std::int64_t t, int l, double& c, double& r) {
              if (t == 7 && l == 0) {
                c *= 1.5 / r;
                r = 1.5;
              }
            }));
  EXPECT_EQ(v.kind, VerdictKind::kViolated);
  EXPECT_EQ(v.worst_step, 7);
  EXPECT_THAT(v.detail, HasSubstr("r_threshold"));
  // c that is not r c_avg (step 8).
  v = planted("c", 8, 0, 0.2);
  EXPECT_EQ(v.kind, VerdictKind::kViolated);
  EXPECT_EQ(v.worst_step, 8);
  EXPECT_THAT(v.detail, HasSubstr("r c_avg"));
  // Plain LAMB: c only, every step is Eq. (1)'s and must lie in the clip; a planted c below
  // c_min at step 9 is flagged.
  EXPECT_EQ(Judge("onebit-lamb-clips", LambEvidence({}, "lamb")).kind, VerdictKind::kHolds);
  v = Judge("onebit-lamb-clips", LambEvidence(
                                     [](std::int64_t t, int l, double& c, double&) {
                                       if (t == 9 && l == 1) c = 0.005;
                                     },
                                     "lamb"));
  EXPECT_EQ(v.kind, VerdictKind::kViolated);
  EXPECT_EQ(v.worst_step, 9);
  // No series.
  EXPECT_EQ(Judge("onebit-lamb-clips", Evidence("onebit-lamb", 10, 4)).kind,
            VerdictKind::kInconclusive);
}

}  // namespace
}  // namespace lemmalab
