// Logistic regression: the gradient against central finite differences (Ceres), values
// computed by hand, and the stochastic oracle.
#include "problems/logistic_regression.h"

#include <ceres/dynamic_numeric_diff_cost_function.h>
#include <gtest/gtest.h>

#include <boost/random/uniform_int_distribution.hpp>
#include <cmath>

namespace lemmalab {
namespace {

// f(x) as a Ceres cost function with one residual, so Ceres' central differences give grad f.
struct ObjectiveFunctor {
  const Problem<double>* problem;
  bool operator()(double const* const* parameters, double* residual) const {
    const Eigen::Map<const Eigen::VectorXd> x(parameters[0], problem->dimension());
    *residual = problem->Objective(x, nullptr);
    return true;
  }
};

Eigen::VectorXd CentralDifferenceGradient(const Problem<double>& problem,
                                          const Eigen::VectorXd& x) {
  ceres::DynamicNumericDiffCostFunction<ObjectiveFunctor, ceres::CENTRAL> cost(
      new ObjectiveFunctor{&problem});
  cost.AddParameterBlock(static_cast<int>(problem.dimension()));
  cost.SetNumResiduals(1);
  const double* parameters[] = {x.data()};
  double residual;
  Eigen::VectorXd gradient(problem.dimension());
  double* jacobians[] = {gradient.data()};
  EXPECT_TRUE(cost.Evaluate(parameters, &residual, jacobians));
  return gradient;
}

Eigen::VectorXd RandomPoint(std::int64_t d, std::uint64_t seed) {
  const Dataset noise = MakeSyntheticLogistic(1, d, 1.0, seed);
  return noise.train.features.row(0).transpose();
}

TEST(LogisticRegression, GradientMatchesCentralFiniteDifferences) {
  const Dataset data = MakeSyntheticLogistic(300, 6, 3.0, 11);
  for (const bool intercept : {false, true}) {
    for (const double l2 : {0.0, 0.3}) {
      const auto problem =
          MakeLogisticRegression<double>(data, {l2, intercept, 0}, IidShards(300, 5, 1));
      for (std::uint64_t point = 0; point < 3; ++point) {
        const Eigen::VectorXd x = RandomPoint(problem->dimension(), 100 + point);
        Eigen::VectorXd analytic;
        problem->Objective(x, &analytic);
        const Eigen::VectorXd numeric = CentralDifferenceGradient(*problem, x);
        EXPECT_LT((analytic - numeric).norm(), 1e-7 * (1 + analytic.norm()))
            << "intercept " << intercept << " l2 " << l2 << "\nanalytic " << analytic.transpose()
            << "\nnumeric  " << numeric.transpose();
      }
    }
  }
}

TEST(LogisticRegression, FiniteDifferenceCheckCatchesAWrongGradient) {
  // Negative control: the gradient of the problem without its penalty is wrong for the problem
  // with it, and the check above must notice.
  const Dataset data = MakeSyntheticLogistic(100, 4, 3.0, 5);
  const auto with_l2 = MakeLogisticRegression<double>(data, {0.01, true, 0}, IidShards(100, 2, 1));
  const auto without = MakeLogisticRegression<double>(data, {0.0, true, 0}, IidShards(100, 2, 1));
  const Eigen::VectorXd x = RandomPoint(5, 7);
  Eigen::VectorXd wrong;
  without->Objective(x, &wrong);
  const Eigen::VectorXd numeric = CentralDifferenceGradient(*with_l2, x);
  EXPECT_GT((wrong - numeric).norm(), 1e-7 * (1 + wrong.norm()));
}

TEST(LogisticRegression, HandComputedValues) {
  // Two samples, one feature, no intercept: a = (1, -2), y = (1, 0), x = 0.5, l2 = 0.2.
  Dataset data;
  data.train.features.resize(2, 1);
  data.train.features << 1, -2;
  data.train.labels = Eigen::Vector2i(1, 0);
  const auto problem = MakeLogisticRegression<double>(data, {0.2, false, 0}, {{0, 1}});
  Eigen::VectorXd x(1);
  x << 0.5;
  Eigen::VectorXd g;
  const double f = problem->Objective(x, &g);
  // z = (0.5, -1): loss = [log(1+e^0.5) - 0.5 + log(1+e^-1)] / 2 + 0.1 * 0.25
  const double expected_f =
      (std::log1p(std::exp(0.5)) - 0.5 + std::log1p(std::exp(-1.0))) / 2 + 0.025;
  const auto sigmoid = [](double z) { return 1 / (1 + std::exp(-z)); };
  const double expected_g = ((sigmoid(0.5) - 1) * 1 + sigmoid(-1.0) * -2) / 2 + 0.2 * 0.5;
  EXPECT_NEAR(f, expected_f, 1e-15);
  EXPECT_NEAR(g[0], expected_g, 1e-15);
  const Evaluation e = problem->Evaluate(x);
  EXPECT_EQ(e.accuracy, 1.0);  // z = 0.5 -> class 1, z = -1 -> class 0
  EXPECT_NEAR(e.grad_sq_norm, expected_g * expected_g, 1e-15);
}

TEST(LogisticRegression, ObjectiveIsTheMeanOfShardMeans) {
  // Uneven shards {0} and {1, 2}: f = (l_0 + (l_1 + l_2) / 2) / 2, not the mean of all three.
  Dataset data;
  data.train.features.resize(3, 1);
  data.train.features << 1, 2, 3;
  data.train.labels = Eigen::Vector3i(1, 0, 1);
  const auto problem = MakeLogisticRegression<double>(data, {0, false, 0}, {{0}, {1, 2}});
  Eigen::VectorXd x(1);
  x << 0.3;
  const auto loss = [&](int k) {
    const double z = data.train.features(k, 0) * 0.3;
    return std::log1p(std::exp(z)) - data.train.labels[k] * z;
  };
  EXPECT_NEAR(problem->Objective(x, nullptr), (loss(0) + (loss(1) + loss(2)) / 2) / 2, 1e-15);
  EXPECT_EQ(problem->Evaluate(Eigen::VectorXd::Zero(1)).loss, std::log(2.0));
}

TEST(LogisticRegression, StochasticGradientAveragesADrawnMinibatch) {
  const Dataset data = MakeSyntheticLogistic(40, 3, 2.0, 3);
  const Shards shards = IidShards(40, 2, 8);
  const auto full = MakeLogisticRegression<double>(data, {0.1, true, 0}, shards);
  const auto batched = MakeLogisticRegression<double>(data, {0.1, true, 5}, shards);
  const Eigen::VectorXd x = RandomPoint(4, 9);

  // batch_size = 0: the exact shard gradient, whatever the stream.
  Eigen::VectorXd g_full(4), g_shard(4);
  PhiloxStream unused({1, Purpose::kMinibatch, 1, 1});
  full->StochasticGradient(1, x, unused, g_full);
  const auto shard_only = MakeLogisticRegression<double>(data, {0.1, true, 0}, {shards[1]});
  shard_only->Objective(x, &g_shard);
  EXPECT_LT((g_full - g_shard).norm(), 1e-15);

  // batch_size = 5: the gradient of the 5 drawn samples, drawn with Boost's uniform int.
  PhiloxStream stream({1, Purpose::kMinibatch, 1, 1}), replay({1, Purpose::kMinibatch, 1, 1});
  Eigen::VectorXd g_batch(4);
  batched->StochasticGradient(1, x, stream, g_batch);
  boost::random::uniform_int_distribution<Eigen::Index> pick(0, shards[1].size() - 1);
  std::vector<std::int64_t> drawn;
  for (int k = 0; k < 5; ++k) drawn.push_back(shards[1][static_cast<std::size_t>(pick(replay))]);
  Dataset batch;
  batch.train.features.resize(5, 3);
  batch.train.labels.resize(5);
  for (int k = 0; k < 5; ++k) {
    batch.train.features.row(k) = data.train.features.row(drawn[static_cast<std::size_t>(k)]);
    batch.train.labels[k] = data.train.labels[drawn[static_cast<std::size_t>(k)]];
  }
  Eigen::VectorXd expected(4);
  MakeLogisticRegression<double>(batch, {0.1, true, 0}, {{0, 1, 2, 3, 4}})->Objective(x, &expected);
  EXPECT_LT((g_batch - expected).norm(), 1e-14);
}

TEST(LogisticRegression, Fp32AgreesWithFp64) {
  const Dataset data = MakeSyntheticLogistic(100, 4, 2.0, 4);
  const Shards shards = IidShards(100, 3, 2);
  const auto p64 = MakeLogisticRegression<double>(data, {0.01, true, 0}, shards);
  const auto p32 = MakeLogisticRegression<float>(data, {0.01, true, 0}, shards);
  const Eigen::VectorXd x = RandomPoint(5, 1);
  Eigen::VectorXd g64;
  Vector<float> g32;
  EXPECT_NEAR(p32->Objective(x.cast<float>(), &g32), p64->Objective(x, &g64), 1e-5);
  EXPECT_LT((g32.cast<double>() - g64).norm(), 1e-5);
}

}  // namespace
}  // namespace lemmalab
