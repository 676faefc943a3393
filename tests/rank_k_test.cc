// Rank-k (compressors/rank_k.h): a hand-computed rank-1 message, Eckart-Young against an
// independent SVD (the error is exactly the discarded singular values), the rule that sends a
// layer whole when its factors would not be smaller, exact message sizes, the declared q with a
// matrix that attains it, determinism, non-finite input, and option errors.
#include "compressors/rank_k.h"

#include <gtest/gtest.h>

#include <Eigen/SVD>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>
#include <vector>

#include "engine/spec.h"
#include "tests/compressor_examples.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

// The contract and split tests' configurations of rank-k (tests/compressor_examples.h).
// Rank-k: k (rows + cols) scalars per matrix layer whose factors are smaller than it, every other
// layer raw.
std::int64_t RankKBits(const CompressorShape& s, std::int64_t k, int scalar_bits) {
  std::int64_t scalars = 0;
  for (const Layer& l : s.layers) {
    const bool factored = l.rows > 1 && l.cols > 1 && k * (l.rows + l.cols) < l.size();
    scalars += factored ? k * (l.rows + l.cols) : l.size();
  }
  return scalar_bits * scalars;
}

const CompressorExamples kCompressorExamples(
    {
        {"RankKRank1", "name = \"rank-k\"\nrank = 1",
         [](const CompressorShape& s, int scalar_bits) { return RankKBits(s, 1, scalar_bits); }},
        {"RankKRank3", "name = \"rank-k\"\nrank = 3",
         [](const CompressorShape& s, int scalar_bits) { return RankKBits(s, 3, scalar_bits); }},
    },
    {
        {"RankK", "name = \"rank-k\"\nrank = 2", SplitsNever},
    });

using Shape = CompressorShape;

PhiloxStream Stream(std::uint64_t step = 1) {
  return PhiloxStream({43, Purpose::kWorkerCompression, 0, step});
}

// The doubles of a message, in order.
std::vector<double> Values(const Message& m) {
  std::vector<double> v(m.bytes.size() / sizeof(double));
  std::memcpy(v.data(), m.bytes.data(), m.bytes.size());
  return v;
}

// X = u v^T with u = (1, 2), v = (3, 0, -4): sigma_1 = sqrt(5) 5, U_1 = u / sqrt(5),
// V_1 = v / 5, so U_1 sigma_1 = (5, 10) and V_1 = (0.6, 0, -0.8), up to one common sign; and the
// 2-entry bias after it is sent raw. 1 (2 + 3) = 5 < 6 values: factored.
TEST(RankK, HandComputedRankOneMessage) {
  const Shape shape{8, {Layer{"w", 0, 2, 3}, Layer{"b", 6, 2, 1}}};
  auto c = MakeRankK<double>(shape, 1);
  Vector<double> x(8);
  x << 3, 0, -4, 6, 0, -8, 0.5, -1;  // row-major 2 x 3, then the bias
  Message m;
  PhiloxStream s = Stream();
  EXPECT_EQ(c->Encode(x, s, m).non_finite, 0);
  EXPECT_EQ(s.position(), 0u);
  const std::vector<double> v = Values(m);
  ASSERT_EQ(v.size(), 7u);
  const double sign = v[0] > 0 ? 1 : -1;
  const std::vector<double> expected = {5, 10, 0.6, 0, -0.8};
  for (std::size_t i = 0; i < 5; ++i) EXPECT_NEAR(v[i], sign * expected[i], 1e-14) << i;
  EXPECT_EQ(v[5], 0.5);
  EXPECT_EQ(v[6], -1.0);
  Vector<double> y(8);
  c->Decode(m, y);
  EXPECT_LT((y - x).cwiseAbs().maxCoeff(), 1e-14);
}

// Eckart-Young: ||X - C(X)||_F^2 equals the sum of the squared singular values after the k-th,
// as an independent JacobiSVD computes them, and C(X) has rank k.
TEST(RankK, IsTheBestRankKApproximation) {
  for (const auto& [rows, cols, k] : std::vector<std::tuple<std::int64_t, std::int64_t, int>>{
           {7, 5, 1}, {7, 5, 2}, {40, 30, 3}, {5, 60, 2}}) {
    SCOPED_TRACE(::testing::Message() << rows << " x " << cols << ", k = " << k);
    const Shape shape{rows * cols, {Layer{"w", 0, rows, cols}}};
    const Vector<double> x = testing::GaussianVector(rows * cols, 4);
    auto c = MakeRankK<double>(shape, k);
    Message m;
    PhiloxStream s = Stream();
    c->Encode(x, s, m);
    EXPECT_EQ(m.bits(), 64 * k * (rows + cols));
    Vector<double> y(rows * cols);
    c->Decode(m, y);
    const Eigen::MatrixXd matrix = Eigen::Map<const RowMatrix<double>>(x.data(), rows, cols);
    const Eigen::VectorXd sigma = Eigen::JacobiSVD<Eigen::MatrixXd>(matrix).singularValues();
    const double discarded = sigma.tail(sigma.size() - k).squaredNorm();
    EXPECT_NEAR((y - x).squaredNorm(), discarded, 1e-10 * x.squaredNorm());
    const Eigen::MatrixXd decoded = Eigen::Map<const RowMatrix<double>>(y.data(), rows, cols);
    const Eigen::VectorXd rank = Eigen::JacobiSVD<Eigen::MatrixXd>(decoded).singularValues();
    EXPECT_LT(rank[k], 1e-10 * rank[0]) << "rank k";
    EXPECT_LE((y - x).norm(), *c->q() * x.norm());
  }
}

// A layer is factored only when k (rows + cols) < rows cols; otherwise (and for vectors) it is
// sent whole and exactly, and with no factored layer q = 0.
TEST(RankK, SendsALayerWholeWhenItsFactorsWouldNotBeSmaller) {
  const Shape network{66,
                      {Layer{"fc1.weight", 0, 7, 5}, Layer{"fc1.bias", 35, 7, 1},
                       Layer{"fc2.weight", 42, 3, 7}, Layer{"fc2.bias", 63, 3, 1}}};
  // k = 2: 7x5 -> 24 < 35 and 3x7 -> 20 < 21, both factored; k = 3: 36 >= 35, 30 >= 21, whole.
  EXPECT_EQ(MakeRankK<float>(network, 2)->q(),
            std::sqrt(1 - 2.0 / 5) + (3 + std::sqrt(2.0)) * 0x1p-24);
  const Vector<float> x = testing::GaussianVector(66, 5).cast<float>();
  for (const auto& [k, scalars] :
       std::vector<std::pair<int, std::int64_t>>{{2, 24 + 7 + 20 + 3}, {3, 66}}) {
    auto c = MakeRankK<float>(network, k);
    Message m;
    PhiloxStream s = Stream();
    c->Encode(x, s, m);
    EXPECT_EQ(m.bits(), 32 * scalars) << "k = " << k;
    Vector<float> y(66);
    c->Decode(m, y);
    EXPECT_EQ(y.segment(35, 7), x.segment(35, 7)) << "the bias is sent raw";
    if (k == 3) {
      EXPECT_EQ(y, x);
      EXPECT_EQ(c->q(), 0.0);
    }
  }
  EXPECT_EQ(MakeRankK<double>(Shape::Flat(10), 1)->q(), 0.0) << "a flat shape is one vector";
}

// X = 3 I_5 (all singular values equal) loses exactly 1 - k/5 of its energy: the declared q,
// sqrt(1 - k/r) plus the rounding allowance, is attained.
TEST(RankK, DeclaredQIsAttainedByEqualSingularValues) {
  const Shape shape{25, {Layer{"w", 0, 5, 5}}};
  for (const int k : {1, 2}) {
    Vector<float> x = Vector<float>::Zero(25);
    for (int i = 0; i < 5; ++i) x[6 * i] = 3;
    auto c = MakeRankK<float>(shape, k);
    Message m;
    PhiloxStream s = Stream();
    c->Encode(x, s, m);
    Vector<float> y(25);
    c->Decode(m, y);
    const double error = (y - x).cast<double>().norm() / x.cast<double>().norm();
    EXPECT_NEAR(error, std::sqrt(1 - k / 5.0), 1e-6);
    EXPECT_LE(error, *c->q());
    EXPECT_TRUE(c->deterministic());
    EXPECT_FALSE(c->unbiased());
    EXPECT_TRUE(c->uses_layers());
  }
}

TEST(RankK, TheStreamDoesNotMatter) {
  const Shape shape{600, {Layer{"w", 0, 20, 30}}};
  const Vector<float> x = testing::GaussianVector(600, 6).cast<float>();
  auto c = MakeRankK<float>(shape, 2);
  Message a, b;
  PhiloxStream s1 = Stream(1), s2({99, Purpose::kServerCompression, kServerStream, 7});
  c->Encode(x, s1, a);
  c->Encode(x, s2, b);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(s2.position(), 0u);
}

TEST(RankK, NonFiniteInputMakesItsLayerNaN) {
  const Shape shape{40, {Layer{"w", 0, 6, 6}, Layer{"b", 36, 4, 1}}};
  Vector<double> x = testing::GaussianVector(40, 7);
  x[8] = std::numeric_limits<double>::infinity();
  auto c = MakeRankK<double>(shape, 1);
  Message m;
  PhiloxStream s = Stream();
  EXPECT_EQ(c->Encode(x, s, m).non_finite, 1);
  Vector<double> y(40);
  c->Decode(m, y);
  EXPECT_TRUE(y.head(36).array().isNaN().all());
  EXPECT_EQ(y.tail(4), x.tail(4));
}

TEST(RankK, OptionErrors) {
  const auto make = [](const std::string& toml) {
    std::shared_ptr<OptionTable> table = ParseOptionTable(toml, "compressor");
    MakeCompressorMaker<double>(*table);
  };
  EXPECT_EQ(testing::UserErrorOf([&] { make("name = \"rank-k\""); }), "(no error)");
  EXPECT_NE(testing::UserErrorOf([&] { make("name = \"rank-k\"\nrank = 0"); }), "(no error)");
  EXPECT_NE(testing::UserErrorOf([&] { make("name = \"rank-k\"\nwarm_start = true"); }),
            "(no error)");
}

}  // namespace
}  // namespace lemmalab
