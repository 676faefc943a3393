// Supervised problems: every model's gradient against central finite differences (Ceres),
// values computed by hand, reductions between models, the stochastic oracle, the chunked
// full-batch pass, the constants each problem reports, and shards.
#include "problems/supervised.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <Eigen/Eigenvalues>
#include <boost/random/uniform_int_distribution.hpp>
#include <cmath>
#include <memory>
#include <set>

#include "problems/sharding.h"
#include "tests/problem_checks.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using ::testing::HasSubstr;

Eigen::VectorXi Labels(std::initializer_list<int> values) {
  Eigen::VectorXi labels(static_cast<Eigen::Index>(values.size()));
  Eigen::Index i = 0;
  for (const int v : values) labels[i++] = v;
  return labels;
}

// A data set with `classes` classes: synthetic Gaussian features, labels from a fixed rule so
// every class appears.
Dataset MakeClassData(std::int64_t samples, std::int64_t features, int classes,
                      std::uint64_t seed) {
  Dataset data = MakeSyntheticLogistic(samples, features, 2.0, seed);
  if (classes == 2) return data;
  for (Eigen::Index i = 0; i < samples; ++i) {
    const double s = data.train.features.row(i).sum();
    data.train.labels[i] = static_cast<int>(i % classes + (s > 0 ? 1 : 0)) % classes;
  }
  data.classes = classes;
  return data;
}

template <typename T>
std::unique_ptr<Problem<T>> Make(std::unique_ptr<Model<T>> model, const Dataset& data,
                                 const Shards& shards, double l2 = 0, double nonconvex = 0,
                                 std::int64_t batch = 0) {
  SupervisedOptions o;
  o.batch_size = batch;
  o.l2 = l2;
  o.nonconvex = nonconvex;
  o.seed = 3;
  return MakeSupervisedProblem<T>(std::move(model), data, shards, o);
}

TEST(Supervised, EveryModelsGradientMatchesCentralFiniteDifferences) {
  const Dataset binary = MakeClassData(300, 6, 2, 11);
  const Dataset three = MakeClassData(300, 6, 3, 12);
  const Shards shards = IidShards(300, 5, 1);
  struct Case {
    std::string name;
    std::unique_ptr<Problem<double>> problem;
  };
  std::vector<Case> cases;
  for (const bool intercept : {false, true}) {
    for (const double l2 : {0.0, 0.3}) {
      cases.push_back({fmt::format("logreg intercept {} l2 {}", intercept, l2),
                       Make(MakeLogisticModel<double>(6, intercept), binary, shards, l2)});
    }
  }
  cases.push_back(
      {"nonconvex-logreg", Make(MakeLogisticModel<double>(6, true), binary, shards, 0.0, 0.5)});
  cases.push_back(
      {"multinomial", Make(MakeMlpModel<double>(6, {}, 3, Activation::kRelu), three, shards, 0.1)});
  cases.push_back({"mlp relu", Make(MakeMlpModel<double>(6, {5, 4}, 3, Activation::kRelu), three,
                                    shards, 0.01)});
  cases.push_back({"mlp tanh", Make(MakeMlpModel<double>(6, {7}, 3, Activation::kTanh), three,
                                    shards, 0.0, 0.2)});
  for (const Case& c : cases) {
    for (std::uint64_t point = 0; point < 3; ++point) {
      const Eigen::VectorXd x = testing::RandomPoint(c.problem->dimension(), 100 + point);
      EXPECT_LT(testing::GradientError(*c.problem, x), 1e-7) << c.name << " point " << point;
    }
  }
}

TEST(Supervised, FiniteDifferenceCheckCatchesAWrongGradient) {
  // Negative control: the gradient of the problem without its penalty is wrong for the problem
  // with it, and the check must notice.
  const Dataset data = MakeSyntheticLogistic(100, 4, 3.0, 5);
  const auto with_l2 = Make(MakeLogisticModel<double>(4, true), data, IidShards(100, 2, 1), 0.01);
  const auto without = Make(MakeLogisticModel<double>(4, true), data, IidShards(100, 2, 1));
  const Eigen::VectorXd x = testing::RandomPoint(5, 7);
  Eigen::VectorXd wrong;
  without->Objective(x, &wrong);
  const Eigen::VectorXd numeric = testing::CentralDifferenceGradient(*with_l2, x);
  EXPECT_GT((wrong - numeric).norm(), 1e-7 * (1 + wrong.norm()));
}

TEST(Supervised, LogisticHandComputedValues) {
  // Two samples, one feature, no intercept: a = (1, -2), y = (1, 0), x = 0.5, l2 = 0.2.
  Dataset data;
  data.train.features.resize(2, 1);
  data.train.features << 1, -2;
  data.train.labels = Labels({1, 0});
  const auto problem = Make(MakeLogisticModel<double>(1, false), data, {{0, 1}}, 0.2);
  const Eigen::VectorXd x = Eigen::VectorXd::Constant(1, 0.5);
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
  EXPECT_FALSE(e.test_loss.has_value());
}

TEST(Supervised, MlpHandComputedValues) {
  // 1 feature -> 1 relu unit -> 2 classes. x = [w1 = 2, b1 = -1, W2 = (1, -1), b2 = (0, 0.5)].
  // Sample a = 1.5, y = 1: h = relu(2*1.5 - 1) = 2, logits = (2, -2 + 0.5) = (2, -1.5).
  Dataset data;
  data.train.features = RowMatrix<double>::Constant(1, 1, 1.5);
  data.train.labels = Eigen::VectorXi::Constant(1, 1);
  const auto problem = Make(MakeMlpModel<double>(1, {1}, 2, Activation::kRelu), data, {{0}});
  ASSERT_EQ(problem->dimension(), 1 + 1 + 2 + 2);
  Eigen::VectorXd x(6);
  x << 2, -1, 1, -1, 0, 0.5;
  Eigen::VectorXd g;
  const double f = problem->Objective(x, &g);
  const double lse = std::log(std::exp(2.0) + std::exp(-1.5));
  EXPECT_NEAR(f, lse + 1.5, 1e-15);
  const double p0 = std::exp(2.0 - lse), p1 = std::exp(-1.5 - lse);
  // d/dlogits = (p0, p1 - 1); dW2 = that * h = 2; db2 = that; dh = p0*1 + (p1-1)*(-1);
  // dz1 = dh (relu active); dw1 = dz1 * 1.5; db1 = dz1.
  const double dh = p0 - (p1 - 1);
  Eigen::VectorXd expected(6);
  expected << dh * 1.5, dh, 2 * p0, 2 * (p1 - 1), p0, p1 - 1;
  EXPECT_LT((g - expected).norm(), 1e-14) << g.transpose();
  EXPECT_EQ(problem->Evaluate(x).accuracy, 0.0);  // predicts class 0
}

TEST(Supervised, TwoClassSoftmaxReducesToLogisticRegression) {
  // Softmax with logits (0, w.a + b) is the logistic model with (w, b): the same loss, and the
  // second row of the softmax gradient is the logistic gradient (the first its negative).
  const Dataset data = MakeSyntheticLogistic(200, 5, 2.0, 21);
  const Shards shards = IidShards(200, 3, 2);
  const auto logistic = Make(MakeLogisticModel<double>(5, true), data, shards);
  const auto softmax = Make(MakeMlpModel<double>(5, {}, 2, Activation::kRelu), data, shards);
  const Eigen::VectorXd x = testing::RandomPoint(6, 4);
  Eigen::VectorXd xs = Eigen::VectorXd::Zero(12);  // W (2x5), b (2)
  xs.segment(5, 5) = x.head(5);
  xs[11] = x[5];
  Eigen::VectorXd g, gs;
  EXPECT_NEAR(logistic->Objective(x, &g), softmax->Objective(xs, &gs), 1e-14);
  EXPECT_LT((gs.segment(5, 5) - g.head(5)).norm(), 1e-14);
  EXPECT_LT((gs.head(5) + g.head(5)).norm(), 1e-14);
  EXPECT_NEAR(gs[11], g[5], 1e-14);
  EXPECT_EQ(logistic->Evaluate(x).accuracy, softmax->Evaluate(xs).accuracy);
}

TEST(Supervised, ObjectiveIsTheMeanOfShardMeans) {
  // Uneven shards {0} and {1, 2}: f = (l_0 + (l_1 + l_2) / 2) / 2, not the mean of all three.
  Dataset data;
  data.train.features.resize(3, 1);
  data.train.features << 1, 2, 3;
  data.train.labels = Labels({1, 0, 1});
  const auto problem = Make(MakeLogisticModel<double>(1, false), data, {{0}, {1, 2}});
  const Eigen::VectorXd x = Eigen::VectorXd::Constant(1, 0.3);
  const auto loss = [&](int k) {
    const double z = data.train.features(k, 0) * 0.3;
    return std::log1p(std::exp(z)) - data.train.labels[k] * z;
  };
  EXPECT_NEAR(problem->Objective(x, nullptr), (loss(0) + (loss(1) + loss(2)) / 2) / 2, 1e-15);
  EXPECT_EQ(problem->Evaluate(Eigen::VectorXd::Zero(1)).loss, std::log(2.0));
}

TEST(Supervised, StochasticGradientAveragesADrawnMinibatch) {
  const Dataset data = MakeClassData(40, 3, 3, 3);
  const Shards shards = IidShards(40, 2, 8);
  const auto model = [] { return MakeMlpModel<double>(3, {4}, 3, Activation::kTanh); };
  const auto full = Make(model(), data, shards, 0.1);
  const auto batched = Make(model(), data, shards, 0.1, 0, 5);
  const Eigen::VectorXd x = testing::RandomPoint(full->dimension(), 9);
  const auto d = full->dimension();

  // batch_size = 0: the exact shard gradient, whatever the stream.
  Eigen::VectorXd g_full(d), g_shard(d);
  PhiloxStream unused({1, Purpose::kMinibatch, 1, 1});
  full->StochasticGradient(1, x, unused, g_full);
  Make(model(), data, {shards[1]}, 0.1)->Objective(x, &g_shard);
  EXPECT_LT((g_full - g_shard).norm(), 1e-15);

  // batch_size = 5: the gradient of the 5 drawn samples, drawn with Boost's uniform int.
  PhiloxStream stream({1, Purpose::kMinibatch, 1, 1}), replay({1, Purpose::kMinibatch, 1, 1});
  Eigen::VectorXd g_batch(d);
  const double loss = batched->StochasticGradient(1, x, stream, g_batch);
  boost::random::uniform_int_distribution<Eigen::Index> pick(0, shards[1].size() - 1);
  Dataset batch;
  batch.classes = 3;
  batch.train.features.resize(5, 3);
  batch.train.labels.resize(5);
  for (int k = 0; k < 5; ++k) {
    const std::int64_t drawn = shards[1][static_cast<std::size_t>(pick(replay))];
    batch.train.features.row(k) = data.train.features.row(drawn);
    batch.train.labels[k] = data.train.labels[drawn];
  }
  Eigen::VectorXd expected(d);
  const double expected_loss =
      Make(model(), batch, {{0, 1, 2, 3, 4}}, 0.1)->Objective(x, &expected);
  EXPECT_LT((g_batch - expected).norm(), 1e-14);
  EXPECT_NEAR(loss, expected_loss, 1e-14);
}

TEST(Supervised, Fp32AgreesWithFp64) {
  const Dataset data = MakeClassData(100, 4, 3, 4);
  const Shards shards = IidShards(100, 3, 2);
  const auto p64 = Make(MakeMlpModel<double>(4, {8}, 3, Activation::kRelu), data, shards, 0.01);
  const auto p32 = Make(MakeMlpModel<float>(4, {8}, 3, Activation::kRelu), data, shards, 0.01);
  const Eigen::VectorXd x = p64->InitialPoint();
  EXPECT_LT((p32->InitialPoint().cast<double>() - x).norm(), 1e-6);
  Eigen::VectorXd g64;
  Vector<float> g32;
  EXPECT_NEAR(p32->Objective(x.cast<float>(), &g32), p64->Objective(x, &g64), 1e-5);
  EXPECT_LT((g32.cast<double>() - g64).norm(), 1e-5);
}

TEST(Supervised, FullBatchPassIsChunkedButExactAndThreadCountFree) {
  // 5000 samples in 2 shards: several 2048-row chunks per shard, summed in a fixed order.
  const Dataset data = MakeClassData(5000, 10, 3, 6);
  const Shards shards = IidShards(5000, 2, 3);
  const auto model = [] { return MakeMlpModel<double>(10, {16}, 3, Activation::kRelu); };
  const auto problem = Make(model(), data, shards);
  const Eigen::VectorXd x = problem->InitialPoint();
  // Reference: each shard's mean in one piece through a one-shard problem of the same model.
  double expected = 0;
  Eigen::VectorXd expected_g = Eigen::VectorXd::Zero(problem->dimension());
  for (const auto& shard : shards) {
    Eigen::VectorXd g;
    expected += Make(model(), data, {shard})->Objective(x, &g) / 2;
    expected_g += g / 2;
  }
  problem->set_threads(1);
  const Evaluation one = problem->Evaluate(x);
  problem->set_threads(2);  // the parallel path, whatever the size of the pass
  const Evaluation two = problem->Evaluate(x);
  EXPECT_EQ(one.loss, two.loss);
  EXPECT_EQ(one.grad_sq_norm, two.grad_sq_norm);
  EXPECT_EQ(one.accuracy, two.accuracy);
  EXPECT_NEAR(one.loss, expected, 1e-12);
  EXPECT_NEAR(one.grad_sq_norm, expected_g.squaredNorm(), 1e-12 * expected_g.squaredNorm());
}

// Byte features are converted chunk by chunk and minibatch by minibatch rather than once, into
// buffers of their own: every result must still be bit for bit what dense doubles of the same
// data give, with the same chunks summed in the same order, whatever the thread count.
template <typename T>
void ExpectBytesAndDoublesAgree(const Dataset& bytes, const Dataset& dense, const Shards& shards,
                                std::int64_t batch) {
  const auto model = [&] {
    return MakeMlpModel<T>(bytes.num_features(), {8}, 3, Activation::kRelu);
  };
  const auto on_bytes = Make(model(), bytes, shards, 0.01, 0, batch);
  const auto on_doubles = Make(model(), dense, shards, 0.01, 0, batch);
  const Vector<T> x = on_doubles->InitialPoint();
  on_doubles->set_threads(1);
  const Evaluation expected = on_doubles->Evaluate(x);
  for (const int threads : {1, 2}) {
    on_bytes->set_threads(threads);
    const Evaluation e = on_bytes->Evaluate(x);
    EXPECT_EQ(e.loss, expected.loss) << threads;
    EXPECT_EQ(e.grad_sq_norm, expected.grad_sq_norm) << threads;
    EXPECT_EQ(e.accuracy, expected.accuracy) << threads;
    EXPECT_EQ(e.test_loss, expected.test_loss) << threads;
    EXPECT_EQ(e.test_accuracy, expected.test_accuracy) << threads;
  }
  for (int worker = 0; worker < static_cast<int>(shards.size()); ++worker) {
    for (std::uint64_t step = 0; step < 3; ++step) {  // the scratch reused from step to step
      const auto w = static_cast<std::uint32_t>(worker);
      PhiloxStream a({1, Purpose::kMinibatch, w, step}), b({1, Purpose::kMinibatch, w, step});
      Vector<T> g_bytes(x.size()), g_doubles(x.size());
      EXPECT_EQ(on_bytes->StochasticGradient(worker, x, a, g_bytes),
                on_doubles->StochasticGradient(worker, x, b, g_doubles));
      EXPECT_EQ(g_bytes, g_doubles) << worker << " " << step;
    }
  }
}

TEST(Supervised, ByteFeaturesGiveBitIdenticalResultsToDenseDoubles) {
  // 5000 samples in 2 shards: several 2048-row chunks per shard; every byte value occurs.
  ByteMatrix train(5000, 12), test(700, 12);
  std::uint32_t seed = 7;
  for (ByteMatrix* m : {&train, &test}) {
    for (Eigen::Index k = 0; k < m->size(); ++k) {
      seed = seed * 1664525u + 1013904223u;
      m->data()[k] = static_cast<std::uint8_t>(seed >> 24);
    }
  }
  Dataset bytes;
  bytes.classes = 3;
  bytes.train.bytes = std::make_shared<const ByteMatrix>(train);
  bytes.test = Samples{};
  bytes.test->bytes = std::make_shared<const ByteMatrix>(test);
  for (Samples* s : {&bytes.train, &*bytes.test}) {
    s->labels.resize(s->size());
    for (Eigen::Index i = 0; i < s->size(); ++i) {
      s->labels[i] = static_cast<int>((*s->bytes)(i, 0) + (*s->bytes)(i, 5)) % 3;
    }
  }
  ScalePixels(bytes);
  Dataset dense = bytes;
  dense.train.features = bytes.train.Dense();
  dense.train.bytes.reset();
  dense.test->features = bytes.test->Dense();
  dense.test->bytes.reset();
  const Shards shards = IidShards(5000, 2, 3);
  for (const std::int64_t batch : {16, 0}) {
    ExpectBytesAndDoublesAgree<float>(bytes, dense, shards, batch);
    ExpectBytesAndDoublesAgree<double>(bytes, dense, shards, batch);
  }
}

TEST(Supervised, TestSetLossAndAccuracyUseNoRegulariser) {
  Dataset data = MakeSyntheticLogistic(50, 2, 2.0, 8);
  data.test = Samples{};
  data.test->features.resize(2, 2);
  data.test->features << 1, 0, 0, -1;
  data.test->labels = Labels({1, 1});
  const auto problem = Make(MakeLogisticModel<double>(2, false), data, IidShards(50, 2, 1), 0.5);
  Eigen::VectorXd x(2);
  x << 2, 3;  // z = (2, -3): first right, second wrong
  const Evaluation e = problem->Evaluate(x);
  ASSERT_TRUE(e.test_loss.has_value());
  EXPECT_NEAR(*e.test_loss, (std::log1p(std::exp(-2.0)) + std::log1p(std::exp(3.0))) / 2, 1e-15);
  EXPECT_EQ(e.test_accuracy, 0.5);
}

TEST(Supervised, LayersTileTheParameterVector) {
  const auto mlp = MakeMlpModel<float>(784, {256}, 10, Activation::kRelu);
  EXPECT_EQ(mlp->dimension(), 784 * 256 + 256 + 256 * 10 + 10);
  const std::vector<Layer> layers = mlp->Layers();
  ASSERT_EQ(layers.size(), 4u);
  EXPECT_EQ(layers[0].name, "fc1.weight");
  EXPECT_EQ(layers[0].rows, 256);
  EXPECT_EQ(layers[0].cols, 784);
  EXPECT_EQ(layers[3].name, "fc2.bias");
  std::int64_t offset = 0;
  for (const Layer& layer : layers) {
    EXPECT_EQ(layer.offset, offset);
    offset += layer.size();
  }
  EXPECT_EQ(offset, mlp->dimension());
  EXPECT_EQ(MakeMlpModel<float>(3072, {512}, 10, Activation::kRelu)->dimension(),
            3072 * 512 + 512 + 512 * 10 + 10);
}

TEST(Supervised, InitialPointIsSeededHeUniform) {
  const Dataset data = MakeClassData(20, 50, 3, 1);
  const auto problem = Make(MakeMlpModel<double>(50, {40}, 3, Activation::kRelu), data, {{0, 1}});
  const Eigen::VectorXd x = problem->InitialPoint();
  EXPECT_EQ(x, problem->InitialPoint());
  const Layer w = problem->Layers()[0];
  const auto weights = x.segment(w.offset, w.size());
  const double limit = std::sqrt(6.0 / 50);
  EXPECT_LE(weights.cwiseAbs().maxCoeff(), limit);
  EXPECT_GT(weights.cwiseAbs().maxCoeff(), 0.95 * limit);
  // Uniform on [-a, a] has variance a^2 / 3; 2000 draws pin it to a few percent.
  EXPECT_NEAR(weights.squaredNorm() / 2000, limit * limit / 3, 0.1 * limit * limit / 3);
  EXPECT_EQ(x.segment(problem->Layers()[1].offset, 40), Eigen::VectorXd::Zero(40));
}

TEST(Supervised, ReportedConstantsHold) {
  const Dataset binary = MakeClassData(240, 4, 2, 31);
  const Dataset three = MakeClassData(240, 4, 3, 32);
  const Shards shards = IidShards(240, 3, 1);
  std::vector<std::pair<std::string, std::unique_ptr<Problem<double>>>> cases;
  cases.emplace_back("logreg", Make(MakeLogisticModel<double>(4, true), binary, shards, 0, 0, 4));
  cases.emplace_back("nonconvex-logreg",
                     Make(MakeLogisticModel<double>(4, true), binary, shards, 0, 0.3, 4));
  cases.emplace_back("multinomial", Make(MakeMlpModel<double>(4, {}, 3, Activation::kRelu), three,
                                         shards, 0, 0, 4));
  for (const auto& [name, problem] : cases) {
    const std::vector<Constant> constants = problem->Constants();
    const double L = testing::ConstantValue(constants, "L"),
                 G = testing::ConstantValue(constants, "G");
    const double sigma = testing::ConstantValue(constants, "sigma");
    double largest_h = 0;
    for (int worker = 0; worker < 3; ++worker) {
      const auto one =
          Make(name == "multinomial" ? MakeMlpModel<double>(4, {}, 3, Activation::kRelu)
                                     : MakeLogisticModel<double>(4, true),
               name == "multinomial" ? three : binary, {shards[worker]}, 0,
               name == "nonconvex-logreg" ? 0.3 : 0);
      for (std::uint64_t point = 0; point < 4; ++point) {
        // Near 0 the logistic curvature is largest (sigmoid' = 1/4 at z = 0).
        const Eigen::VectorXd x = 0.05 * testing::RandomPoint(problem->dimension(), 40 + point);
        largest_h = std::max(largest_h, testing::HessianNorm(*one, x));
      }
    }
    EXPECT_LE(largest_h, L * (1 + 1e-6)) << name;
    EXPECT_GT(largest_h, 0.5 * L) << name << ": the bound should not be loose by 2x here";
    // Every stochastic gradient within G; their spread within sigma.
    const Eigen::VectorXd x = testing::RandomPoint(problem->dimension(), 77);
    Eigen::VectorXd exact, g(problem->dimension());
    Make(name == "multinomial" ? MakeMlpModel<double>(4, {}, 3, Activation::kRelu)
                               : MakeLogisticModel<double>(4, true),
         name == "multinomial" ? three : binary, {shards[0]}, 0,
         name == "nonconvex-logreg" ? 0.3 : 0)
        ->Objective(x, &exact);
    double largest_g = 0, mean_sq_dev = 0;
    constexpr int kDraws = 400;
    for (int draw = 0; draw < kDraws; ++draw) {
      PhiloxStream stream({5, Purpose::kMinibatch, 0, static_cast<std::uint64_t>(draw)});
      problem->StochasticGradient(0, x, stream, g);
      largest_g = std::max(largest_g, g.norm());
      mean_sq_dev += (g - exact).squaredNorm() / kDraws;
    }
    EXPECT_LE(largest_g, G) << name;
    EXPECT_LE(mean_sq_dev, sigma * sigma) << name;
  }
}

TEST(Supervised, ReportedLCatchesAPlantedCurvature) {
  // Negative control: the L reported without l2 does not bound the problem with l2 = 5, and the
  // Hessian check above notices.
  const Dataset data = MakeClassData(120, 3, 2, 9);
  const Shards one_shard = {IidShards(120, 1, 1)[0]};
  const double plain_l = testing::ConstantValue(
      Make(MakeLogisticModel<double>(3, true), data, one_shard)->Constants(), "L");
  const auto stiff = Make(MakeLogisticModel<double>(3, true), data, one_shard, 5.0);
  EXPECT_GT(testing::HessianNorm(*stiff, Eigen::VectorXd::Zero(4)), plain_l * 1.5);
  EXPECT_NEAR(testing::ConstantValue(stiff->Constants(), "L"), plain_l + 5, 1e-12);
}

// Issue 33, finding 5: a two-row LIBSVM file with feature index 20 000 made logistic regression
// form the d x d Gram matrix (3.2 GB) and solve it (minutes, deaf to signals). lambda_max(A^T A)
// is lambda_max(A A^T): with N = 2 samples the 2 x 2 one gives the same L, by hand here.
TEST(Supervised, LFromFewWideSamplesUsesTheSmallGramMatrix) {
  constexpr Eigen::Index kFeatures = 30000;
  Dataset data;
  data.train.features = Eigen::MatrixXd::Zero(2, kFeatures);
  data.train.features(0, 0) = 3;
  data.train.features(0, 1) = 4;              // ||a_1||^2 = 25
  data.train.features(1, kFeatures - 1) = 2;  // ||a_2||^2 = 4, orthogonal to a_1
  data.train.labels = Labels({1, 0});
  const auto problem = Make(MakeLogisticModel<double>(kFeatures, false), data, {{0, 1}});
  // L = 1/4 lambda_max(A^T A / 2) = 1/4 * 25 / 2.
  EXPECT_NEAR(testing::ConstantValue(problem->Constants(), "L"), 25.0 / 8, 1e-12);
  // The activations of a pass are as many rows as the data has, not a chunk of 2048.
  MemoryEstimate estimate;
  problem->AddWorkingMemory(1, 2, estimate);
  for (const MemoryEstimate::Part& part : estimate.parts) {
    if (part.what == "the model's activations") {
      EXPECT_EQ(part.bytes, 2 * (3 * 2 * 1 + 2 * kFeatures) * 8.0) << part.drivers;
    }
  }
}

// Builds `name` from options given as (key, value) pairs on `data` with 4 workers.
std::string ProblemError(const Dataset& data,
                         const std::vector<std::pair<std::string, OptionValue>>& values) {
  OptionTable options("[problem]", "s.toml:1:1");
  for (const auto& [key, value] : values) options.Set(key, value);
  return testing::UserErrorOf([&] { MakeProblem<double>(options, {4, 1, &data}); });
}

template <typename V>
OptionValue At(V value, int line) {
  return OptionValue{std::move(value), fmt::format("s.toml:{}:1", line)};
}

TEST(Supervised, OptionErrorsNameTheOptionAndTheRule) {
  const Dataset binary = MakeClassData(100, 3, 2, 1);
  const Dataset ten = MakeClassData(100, 3, 10, 1);
  const auto name = [](std::string n) { return At(std::move(n), 2); };
  EXPECT_THAT(ProblemError(ten, {{"name", name("logreg")}}),
              HasSubstr("s.toml:2:1: problem 'logreg': problem 'logreg' is binary, but the data "
                        "has 10 classes; use multinomial-logreg or mlp"));
  EXPECT_THAT(
      ProblemError(binary, {{"name", name("mlp")}, {"shards", At(std::string("skewed"), 3)}}),
      HasSubstr("s.toml:3:1"));
  auto dirichlet = std::make_shared<OptionTable>("shards", "s.toml:3:1");
  dirichlet->Set("name", At(std::string("dirichlet"), 3));
  EXPECT_THAT(ProblemError(binary, {{"name", name("mlp")}, {"shards", At(dirichlet, 3)}}),
              HasSubstr("alpha"));
  const OptionValue::Array widths = {At(std::int64_t{8}, 4), At(std::int64_t{0}, 4)};
  EXPECT_THAT(ProblemError(binary, {{"name", name("mlp")}, {"hidden", At(widths, 4)}}),
              HasSubstr("s.toml:4:1: problem 'mlp': every entry of hidden must be in [1, 65536], "
                        "got 0"));
  EXPECT_THAT(
      ProblemError(binary, {{"name", name("mlp")}, {"activation", At(std::string("gelu"), 5)}}),
      HasSubstr("s.toml:5:1"));
  EXPECT_THAT(ProblemError(binary, {{"name", name("nonconvex-logreg")}, {"lambda", At(-1.0, 6)}}),
              HasSubstr("s.toml:6:1"));
}

TEST(Supervised, SpecOptionsReachTheProblem) {
  const Dataset ten = MakeClassData(200, 3, 10, 1);
  OptionTable options("[problem]", "s.toml:1:1");
  options.Set("name", At(std::string("mlp"), 2));
  options.Set("hidden", At(OptionValue::Array{At(std::int64_t{5}, 3), At(std::int64_t{7}, 3)}, 3));
  options.Set("activation", At(std::string("tanh"), 4));
  options.Set("batch_size", At(std::int64_t{0}, 5));
  options.Set("shards", At(std::string("sorted"), 6));
  const auto problem = MakeProblem<double>(options, {4, 1, &ten});
  EXPECT_EQ(problem->dimension(), 3 * 5 + 5 + 5 * 7 + 7 + 7 * 10 + 10);
  EXPECT_THAT(problem->Describe(), HasSubstr("MLP 3-5-7-10 tanh"));
  EXPECT_THAT(problem->Describe(), HasSubstr("4 label-sorted shards of 50, full shard"));
  // Sorted labels: each worker holds 2-3 classes of the 10.
  for (const ShardSummary& shard : problem->Shards()) {
    int present = 0;
    for (std::int64_t count : shard.label_counts) present += count > 0;
    EXPECT_LE(present, 4);
  }
}

TEST(Supervised, TiesGoToTheLowerClassInBothModels) {
  // At x = 0 every logit ties: both models predict class 0, so accuracy is the share of label 0.
  const Dataset data = MakeSyntheticLogistic(101, 3, 2.0, 13);
  const Shards shards = IidShards(101, 2, 1);
  const double zeros = static_cast<double>((data.train.labels.array() == 0).count()) / 101;
  EXPECT_EQ(Make(MakeLogisticModel<double>(3, true), data, shards)
                ->Evaluate(Eigen::VectorXd::Zero(4))
                .accuracy,
            zeros);
  EXPECT_EQ(Make(MakeMlpModel<double>(3, {}, 2, Activation::kRelu), data, shards)
                ->Evaluate(Eigen::VectorXd::Zero(8))
                .accuracy,
            zeros);
}

TEST(Supervised, LossesStayExactAtExtremeLogits) {
  // z = +-1000: log(1 + e^z) must not overflow, and softmax must shift by the largest logit.
  Dataset data;
  data.train.features.resize(2, 1);
  data.train.features << 1, -1;
  data.train.labels = Labels({0, 0});
  const auto logistic = Make(MakeLogisticModel<double>(1, false), data, {{0, 1}});
  // Sample 0: z = 1000, y = 0, loss 1000; sample 1: z = -1000, loss ~ e^-1000 = 0.
  EXPECT_DOUBLE_EQ(logistic->Objective(Eigen::VectorXd::Constant(1, 1000), nullptr), 500);
  const auto softmax = Make(MakeMlpModel<double>(1, {}, 2, Activation::kRelu), data, {{0, 1}});
  Eigen::VectorXd x(4);  // W = (0, 1000)^T, b = 0: logits (0, 1000) and (0, -1000)
  x << 0, 1000, 0, 0;
  Eigen::VectorXd g;
  EXPECT_DOUBLE_EQ(softmax->Objective(x, &g), 500);
  EXPECT_TRUE(g.allFinite());
  const auto softmax32 = Make(MakeMlpModel<float>(1, {}, 2, Activation::kRelu), data, {{0, 1}});
  EXPECT_NEAR(softmax32->Objective(Vector<float>(x.cast<float>()), nullptr), 500, 1e-3);
}

TEST(Supervised, BoundsAreAttainedWhereTheyCanBe) {
  // G counts the intercept's 1: with features of 1e-3 and a saturated sigmoid, the gradient
  // norm is ||(a, 1)|| itself.
  Dataset tiny;
  tiny.train.features = RowMatrix<double>::Constant(4, 4, 1e-3);
  tiny.train.labels = Labels({0, 0, 0, 0});
  const auto with_intercept = Make(MakeLogisticModel<double>(4, true), tiny, {{0, 1, 2, 3}});
  Eigen::VectorXd x = Eigen::VectorXd::Zero(5), g;
  x[4] = 30;
  with_intercept->Objective(x, &g);
  const double g_bound = testing::ConstantValue(with_intercept->Constants(), "G");
  EXPECT_LE(g.norm(), g_bound);
  EXPECT_GT(g.norm(), 0.999 * g_bound);
  EXPECT_THAT(with_intercept->Constants()[1].basis, HasSubstr("||(a_k, 1)||"));
  // The regulariser's part 3 sqrt(3)/8 lambda per coordinate is reached at x_j = 1/sqrt(3).
  const auto nonconvex = Make(MakeLogisticModel<double>(4, false), tiny, {{0, 1, 2, 3}}, 0, 1.0);
  nonconvex->Objective(Eigen::VectorXd::Constant(4, 1 / std::sqrt(3.0)), &g);
  const double nonconvex_bound = testing::ConstantValue(nonconvex->Constants(), "G");
  EXPECT_LE(g.norm(), nonconvex_bound);
  EXPECT_GT(g.norm(), 0.99 * nonconvex_bound);
  // No G with l2 > 0: its gradient l2 x is unbounded.
  for (const Constant& c :
       Make(MakeLogisticModel<double>(4, true), tiny, {{0, 1}}, 0.1)->Constants()) {
    EXPECT_NE(c.name, "G");
  }
  // sigma: per-sample gradients +-1/2 around a zero mean (x = 0, a = 1, labels 0 and 1) give a
  // batch-of-16 variance of (1/4)/16, a quarter of the bound max||g_k||^2 / 16.
  Dataset pair;
  pair.train.features = RowMatrix<double>::Constant(2, 1, 1.0);
  pair.train.labels = Labels({0, 1});
  const auto batched = Make(MakeLogisticModel<double>(1, false), pair, {{0, 1}}, 0, 0, 16);
  const double sigma = testing::ConstantValue(batched->Constants(), "sigma");
  EXPECT_DOUBLE_EQ(sigma, 0.25);
  double variance = 0;
  Eigen::VectorXd draw(1);
  for (int k = 0; k < 4000; ++k) {
    PhiloxStream stream({1, Purpose::kMinibatch, 0, static_cast<std::uint64_t>(k)});
    batched->StochasticGradient(0, Eigen::VectorXd::Zero(1), stream, draw);
    variance += draw.squaredNorm() / 4000;
  }
  // 4000 draws of a variance-1/64 mean: the estimate's sd is about 2% of its value.
  EXPECT_NEAR(variance, 1.0 / 64, 0.1 / 64);
  EXPECT_LE(variance, sigma * sigma);
}

TEST(Supervised, TanhInitialPointIsGlorotUniform) {
  const Dataset data = MakeClassData(20, 50, 3, 1);
  const auto problem = Make(MakeMlpModel<double>(50, {30}, 3, Activation::kTanh), data, {{0, 1}});
  const Layer w = problem->Layers()[0];
  const Eigen::VectorXd x = problem->InitialPoint();
  const auto weights = x.segment(w.offset, w.size());
  const double limit = std::sqrt(6.0 / (50 + 30));
  EXPECT_LE(weights.cwiseAbs().maxCoeff(), limit);
  EXPECT_GT(weights.cwiseAbs().maxCoeff(), 0.95 * limit);
  EXPECT_NEAR(weights.squaredNorm() / 1500, limit * limit / 3, 0.1 * limit * limit / 3);
}

}  // namespace
}  // namespace lemmalab
