// 1-bit Adam, 1-bit Adam (32-bits) and Adam (1-bit naive) (one_bit-adam.txt Algorithm 1, Sec. 3.2
// and 7.2): reductions to Adam and to each other step by step, the frozen v, the wire sizes of
// both phases, a compressed phase replayed by hand, and option validation.
#include "optimizers/one_bit_adam.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "compressors/identity.h"
#include "compressors/scaled_sign.h"
#include "optimizers/adam.h"
#include "tests/optimizer_test_util.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using ::testing::HasSubstr;
using testing::Int;
using testing::MakeNamed;
using testing::Step;
using testing::Str;
using testing::UserErrorOf;
using testing::Vec;

// Step's seed, which the streams below replay.
constexpr std::uint64_t kSeed = testing::kStepSeed;

using testing::RelativeDistance;
using testing::SmoothGradients;

double Rate(std::int64_t t) { return 0.01 / std::sqrt(static_cast<double>(t)); }

// Line 2: while t <= T_w, 1-bit Adam is Adam without bias correction (Eq. 1), the same
// arithmetic in the same order, so the trajectories are equal bit for bit.
TEST(OneBitAdam, WarmupIsAdamWithoutBiasCorrection) {
  const int n = 3;
  const Eigen::Index d = 4;
  for (const char* placement : {"outside", "inside"}) {
    auto one_bit = MakeNamed("onebit-adam",
                             {{"warmup_steps", Int(8)}, {"eps_placement", Str(placement)}}, {d, n});
    auto adam = MakeNamed(
        "adam", {{"bias_correction", {false, ""}}, {"eps_placement", Str(placement)}}, {d, n});
    Eigen::VectorXd x = Eigen::VectorXd::LinSpaced(d, -1, 1), y = x;
    for (std::int64_t t = 1; t <= 8; ++t) {
      Step(*one_bit, t, Rate(t), SmoothGradients(t, n, d), x);
      Step(*adam, t, Rate(t), SmoothGradients(t, n, d), y);
      EXPECT_EQ(x, y) << placement << " t = " << t;
      EXPECT_EQ(*one_bit->Observe(Quantity::kMomentum, kServer),
                *adam->Observe(Quantity::kMomentum, kServer));
      EXPECT_EQ(*one_bit->Observe(Quantity::kMomentum, 2),
                *adam->Observe(Quantity::kMomentum, kServer));
      EXPECT_EQ(*one_bit->Observe(Quantity::kVariance, 0),
                *adam->Observe(Quantity::kVariance, kServer));
    }
  }
}

// With the identity on both sides the errors stay 0 and line 10 averages the workers' m^(i)
// exactly as sent, so 1-bit Adam is 1-bit Adam (32-bits). The sums differ in order:
// mean_i(beta1 m + (1 - beta1) g_i) against beta1 m + (1 - beta1) mean_i g_i, hence a tolerance
// of 1e-14 relative rather than equality. During warmup both are Eq. 1 and equal exactly.
TEST(OneBitAdam, IdentityCompressionIsOneBitAdamFp32) {
  const int n = 3;
  const Eigen::Index d = 5;
  const std::int64_t warmup = 3;
  for (const char* local : {"sync", "own"}) {
    auto one_bit = MakeNamed("onebit-adam",
                             {{"warmup_steps", Int(warmup)},
                              {"compressor", Str("identity")},
                              {"server_compressor", Str("identity")},
                              {"local_momentum", Str(local)}},
                             {d, n});
    auto fp32 = MakeNamed("onebit-adam-fp32", {{"warmup_steps", Int(warmup)}}, {d, n});
    Eigen::VectorXd x = Eigen::VectorXd::LinSpaced(d, 1, 3), y = x;
    for (std::int64_t t = 1; t <= 12; ++t) {
      Step(*one_bit, t, Rate(t), SmoothGradients(t, n, d), x);
      Step(*fp32, t, Rate(t), SmoothGradients(t, n, d), y);
      if (t <= warmup) {
        EXPECT_EQ(x, y) << local << " t = " << t;
      } else {
        EXPECT_LT(RelativeDistance(x, y), 1e-14) << local << " t = " << t;
      }
      EXPECT_LT(RelativeDistance(*one_bit->Observe(Quantity::kMomentum, kServer),
                                 *fp32->Observe(Quantity::kMomentum, kServer)),
                1e-14)
          << local << " t = " << t;
      EXPECT_EQ(*one_bit->Observe(Quantity::kVariance, kServer),
                *fp32->Observe(Quantity::kVariance, kServer));
      for (int i = 0; i < n; ++i) {
        EXPECT_EQ(*one_bit->Observe(Quantity::kWorkerError, i), Eigen::VectorXd::Zero(d));
      }
      EXPECT_EQ(*one_bit->Observe(Quantity::kServerError, kServer), Eigen::VectorXd::Zero(d));
    }
    EXPECT_GT((x - Eigen::VectorXd::LinSpaced(d, 1, 3)).norm(), 1e-3) << "the run moved";
  }
}

// local_momentum: with identity compression "own" and "sync" give the same m_bar (the mean of
// the m^(i) is the same recursion either way; 1e-14 relative for the order of the sums), while
// the workers' own m^(i) differ. With scaled sign, m_bar != mean m^(i), and the two readings
// of line 6 part: the option is live.
TEST(OneBitAdam, LocalMomentumOwnAndSyncAgreeOnlyWithoutCompression) {
  const int n = 3;
  const Eigen::Index d = 6;
  for (const char* compressor : {"identity", "scaled-sign"}) {
    std::vector<Eigen::VectorXd> result, worker_m;
    for (const char* local : {"sync", "own"}) {
      auto opt = MakeNamed("onebit-adam",
                           {{"warmup_steps", Int(2)},
                            {"compressor", Str(compressor)},
                            {"local_momentum", Str(local)}},
                           {d, n});
      Eigen::VectorXd x = Eigen::VectorXd::LinSpaced(d, -1, 2);
      for (std::int64_t t = 1; t <= 8; ++t) Step(*opt, t, Rate(t), SmoothGradients(t, n, d), x);
      result.push_back(x);
      worker_m.push_back(*opt->Observe(Quantity::kMomentum, 1));
    }
    if (std::string(compressor) == "identity") {
      EXPECT_LT(RelativeDistance(result[1], result[0]), 1e-14);
    } else {
      EXPECT_GT(RelativeDistance(result[1], result[0]), 1e-6);
    }
    EXPECT_GT(RelativeDistance(worker_m[1], worker_m[0]), 1e-6) << compressor;
  }
}

// v changes at every warmup step and not after T_w; kFrozenVariance appears with step T_w.
TEST(OneBitAdam, VarianceIsFrozenAfterWarmup) {
  const int n = 2;
  const Eigen::Index d = 3;
  const std::int64_t warmup = 3;
  for (const char* name : {"onebit-adam", "onebit-adam-fp32"}) {
    auto opt = MakeNamed(name, {{"warmup_steps", Int(warmup)}}, {d, n});
    Eigen::VectorXd x = Eigen::VectorXd::Zero(d);
    Eigen::VectorXd v_previous = Eigen::VectorXd::Zero(d), v_tw;
    EXPECT_EQ(opt->Observe(Quantity::kFrozenVariance, kServer), nullptr) << name;
    for (std::int64_t t = 1; t <= 7; ++t) {
      Step(*opt, t, Rate(t), SmoothGradients(t, n, d), x);
      const Eigen::VectorXd v = *opt->Observe(Quantity::kVariance, kServer);
      const Vector<double>* frozen = opt->Observe(Quantity::kFrozenVariance, kServer);
      if (t <= warmup) {
        EXPECT_TRUE((v.array() != v_previous.array()).all()) << name << " t = " << t;
      } else {
        EXPECT_EQ(v, v_tw) << name << " t = " << t;
      }
      if (t < warmup) {
        EXPECT_EQ(frozen, nullptr) << name << " t = " << t;
      } else {
        ASSERT_NE(frozen, nullptr) << name << " t = " << t;
        if (t == warmup) v_tw = v;
        EXPECT_EQ(*frozen, v_tw) << name << " t = " << t;
      }
      v_previous = v;
    }
  }
}

// Warmup messages carry d raw scalars; compressed ones scaled sign's one float32 scale and
// ceil(d/8) bytes of signs (compressors/scaled_sign.h), both ways.
template <typename T>
void CheckWireSizes() {
  const int n = 2;
  const Eigen::Index d = 13;
  const std::int64_t warmup = 2;
  auto opt = MakeNamed<T>("onebit-adam", {{"warmup_steps", Int(warmup)}}, {d, n});
  const std::unique_ptr<Compressor<T>> scaled_sign = MakeScaledSign<T>(d);
  Message reference;
  PhiloxStream stream({kSeed, Purpose::kWorkerCompression, 0, 1});
  scaled_sign->Encode(Vector<T>::LinSpaced(d, -1, 1), stream, reference);
  ASSERT_EQ(reference.bits(), 8 * 2 + 32);  // 13 signs in 2 bytes, and the scale
  Vector<T> x = Vector<T>::Zero(d);
  for (std::int64_t t = 1; t <= 5; ++t) {
    std::vector<Vector<T>> g;
    for (const Eigen::VectorXd& gi : SmoothGradients(t, n, d)) g.push_back(gi.cast<T>());
    std::vector<Message> up;
    Message down;
    Step<T>(*opt, t, Rate(t), g, x, kSeed, &up, &down);
    const std::size_t expected =
        t <= warmup ? static_cast<std::size_t>(d) * sizeof(T) : reference.bytes.size();
    for (const Message& m : up) EXPECT_EQ(m.bytes.size(), expected) << "t = " << t;
    EXPECT_EQ(down.bytes.size(), expected) << "t = " << t;
    for (int w = kServer; w < n; ++w) ASSERT_NE(opt->LastEncode(w), nullptr);
    EXPECT_EQ(opt->LastEncode(0)->elements, d);
  }
}

TEST(OneBitAdam, WireSizesOfBothPhases) {
  CheckWireSizes<float>();
  CheckWireSizes<double>();
}

// Three compressed steps (T_w = 1, n = 2, d = 4) replayed from Algorithm 1 with the scaled-sign
// compressor as a black box: lines 6-8 on each worker (sync: from the last m_bar), line 10 on
// the server, line 13 on the replicas.
TEST(OneBitAdam, CompressedStepsFollowAlgorithm1) {
  const int n = 2;
  const Eigen::Index d = 4;
  auto opt = MakeNamed("onebit-adam", {{"warmup_steps", Int(1)}}, {d, n});
  const std::unique_ptr<Compressor<double>> c = MakeScaledSign<double>(d);
  PhiloxStream unused({kSeed, Purpose::kWorkerCompression, 0, 1});

  Eigen::VectorXd x = Vec({0.5, -0.25, 1, 0}), expected_x = x;
  Step(*opt, 1, 0.1, SmoothGradients(1, n, d), x);
  const Eigen::VectorXd g1 = (SmoothGradients(1, n, d)[0] + SmoothGradients(1, n, d)[1]) / 2;
  Eigen::VectorXd m = (1 - 0.9) * g1;  // Eq. 1 from m = v = 0
  const Eigen::VectorXd v = (1 - 0.999) * g1.cwiseAbs2();
  expected_x.array() -= 0.1 * (m.array() / (v.array().sqrt() + 1e-8));
  EXPECT_EQ(x, expected_x);

  std::vector<Eigen::VectorXd> delta(n, Eigen::VectorXd::Zero(d));
  Eigen::VectorXd delta_bar = Eigen::VectorXd::Zero(d), decoded(d);
  Message message;
  for (std::int64_t t = 2; t <= 4; ++t) {
    const std::vector<Eigen::VectorXd> g = SmoothGradients(t, n, d);
    Step(*opt, t, 0.1, g, x);
    Eigen::VectorXd sum = Eigen::VectorXd::Zero(d);
    for (int i = 0; i < n; ++i) {
      const Eigen::VectorXd m_i = 0.9 * m + (1 - 0.9) * g[i];  // line 6
      EXPECT_EQ(*opt->Observe(Quantity::kMomentum, i), m_i) << "t = " << t;
      const Eigen::VectorXd input = m_i + delta[i];  // line 7
      c->Encode(input, unused, message);
      c->Decode(message, decoded);
      delta[i] = input - decoded;
      EXPECT_EQ(*opt->Observe(Quantity::kWorkerError, i), delta[i]) << "t = " << t;
      sum += decoded;
    }
    const Eigen::VectorXd server_input = sum / n + delta_bar;  // line 10
    c->Encode(server_input, unused, message);
    c->Decode(message, m);  // line 13: m = m_bar
    delta_bar = server_input - m;
    EXPECT_EQ(*opt->Observe(Quantity::kServerError, kServer), delta_bar) << "t = " << t;
    EXPECT_EQ(*opt->Observe(Quantity::kMomentum, kServer), m) << "t = " << t;
    expected_x.array() -= 0.1 * (m.array() / (v.array().sqrt() + 1e-8));  // line 13, v_Tw
    EXPECT_EQ(x, expected_x) << "t = " << t;
    EXPECT_NE(delta_bar.squaredNorm(), 0.0);
  }
}

// Adam (1-bit naive), step 1 by hand with exact scaled-sign scales: g^(0) = (5, -3, 1, -1) has
// ||g||/sqrt(4) = 3, so C(g^(0)) = (3, -3, 3, -3) and delta^(0) = (2, 0, -2, 2); g^(1) = (1, -1,
// 1, -1) is sent exactly. The server's mean (2, -2, 2, -2) is sent exactly too. Adam then runs on
// g_hat = (2, -2, 2, -2): v = 0.001 g_hat^2 = 0.004 everywhere, where Adam on the true mean
// gradient (3, -2, 1, -1) has v = 0.001 (9, 4, 1, 1).
TEST(AdamOneBitNaive, VarianceFollowsTheCompressedGradient) {
  auto naive = MakeNamed("adam-1bit-naive", {}, {4, 2});
  auto adam = MakeNamed("adam", {{"bias_correction", {false, ""}}}, {4, 2});
  const std::vector<Eigen::VectorXd> g = {Vec({5, -3, 1, -1}), Vec({1, -1, 1, -1})};
  Eigen::VectorXd x = Eigen::VectorXd::Zero(4), y = x;
  Step(*naive, 1, 0.1, g, x);
  Step(*adam, 1, 0.1, g, y);
  const Eigen::VectorXd g_hat = Vec({2, -2, 2, -2});
  EXPECT_EQ(*naive->Observe(Quantity::kWorkerError, 0), Vec({2, 0, -2, 2}));
  EXPECT_EQ(*naive->Observe(Quantity::kWorkerError, 1), Eigen::VectorXd::Zero(4));
  EXPECT_EQ(*naive->Observe(Quantity::kServerError, kServer), Eigen::VectorXd::Zero(4));
  EXPECT_EQ(*naive->Observe(Quantity::kMomentum, kServer), (1 - 0.9) * g_hat);
  EXPECT_EQ(*naive->Observe(Quantity::kVariance, kServer), (1 - 0.999) * g_hat.cwiseAbs2());
  EXPECT_EQ(*adam->Observe(Quantity::kVariance, kServer),
            (1 - 0.999) * Vec({3, -2, 1, -1}).cwiseAbs2());
  const Eigen::VectorXd m = (1 - 0.9) * g_hat, v = (1 - 0.999) * g_hat.cwiseAbs2();
  EXPECT_EQ(x, (-0.1 * (m.array() / (v.array().sqrt() + 1e-8))).matrix());
  EXPECT_NE(x, y);
}

// With the identity on both sides the naive scheme sends the gradients exactly, and it is Adam
// with the same bias correction, bit for bit.
TEST(AdamOneBitNaive, IdentityCompressionIsAdam) {
  const int n = 3;
  const Eigen::Index d = 4;
  for (const bool bias_correction : {false, true}) {
    auto naive = MakeNamed(
        "adam-1bit-naive",
        {{"compressor", Str("identity")}, {"bias_correction", {bias_correction, ""}}}, {d, n});
    auto adam = MakeNamed("adam", {{"bias_correction", {bias_correction, ""}}}, {d, n});
    Eigen::VectorXd x = Eigen::VectorXd::LinSpaced(d, -1, 1), y = x;
    for (std::int64_t t = 1; t <= 6; ++t) {
      Step(*naive, t, Rate(t), SmoothGradients(t, n, d), x);
      Step(*adam, t, Rate(t), SmoothGradients(t, n, d), y);
      EXPECT_EQ(x, y) << "bias_correction " << bias_correction << " t = " << t;
    }
  }
}

TEST(OneBitAdam, RejectsBadOptions) {
  const OptimizerContext context{4, 2};
  for (const char* name : {"onebit-adam", "onebit-adam-fp32", "adam-1bit-naive"}) {
    EXPECT_THAT(UserErrorOf([&] {
                  MakeNamed(name, {{"beta1", {1.0, ""}}}, context);
                }),
                HasSubstr("beta1 must be in [0, 1), got 1"))
        << name;
    EXPECT_THAT(UserErrorOf([&] {
                  MakeNamed(name, {{"eps_placement", Str("between")}}, context);
                }),
                HasSubstr("eps_placement must be one of outside, inside; got 'between'"))
        << name;
  }
  for (const char* name : {"onebit-adam", "onebit-adam-fp32"}) {
    EXPECT_THAT(UserErrorOf([&] {
                  MakeNamed(name, {{"warmup_steps", Int(-1)}}, context);
                }),
                HasSubstr("warmup_steps must be >= 0, got -1"))
        << name;
  }
  EXPECT_THAT(UserErrorOf([&] {
                MakeNamed("onebit-adam", {{"local_momentum", Str("foo")}}, context);
              }),
              HasSubstr("local_momentum must be one of sync, own; got 'foo'"));
  // onebit-adam-fp32 has no local momenta: the key is unknown there.
  EXPECT_THAT(UserErrorOf([&] {
                MakeNamed("onebit-adam-fp32", {{"local_momentum", Str("own")}}, context);
              }),
              HasSubstr("local_momentum"));
  EXPECT_THAT(UserErrorOf([&] {
                MakeNamed("onebit-adam", {{"compressor", Str("no-such")}}, context);
              }),
              HasSubstr("no-such"));
}

// Every entry builds from an empty table and lists the options it reads.
TEST(OneBitAdam, DefaultsBuildAndListTheirOptions) {
  const auto keys = [](std::string_view name) {
    std::vector<std::string> out;
    for (const OptionTable::Use& use : OptimizerOptions(*Optimizers().Find(name))) {
      out.push_back(use.key);
    }
    return out;
  };
  EXPECT_THAT(keys("onebit-adam"),
              ::testing::IsSupersetOf({"beta1", "beta2", "eps", "eps_placement", "warmup_steps",
                                       "local_momentum", "compressor", "worker_feedback",
                                       "server_compressor", "server_feedback"}));
  EXPECT_THAT(keys("onebit-adam-fp32"),
              ::testing::IsSupersetOf({"beta1", "beta2", "eps", "eps_placement", "warmup_steps"}));
  EXPECT_THAT(keys("adam-1bit-naive"), ::testing::IsSupersetOf({"beta1", "bias_correction",
                                                                "compressor", "server_feedback"}));
  EXPECT_THAT(keys("amsgrad"), ::testing::IsSupersetOf({"beta1", "eps_placement"}));
}

}  // namespace
}  // namespace lemmalab
