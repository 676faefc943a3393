// PowerSGD (compressors/powersgd.h): exact reconstruction of rank-1 matrices, power iteration
// through the warm start converging to the truncated SVD, orthonormal P^, the documented draw
// rule and stream position, exact message sizes, zero and rank-deficient inputs, options, and
// PowerSGD + classic error feedback equal to the paper's Algorithms 1-2 written out with dense
// Eigen operations.
#include "compressors/powersgd.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/QR>
#include <Eigen/SVD>
#include <boost/random/normal_distribution.hpp>
#include <cmath>
#include <cstring>
#include <numbers>

#include "compressors/error_feedback.h"
#include "engine/spec.h"
#include "tests/compressor_examples.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

// The contract and split tests' configurations of powersgd (tests/compressor_examples.h).
// PowerSGD: (rows + cols) r' scalars per matrix layer, r' = min(rank, rows, cols); vector
// layers (a flat shape is one) raw.
std::int64_t PowerSgdBits(const CompressorShape& s, std::int64_t rank, int scalar_bits) {
  std::int64_t scalars = 0;
  for (const Layer& l : s.layers) {
    const bool matrix = l.rows > 1 && l.cols > 1;
    scalars += matrix ? (l.rows + l.cols) * std::min({rank, l.rows, l.cols}) : l.size();
  }
  return scalar_bits * scalars;
}

const CompressorExamples kCompressorExamples(
    {
        {"PowerSgdRank1", "name = \"powersgd\"\nrank = 1",
         [](const CompressorShape& s, int scalar_bits) { return PowerSgdBits(s, 1, scalar_bits); }},
        {"PowerSgdRank3", "name = \"powersgd\"\nrank = 3",
         [](const CompressorShape& s, int scalar_bits) { return PowerSgdBits(s, 3, scalar_bits); }},
    },
    {
        {"PowerSgdRank1", "name = \"powersgd\"\nrank = 1", SplitsNever},
        {"PowerSgdRank3", "name = \"powersgd\"\nrank = 3", SplitsNever},
    });

using Eigen::MatrixXd;
using ::testing::HasSubstr;

PhiloxStream Stream(std::uint64_t step = 1) {
  return PhiloxStream({7, Purpose::kWorkerCompression, 0, step});
}

MatrixXd RandomMatrix(Eigen::Index rows, Eigen::Index cols, std::uint64_t seed) {
  PhiloxStream s({seed, Purpose::kDataSynthesis, kGlobalStream, 0});
  boost::random::normal_distribution<double> normal;
  MatrixXd m(rows, cols);
  for (Eigen::Index i = 0; i < rows; ++i) {
    for (Eigen::Index j = 0; j < cols; ++j) m(i, j) = normal(s);
  }
  return m;
}

// The layer's part of a flat vector, as the row-major matrix the compressor sees.
template <typename T>
Vector<T> Flatten(const MatrixXd& m) {
  const RowMatrix<T> rm = m.cast<T>();
  return Eigen::Map<const Vector<T>>(rm.data(), rm.size());
}

template <typename T>
MatrixXd Unflatten(const Vector<T>& x, Eigen::Index offset, Eigen::Index rows, Eigen::Index cols) {
  return Eigen::Map<const RowMatrix<T>>(x.data() + offset, rows, cols).template cast<double>();
}

// Scalars first .. first + rows * cols - 1 of a message, as a column-major matrix.
template <typename T>
MatrixXd WireMatrix(const Message& m, Eigen::Index first, Eigen::Index rows, Eigen::Index cols) {
  MatrixXd a(rows, cols);
  for (Eigen::Index j = 0; j < a.size(); ++j) {
    T v;
    std::memcpy(&v, m.bytes.data() + (first + j) * sizeof(T), sizeof(T));
    a.data()[j] = v;
  }
  return a;
}

template <typename T>
double Tolerance() {
  return std::is_same_v<T, float> ? 1e-5 : 1e-13;
}

// The first Q of a matrix layer by the rule powersgd.h documents, read word by word.
MatrixXd DocumentedStart(PhiloxStream& s, Eigen::Index cols, Eigen::Index rank) {
  MatrixXd q(cols, rank);
  for (Eigen::Index k = 0; k < rank; ++k) {
    for (Eigen::Index i = 0; i < cols; ++i) {
      const std::uint32_t w1 = s();
      const std::uint32_t w2 = s();
      q(i, k) = std::sqrt(-2 * std::log((w1 + 0.5) / 4294967296.0)) *
                std::cos(2 * std::numbers::pi * (w2 / 4294967296.0));
    }
  }
  return q;
}

// Gram-Schmidt's orthonormal factor, through Householder QR: P = Q R with R's diagonal made
// positive, which is what Gram-Schmidt produces for full-rank P.
MatrixXd GramSchmidtReference(const MatrixXd& p) {
  const Eigen::HouseholderQR<MatrixXd> qr(p);
  MatrixXd q = qr.householderQ() * MatrixXd::Identity(p.rows(), p.cols());
  for (Eigen::Index k = 0; k < p.cols(); ++k) {
    if (qr.matrixQR()(k, k) < 0) q.col(k) *= -1;
  }
  return q;
}

// The network-like shape of the contract test: two weight matrices and their biases.
CompressorShape Network() {
  return {66,
          {Layer{"fc1.weight", 0, 7, 5}, Layer{"fc1.bias", 35, 7, 1}, Layer{"fc2.weight", 42, 3, 7},
           Layer{"fc2.bias", 63, 3, 1}}};
}

CompressorShape OneMatrix(Eigen::Index rows, Eigen::Index cols) {
  return {rows * cols, {Layer{"w", 0, rows, cols}}};
}

template <typename T>
MatrixXd CompressOnce(Compressor<T>& c, const MatrixXd& m, std::uint64_t step = 1) {
  Message msg;
  PhiloxStream s = Stream(step);
  c.Encode(Flatten<T>(m), s, msg);
  Vector<T> y(m.size());
  c.Decode(msg, y);
  return Unflatten(y, 0, m.rows(), m.cols());
}

template <typename T>
void RankOneIsExact() {
  const MatrixXd m = RandomMatrix(6, 1, 1) * RandomMatrix(1, 4, 2);
  for (const std::int64_t rank : {1, 3}) {
    auto c = MakePowerSgd<T>(OneMatrix(6, 4), rank);
    const MatrixXd y = CompressOnce(*c, m);
    EXPECT_LE((y - m).norm(), Tolerance<T>() * m.norm()) << "rank " << rank;
  }
}

TEST(PowerSgd, RankOneMatrixIsExactAfterOneStep) {
  RankOneIsExact<float>();
  RankOneIsExact<double>();
}

// M = U diag(sigma) V^T with a gap after the second singular value: power iteration with rank 2
// gains a factor (sigma_3 / sigma_2)^2 = 1/4 per call.
MatrixXd WithSingularValues(const Eigen::VectorXd& sigma, Eigen::Index rows) {
  const Eigen::Index cols = sigma.size();
  const MatrixXd u = GramSchmidtReference(RandomMatrix(rows, cols, 3));
  const MatrixXd v = GramSchmidtReference(RandomMatrix(cols, cols, 4));
  return u * sigma.asDiagonal() * v.transpose();
}

template <typename T>
void ConvergesToTruncatedSvd() {
  Eigen::VectorXd sigma(6);
  sigma << 10, 6, 3, 1, 0.5, 0.1;
  const MatrixXd m = WithSingularValues(sigma, 8);
  const Eigen::JacobiSVD<MatrixXd> svd(m, Eigen::ComputeThinU | Eigen::ComputeThinV);
  const MatrixXd best = svd.matrixU().leftCols(2) * svd.singularValues().head(2).asDiagonal() *
                        svd.matrixV().leftCols(2).transpose();

  auto warm = MakePowerSgd<T>(OneMatrix(8, 6), 2);
  auto fresh = MakePowerSgd<T>(OneMatrix(8, 6), 2, /*warm_start=*/false);
  MatrixXd y_warm, y_fresh;
  for (std::uint64_t step = 1; step <= 25; ++step) {
    y_warm = CompressOnce(*warm, m, step);
    y_fresh = CompressOnce(*fresh, m, step);
  }
  // 0.25^25 leaves only rounding: of T's values on the wire, and of the SVD.
  EXPECT_LE((y_warm - best).norm(), 10 * Tolerance<T>() * m.norm());
  // Without the warm start every call is one power step from a random start, which stays far
  // from the optimum, whose error is sqrt(3^2 + 1^2 + 0.5^2 + 0.1^2).
  EXPECT_NEAR((m - best).norm(), std::sqrt(10.26), 1e-12);
  EXPECT_GT((m - y_fresh).norm(), 1.01 * (m - best).norm());
}

TEST(PowerSgd, WarmStartConvergesToTheTruncatedSvd) {
  ConvergesToTruncatedSvd<float>();
  ConvergesToTruncatedSvd<double>();
}

template <typename T>
void PIsOrthonormal() {
  // A generic matrix, a rank-1 one and a zero one, at a rank whose P must be completed for the
  // last two.
  const MatrixXd generic = RandomMatrix(9, 7, 5);
  const MatrixXd rank_one = RandomMatrix(9, 1, 6) * RandomMatrix(1, 7, 7);
  for (const MatrixXd& m : {generic, rank_one, MatrixXd(MatrixXd::Zero(9, 7))}) {
    auto c = MakePowerSgd<T>(OneMatrix(9, 7), 3);
    Message msg;
    PhiloxStream s = Stream();
    c->Encode(Flatten<T>(m), s, msg);
    const MatrixXd p = WireMatrix<T>(msg, 0, 9, 3);
    EXPECT_LE((p.transpose() * p - MatrixXd::Identity(3, 3)).norm(), Tolerance<T>());
  }
}

TEST(PowerSgd, PHasOrthonormalColumns) {
  PIsOrthonormal<float>();
  PIsOrthonormal<double>();
}

template <typename T>
void SizesAre(std::int64_t rank, const CompressorShape& shape, std::int64_t scalars) {
  auto c = MakePowerSgd<T>(shape, rank);
  Message m;
  PhiloxStream s = Stream();
  c->Encode(Vector<T>::Ones(shape.dimension), s, m);
  EXPECT_EQ(m.bits(), scalars * 8 * static_cast<std::int64_t>(sizeof(T)))
      << "rank " << rank << ", d = " << shape.dimension;
}

TEST(PowerSgd, MessageSizesFollowTheFormula) {
  for (auto sizes : {&SizesAre<float>, &SizesAre<double>}) {
    // {7x5, 7, 3x7, 3}: (7 + 5) r' + 7 + (3 + 7) r' + 3 with r' capped at 5 and 3.
    sizes(1, Network(), 12 + 7 + 10 + 3);
    sizes(3, Network(), 36 + 7 + 30 + 3);
    sizes(10, Network(), 12 * 5 + 7 + 10 * 3 + 3);
    // Flat shapes and row vectors are vectors: sent raw.
    sizes(2, CompressorShape::Flat(1), 1);
    sizes(2, CompressorShape::Flat(33), 33);
    sizes(2, CompressorShape{9, {Layer{"row", 0, 1, 9}}}, 9);
  }
}

TEST(PowerSgd, VectorLayersAreSentExactly) {
  auto c = MakePowerSgd<float>(Network(), 1);
  const Vector<float> x = Flatten<float>(RandomMatrix(66, 1, 8));
  Message m;
  PhiloxStream s = Stream();
  c->Encode(x, s, m);
  Vector<float> y(66);
  c->Decode(m, y);
  EXPECT_EQ(y.segment(35, 7), x.segment(35, 7));
  EXPECT_EQ(y.segment(63, 3), x.segment(63, 3));
  // fc1.bias follows fc1.weight's P (7) and Q (5) on the wire, as float32.
  EXPECT_EQ(WireMatrix<float>(m, 12, 7, 1).cast<float>(), x.segment(35, 7));
}

template <typename T>
void ZeroThenRecovers() {
  const CompressorShape shape = Network();
  auto c = MakePowerSgd<T>(shape, 2);
  Message m;
  PhiloxStream s = Stream();
  c->Encode(Vector<T>::Zero(66), s, m);
  Vector<T> y(66);
  c->Decode(m, y);
  EXPECT_EQ(y, Vector<T>::Zero(66));
  // The zero matrix left Q = M^T P^ = 0; a warm start that kept it would send zero from now on.
  // The completed P^ gives Q back a direction on the next call, and the call after that is exact
  // for a rank-1 layer.
  const MatrixXd rank_one = RandomMatrix(7, 1, 9) * RandomMatrix(1, 5, 10);
  Vector<T> x = Vector<T>::Zero(66);
  x.head(35) = Flatten<T>(rank_one);
  for (std::uint64_t step = 2; step <= 3; ++step) {
    PhiloxStream next = Stream(step);
    c->Encode(x, next, m);
  }
  c->Decode(m, y);
  EXPECT_TRUE(y.allFinite());
  EXPECT_LE((Unflatten(y, 0, 7, 5) - rank_one).norm(), Tolerance<T>() * rank_one.norm());
}

TEST(PowerSgd, ZeroMatrixGivesZeroAndTheWarmStartRecovers) {
  ZeroThenRecovers<float>();
  ZeroThenRecovers<double>();
}

TEST(PowerSgd, RankLostByTheWarmStartIsRegained) {
  // A rank-1 call leaves Q of rank 1; on a 3 x 7 layer with rank 3, P^ is then completed to a
  // basis of R^3, so the next (full-rank) matrix is reconstructed exactly.
  auto c = MakePowerSgd<double>(OneMatrix(3, 7), 3);
  CompressOnce(*c, RandomMatrix(3, 1, 11) * RandomMatrix(1, 7, 12), 1);
  const MatrixXd m = RandomMatrix(3, 7, 13);
  EXPECT_LE((CompressOnce(*c, m, 2) - m).norm(), 1e-13 * m.norm());
}

TEST(PowerSgd, FirstCallFollowsTheDocumentedDrawsAndLaterCallsDrawNothing) {
  const CompressorShape shape = Network();
  const Vector<double> x = Flatten<double>(RandomMatrix(66, 1, 14));
  const MatrixXd m1 = Unflatten(x, 0, 7, 5), m2 = Unflatten(x, 42, 3, 7);
  auto c = MakePowerSgd<double>(shape, 1);
  Message first;
  PhiloxStream s = Stream();
  c->Encode(x, s, first);
  // Two words per entry of each matrix layer's Q (5 x 1, then 7 x 1).
  EXPECT_EQ(s.position(), 2u * (5 + 7));

  // With rank 1, P^ = M q / ||M q|| and Q = M^T P^.
  PhiloxStream replay = Stream();
  const MatrixXd q1 = DocumentedStart(replay, 5, 1), q2 = DocumentedStart(replay, 7, 1);
  const MatrixXd p1 = (m1 * q1).normalized(), p2 = (m2 * q2).normalized();
  EXPECT_LE((WireMatrix<double>(first, 0, 7, 1) - p1).norm(), 1e-14);
  EXPECT_LE((WireMatrix<double>(first, 7, 5, 1) - m1.transpose() * p1).norm(), 1e-13);
  EXPECT_LE((WireMatrix<double>(first, 19, 3, 1) - p2).norm(), 1e-14);
  EXPECT_LE((WireMatrix<double>(first, 22, 7, 1) - m2.transpose() * p2).norm(), 1e-13);

  // Warm start: the next call starts from the Q just sent and draws nothing.
  Message second;
  PhiloxStream s2 = Stream();
  c->Encode(x, s2, second);
  EXPECT_EQ(s2.position(), 0u);
  const MatrixXd next = (m1 * WireMatrix<double>(first, 7, 5, 1)).normalized();
  EXPECT_LE((WireMatrix<double>(second, 0, 7, 1) - next).norm(), 1e-14);

  // Without it every call draws afresh, so the same input and stream give the same message.
  auto cold = MakePowerSgd<double>(shape, 1, /*warm_start=*/false);
  for (int call = 0; call < 2; ++call) {
    Message m;
    PhiloxStream s3 = Stream();
    cold->Encode(x, s3, m);
    EXPECT_EQ(s3.position(), 2u * (5 + 7));
    EXPECT_EQ(m.bytes, first.bytes) << "call " << call;
  }
}

TEST(PowerSgd, NonFiniteInputIsCountedAndPStaysFinite) {
  auto c = MakePowerSgd<float>(OneMatrix(4, 3), 2);
  Vector<float> x = Flatten<float>(RandomMatrix(4, 3, 15));
  x[5] = std::numeric_limits<float>::quiet_NaN();
  Message m;
  PhiloxStream s = Stream();
  EXPECT_EQ(c->Encode(x, s, m).non_finite, 1);
  EXPECT_TRUE(WireMatrix<float>(m, 0, 4, 2).allFinite());
}

// Algorithm 1 (P = M Q, P^ = ORTHOGONALIZE(P), Q = M^T P^, DECOMPRESS = P^ Q^T, Q kept) with
// Algorithm 2's error feedback (Delta = g + e, e = Delta - DECOMPRESS(C(Delta))), on one worker,
// for a 5 x 4 weight matrix and a bias of 3 sent uncompressed, written out with dense Eigen.
TEST(PowerSgd, WithClassicErrorFeedbackIsThePapersAlgorithm) {
  const CompressorShape shape{23, {Layer{"w", 0, 5, 4}, Layer{"b", 20, 3, 1}}};
  auto c = MakePowerSgd<double>(shape, 2);
  ErrorFeedback<double> ef(FeedbackKind::kClassic, 23);

  PhiloxStream start = Stream(1);
  MatrixXd q = DocumentedStart(start, 4, 2);
  MatrixXd e = MatrixXd::Zero(5, 4);
  for (std::uint64_t t = 1; t <= 3; ++t) {
    const Vector<double> g = Flatten<double>(RandomMatrix(23, 1, 20 + t));
    Message m;
    PhiloxStream s = Stream(t);
    ef.Compress(g, *c, s, m);
    Vector<double> decoded(23);
    c->Decode(m, decoded);

    const MatrixXd delta = Unflatten(g, 0, 5, 4) + e;
    const MatrixXd p_hat = GramSchmidtReference(delta * q);
    q = delta.transpose() * p_hat;
    const MatrixXd sent = p_hat * q.transpose();
    e = delta - sent;

    EXPECT_LE((Unflatten(decoded, 0, 5, 4) - sent).norm(), 1e-12) << "step " << t;
    EXPECT_EQ(decoded.tail(3), g.tail(3)) << "step " << t;
    EXPECT_LE((Unflatten(ef.error(), 0, 5, 4) - e).norm(), 1e-12) << "step " << t;
    EXPECT_EQ(ef.error().tail(3), Vector<double>::Zero(3)) << "step " << t;
    EXPECT_GT(e.norm(), 0.1) << "a rank-2 approximation of a 5 x 4 matrix should lose something";
  }
}

std::string ErrorFor(const std::string& toml) {
  return testing::UserErrorOf([&] {
    std::shared_ptr<OptionTable> t = ParseOptionTable(toml, "compressor");
    MakeCompressorMaker<float>(*t);
  });
}

TEST(PowerSgd, Options) {
  EXPECT_THAT(ErrorFor("name = \"powersgd\"\nrank = 0"), HasSubstr("rank must be >= 1, got 0"));
  EXPECT_THAT(ErrorFor("name = \"powersgd\"\nrank = 1.5"), HasSubstr("rank must be an integer"));
  EXPECT_THAT(ErrorFor("name = \"powersgd\"\nwarm_start = 1"),
              HasSubstr("warm_start must be true or false"));
  EXPECT_THAT(ErrorFor("name = \"powersgd\"\nranks = 2"), HasSubstr("did you mean 'rank'?"));

  // Default rank 2: a 7 x 5 layer sends (7 + 5) 2 float32 values.
  std::shared_ptr<OptionTable> t = ParseOptionTable(R"(name = "powersgd")", "compressor");
  auto c = MakeCompressorMaker<float>(*t)(OneMatrix(7, 5));
  EXPECT_EQ(c->name(), "powersgd");
  EXPECT_TRUE(c->uses_layers());
  EXPECT_FALSE(c->unbiased());
  EXPECT_FALSE(c->q().has_value());
  Message m;
  PhiloxStream s = Stream();
  c->Encode(Vector<float>::Ones(35), s, m);
  EXPECT_EQ(m.bits(), 12 * 2 * 32);
}

}  // namespace
}  // namespace lemmalab
