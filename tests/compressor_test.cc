// Compressors and error feedback: packed round trips, the documented draw rule, exact message
// sizes, Birder's Lemma 1 (unbiasedness, variance 1 - u^2), domain policies, non-finite input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/random/uniform_01.hpp>
#include <cmath>

#include "compressors/error_feedback.h"
#include "compressors/identity.h"
#include "compressors/sign.h"
#include "compressors/stochastic_binary.h"
#include "core/bits.h"
#include "core/error.h"
#include "tests/compressor_examples.h"

namespace lemmalab {
namespace {

// The contract and split tests' configurations of identity, sign, scaled-sign, block-sign,
// stochastic-binary (tests/compressor_examples.h).
const CompressorExamples kCompressorExamples(
    {
        {"Identity", R"(name = "identity")",
         [](const CompressorShape& s, int scalar_bits) { return scalar_bits * s.dimension; }},
        {"Sign", R"(name = "sign")",
         [](const CompressorShape& s, int) { return SignBits(s.dimension); }},
        {"ScaledSign", R"(name = "scaled-sign")",
         [](const CompressorShape& s, int) { return SignBits(s.dimension) + 32; }},
        {"ScaledSignChunks", "name = \"scaled-sign\"\nchunk = 5",
         [](const CompressorShape& s, int) {
           return SignBits(s.dimension) + 32 * Chunks(s.dimension, 5);
         }},
        {"BlockSignLayers", R"(name = "block-sign")",
         [](const CompressorShape& s, int) {
           return SignBits(s.dimension) + 32 * static_cast<std::int64_t>(s.layers.size());
         }},
        {"BlockSignFixed", "name = \"block-sign\"\nblocks = \"fixed\"\nblock_size = 6",
         [](const CompressorShape& s, int) {
           return SignBits(s.dimension) + 32 * Chunks(s.dimension, 6);
         }},
        {"StochasticBinaryClip", R"(name = "stochastic-binary")",
         [](const CompressorShape& s, int) { return SignBits(s.dimension); }},
        {"StochasticBinaryRescale", "name = \"stochastic-binary\"\ndomain = \"rescale\"",
         [](const CompressorShape& s, int) { return SignBits(s.dimension) + 32; }},
    },
    {
        {"Identity", R"(name = "identity")", SplitsAlways},
        {"Sign", R"(name = "sign")", SplitsAlways},
        {"ScaledSign", R"(name = "scaled-sign")", SplitsAlways},
        // Chunks of 64 line up with every 64-aligned bound; chunks of 5 only with multiples of 320
        // (or a range inside one chunk); a chunk longer than the vector is one scale.
        {"ScaledSignChunk64", "name = \"scaled-sign\"\nchunk = 64", SplitsOnBlocksOf(64)},
        {"ScaledSignChunk5", "name = \"scaled-sign\"\nchunk = 5", SplitsOnBlocksOf(5)},
        {"ScaledSignChunkHuge", "name = \"scaled-sign\"\nchunk = 100000", SplitsOnBlocksOf(100000)},
        {"BlockSignLayers", R"(name = "block-sign")", SplitsAlways},
        {"BlockSignFixed6", "name = \"block-sign\"\nblocks = \"fixed\"\nblock_size = 6",
         SplitsOnBlocksOf(6)},
        {"BlockSignFixed128", "name = \"block-sign\"\nblocks = \"fixed\"\nblock_size = 128",
         SplitsOnBlocksOf(128)},
        {"StochasticBinaryClip", R"(name = "stochastic-binary")", SplitsAlways},
        {"StochasticBinaryRescale", "name = \"stochastic-binary\"\ndomain = \"rescale\"",
         SplitsAlways},
    });

// Values in [-1, 1] with every pattern of sign and magnitude, including the ends.
Eigen::VectorXd InDomain(Eigen::Index d, std::uint64_t seed) {
  PhiloxStream s({seed, Purpose::kDataSynthesis, kGlobalStream, 0});
  boost::random::uniform_01<double> u;
  Eigen::VectorXd x(d);
  for (Eigen::Index j = 0; j < d; ++j) x[j] = 2 * u(s) - 1;
  if (d > 2) {
    x[0] = 1.0;
    x[1] = -1.0;
    x[2] = 0.0;
  }
  return x;
}

PhiloxStream Stream(std::uint64_t step = 1) {
  return PhiloxStream({99, Purpose::kWorkerCompression, 0, step});
}

const Eigen::Index kSizes[] = {1, 2, 7, 8, 9, 31, 32, 33, 64, 1000, 4097};

TEST(StochasticBinary, PackedRoundTripFollowsTheDrawRule) {
  for (const Eigen::Index d : kSizes) {
    const Eigen::VectorXd x = InDomain(d, static_cast<std::uint64_t>(d));
    auto q = MakeStochasticBinary<double>(QuantizerDomain::kClip, d);
    Message m;
    PhiloxStream stream = Stream();
    const EncodeStats stats = q->Encode(x, stream, m);
    ASSERT_EQ(static_cast<Eigen::Index>(m.bytes.size()), (d + 7) / 8) << "d = " << d;
    EXPECT_EQ(m.bits(), 8 * ((d + 7) / 8));
    EXPECT_EQ(stats.elements, d);
    EXPECT_EQ(stats.out_of_domain, 0);
    // Unused high bits of the last byte are zero.
    if (d % 8 != 0) {
      EXPECT_EQ(m.bytes.back() >> (d % 8), 0);
    }

    Eigen::VectorXd decoded(d);
    q->Decode(m, decoded);
    PhiloxStream replay = Stream();
    boost::random::uniform_01<double> uniform;
    for (Eigen::Index j = 0; j < d; ++j) {
      const double expected = uniform(replay) < (x[j] + 1) / 2 ? 1.0 : -1.0;
      ASSERT_EQ(decoded[j], expected) << "d = " << d << ", j = " << j;
      ASSERT_EQ(GetBit(m.bytes.data(), j), expected > 0);
    }
    // +-1 inputs are deterministic: p is 0 or 1.
    if (d > 2) {
      EXPECT_EQ(decoded[0], 1.0);
      EXPECT_EQ(decoded[1], -1.0);
    }
    Eigen::VectorXd acc = Eigen::VectorXd::Constant(d, 0.5);
    q->DecodeAdd(m, 2.0, acc);
    EXPECT_EQ(acc, (Eigen::VectorXd::Constant(d, 0.5) + 2.0 * decoded).eval());
  }
}

TEST(StochasticBinary, DrawEqualToPIsMinusOne) {
  // The rule is +1 iff U_j < p_j, strictly: with x_j = 2 U_j - 1 (so p_j = U_j exactly, since
  // U_j has 32 significant bits) every element must come out -1.
  const Eigen::Index d = 64;
  PhiloxStream replay = Stream();
  boost::random::uniform_01<double> uniform;
  Eigen::VectorXd x(d);
  for (Eigen::Index j = 0; j < d; ++j) x[j] = 2 * uniform(replay) - 1;
  auto q = MakeStochasticBinary<double>(QuantizerDomain::kClip, d);
  Message m;
  PhiloxStream s = Stream();
  q->Encode(x, s, m);
  EXPECT_EQ(m.bytes, std::vector<std::uint8_t>(8, 0));
}

TEST(StochasticBinary, SameStreamSameMessageOtherStepOtherMessage) {
  const Eigen::VectorXd x = InDomain(256, 3);
  auto q = MakeStochasticBinary<double>(QuantizerDomain::kClip, 256);
  Message a, b, c;
  PhiloxStream s1 = Stream(1), s2 = Stream(1), s3 = Stream(2);
  q->Encode(x, s1, a);
  q->Encode(x, s2, b);
  q->Encode(x, s3, c);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_NE(a.bytes, c.bytes);
}

// Birder Lemma 1: E[Q(u)] = u and E[(u - Q(u))_j^2] = 1 - u_j^2. With K draws the sample mean
// of Q(u)_j has standard deviation sqrt((1 - u_j^2) / K); a 5-sigma band fails with
// probability below 1e-6 per coordinate, and the seeds are fixed.
TEST(StochasticBinary, UnbiasedWithVarianceOneMinusUSquared) {
  const Eigen::Index d = 16;
  const Eigen::VectorXd u = InDomain(d, 5);
  const int draws = 20000;
  auto q = MakeStochasticBinary<double>(QuantizerDomain::kClip, d);
  Eigen::VectorXd sum = Eigen::VectorXd::Zero(d), sq_err = Eigen::VectorXd::Zero(d);
  Eigen::VectorXd decoded(d);
  Message m;
  for (int k = 0; k < draws; ++k) {
    PhiloxStream s = Stream(static_cast<std::uint64_t>(k + 1));
    q->Encode(u, s, m);
    q->Decode(m, decoded);
    sum += decoded;
    sq_err += (u - decoded).cwiseAbs2();
  }
  for (Eigen::Index j = 0; j < d; ++j) {
    const double variance = 1 - u[j] * u[j];
    const double mean = sum[j] / draws;
    EXPECT_NEAR(mean, u[j], 5 * std::sqrt(variance / draws) + 1e-12) << "j = " << j;
    // E(u - Q)^2 = 1 - u^2; (u - Q)^2 takes values (1 -+ u)^2, variance <= 4 (1 - u^2).
    EXPECT_NEAR(sq_err[j] / draws, variance, 5 * 2 * std::sqrt(variance / draws) + 1e-12)
        << "j = " << j;
  }
}

TEST(StochasticBinary, ClipPolicyCountsAndClampsInputsOutsideTheDomain) {
  Eigen::VectorXd x(5);
  x << 1.5, -3.0, 0.25, 1.0, -1.0;
  auto q = MakeStochasticBinary<double>(QuantizerDomain::kClip, 5);
  EXPECT_FALSE(q->unbiased());
  Message m;
  PhiloxStream s = Stream();
  const EncodeStats stats = q->Encode(x, s, m);
  EXPECT_EQ(stats.out_of_domain, 2);
  EXPECT_EQ(stats.non_finite, 0);
  Eigen::VectorXd decoded(5);
  q->Decode(m, decoded);
  EXPECT_EQ(decoded[0], 1.0);   // clamped to 1: p = 1
  EXPECT_EQ(decoded[1], -1.0);  // clamped to -1: p = 0
  EXPECT_EQ(m.bytes.size(), 1u);
}

TEST(StochasticBinary, RescalePolicyIsUnbiasedOutsideTheDomainAndSendsItsScale) {
  Eigen::VectorXd x(3);
  x << 2.5, -0.5, 1.25;
  auto q = MakeStochasticBinary<double>(QuantizerDomain::kRescale, 3);
  EXPECT_TRUE(q->unbiased());
  Message m;
  Eigen::VectorXd decoded(3), sum = Eigen::VectorXd::Zero(3);
  const int draws = 20000;
  for (int k = 0; k < draws; ++k) {
    PhiloxStream s = Stream(static_cast<std::uint64_t>(k + 1));
    const EncodeStats stats = q->Encode(x, s, m);
    ASSERT_EQ(stats.out_of_domain, 2);
    ASSERT_EQ(m.bytes.size(), 4u + 1u);  // float32 scale + 1 byte of bits
    q->Decode(m, decoded);
    ASSERT_EQ(decoded.cwiseAbs(), Eigen::Vector3d::Constant(2.5));
    sum += decoded;
  }
  for (int j = 0; j < 3; ++j) {
    // Var Q = s^2 - x^2 for Q = +-s.
    const double sd = std::sqrt((6.25 - x[j] * x[j]) / draws);
    EXPECT_NEAR(sum[j] / draws, x[j], 5 * sd + 1e-12);
  }
  // Within the domain the scale is exactly 1.
  Eigen::VectorXd inside = InDomain(9, 1);
  PhiloxStream s = Stream();
  MakeStochasticBinary<double>(QuantizerDomain::kRescale, 9)->Encode(inside, s, m);
  float scale;
  std::memcpy(&scale, m.bytes.data(), sizeof(float));
  EXPECT_EQ(scale, 1.0f);
}

TEST(StochasticBinary, RescaleScaleIsRoundedUpToFloat32) {
  // 1 + 2^-30 is not a float; rounding to nearest would give 1 and |x / s| > 1.
  Eigen::VectorXd x(1);
  x << 1.0 + std::ldexp(1.0, -30);
  auto q = MakeStochasticBinary<double>(QuantizerDomain::kRescale, 1);
  Message m;
  PhiloxStream s = Stream();
  q->Encode(x, s, m);
  float scale;
  std::memcpy(&scale, m.bytes.data(), sizeof(float));
  EXPECT_GE(static_cast<double>(scale), x[0]);
  EXPECT_EQ(scale, std::nextafter(1.0f, 2.0f));
}

TEST(StochasticBinary, NonFiniteInputIsCountedNotHidden) {
  Eigen::VectorXd x(4);
  x << 0.5, std::nan(""), INFINITY, -0.5;
  for (const auto domain : {QuantizerDomain::kClip, QuantizerDomain::kRescale}) {
    auto q = MakeStochasticBinary<double>(domain, 4);
    Message m;
    PhiloxStream s = Stream();
    const EncodeStats stats = q->Encode(x, s, m);
    EXPECT_EQ(stats.non_finite, 2);
    Eigen::VectorXd decoded(4);
    q->Decode(m, decoded);
    EXPECT_TRUE(decoded.allFinite());
  }
}

TEST(Identity, ExactRoundTripInTheRunsPrecision) {
  for (const Eigen::Index d : kSizes) {
    const Vector<float> x = InDomain(d, 8).cast<float>() * 1e3f;
    auto c = MakeIdentity<float>();
    Message m;
    PhiloxStream s = Stream();
    c->Encode(x, s, m);
    EXPECT_EQ(m.bits(), 32 * d);
    Vector<float> y(d);
    c->Decode(m, y);
    EXPECT_EQ(x, y);
  }
  auto c = MakeIdentity<double>();
  Message m;
  PhiloxStream s = Stream();
  c->Encode(Eigen::VectorXd::Ones(3), s, m);
  EXPECT_EQ(m.bits(), 3 * 64);
}

TEST(ErrorFeedback, KeepsWhatTheMessageCouldNotCarry) {
  const Eigen::Index d = 40;
  auto q = MakeStochasticBinary<double>(QuantizerDomain::kClip, d);
  ErrorFeedback<double> ef(FeedbackKind::kClassic, d);
  Eigen::VectorXd e_before = Eigen::VectorXd::Zero(d), decoded(d);
  Message m;
  for (std::uint64_t t = 1; t <= 5; ++t) {
    const Eigen::VectorXd x = 0.5 * InDomain(d, t);
    PhiloxStream s = Stream(t);
    ef.Compress(x, *q, s, m);
    q->Decode(m, decoded);
    // e_t = e_{t-1} + x - C(x + e_{t-1}), exactly as computed.
    const Eigen::VectorXd input = x + e_before;
    EXPECT_EQ(ef.error(), (input - decoded).eval());
    // The message is the compression of x + e.
    Message direct;
    PhiloxStream replay = Stream(t);
    q->Encode(input, replay, direct);
    EXPECT_EQ(direct.bytes, m.bytes);
    e_before = ef.error();
  }
}

TEST(ErrorFeedback, DisabledSendsCOfXAndIdentityLeavesNoError) {
  const Eigen::VectorXd x = InDomain(20, 4);
  auto q = MakeStochasticBinary<double>(QuantizerDomain::kClip, 20);
  ErrorFeedback<double> off(FeedbackKind::kNone, 20);
  Message m, direct;
  PhiloxStream s1 = Stream(), s2 = Stream();
  off.Compress(x, *q, s1, m);
  q->Encode(x, s2, direct);
  EXPECT_EQ(m.bytes, direct.bytes);
  EXPECT_EQ(off.error(), Eigen::VectorXd::Zero(20));

  auto identity = MakeIdentity<double>();
  ErrorFeedback<double> on(FeedbackKind::kClassic, 20);
  PhiloxStream s3 = Stream();
  on.Compress(x, *identity, s3, m);
  EXPECT_EQ(on.error(), Eigen::VectorXd::Zero(20));
}

// onebit-adam.txt Sec. 4.2: with a time-varying rate the error must be restated in the current
// step's units. With a_t = gamma_{t-1} / gamma_t the applied updates telescope:
//   sum_t gamma_t C(g_t + a_t e_{t-1}) = sum_t gamma_t g_t - gamma_T e_T,
// so nothing the messages dropped is lost. Classic EF and the factor as printed break it.
double TelescopingResidual(FeedbackKind kind) {
  const Eigen::Index d = 30;
  auto sign = MakeSign<double>(d);
  ErrorFeedback<double> ef(kind, d);
  Eigen::VectorXd applied = Eigen::VectorXd::Zero(d), wanted = Eigen::VectorXd::Zero(d);
  Eigen::VectorXd decoded(d);
  Message m;
  double lr = 0;
  for (std::uint64_t t = 1; t <= 12; ++t) {
    lr = 0.1 / std::sqrt(static_cast<double>(t)) * (t % 3 == 0 ? 2.0 : 1.0);
    const Eigen::VectorXd g = InDomain(d, 40 + t) * 3.0;
    PhiloxStream s = Stream(t);
    ef.Compress(g, *sign, s, m, lr);
    sign->Decode(m, decoded);
    applied += lr * decoded;
    wanted += lr * g;
  }
  return (applied - (wanted - lr * ef.error())).norm() / wanted.norm();
}

TEST(ErrorFeedback, ScaledFeedbackTelescopesUnderATimeVaryingRate) {
  EXPECT_LT(TelescopingResidual(FeedbackKind::kScaled), 1e-14);
  // Negative controls: the classic error and the factor as printed leave a visible residual.
  EXPECT_GT(TelescopingResidual(FeedbackKind::kClassic), 1e-3);
  EXPECT_GT(TelescopingResidual(FeedbackKind::kScaledAsPrinted), 1e-3);
}

TEST(ErrorFeedback, ScaledFactorIsTheRatioOfRates) {
  auto q = MakeSign<double>(4);
  Message m;
  ErrorFeedback<double> scaled(FeedbackKind::kScaled, 4),
      printed(FeedbackKind::kScaledAsPrinted, 4);
  for (const double lr : {0.5, 0.25, 1.0}) {
    PhiloxStream s1 = Stream(), s2 = Stream();
    scaled.Compress(Eigen::VectorXd::Ones(4), *q, s1, m, lr);
    printed.Compress(Eigen::VectorXd::Ones(4), *q, s2, m, lr);
  }
  EXPECT_EQ(scaled.last_factor(), 0.25);  // gamma_{t-1} / gamma_t = 0.25 / 1
  EXPECT_EQ(printed.last_factor(), 4.0);  // gamma_t / gamma_{t-1}
  // With a constant rate every kind is classic EF.
  ErrorFeedback<double> classic(FeedbackKind::kClassic, 4), constant(FeedbackKind::kScaled, 4);
  for (std::uint64_t t = 1; t <= 3; ++t) {
    PhiloxStream s1 = Stream(t), s2 = Stream(t);
    classic.Compress(InDomain(4, t), *q, s1, m, 0.3);
    constant.Compress(InDomain(4, t), *q, s2, m, 0.3);
  }
  EXPECT_EQ(classic.error(), constant.error());
}

TEST(ErrorFeedback, KindIsReadByName) {
  OptionTable t("optimizer 'ef-sgd'", "spec.toml:2:1");
  EXPECT_EQ(FeedbackFromOptions(t, "error_feedback", FeedbackKind::kClassic),
            FeedbackKind::kClassic);
  t.Set("error_feedback", {std::string("scaled"), "spec.toml:3:18"});
  EXPECT_EQ(FeedbackFromOptions(t, "error_feedback", FeedbackKind::kNone), FeedbackKind::kScaled);
  t.Set("error_feedback", {std::string("scaled-as-printed"), "spec.toml:3:18"});
  EXPECT_EQ(FeedbackFromOptions(t, "error_feedback", FeedbackKind::kNone),
            FeedbackKind::kScaledAsPrinted);
  t.Set("error_feedback", {std::string("clasic"), "spec.toml:3:18"});
  try {
    FeedbackFromOptions(t, "error_feedback", FeedbackKind::kNone);
    ADD_FAILURE() << "accepted 'clasic'";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("error_feedback"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("clasic"));
  }
}

}  // namespace
}  // namespace lemmalab
