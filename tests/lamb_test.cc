// LAMB (one_bit-lamb.txt Eq. 1) and 1-bit LAMB (Algorithm 1, App. A.5.2), step by step against
// values computed by hand (independently, in Python with the papers' formulas; the literals below
// are its output) and against Adam and LAMB where one reduces to the other.
#include "optimizers/lamb.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "compressors/identity.h"
#include "compressors/scaled_sign.h"
#include "core/error.h"
#include "optimizers/adam.h"
#include "tests/optimizer_test_util.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using ::testing::HasSubstr;
using testing::Step;
using testing::Vec;

// The StepContext seed of every Step in this file.
constexpr std::uint64_t kSeed = 7;

// |a - b| <= tol (1 + |b|) elementwise.
::testing::AssertionResult Near(const Eigen::VectorXd& a, const Eigen::VectorXd& b, double tol) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (Eigen::Index j = 0; j < a.size(); ++j) {
    if (!(std::abs(a[j] - b[j]) <= tol * (1 + std::abs(b[j])))) {
      return ::testing::AssertionFailure()
             << "element " << j << ": " << a[j] << " vs " << b[j] << "\n  got      "
             << a.transpose() << "\n  expected " << b.transpose();
    }
  }
  return ::testing::AssertionSuccess();
}

ExchangeConfig<double> IdentityExchange() {
  OptionTable options("identity", "");
  const CompressorMaker<double> identity = IdentityFromOptions<double>(options);
  return Symmetric(identity);
}

// One scale for the whole fused vector (line 1, App. A.5.1).
ExchangeConfig<double> ScaledSignExchange() {
  OptionTable options("scaled-sign", "");
  const CompressorMaker<double> scaled_sign = ScaledSignFromOptions<double>(options);
  return Symmetric(scaled_sign);
}

// Layers of sizes 2, 1, 1.
OptimizerContext ThreeLayers(int workers) {
  return {4, workers, {Layer{"w", 0, 2, 1}, Layer{"b", 2, 1, 1}, Layer{"s", 3, 1, 1}}};
}

// The run of LambTest.ThreeStepsByHand: x0, lr 0.1, two workers' gradients per step.
const Eigen::VectorXd kX0 = Vec({2.0, -1.5, 0.5, 0.001});
const std::vector<std::vector<Eigen::VectorXd>> kGradients = {
    {Vec({0.5, -1.0, 0.25, 2.0}), Vec({1.5, 0.0, -0.75, 1.0})},
    {Vec({-0.5, 2.0, 1.0, -1.0}), Vec({0.5, 1.0, 0.0, -2.0})},
    {Vec({1.0, 1.0, -0.5, 0.5}), Vec({0.0, -3.0, 0.5, 1.5})},
};

// Eq. (1) with the paper's beta1 0.9, beta2 0.999, c_min 0.01, c_max 0.3 and eta 1e-6, three
// layers: layer 1 is clipped at c_max, layer 3 at c_min, layer 2 is unclipped at step 1
// (ratio 0.158...) and clipped at c_max after.
TEST(LambTest, ThreeStepsByHand) {
  auto lamb = MakeLamb<double>(LambOptions{}, ThreeLayers(2));
  Eigen::VectorXd x = kX0;
  const std::vector<Eigen::VectorXd> expected_c = {Vec({0.3, 0.15813388300841905, 0.01}),
                                                   Vec({0.3, 0.3, 0.01}), Vec({0.3, 0.3, 0.01})};
  const std::vector<Eigen::VectorXd> expected_x = {
      Vec({1.9051346701000833, -1.4051376698154994, 0.55, -0.002162210994907138}),
      Vec({1.819713153099554, -1.4681395599509597, 0.503328925215508, -0.0019385516094369529}),
      Vec({1.7084701280114212, -1.4653495018609906, 0.46130394135077657, -0.0031056177700157653})};
  for (std::size_t s = 0; s < 3; ++s) {
    Step(*lamb, static_cast<std::int64_t>(s + 1), 0.1, kGradients[s], x, kSeed);
    // Python and Eigen round differently (norms, fused updates): a few ulps over three steps.
    EXPECT_TRUE(Near(*lamb->Observe(Quantity::kLayerScale, 0), expected_c[s], 1e-14))
        << "t = " << s + 1;
    EXPECT_TRUE(Near(x, expected_x[s], 1e-14)) << "t = " << s + 1;
  }
}

// With c_min = c_max = 1 every c is 1 and Eq. (1) is Adam without bias correction; with
// bias_correction both bias-correct the same way. LAMB computes x -= (lr c) (m / d) where Adam
// computes x -= (lr m) / d: one rounding apart per element per step, hence 1e-15 relative.
TEST(LambTest, WithUnitScaleReducesToAdam) {
  for (const bool bias_correction : {false, true}) {
    LambOptions lo;
    lo.c_min = lo.c_max = 1;
    lo.bias_correction = bias_correction;
    auto lamb = MakeLamb<double>(lo, ThreeLayers(2));
    AdamOptions ao;
    ao.eps = lo.eps;
    ao.bias_correction = bias_correction;
    auto adam = MakeAdam<double>(ao, ThreeLayers(2));
    Eigen::VectorXd x = kX0, y = kX0;
    for (std::int64_t t = 1; t <= 6; ++t) {
      const auto& g = kGradients[static_cast<std::size_t>(t - 1) % 3];
      Step(*lamb, t, 0.1, g, x, kSeed);
      Step(*adam, t, 0.1, g, y, kSeed);
      EXPECT_TRUE(Near(x, y, 1e-15)) << "bias_correction " << bias_correction << ", t = " << t;
      EXPECT_EQ(*lamb->Observe(Quantity::kLayerScale, 0), Vec({1, 1, 1}));
    }
    EXPECT_NE(x, kX0);
  }
}

// A problem without layers is one layer: the same run as a single explicit layer.
TEST(LambTest, NoLayersIsOneLayer) {
  auto flat = MakeLamb<double>(LambOptions{}, OptimizerContext{4, 2});
  auto one = MakeLamb<double>(LambOptions{}, OptimizerContext{4, 2, {Layer{"all", 0, 4, 1}}});
  Eigen::VectorXd x = kX0, y = kX0;
  for (std::size_t s = 0; s < 3; ++s) {
    Step(*flat, static_cast<std::int64_t>(s + 1), 0.1, kGradients[s], x, kSeed);
    Step(*one, static_cast<std::int64_t>(s + 1), 0.1, kGradients[s], y, kSeed);
  }
  EXPECT_EQ(x, y);
  EXPECT_EQ(flat->Observe(Quantity::kLayerScale, 0)->size(), 1);
}

// docs/conventions.md §8. Layer 1 starts at x = 0 (ratio 0); layer 2 has x != 0 but a zero
// gradient, so u = 0 (ratio +infinity); layer 3 is ordinary.
TEST(LambTest, ZeroNormRules) {
  const Eigen::VectorXd x0 = Vec({0, 0, 0.5, 1});
  const Eigen::VectorXd g = Vec({1, -2, 0, 0.5});
  for (const LambZeroNorm rule : {LambZeroNorm::kClip, LambZeroNorm::kOne}) {
    LambOptions o;
    o.zero_norm = rule;
    auto lamb = MakeLamb<double>(o, ThreeLayers(1));
    Eigen::VectorXd x = x0;
    Step(*lamb, 1, 0.1, {g}, x, kSeed);
    const Eigen::VectorXd& c = *lamb->Observe(Quantity::kLayerScale, 0);
    if (rule == LambZeroNorm::kClip) {
      EXPECT_EQ(c[0], 0.01) << "||x|| = 0: the ratio is 0, clipped to c_min";
      EXPECT_EQ(c[1], 0.3) << "||u|| = 0: the ratio is +inf, clipped to c_max";
    } else {
      EXPECT_EQ(c[0], 1.0) << "apex / DeepSpeed: 1, unclipped";
      EXPECT_EQ(c[1], 1.0);
    }
    // Layer 3: u = 0.05 / (sqrt(0.00025) + 1e-6) = 3.16...; ratio 1 / 3.16 = 0.316 -> c_max.
    EXPECT_EQ(c[2], 0.3);
    EXPECT_EQ(x[2], 0.5) << "u = 0 leaves the layer where it is";
    // Layer 1 moves by lr c u with u_j = 0.1 g_j / (sqrt(0.001) |g_j| + 1e-6).
    const double u0 = 0.1 / (std::sqrt(0.001) + 1e-6), u1 = -0.2 / (std::sqrt(0.004) + 1e-6);
    // (1 - 0.9) is 0.1 - 2.8e-17 in doubles: 1e-15 relative.
    EXPECT_NEAR(x[0], -0.1 * c[0] * u0, 1e-15 * std::abs(x[0]));
    EXPECT_NEAR(x[1], -0.1 * c[0] * u1, 1e-15 * std::abs(x[1]));
    EXPECT_TRUE(x.allFinite());
  }
}

OneBitLambOptions OneBitOptions(std::int64_t warmup_steps) {
  OneBitLambOptions o;
  o.warmup_steps = warmup_steps;
  return o;
}

// Line 2: the first T_w steps are LAMB of Eq. (1) on the averaged gradient (same m, v, c, x
// bit for bit); step T_w + 1 sends 1-bit messages.
TEST(OneBitLambTest, WarmupIsLamb) {
  const OneBitLambOptions o = OneBitOptions(3);
  auto one_bit = MakeOneBitLamb<double>(o, ScaledSignExchange(), ThreeLayers(2));
  auto lamb = MakeLamb<double>(o.lamb, ThreeLayers(2));
  Eigen::VectorXd x = kX0, y = kX0;
  std::vector<Message> up;
  for (std::int64_t t = 1; t <= 3; ++t) {
    Step(*one_bit, t, 0.1, kGradients[static_cast<std::size_t>(t - 1)], x, kSeed, &up);
    Step(*lamb, t, 0.1, kGradients[static_cast<std::size_t>(t - 1)], y, kSeed);
    EXPECT_EQ(x, y) << "t = " << t;
    for (const Quantity q : {Quantity::kMomentum, Quantity::kVariance, Quantity::kLayerScale}) {
      EXPECT_EQ(*one_bit->Observe(q, kServer), *lamb->Observe(q, kServer)) << "t = " << t;
    }
    EXPECT_EQ(up[0].bits(), 4 * 64) << "full precision during warmup";
  }
  EXPECT_EQ(*one_bit->Observe(Quantity::kFrozenVariance, kServer),
            *lamb->Observe(Quantity::kVariance, kServer))
      << "line 3: v_Tw stored at the end of step T_w";
  Step(*one_bit, 4, 0.1, kGradients[0], x, kSeed, &up);
  EXPECT_EQ(up[0].bits(), 8 + 32) << "scaled sign: 4 sign bits (one byte) and a float32 scale";
  EXPECT_NE(one_bit->LastEncode(0), nullptr);
}

// Line 2's c_avg = beta3 c_avg + (1 - beta3) c_t at every warmup step, then frozen (line 3).
// With r_min = r_max = 1, c_t = r c_avg = c_avg after warmup, which makes c_avg visible.
// The warmup c_t are those of LambTest.ThreeStepsByHand: (0.3, 0.158..., 0.01), (0.3, 0.3, 0.01).
TEST(OneBitLambTest, ScaleAverageIsTrackedDuringWarmupThenFrozen) {
  OneBitLambOptions o = OneBitOptions(2);
  o.r_min = o.r_max = 1;
  auto one_bit = MakeOneBitLamb<double>(o, ScaledSignExchange(), ThreeLayers(2));
  Eigen::VectorXd x = kX0;
  Step(*one_bit, 1, 0.1, kGradients[0], x, kSeed);
  Step(*one_bit, 2, 0.1, kGradients[1], x, kSeed);
  // c_avg = 0.9 (0.1 c_1) + 0.1 c_2.
  const Eigen::VectorXd c_avg =
      Vec({0.056999999999999995, 0.04423204947075771, 0.0019000000000000002});
  for (std::int64_t t = 3; t <= 4; ++t) {
    Step(*one_bit, t, 0.1, kGradients[2], x, kSeed);
    EXPECT_TRUE(Near(*one_bit->Observe(Quantity::kLayerScale, kServer), c_avg, 1e-15))
        << "t = " << t;
    EXPECT_EQ(*one_bit->Observe(Quantity::kLayerRatio, kServer), Vec({1, 1, 1}));
  }
}

// Two layers (sizes 2 and 1), two workers, T_w = 2, beta2 = 0.5 (so variances move fast),
// r_max = 1.05, identity compression both ways (errors stay 0) and no momentum scaling.
OneBitLambOptions ClipOptions() {
  OneBitLambOptions o = OneBitOptions(2);
  o.lamb.beta2 = 0.5;
  o.r_max = 1.05;
  o.momentum_scaling = false;
  return o;
}
OptimizerContext TwoLayers(int workers) {
  return {3, workers, {Layer{"w", 0, 2, 1}, Layer{"b", 2, 1, 1}}};
}
const std::vector<std::vector<Eigen::VectorXd>> kClipGradients = {
    {Vec({0.4, -0.2, 0.3}), Vec({0.2, 0.6, 0.1})},     // warmup, mean (0.3, 0.2, 0.2)
    {Vec({-0.1, 0.5, 0.2}), Vec({0.3, 0.3, 0.2})},     // warmup, mean (0.1, 0.4, 0.2)
    {Vec({2.5, -1.5, 0.17}), Vec({1.5, -2.5, 0.17})},  // mean (2, -2, 0.17)
    {Vec({0, 0, 0.16}), Vec({0, 0, 0.16})},
};

// After warmup the reconstructed gradient of line 15 is the mean gradient (identity
// compression), so the fresh v follows it (line 16), and r goes through both clips:
//   t = 3: layer 1 raw r = 0.044 -> line 18 clips it to 0.9 r_prev = 0.9; layer 2 raw
//          1.0187 stays (inside [0.9, 1.1] and [0.5, 1.05]);
//   t = 4: layer 1 raw 0.088 -> line 18: 0.81; layer 2 raw 1.0899 is inside line 18's
//          [0.917, 1.121] and line 19 clips it to r_max = 1.05.
// The update divides by sqrt(v_Tw) + eta (see lamb.cc on line 21).
TEST(OneBitLambTest, AfterWarmupRatioFollowsFreshVarianceThroughBothClips) {
  auto one_bit = MakeOneBitLamb<double>(ClipOptions(), IdentityExchange(), TwoLayers(2));
  Eigen::VectorXd x = Vec({1.0, -2.0, 0.5});
  Step(*one_bit, 1, 0.05, kClipGradients[0], x, kSeed);
  Step(*one_bit, 2, 0.05, kClipGradients[1], x, kSeed);
  EXPECT_TRUE(Near(*one_bit->Observe(Quantity::kFrozenVariance, kServer),
                   Vec({0.027500000000000004, 0.09000000000000001, 0.030000000000000006}), 1e-15));
  EXPECT_TRUE(Near(x, Vec({0.9945319339132765, -2.0050212956770315, 0.4945878171218437}), 1e-15));

  // The reconstruction (m_t - beta1 m_{t-1}) / (1 - beta1) cancels: rounding of m (~1e-17 here)
  // is amplified by 1 / (1 - beta1) = 10, hence 1e-14.
  Step(*one_bit, 3, 0.05, kClipGradients[2], x, kSeed);
  EXPECT_TRUE(Near(*one_bit->Observe(Quantity::kVariance, kServer),
                   Vec({2.01375, 2.045, 0.02945000000000001}), 1e-14));
  EXPECT_TRUE(Near(*one_bit->Observe(Quantity::kLayerRatio, kServer),
                   Vec({0.9, 1.0186757215619693}), 1e-14));
  EXPECT_TRUE(Near(*one_bit->Observe(Quantity::kLayerScale, kServer),
                   Vec({0.051299999999999985, 0.05806451612903223}), 1e-14));
  EXPECT_TRUE(Near(x, Vec({0.990923380463476, -2.0037576098893175, 0.49372961883780675}), 1e-14));
  EXPECT_EQ(*one_bit->Observe(Quantity::kWorkerError, 0), Eigen::VectorXd::Zero(3));

  Step(*one_bit, 4, 0.05, kClipGradients[3], x, kSeed);
  EXPECT_TRUE(Near(*one_bit->Observe(Quantity::kVariance, kServer),
                   Vec({1.006875, 1.0225, 0.02752500000000001}), 1e-14));
  EXPECT_TRUE(Near(*one_bit->Observe(Quantity::kLayerRatio, kServer), Vec({0.81, 1.05}), 1e-14));
  EXPECT_TRUE(Near(*one_bit->Observe(Quantity::kLayerScale, kServer),
                   Vec({0.04616999999999999, 0.05984999999999998}), 1e-14));
  EXPECT_TRUE(Near(x, Vec({0.9880004521691375, -2.0027340244012692, 0.4926570560317656}), 1e-14));
}

// Line 19 comes after line 18, so r always ends in [r_min, r_max]. The order matters only when
// line 18's band around r_prev misses [r_min, r_max]: at the first compressed step r_prev = 1
// (line 1), outside [0.5, 0.8] here. Line 18 gives [0.9, 1.1] and line 19 then 0.8; the other
// order (DeepSpeed's) would end at 0.9 > r_max.
TEST(OneBitLambTest, RangeClipComesLast) {
  OneBitLambOptions o = ClipOptions();
  o.r_max = 0.8;
  auto one_bit = MakeOneBitLamb<double>(o, IdentityExchange(), TwoLayers(2));
  Eigen::VectorXd x = Vec({1.0, -2.0, 0.5});
  for (std::int64_t t = 1; t <= 3; ++t) {
    Step(*one_bit, t, 0.05, kClipGradients[static_cast<std::size_t>(t - 1)], x, kSeed);
  }
  EXPECT_EQ(*one_bit->Observe(Quantity::kLayerRatio, kServer), Vec({0.8, 0.8}));
}

// DeepSpeed's ratio, max (sqrt(v_Tw) + eta) / (sqrt(v_fresh) + eta), on the run above at t = 3:
// layer 1 raw 0.2098 -> 0.9 (line 18), layer 2 raw 1.00929 (the square root of the paper's
// 1.0187, softened by eta).
TEST(OneBitLambTest, DenominatorRatioOption) {
  OneBitLambOptions o = ClipOptions();
  o.ratio = OneBitLambRatio::kDenominator;
  auto one_bit = MakeOneBitLamb<double>(o, IdentityExchange(), TwoLayers(2));
  Eigen::VectorXd x = Vec({1.0, -2.0, 0.5});
  for (std::int64_t t = 1; t <= 3; ++t) {
    Step(*one_bit, t, 0.05, kClipGradients[static_cast<std::size_t>(t - 1)], x, kSeed);
  }
  EXPECT_TRUE(Near(*one_bit->Observe(Quantity::kLayerRatio, kServer),
                   Vec({0.9, 1.0092946112174959}), 1e-14));
}

// A layer whose gradient is always 0 has v_fresh = 0: line 17 has no defined element, so r
// keeps r_prev (1), nothing is NaN, and the layer does not move. (Identity compression: a 1-bit
// message cannot carry a zero, so under scaled sign the layer's momentum is not 0; DeepSpeed
// masks such coordinates with exp_avg_mask.)
TEST(OneBitLambTest, DeadLayerKeepsPreviousRatio) {
  auto one_bit = MakeOneBitLamb<double>(ClipOptions(), IdentityExchange(), TwoLayers(2));
  Eigen::VectorXd x = Vec({1.0, -2.0, 0.5});
  for (std::int64_t t = 1; t <= 5; ++t) {
    std::vector<Eigen::VectorXd> g = kClipGradients[static_cast<std::size_t>(t - 1) % 4];
    for (Eigen::VectorXd& gi : g) gi[2] = 0;
    Step(*one_bit, t, 0.05, g, x, kSeed);
  }
  EXPECT_EQ((*one_bit->Observe(Quantity::kLayerRatio, kServer))[1], 1.0);
  EXPECT_EQ(x[2], 0.5);
  EXPECT_TRUE(x.allFinite());
  // The dead layer's c_avg: ||u|| = 0 < ||x|| gives c_max at both warmup steps (convention 8):
  // c_avg = 0.9 (0.1 0.3) + 0.1 0.3 = 0.057.
  EXPECT_NEAR((*one_bit->Observe(Quantity::kLayerScale, kServer))[1], 0.057, 1e-15);
}

// App. A.5.2 by hand: m_Tw = (0.037, 0.058, 0.038) after the warmup of kClipGradients;
// s_1 = ||(0.037, 0.058)|| / sqrt(2), s_2 = 0.038, s_avg = (s_1 + s_2) / 2, k_l = s_avg / s_l.
// With identity compression the worker message is exactly k_l m^(i) per layer.
TEST(OneBitLambTest, MomentumScaleCoefficientsByHand) {
  OneBitLambOptions o = ClipOptions();
  o.momentum_scaling = true;
  auto one_bit = MakeOneBitLamb<double>(o, IdentityExchange(), TwoLayers(2));
  Eigen::VectorXd x = Vec({1.0, -2.0, 0.5});
  std::vector<Message> up;
  for (std::int64_t t = 1; t <= 3; ++t) {
    Step(*one_bit, t, 0.05, kClipGradients[static_cast<std::size_t>(t - 1)], x, kSeed, &up);
  }
  const double k1 = 0.8905713173549977, k2 = 1.1400879657344891;
  for (int i = 0; i < 2; ++i) {
    Eigen::VectorXd sent(3);
    MakeIdentity<double>()->Decode(up[static_cast<std::size_t>(i)], sent);
    const Eigen::VectorXd& m = *one_bit->Observe(Quantity::kMomentum, i);
    EXPECT_TRUE(Near(sent, Vec({k1 * m[0], k1 * m[1], k2 * m[2]}), 1e-15)) << "worker " << i;
  }
}

// With identity compression the scaling cancels: k m / k = m up to two roundings per element
// per step, hence 1e-14 over six steps. Likewise the two local-momentum conventions agree
// (the mean of the workers' own momenta is the synchronised m by linearity), and differ once
// the scaled sign makes the synchronised m differ from the mean.
TEST(OneBitLambTest, ScalingAndLocalMomentumCancelUnderIdentity) {
  OneBitLambOptions plain = ClipOptions();
  OneBitLambOptions scaled = plain;
  scaled.momentum_scaling = true;
  OneBitLambOptions own = plain;
  own.local_momentum = LocalMomentum::kOwn;
  auto a = MakeOneBitLamb<double>(plain, IdentityExchange(), TwoLayers(2));
  auto b = MakeOneBitLamb<double>(scaled, IdentityExchange(), TwoLayers(2));
  auto c = MakeOneBitLamb<double>(own, IdentityExchange(), TwoLayers(2));
  auto d = MakeOneBitLamb<double>(plain, ScaledSignExchange(), TwoLayers(2));
  auto e = MakeOneBitLamb<double>(own, ScaledSignExchange(), TwoLayers(2));
  Eigen::VectorXd xa = Vec({1.0, -2.0, 0.5}), xb = xa, xc = xa, xd = xa, xe = xa;
  for (std::int64_t t = 1; t <= 6; ++t) {
    const auto& g = kClipGradients[static_cast<std::size_t>(t - 1) % 4];
    Step(*a, t, 0.05, g, xa, kSeed);
    Step(*b, t, 0.05, g, xb, kSeed);
    Step(*c, t, 0.05, g, xc, kSeed);
    Step(*d, t, 0.05, g, xd, kSeed);
    Step(*e, t, 0.05, g, xe, kSeed);
    EXPECT_TRUE(Near(xb, xa, 1e-14)) << "t = " << t;
    EXPECT_TRUE(Near(xc, xa, 1e-14)) << "t = " << t;
  }
  EXPECT_GT((xd - xe).norm(), 1e-6) << "sync and own differ under 1-bit compression";
  EXPECT_GT((xd - xa).norm(), 1e-6) << "scaled sign differs from identity";
}

// T_w = 0: no warmup, c_avg stays 0 (line 1), so x never moves; nothing is NaN.
TEST(OneBitLambTest, NoWarmupNeverMoves) {
  auto one_bit = MakeOneBitLamb<double>(OneBitOptions(0), ScaledSignExchange(), ThreeLayers(2));
  Eigen::VectorXd x = kX0;
  for (std::int64_t t = 1; t <= 3; ++t) {
    Step(*one_bit, t, 0.1, kGradients[static_cast<std::size_t>(t - 1)], x, kSeed);
  }
  EXPECT_EQ(x, kX0);
  EXPECT_EQ(*one_bit->Observe(Quantity::kLayerScale, kServer), Vec({0, 0, 0}));
}

// Every option is valid at its default (`lemmalab list` builds from an empty table).
TEST(LambOptionsTest, BuildFromEmptyTables) {
  OptionTable lamb("optimizer 'lamb'", "");
  EXPECT_NE(LambFromOptions<float>(lamb, {8, 2}), nullptr);
  OptionTable one_bit("optimizer 'onebit-lamb'", "");
  EXPECT_NE(OneBitLambFromOptions<double>(one_bit, {8, 2}), nullptr);
}

// The message of building `lamb` or `onebit-lamb` through the registry with one option set.
template <typename V>
std::string LambError(const std::string& key, V value, bool one_bit = false) {
  const std::string name = one_bit ? "onebit-lamb" : "lamb";
  OptionTable t("optimizer '" + name + "'", "spec.toml:1:1");
  t.Set("name", {name, "spec.toml:1:8"});
  t.Set(key, {std::move(value), "spec.toml:2:5"});
  return testing::UserErrorOf([&] { MakeOptimizer<double>(t, OptimizerContext{4, 2}); });
}

TEST(LambOptionsTest, BadValuesNameKeyValueAndRule) {
  EXPECT_THAT(LambError("c_min", 0.5), HasSubstr("c_min must be <= c_max (0.3), got 0.5"));
  EXPECT_THAT(LambError("c_min", 0.5), HasSubstr("spec.toml:2:5"));
  EXPECT_THAT(LambError("c_max", 0.001), HasSubstr("c_min must be <= c_max (0.001), got 0.01"));
  EXPECT_THAT(LambError("eps", 0.0), HasSubstr("eps must be > 0, got 0"));
  EXPECT_THAT(LambError("beta1", 1.0), HasSubstr("beta1 must be in [0, 1), got 1"));
  EXPECT_THAT(LambError("zero_norm", std::string("zero")), HasSubstr("'zero'"));
  EXPECT_THAT(LambError("warmup_steps", std::int64_t{5}), HasSubstr("warmup_steps"))
      << "lamb has no warmup";

  EXPECT_THAT(LambError("r_min", 5.0, true), HasSubstr("r_min must be <= r_max (4), got 5"));
  EXPECT_THAT(LambError("r_max", 0.25, true), HasSubstr("r_min must be <= r_max (0.25), got 0.5"));
  EXPECT_THAT(LambError("r_min", 0.0, true), HasSubstr("r_min must be > 0, got 0"));
  EXPECT_THAT(LambError("r_threshold", 1.0, true),
              HasSubstr("r_threshold must be in [0, 1), got 1"));
  EXPECT_THAT(LambError("warmup_steps", std::int64_t{-1}, true),
              HasSubstr("warmup_steps must be >= 0, got -1"));
  EXPECT_THAT(LambError("beta3", 1.0, true), HasSubstr("beta3 must be in [0, 1), got 1"));
  EXPECT_THAT(LambError("c_max", 0.001, true), HasSubstr("c_min must be <= c_max"));
  EXPECT_THAT(LambError("ratio", std::string("sqrt"), true), HasSubstr("'sqrt'"));
  EXPECT_THAT(LambError("bias_correction", true, true), HasSubstr("bias_correction"))
      << "1-bit LAMB runs Eq. (1) as printed";
}

}  // namespace
}  // namespace lemmalab
