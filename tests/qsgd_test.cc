// QSGD (compressors/qsgd.h): hand-computed messages, the documented draw rule with the float32
// norm that is sent, unbiasedness with the exact per-coordinate variance, Alistarh et al.'s
// Lemma 3.1 variance bound, exact sizes, zero / non-finite / out-of-range input, options.
#include "compressors/qsgd.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/random/normal_distribution.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "compressors/quantization.h"
#include "engine/spec.h"
#include "tests/compressor_examples.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

// The contract and split tests' configurations of qsgd (tests/compressor_examples.h).
const CompressorExamples kCompressorExamples(
    {
        // QSGD: levels s take ceil(log2(s + 1)) bits, plus a sign bit.
        {"QsgdTwoNorm", R"(name = "qsgd")",  // s = 4: 3 + 1 bits
         [](const CompressorShape& s, int) { return ScaleAndFields(s.dimension, 4); }},
        {"QsgdInfNorm", "name = \"qsgd\"\nnorm = \"inf\"\nlevels = 1",
         [](const CompressorShape& s, int) { return ScaleAndFields(s.dimension, 2); }},
        {"QsgdManyLevels", "name = \"qsgd\"\nlevels = 255",
         [](const CompressorShape& s, int) { return ScaleAndFields(s.dimension, 9); }},
        {"QsgdFiveLevels", "name = \"qsgd\"\nlevels = 5\nnorm = \"inf\"",
         [](const CompressorShape& s, int) { return ScaleAndFields(s.dimension, 4); }},
    },
    {
        {"QsgdTwoNorm", R"(name = "qsgd")", SplitsAlways},
        {"QsgdInfNormOneLevel", "name = \"qsgd\"\nnorm = \"inf\"\nlevels = 1", SplitsAlways},
        {"QsgdManyLevels", "name = \"qsgd\"\nlevels = 255", SplitsAlways},
        // 9-bit fields
        {"QsgdFiveLevels", "name = \"qsgd\"\nlevels = 5\nnorm = \"inf\"", SplitsAlways},
        {"QsgdOddWidth", "name = \"qsgd\"\nlevels = 3", SplitsAlways},
    });

PhiloxStream Stream(std::uint64_t step = 1) {
  return PhiloxStream({31, Purpose::kWorkerCompression, 2, step});
}

float ScaleOf(const Message& m) {
  float scale;
  std::memcpy(&scale, m.bytes.data(), sizeof(float));
  return scale;
}

template <typename T>
Vector<T> RoundTrip(Compressor<T>& c, const Vector<T>& x, Message& m, std::uint64_t step = 1) {
  PhiloxStream stream = Stream(step);
  c.Encode(x, stream, m);
  Vector<T> y(x.size());
  c.Decode(m, y);
  return y;
}

template <typename T>
void HandComputedMessages() {
  // s = 1, 2-norm 2: t = (0, 1, 0), so the levels are 0, 1, 0 whatever the draws. Fields of 2 bits
  // (level, sign): 00, 11, 00 -> stream bits 2 and 3 -> 0x0C.
  {
    auto c = MakeQsgd<T>(1, QsgdNorm::kTwo, 3);
    Message m;
    PhiloxStream stream = Stream();
    const Vector<T> x = (Vector<T>(3) << 0, -2, 0).finished();
    const EncodeStats stats = c->Encode(x, stream, m);
    EXPECT_EQ(stats.elements, 3);
    EXPECT_EQ(stats.out_of_domain, 0);
    EXPECT_EQ(stream.position(), 3u) << "one word per element";
    EXPECT_EQ(m.bytes, (std::vector<std::uint8_t>{0x00, 0x00, 0x00, 0x40, 0x0C}));
    Vector<T> y(3);
    c->Decode(m, y);
    EXPECT_EQ(y, x);
  }
  // s = 2, 2-norm 2: t_j = 2 (1 / 2) = 1 for all, levels 1. Fields of 3 bits: 001, 101, 101, 001
  // -> stream bits 0, 3, 5, 6, 8, 9 -> 0x69 0x03.
  {
    auto c = MakeQsgd<T>(2, QsgdNorm::kTwo, 4);
    Message m;
    const Vector<T> x = (Vector<T>(4) << 1, -1, -1, 1).finished();
    EXPECT_EQ(RoundTrip(*c, x, m), x);
    EXPECT_EQ(m.bytes, (std::vector<std::uint8_t>{0x00, 0x00, 0x00, 0x40, 0x69, 0x03}));
  }
  // s = 4, max-norm 2: t = (1, 4, 2). Fields of 4 bits: 0001, 1100, 0010 -> 0xC1 0x02.
  {
    auto c = MakeQsgd<T>(4, QsgdNorm::kInf, 3);
    Message m;
    const Vector<T> x = (Vector<T>(3) << 0.5, -2, 1).finished();
    EXPECT_EQ(RoundTrip(*c, x, m), x);
    EXPECT_EQ(m.bytes, (std::vector<std::uint8_t>{0x00, 0x00, 0x00, 0x40, 0xC1, 0x02}));
  }
  // 2-norm 5 for (3, 4), s = 1: p = 0.6 and 0.8, decided by words 0 and 1.
  {
    auto c = MakeQsgd<T>(1, QsgdNorm::kTwo, 2);
    Message m;
    const Vector<T> x = (Vector<T>(2) << 3, -4).finished();
    const Vector<T> y = RoundTrip(*c, x, m);
    PhiloxStream replay = Stream();
    const std::uint32_t r0 = replay(), r1 = replay();
    EXPECT_EQ(y[0], static_cast<double>(r0) < 0.6 * 4294967296.0 ? T(5) : T(0));
    EXPECT_EQ(y[1], static_cast<double>(r1) < 0.8 * 4294967296.0 ? T(-5) : T(0));
  }
}

TEST(Qsgd, HandComputedMessages) {
  HandComputedMessages<float>();
  HandComputedMessages<double>();
}

TEST(Qsgd, FollowsTheDrawRuleWithTheFloat32NormSent) {
  for (const QsgdNorm norm : {QsgdNorm::kTwo, QsgdNorm::kInf}) {
    for (const int s : {1, 3, 16}) {
      const Eigen::Index d = 257;
      const Eigen::VectorXd x = testing::GaussianVector(d, 5) * 0.1;  // not float-representable
      auto c = MakeQsgd<double>(s, norm, d);
      Message m;
      const Eigen::VectorXd y = RoundTrip(*c, x, m, 7);
      const double exact = norm == QsgdNorm::kTwo ? x.norm() : x.cwiseAbs().maxCoeff();
      const float n_f = ScaleOf(m);
      // The norm rounded up to float32: the smallest float >= the norm.
      EXPECT_GE(static_cast<double>(n_f), exact);
      EXPECT_LT(static_cast<double>(std::nextafter(n_f, 0.0f)), exact);
      PhiloxStream replay = Stream(7);
      for (Eigen::Index j = 0; j < d; ++j) {
        const std::uint32_t r = replay();
        const double t = s * (std::abs(x[j]) / n_f);
        const double level =
            std::floor(t) + (static_cast<double>(r) < (t - std::floor(t)) * 0x1p32);
        const double expected = std::copysign(static_cast<double>(n_f) * level / s, x[j]);
        ASSERT_EQ(y[j], level == 0 ? 0.0 : expected) << "s = " << s << ", j = " << j;
      }
    }
  }
}

TEST(Qsgd, DrawEqualToTheFractionStaysDown) {
  // Max-norm 1, s = 1: p_j = x_j. With x_j = r_j / 2^32 (exact), U_j < p_j fails: level 0; with
  // x_j = (r_j + 1) / 2^32 it holds: level 1.
  const Eigen::Index d = 64;
  PhiloxStream replay = Stream();
  Eigen::VectorXd at(d), above(d);
  for (Eigen::Index j = 0; j < d; ++j) {
    const double r = replay();
    at[j] = r * 0x1p-32;
    above[j] = (r + 1) * 0x1p-32;
  }
  at[0] = above[0] = 1.0;  // the max-norm, exactly 1
  auto c = MakeQsgd<double>(1, QsgdNorm::kInf, d);
  Message m;
  const Eigen::VectorXd y_at = RoundTrip(*c, at, m);
  const Eigen::VectorXd y_above = RoundTrip(*c, above, m);
  EXPECT_EQ(y_at[0], 1.0);
  for (Eigen::Index j = 1; j < d; ++j) {
    EXPECT_EQ(y_at[j], 0.0) << "j = " << j;
    EXPECT_EQ(y_above[j], 1.0) << "j = " << j;
  }
}

TEST(Qsgd, ProbabilitiesUseTheFloat32NormThatIsSent) {
  // Max-norm M = 1 + 2^-30 goes on the wire as N_f = 1 + 2^-23. Element j (r_j < 2^31) is set to
  // x_j = q_j 2^-24 N_f with q_j = floor(r_j / 2^8), so that p_j = x_j / N_f = q_j 2^-24 exactly
  // and U_j < p_j fails (r_j >= q_j 2^8): level 0. Probabilities from the unrounded M would be
  // larger by 2^-23 relative (about 128 words out of 2^32 at r_j ~ 2^30) and send about half of
  // these elements up, biasing the message the receiver scales by N_f.
  const Eigen::Index d = 64;
  const double m_norm = 1 + 0x1p-30, n_f = 1 + 0x1p-23;
  PhiloxStream replay = Stream();
  std::vector<std::uint32_t> words(d);
  for (auto& r : words) r = replay();
  Eigen::VectorXd x(d);
  x[0] = m_norm;
  for (Eigen::Index j = 1; j < d; ++j) {
    x[j] = words[j] < 0x80000000u ? std::floor(words[j] / 256.0) * 0x1p-24 * n_f : 0.25;
  }
  auto c = MakeQsgd<double>(1, QsgdNorm::kInf, d);
  Message m;
  const Eigen::VectorXd y = RoundTrip(*c, x, m);
  ASSERT_EQ(ScaleOf(m), static_cast<float>(n_f));
  int checked = 0;
  for (Eigen::Index j = 1; j < d; ++j) {
    if (words[j] >= 0x80000000u) continue;
    EXPECT_EQ(y[j], 0.0) << "j = " << j;
    ++checked;
  }
  EXPECT_GT(checked, 20);
}

TEST(Qsgd, UnbiasedWithTheExactPerCoordinateVariance) {
  const Eigen::Index d = 24;
  Eigen::VectorXd x = testing::GaussianVector(d, 9);
  x[3] = 0;
  for (const QsgdNorm norm : {QsgdNorm::kTwo, QsgdNorm::kInf}) {
    for (const int s : {1, 2, 5}) {
      auto c = MakeQsgd<double>(s, norm, d);
      const int draws = 20000;
      Eigen::VectorXd sum = Eigen::VectorXd::Zero(d), sq = Eigen::VectorXd::Zero(d);
      Message m;
      double n = 0;
      for (int k = 0; k < draws; ++k) {
        const Eigen::VectorXd y = RoundTrip(*c, x, m, static_cast<std::uint64_t>(k + 1));
        n = ScaleOf(m);
        sum += y;
        sq += (y - x).cwiseAbs2();
      }
      for (Eigen::Index j = 0; j < d; ++j) {
        const double t = s * (std::abs(x[j]) / n), p = t - std::floor(t);
        const double lo = n * std::floor(t) / s, hi = lo + n / s;  // |C_j| takes lo or hi
        const double var = (n / s) * (n / s) * p * (1 - p);
        const double mean = sum[j] / draws;
        EXPECT_NEAR(mean, x[j], 5 * std::sqrt(var / draws) + 1e-15) << "s = " << s << ", j = " << j;
        // (C_j - x_j)^2 is (|x_j| - lo)^2 w.p. 1 - p and (hi - |x_j|)^2 w.p. p.
        const double a = std::abs(x[j]);
        const double e4 = (1 - p) * std::pow(a - lo, 4) + p * std::pow(hi - a, 4);
        EXPECT_NEAR(sq[j] / draws, var, 5 * std::sqrt((e4 - var * var) / draws) + 1e-15)
            << "s = " << s << ", j = " << j;
      }
    }
  }
}

// Alistarh et al. Lemma 3.1 (ii): E||Q_s(x) - x||^2 <= min(d / s^2, sqrt(d) / s) ||x||^2.
TEST(Qsgd, VarianceWithinLemma31Bound) {
  struct Case {
    Eigen::VectorXd x;
    int s;
    double known = 0;  // the expected squared error, when known by hand
  };
  std::vector<Case> cases;
  for (const Eigen::Index d : {1, 10, 100, 1000}) {
    for (const int s : {1, 2, 4, 16}) cases.push_back({testing::GaussianVector(d, 40 + d), s});
  }
  // All |x_j| equal with s = 1, d = 100: p_j = 1/10, E = 100 * 0.09 = 9 ||x||^2 against the
  // bound sqrt(d) / s = 10: close to tight, so the test would see a variance 11% too large.
  cases.push_back({Eigen::VectorXd::Ones(100), 1, 900});
  for (const Case& k : cases) {
    const auto d = k.x.size();
    auto c = MakeQsgd<double>(k.s, QsgdNorm::kTwo, d);
    const int draws = 2000;
    double sum = 0;
    Message m;
    double n = 0;
    for (int i = 0; i < draws; ++i) {
      sum += (RoundTrip(*c, k.x, m, static_cast<std::uint64_t>(i + 1)) - k.x).squaredNorm();
      n = ScaleOf(m);
    }
    const double mean = sum / draws;
    // The exact mean and variance of ||Q(x) - x||^2, a sum of independent two-point terms:
    // (|x_j| - lo)^2 w.p. 1 - p_j and (lo + N/s - |x_j|)^2 w.p. p_j, lo = N floor(t_j) / s.
    double exact = 0, variance = 0;
    for (Eigen::Index j = 0; j < d; ++j) {
      const double a = std::abs(k.x[j]);
      const double t = k.s * (a / n), p = t - std::floor(t);
      const double lo = n * std::floor(t) / k.s, hi = lo + n / k.s;
      exact += (n / k.s) * (n / k.s) * p * (1 - p);
      variance += p * (1 - p) * std::pow((hi - a) * (hi - a) - (a - lo) * (a - lo), 2);
    }
    const double se = std::sqrt(variance / draws);
    const double bound =
        std::min(static_cast<double>(d) / (k.s * k.s), std::sqrt(static_cast<double>(d)) / k.s) *
        k.x.squaredNorm();
    SCOPED_TRACE(::testing::Message() << "d = " << d << ", s = " << k.s);
    EXPECT_NEAR(mean, exact, 5 * se + 1e-12 * exact);
    EXPECT_LE(mean, bound + 5 * se);
    EXPECT_LE(exact, bound * (1 + 1e-6));  // N_f exceeds ||x|| by at most 2^-24 relative
    if (k.known > 0) {
      EXPECT_NEAR(exact, k.known, 1e-9 * k.known);
    }
  }
}

TEST(Qsgd, ExactMessageSizes) {
  for (const int s : {1, 2, 3, 4, 7, 8, 255, 256, 65535}) {
    const int w = QsgdLevelBits(s);
    EXPECT_EQ(w, static_cast<int>(std::ceil(std::log2(s + 1.0)))) << "s = " << s;
    for (const Eigen::Index d : {1, 2, 7, 8, 9, 31, 33, 100, 1001}) {
      auto c = MakeQsgd<float>(s, QsgdNorm::kTwo, d);
      Message m;
      const Eigen::VectorXf x =
          testing::GaussianVector(d, static_cast<std::uint64_t>(d)).cast<float>();
      RoundTrip(*c, x, m);
      const std::int64_t stream_bits = d * (w + 1);
      EXPECT_EQ(m.bits(), 32 + 8 * ((stream_bits + 7) / 8)) << "s = " << s << ", d = " << d;
      if (stream_bits % 8 != 0) {
        EXPECT_EQ(m.bytes.back() >> (stream_bits % 8), 0) << "unused bits must be zero";
      }
    }
  }
  EXPECT_EQ(QsgdLevelBits(1), 1);
  EXPECT_EQ(QsgdLevelBits(4), 3);
  EXPECT_EQ(QsgdLevelBits(7), 3);
  EXPECT_EQ(QsgdLevelBits(8), 4);
  EXPECT_EQ(QsgdLevelBits(65535), 16);
}

TEST(Qsgd, ZeroNonFiniteAndOutOfRangeInput) {
  auto c = MakeQsgd<double>(4, QsgdNorm::kTwo, 5);
  Message m;
  // Zero: norm 0, all levels 0, decoded 0 (no 0/0).
  Eigen::VectorXd y = RoundTrip(*c, Eigen::VectorXd::Zero(5).eval(), m);
  EXPECT_EQ(ScaleOf(m), 0.0f);
  EXPECT_EQ(y, Eigen::VectorXd::Zero(5));
  // NaN and infinity are counted, left out of the norm, and sent as 0.
  Eigen::VectorXd x(5);
  x << 3, std::nan(""), 4, -HUGE_VAL, 0;
  PhiloxStream stream = Stream();
  EXPECT_EQ(c->Encode(x, stream, m).non_finite, 2);
  EXPECT_EQ(ScaleOf(m), 5.0f);
  c->Decode(m, y);
  EXPECT_EQ(y[1], 0.0);
  EXPECT_EQ(y[3], 0.0);
  // A double beyond float32: the norm is sent as the largest float, the element at level s.
  x << 1e39, 1, 0, 0, -1e200;  // 1e200^2 overflows the sum: the norm is infinite
  stream = Stream();
  const EncodeStats stats = c->Encode(x, stream, m);
  EXPECT_EQ(stats.out_of_domain, 2);
  EXPECT_EQ(stats.non_finite, 0);
  EXPECT_EQ(ScaleOf(m), std::numeric_limits<float>::max());
  c->Decode(m, y);
  EXPECT_EQ(y[0], std::numeric_limits<float>::max());
  EXPECT_EQ(y[4], -std::numeric_limits<float>::max());
  EXPECT_TRUE(y.allFinite());
}

TEST(Qsgd, OptionsAreValidated) {
  auto make = [](const std::string& toml) {
    return MakeCompressorMaker<double>(*ParseOptionTable(toml, "compressor"));
  };
  EXPECT_EQ(make("name = \"qsgd\"")(CompressorShape::Flat(10))->name(), "qsgd");
  EXPECT_THAT(testing::UserErrorOf([&] { make("name = \"qsgd\"\nlevels = 0"); }),
              ::testing::HasSubstr("levels must be in [1, 65535], got 0"));
  EXPECT_THAT(testing::UserErrorOf([&] { make("name = \"qsgd\"\nlevels = 65536"); }),
              ::testing::HasSubstr("levels must be in [1, 65535], got 65536"));
  EXPECT_THAT(testing::UserErrorOf([&] { make("name = \"qsgd\"\nnorm = \"1\""); }),
              ::testing::HasSubstr("norm must be one of 2, inf; got '1'"));
  EXPECT_THAT(testing::UserErrorOf([&] { make("name = \"qsgd\"\nlevel = 3"); }),
              ::testing::HasSubstr("level"));
}

}  // namespace
}  // namespace lemmalab
