// Reference values: Ceres' f* against a long gradient-descent run, and power-iteration L against
// problems whose L is known.
#include "problems/reference.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>

#include "problems/quadratic.h"
#include "problems/supervised.h"
#include "tests/problem_checks.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

// The quickstart's problem, full batch: breast cancer standardized, l2 = 1e-3, 8 iid shards.
std::unique_ptr<Problem<double>> BreastCancerLogreg(double l2) {
  Dataset data;
  CsvTable table = ReadCsv(testing::SourceDir() / "data/breast_cancer.csv", "target");
  data.train = std::move(table.samples);
  StandardizeFeatures(data);
  SupervisedOptions o;
  o.batch_size = 0;
  o.l2 = l2;
  return MakeSupervisedProblem<double>(MakeLogisticModel<double>(30, true), data,
                                       IidShards(569, 8, 2023), o);
}

TEST(Reference, CeresOptimumAgreesWithALongGradientDescentRun) {
  const auto problem = BreastCancerLogreg(1e-3);
  const FullBatchMinimum minimum = MinimizeFullBatch(*problem, problem->InitialPoint());
  EXPECT_LT(minimum.grad_norm, 1e-7) << minimum.termination;

  // Gradient descent with step 1/L from the same start: f decreases monotonically to f*, at
  // rate (1 - mu/L) per step with mu = l2.
  const double L = FindConstant(problem->Constants(), "L")->value;
  Eigen::VectorXd x = problem->InitialPoint(), g;
  double f = 0;
  for (int step = 0; step < 60000; ++step) {
    f = problem->Objective(x, &g);
    if (g.norm() < 1e-8) break;
    x -= g / L;
  }
  RecordProperty("ceres_f_star", fmt::format("{:.15g}", minimum.value));
  RecordProperty("gd_f", fmt::format("{:.15g}", f));
  EXPECT_GE(f, minimum.value - 1e-12) << "Ceres' point is a minimum: GD cannot go below it";
  EXPECT_LT(std::abs(f - minimum.value) / std::abs(minimum.value), 1e-6)
      << "GD " << f << " Ceres " << minimum.value;
}

// Sets a stop flag once the objective has been evaluated `calls` times: a SIGINT arriving in
// the middle of the reference computation, deterministically.
// Sets a stop flag once the objective has been evaluated `calls` times: a SIGINT arriving in
// the middle of the reference computation, deterministically.
class StopAfter final : public Problem<double> {
 public:
  StopAfter(const Problem<double>& inner, int calls, std::atomic<bool>& stop)
      : inner_(inner), calls_(calls), stop_(stop) {}
  std::int64_t dimension() const override { return inner_.dimension(); }
  int num_workers() const override { return inner_.num_workers(); }
  Vector<double> InitialPoint() const override { return inner_.InitialPoint(); }
  double StochasticGradient(int worker, ConstVectorRef<double> x, PhiloxStream& stream,
                            VectorRef<double> g) const override {
    return inner_.StochasticGradient(worker, x, stream, g);
  }
  double Objective(ConstVectorRef<double> x, Vector<double>* gradient) const override {
    if (++made_ == calls_) stop_.store(true);
    return inner_.Objective(x, gradient);
  }
  Evaluation Evaluate(ConstVectorRef<double> x) const override { return inner_.Evaluate(x); }
  std::string Describe() const override { return inner_.Describe(); }
  int made() const { return made_; }

 private:
  const Problem<double>& inner_;
  int calls_;
  std::atomic<bool>& stop_;
  mutable int made_ = 0;
};

// SIGINT during the reference computation (Ceres' L-BFGS for f*, then power iteration for L)
// was ignored until it finished, 90 s and more; both now stop at their next iteration.
TEST(Reference, AStopRequestEndsTheSolversAtTheirNextIteration) {
  const auto problem = BreastCancerLogreg(1e-3);
  std::atomic<bool> never{false};
  const StopAfter counting(*problem, 0, never);
  ReferenceConstants(counting, 1, 10000, &never);
  const int total = counting.made();
  ASSERT_GT(total, 20);
  // Early in L-BFGS, midway, and in the last power iteration but one (a stop during the very
  // last iteration finds the work done).
  for (const int calls : {1, total / 2, total - 4}) {
    std::atomic<bool> stop{false};
    const StopAfter stopping(*problem, calls, stop);
    EXPECT_THROW(ReferenceConstants(stopping, 1, 10000, &stop), Interrupted) << calls;
    EXPECT_LE(stopping.made(), calls + 64) << "stopped within an iteration's evaluations";
  }
}

TEST(Reference, IterationLimitIsHonouredAndReported) {
  const auto problem = BreastCancerLogreg(1e-3);
  const std::vector<Constant> constants = ReferenceConstants(*problem, 1, 3);
  const Constant* f_star = FindConstant(constants, "f_star");
  ASSERT_NE(f_star, nullptr);
  EXPECT_THAT(f_star->basis, ::testing::HasSubstr("Maximum number of iterations reached"));
  EXPECT_GT(f_star->value, MinimizeFullBatch(*problem, problem->InitialPoint()).value + 1e-6);
}

TEST(Reference, PowerIterationFindsTheLargestEigenvalue) {
  QuadraticOptions o;
  o.spectrum.dimension = 30;
  o.spectrum.l = 4.0;
  o.spectrum.mu = 0.1;
  const QuadraticModel model = BuildQuadraticModel(o, 1, 5);
  const auto problem = MakeQuadratic<double>(model);
  const double estimate = EstimateSmoothness(*problem, testing::RandomPoint(30, 1), 9);
  EXPECT_NEAR(estimate, 4.0, 1e-4);
  // On the logistic problem the estimate lies below the proven bound, and not far below it at
  // x = 0, where sigmoid' = 1/4 is largest.
  const auto logreg = BreastCancerLogreg(0);
  const double bound = FindConstant(logreg->Constants(), "L")->value;
  const double at_zero = EstimateSmoothness(*logreg, logreg->InitialPoint(), 9);
  EXPECT_LE(at_zero, bound);
  EXPECT_GT(at_zero, 0.5 * bound);
}

TEST(Reference, ConstantsKeepWhatIsKnownAndEstimateTheRest) {
  QuadraticOptions o;
  o.spectrum.dimension = 10;
  const auto quadratic = MakeQuadratic<double>(BuildQuadraticModel(o, 2, 1));
  const std::vector<Constant> known = ReferenceConstants(*quadratic, 1);
  EXPECT_EQ(FindConstant(known, "f_star")->certainty, Certainty::kExact);
  EXPECT_EQ(FindConstant(known, "L")->certainty, Certainty::kExact);

  const auto logreg = BreastCancerLogreg(1e-3);
  const std::vector<Constant> estimated = ReferenceConstants(*logreg, 1);
  const Constant* f_star = FindConstant(estimated, "f_star");
  ASSERT_NE(f_star, nullptr);
  // f at the point L-BFGS reached: never below inf f, an upper bound on f*.
  EXPECT_EQ(f_star->certainty, Certainty::kBound);
  EXPECT_THAT(f_star->basis, ::testing::HasSubstr("Ceres L-BFGS"));
  EXPECT_THAT(f_star->basis, ::testing::HasSubstr(">= inf f"));
  EXPECT_EQ(FindConstant(estimated, "L")->certainty, Certainty::kBound);  // the problem's own
}

}  // namespace
}  // namespace lemmalab
