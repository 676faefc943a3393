// 0/1 Adam (optimizers/zero_one_adam.h): the schedules T_v and T_u against hand-listed steps,
// four steps by hand (a variance step with a sync, a sync, a local step, a sync after it), the
// reductions to Adam and to 1-bit Adam, the bytes counted by the cluster against the schedule
// and against 1-bit Adam, the volume assertion (theory/zero_one_adam_assertions.cc) with its
// planted faults, a resume in the middle of local steps, and option validation.
#include "optimizers/zero_one_adam.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "comm/cluster.h"
#include "core/state.h"
#include "problems/quadratic.h"
#include "tests/optimizer_test_util.h"
#include "tests/test_util.h"
#include "tests/theory_doubles.h"

namespace lemmalab {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Int;
using testing::MakeNamed;
using testing::Real;
using testing::Step;
using testing::Str;
using testing::Traffic;
using testing::UserErrorOf;
using testing::Vec;

using testing::RelativeDistance;
using testing::SmoothGradients;

double Rate(std::int64_t t) { return 0.01 / std::sqrt(static_cast<double>(t)); }

// `options` with variance_sync = "one-bit" (Algorithm 1 read literally).
testing::OptionPairs ReadLiterally(testing::OptionPairs options) {
  options.emplace_back("variance_sync", Str("one-bit"));
  return options;
}

// The steps by hand (FourStepsByHand and its literal reading): T_v = {1}, T_u = {1, 2, 4, 6, ...}.
testing::OptionPairs HandSchedule() {
  return {
      {"beta1", Real(0.5)},          {"beta2", Real(0.75)},         {"eps", Real(1)},
      {"var_freeze_step", Int(1)},   {"var_update_scaler", Int(1)}, {"local_step_scaler", Int(1)},
      {"local_step_clipper", Int(2)}};
}

// The steps of [1, last] in a schedule.
std::vector<std::int64_t> Steps(bool (*in)(const ZeroOneAdamOptions&, std::int64_t),
                                const ZeroOneAdamOptions& o, std::int64_t last) {
  std::vector<std::int64_t> out;
  for (std::int64_t t = 1; t <= last; ++t) {
    if (in(o, t)) out.push_back(t);
  }
  return out;
}

// T_v: k_1 = 1, k_{j+1} - k_j = 2^floor(j / kappa), up to var_freeze_step. T_u: every step up to
// var_freeze_step, then k_1 = F + 1, k_{j+1} - k_j = min(2^floor(j / alpha), H).
TEST(ZeroOneAdam, SchedulesAreTheHandListedSteps) {
  ZeroOneAdamOptions o;
  o.var_freeze_step = 20;
  o.var_update_scaler = 3;  // 1, 2, 3 | +2: 5, 7, 9 | +4: 13, 17, (21 > F)
  EXPECT_THAT(Steps(InVarianceSchedule, o, 40), ElementsAre(1, 2, 3, 5, 7, 9, 13, 17));

  o.var_freeze_step = 4;
  o.local_step_scaler = 2;   // after F: 5, 6 | +2: 8, 10 | +4: 14, 18 | +min(8, H) = 4: 22, ...
  o.local_step_clipper = 4;  // H
  EXPECT_THAT(Steps(InSyncSchedule, o, 30),
              ElementsAre(1, 2, 3, 4, 5, 6, 8, 10, 14, 18, 22, 26, 30));
  o.local_step_clipper = 3;  // a cap that is not a power of two: 14, then gaps of 3
  EXPECT_THAT(Steps(InSyncSchedule, o, 24), ElementsAre(1, 2, 3, 4, 5, 6, 8, 10, 13, 16, 19, 22));

  // var_freeze_step = 0: no variance step at all, local steps from the start.
  o.var_freeze_step = 0;
  o.local_step_scaler = 1;  // 1 | +2: 3 | +min(4, 3): 6, 9, ...
  EXPECT_THAT(Steps(InVarianceSchedule, o, 10), ::testing::IsEmpty());
  EXPECT_THAT(Steps(InSyncSchedule, o, 12), ElementsAre(1, 3, 6, 9, 12));

  // The defaults (kappa = 16, F = 1000, alpha = 1000, H = 16): 16 consecutive variance updates,
  // then 16 two apart, then four apart; every step syncs up to F, then 1000 steps in a row,
  // then 1000 syncs two apart (to step 4000), then four apart, and so on up to 16 apart.
  const ZeroOneAdamOptions d;
  std::vector<std::int64_t> expected;
  for (std::int64_t t = 1; t <= 16; ++t) expected.push_back(t);
  for (std::int64_t t = 18; t <= 48; t += 2) expected.push_back(t);
  for (std::int64_t t = 52; t <= 60; t += 4) expected.push_back(t);
  EXPECT_EQ(Steps(InVarianceSchedule, d, 60), expected);
  EXPECT_TRUE(InSyncSchedule(d, 2000));
  EXPECT_TRUE(InSyncSchedule(d, 2002) && !InSyncSchedule(d, 2001));
  EXPECT_TRUE(InSyncSchedule(d, 4000) && !InSyncSchedule(d, 4002) && InSyncSchedule(d, 4004));
  EXPECT_TRUE(!InSyncSchedule(d, 8004) && InSyncSchedule(d, 8008));

  // zoadam.py updates v when t % interval == 0, the interval doubling after every kappa
  // updates. At kappa = 16 that is the formula's set up to step 496; then zoadam.py's next
  // update is at 512 (a multiple of 32) and the formula's at 528.
  ZeroOneAdamOptions wide = d;
  wide.var_freeze_step = 100000;
  std::vector<std::int64_t> zoadam;
  std::int64_t interval = 1, count = 0;
  for (std::int64_t t = 1; t <= 600; ++t) {
    if (t % interval != 0) continue;
    zoadam.push_back(t);
    if (++count == 16) {
      count = 0;
      interval *= 2;
    }
  }
  const std::vector<std::int64_t> formula = Steps(InVarianceSchedule, wide, 600);
  ASSERT_GE(formula.size(), 80u);
  EXPECT_EQ(std::vector<std::int64_t>(formula.begin(), formula.begin() + 80),
            std::vector<std::int64_t>(zoadam.begin(), zoadam.begin() + 80));
  EXPECT_EQ(formula[79], 496);
  EXPECT_EQ(formula[80], 528);
  EXPECT_EQ(zoadam[80], 512);

  // What a step's messages carry.
  ZeroOneAdamOptions s;
  s.var_freeze_step = 2;
  s.var_update_scaler = 1;  // T_v = {1}
  s.local_step_scaler = 1;
  s.local_step_clipper = 2;  // T_u = {1, 2} and 3, 5, 7, ...
  s.variance_sync = VarianceSync::kOneBit;
  const auto kinds = [&](std::int64_t t) {
    const ZeroOneAdamStep k = ZeroOneAdamStepAt(s, t);
    return std::pair(k.full_precision, k.one_bit);
  };
  EXPECT_EQ(kinds(1), std::pair(true, true));
  EXPECT_EQ(kinds(2), std::pair(false, true));
  EXPECT_EQ(kinds(3), std::pair(false, true));
  EXPECT_EQ(kinds(4), std::pair(false, false));
  s.variance_sync = VarianceSync::kFullPrecision;
  EXPECT_EQ(kinds(1), std::pair(true, false));
  EXPECT_EQ(kinds(2), std::pair(false, true));
}

// n = 2, d = 2, beta1 = 1/2, beta2 = 3/4, eps = 1 (outside the root), x_0 = 0; T_v = {1},
// T_u = {1, 2, 4, 6, ...} (var_freeze_step = 1, kappa = alpha = 1, H = 2); gamma = 1, 1, 1/4,
// 1/4. Gradients and every compressor input are chosen so that scaled sign's scales are exact
// (C(a, b) = sqrt((a^2 + b^2) / 2) (sign a, sign b)); exact values are in comments.
//   t = 1 (T_v, variance_sync "full-precision", the default): g = (-7, -1), (-10, -10);
//     g_bar = (-8.5, -5.5), v = (289, 121) / 16, sqrt(v) + eps = (21/4, 15/4);
//     m = g_bar / 2 = (-17/4, -11/4), x_1 = -m / (21/4, 15/4) = (17/21, 11/15). No 1-bit message.
//   t = 2 (T_u): g = (-8, -5), (-8, 1); m^(i) = u^(i) = (-49/8, -31/8), (-49/8, -7/8);
//     C(u^(0)) = (-41/8, -41/8), delta^(0) = (-1, 5/4); C(u^(1)) = (-35/8, -35/8),
//     delta^(1) = (-7/4, 7/2); u_bar = (-19/4, -19/4) = m (sum gamma = 1);
//     x_2 = x_1 - u_bar / (21/4, 15/4) = (17/21 + 19/21, 11/15 + 19/15) = (12/7, 2).
//   t = 3 (local, gamma = 1/4): g = (10, 10) on both; m^(i) = (21/8, 21/8), u^(i) = (21/32, 21/32),
//     x^(i) = x_2 - m^(i) / (4 (21/4, 15/4)) = (12/7 - 1/8, 2 - 7/40) = (89/56, 73/40); nothing
//     is sent, x stays x_2.
//   t = 4 (T_u, gamma = 1/4): g = (10, -3), (10, 3); m^(i) = (101/16, -3/16), (101/16, 45/16);
//     u^(i) = (143/64, 39/64), (143/64, 87/64);
//     C(u^(0) + delta^(0)) = C(79/64, 119/64) = (101/64, 101/64), delta^(0) = (-11/32, 9/32);
//     C(u^(1) + delta^(1)) = C(31/64, 311/64) = (221/64, 221/64), delta^(1) = (-95/32, 45/32);
//     u_bar = (161/64, 161/64); m = u_bar / (1/4 + 1/4) = (161/32, 161/32);
//     x_4 = x_2 - u_bar / (21/4, 15/4) = (12/7 - 23/48, 2 - 161/240) = (415/336, 319/240).
// Messages, each way: t = 1 the raw gradient (16 bytes); t = 2 and 4 the 1-bit u (1 byte of
// signs and a float32 scale); t = 3 nothing.
TEST(ZeroOneAdam, FourStepsByHand) {
  auto opt = MakeNamed("zero-one-adam", HandSchedule(), {2, 2});
  const Eigen::VectorXd den = Vec({21.0 / 4, 15.0 / 4});
  Eigen::VectorXd x = Vec({0, 0});
  EXPECT_EQ(opt->LocalParameters(0), nullptr);  // before the first step: the runner uses x
  EXPECT_EQ(opt->Observe(Quantity::kFrozenVariance, kServer), nullptr);

  Traffic traffic = Step(*opt, 1, 1.0, {Vec({-7, -1}), Vec({-10, -10})}, x);
  EXPECT_THAT(traffic.up, ElementsAre(16, 16));
  EXPECT_EQ(traffic.down, 16u);
  EXPECT_EQ(*opt->Observe(Quantity::kVariance, kServer), Vec({289.0 / 16, 121.0 / 16}));
  ASSERT_NE(opt->Observe(Quantity::kFrozenVariance, kServer), nullptr);  // after step F = 1
  EXPECT_EQ(*opt->Observe(Quantity::kMomentum, kServer), Vec({-4.25, -2.75}));
  EXPECT_EQ(*opt->Observe(Quantity::kMomentum, 1), Vec({-4.25, -2.75}));
  EXPECT_EQ(*opt->Observe(Quantity::kWorkerError, 0), Vec({0, 0}));
  const Eigen::VectorXd x1 = -Vec({-4.25, -2.75}).cwiseQuotient(den);
  EXPECT_EQ(x, x1);
  EXPECT_NEAR(x1[0], 17.0 / 21, 1e-15);
  EXPECT_NEAR(x1[1], 11.0 / 15, 1e-15);
  EXPECT_EQ(*opt->LocalParameters(0), x1);

  traffic = Step(*opt, 2, 1.0, {Vec({-8, -5}), Vec({-8, 1})}, x);
  EXPECT_THAT(traffic.up, ElementsAre(5, 5));
  EXPECT_EQ(traffic.down, 5u);
  EXPECT_EQ(*opt->Observe(Quantity::kWorkerError, 0), Vec({-1, 1.25}));
  EXPECT_EQ(*opt->Observe(Quantity::kWorkerError, 1), Vec({-1.75, 3.5}));
  EXPECT_EQ(*opt->Observe(Quantity::kServerError, kServer), Vec({0, 0}));
  EXPECT_EQ(*opt->Observe(Quantity::kMomentum, kServer), Vec({-4.75, -4.75}));
  const Eigen::VectorXd x2 = x1 - Vec({-4.75, -4.75}).cwiseQuotient(den);
  EXPECT_EQ(x, x2);
  EXPECT_NEAR(x2[0], 12.0 / 7, 1e-15);
  EXPECT_NEAR(x2[1], 2, 1e-15);

  traffic = Step(*opt, 3, 0.25, {Vec({10, 10}), Vec({10, 10})}, x);
  EXPECT_THAT(traffic.up, ElementsAre(0, 0));  // a local step: nothing crosses the network
  EXPECT_EQ(traffic.down, 0u);
  EXPECT_EQ(x, x2);
  EXPECT_EQ(*opt->Observe(Quantity::kMomentum, 0), Vec({21.0 / 8, 21.0 / 8}));
  EXPECT_EQ(*opt->Observe(Quantity::kMomentum, kServer), Vec({-4.75, -4.75}));  // last sync's
  const Eigen::VectorXd x3 = x2 - (0.25 * Vec({21.0 / 8, 21.0 / 8}).array() / den.array()).matrix();
  EXPECT_EQ(*opt->LocalParameters(0), x3);
  EXPECT_EQ(*opt->LocalParameters(1), x3);
  EXPECT_NEAR(x3[0], 89.0 / 56, 1e-15);
  EXPECT_NEAR(x3[1], 73.0 / 40, 1e-15);
  EXPECT_EQ(*opt->Observe(Quantity::kWorkerError, 0), Vec({-1, 1.25}));  // untouched

  traffic = Step(*opt, 4, 0.25, {Vec({10, -3}), Vec({10, 3})}, x);
  EXPECT_THAT(traffic.up, ElementsAre(5, 5));
  EXPECT_EQ(*opt->Observe(Quantity::kWorkerError, 0), Vec({-11.0 / 32, 9.0 / 32}));
  EXPECT_EQ(*opt->Observe(Quantity::kWorkerError, 1), Vec({-95.0 / 32, 45.0 / 32}));
  EXPECT_EQ(*opt->Observe(Quantity::kMomentum, kServer), Vec({161.0 / 32, 161.0 / 32}));
  EXPECT_EQ(*opt->Observe(Quantity::kMomentum, 0), Vec({161.0 / 32, 161.0 / 32}));
  const Eigen::VectorXd x4 = x2 - Vec({161.0 / 64, 161.0 / 64}).cwiseQuotient(den);
  EXPECT_EQ(x, x4);
  EXPECT_NEAR(x4[0], 415.0 / 336, 1e-15);
  EXPECT_NEAR(x4[1], 319.0 / 240, 1e-15);
  EXPECT_EQ(*opt->LocalParameters(0), x4);
  EXPECT_EQ(*opt->LocalParameters(1), x4);
  EXPECT_EQ(*opt->Observe(Quantity::kVariance, kServer), Vec({289.0 / 16, 121.0 / 16}));
}

// The same schedule with variance_sync = "one-bit" (Algorithm 1 read literally): step 1 sends
// the raw gradient for v and the 1-bit u for m and x. Other gradients, chosen for exact scales:
//   t = 1: g = (-7, -1), (-10, -10): v and sqrt(v) + eps as above; m^(i) = u^(i) = (-3.5, -0.5),
//     (-5, -5); C(u^(0)) = (-2.5, -2.5), delta^(0) = (-1, 2); C(u^(1)) = u^(1), delta^(1) = 0;
//     u_bar = (-15/4, -15/4) = m; x_1 = -u_bar / (21/4, 15/4) = (5/7, 1).
//   t = 2: g = (-10, 2), (-9, 9); m^(i) = u^(i) = (-55/8, -7/8), (-51/8, 21/8);
//     C(u^(0) + delta^(0)) = C(-63/8, 9/8) = (-45/8, 45/8), delta^(0) = (-9/4, -9/2);
//     C(u^(1)) = (-39/8, 39/8), delta^(1) = (-3/2, -9/4); u_bar = (-21/4, 21/4) = m;
//     x_2 = (5/7 + 1, 1 - 7/5) = (12/7, -2/5).
//   t = 3 (local, gamma = 1/4): g = (-7, 1), (0, 0); m^(i) = (-49/8, 25/8), (-21/8, 21/8);
//     x^(i) = (337/168, -73/120), (103/56, -23/40); u^(i) = (-49/32, 25/32), (-21/32, 21/32).
//   t = 4 (gamma = 1/4): g = (0, 0), (-10, 10); u^(i) = (-147/64, 75/64), (-143/64, 143/64);
//     C(-291/64, -213/64) = (-255/64, -255/64), delta^(0) = (-9/16, 21/32);
//     C(-239/64, -1/64) = (-169/64, -169/64), delta^(1) = (-35/32, 21/8);
//     u_bar = (-53/16, -53/16), m = 2 u_bar = (-53/8, -53/8), x_4 = (197/84, 29/60).
TEST(ZeroOneAdam, FourStepsByHandReadLiterally) {
  auto opt = MakeNamed("zero-one-adam", ReadLiterally(HandSchedule()), {2, 2});
  const Eigen::VectorXd den = Vec({21.0 / 4, 15.0 / 4});
  Eigen::VectorXd x = Vec({0, 0});

  Traffic traffic = Step(*opt, 1, 1.0, {Vec({-7, -1}), Vec({-10, -10})}, x);
  EXPECT_THAT(traffic.up, ElementsAre(16 + 5, 16 + 5));  // both parts
  EXPECT_EQ(traffic.down, 16u + 5u);
  EXPECT_EQ(*opt->Observe(Quantity::kVariance, kServer), Vec({289.0 / 16, 121.0 / 16}));
  EXPECT_EQ(*opt->Observe(Quantity::kWorkerError, 0), Vec({-1, 2}));
  EXPECT_EQ(*opt->Observe(Quantity::kWorkerError, 1), Vec({0, 0}));
  EXPECT_EQ(*opt->Observe(Quantity::kMomentum, kServer), Vec({-3.75, -3.75}));
  const Eigen::VectorXd x1 = Vec({5.0 / 7, 1});
  EXPECT_EQ(x, x1);

  traffic = Step(*opt, 2, 1.0, {Vec({-10, 2}), Vec({-9, 9})}, x);
  EXPECT_THAT(traffic.up, ElementsAre(5, 5));
  EXPECT_EQ(*opt->Observe(Quantity::kWorkerError, 0), Vec({-2.25, -4.5}));
  EXPECT_EQ(*opt->Observe(Quantity::kWorkerError, 1), Vec({-1.5, -2.25}));
  EXPECT_EQ(*opt->Observe(Quantity::kMomentum, kServer), Vec({-5.25, 5.25}));
  const Eigen::VectorXd x2 = x1 - Vec({-5.25, 5.25}).cwiseQuotient(den);
  EXPECT_EQ(x, x2);
  EXPECT_NEAR(x2[0], 12.0 / 7, 1e-15);
  EXPECT_NEAR(x2[1], -2.0 / 5, 1e-15);

  traffic = Step(*opt, 3, 0.25, {Vec({-7, 1}), Vec({0, 0})}, x);
  EXPECT_THAT(traffic.up, ElementsAre(0, 0));
  EXPECT_EQ(x, x2);
  const Eigen::VectorXd x3_0 =
      x2 - (0.25 * Vec({-49.0 / 8, 25.0 / 8}).array() / den.array()).matrix();
  const Eigen::VectorXd x3_1 =
      x2 - (0.25 * Vec({-21.0 / 8, 21.0 / 8}).array() / den.array()).matrix();
  EXPECT_EQ(*opt->LocalParameters(0), x3_0);
  EXPECT_EQ(*opt->LocalParameters(1), x3_1);
  EXPECT_NEAR(x3_0[0], 337.0 / 168, 1e-15);
  EXPECT_NEAR(x3_0[1], -73.0 / 120, 1e-15);
  EXPECT_NEAR(x3_1[0], 103.0 / 56, 1e-15);
  EXPECT_NEAR(x3_1[1], -23.0 / 40, 1e-15);

  traffic = Step(*opt, 4, 0.25, {Vec({0, 0}), Vec({-10, 10})}, x);
  EXPECT_THAT(traffic.up, ElementsAre(5, 5));
  EXPECT_EQ(*opt->Observe(Quantity::kWorkerError, 0), Vec({-9.0 / 16, 21.0 / 32}));
  EXPECT_EQ(*opt->Observe(Quantity::kWorkerError, 1), Vec({-35.0 / 32, 21.0 / 8}));
  EXPECT_EQ(*opt->Observe(Quantity::kMomentum, kServer), Vec({-53.0 / 8, -53.0 / 8}));
  const Eigen::VectorXd x4 = x2 - Vec({-53.0 / 16, -53.0 / 16}).cwiseQuotient(den);
  EXPECT_EQ(x, x4);
  EXPECT_NEAR(x4[0], 197.0 / 84, 1e-15);
  EXPECT_NEAR(x4[1], 29.0 / 60, 1e-15);
  EXPECT_EQ(*opt->LocalParameters(1), x4);
}

// The paper's reduction: with every step in T_v and in T_u (no freezing, no local steps) and no
// compression, 0/1 Adam is Adam without bias correction. variance_sync "full-precision" takes
// Adam's step from g_bar, the same arithmetic: bit for bit. "one-bit" gets m and x from
// u_bar = mean_i(gamma m^(i)) through the identity: m = u_bar / gamma and x -= u_bar / (sqrt(v)
// + eps), which round differently from beta1 m + (1 - beta1) mean_i g^(i) and gamma (m / (...)):
// 1e-14 relative. v is the same recursion on the same g_bar: equal.
TEST(ZeroOneAdam, EveryStepInTvAndTuWithoutCompressionIsAdam) {
  const int n = 3;
  const Eigen::Index d = 4;
  for (const char* sync : {"full-precision", "one-bit"}) {
    for (const char* placement : {"outside", "inside"}) {
      auto zoa = MakeNamed("zero-one-adam",
                           {{"var_freeze_step", Int(100)},
                            {"var_update_scaler", Int(100)},  // T_v = {1..100}
                            {"local_step_clipper", Int(1)},
                            {"compressor", Str("identity")},
                            {"variance_sync", Str(sync)},
                            {"eps_placement", Str(placement)}},
                           {d, n});
      auto adam = MakeNamed(
          "adam", {{"bias_correction", {false, ""}}, {"eps_placement", Str(placement)}}, {d, n});
      Eigen::VectorXd x = Eigen::VectorXd::LinSpaced(d, -1, 1), y = x;
      for (std::int64_t t = 1; t <= 10; ++t) {
        Step(*zoa, t, Rate(t), SmoothGradients(t, n, d), x);
        Step(*adam, t, Rate(t), SmoothGradients(t, n, d), y);
        EXPECT_EQ(*zoa->Observe(Quantity::kVariance, kServer),
                  *adam->Observe(Quantity::kVariance, kServer));
        if (std::string(sync) == "full-precision") {
          EXPECT_EQ(x, y) << placement << " t = " << t;
          EXPECT_EQ(*zoa->Observe(Quantity::kMomentum, kServer),
                    *adam->Observe(Quantity::kMomentum, kServer));
        } else {
          EXPECT_LT(RelativeDistance(x, y), 1e-14) << placement << " t = " << t;
          EXPECT_LT(RelativeDistance(*zoa->Observe(Quantity::kMomentum, kServer),
                                     *adam->Observe(Quantity::kMomentum, kServer)),
                    1e-14);
          EXPECT_EQ(*zoa->Observe(Quantity::kWorkerError, 1), Eigen::VectorXd::Zero(d));
        }
      }
      EXPECT_GT(RelativeDistance(x, Eigen::VectorXd::LinSpaced(d, -1, 1)), 1e-3) << "moved";
    }
  }
}

// 1-bit Adam is 0/1 Adam with T_v = {1..T_w} (kappa >= T_w), T_u = every step (H = 1) and
// variance_sync "full-precision": its warmup is the variance steps' Adam step, and its
// compression phase the 1-bit sync of u = gamma m^(i) every step (m^(i) from the synchronised
// m, 1-bit Adam's local_momentum "sync"). At a constant step size that is a power of two,
// scaling by gamma is exact everywhere (u, the error feedback, scaled sign's float32 scale, the
// server's mean), so the runs agree bit for bit, with 0/1 Adam's errors gamma times 1-bit
// Adam's. With the identity and variance_sync "one-bit" every step of the warmup goes through
// the (exact) 1-bit path instead: 1-bit Adam (32-bits) to 1e-14.
TEST(ZeroOneAdam, IsOneBitAdamWithTvTheWarmupAndEveryStepSynced) {
  const int n = 3;
  const Eigen::Index d = 5;
  const std::int64_t warmup = 3;
  const double gamma = 1.0 / 64;
  auto zoa = MakeNamed("zero-one-adam",
                       {{"var_freeze_step", Int(warmup)},
                        {"var_update_scaler", Int(warmup)},
                        {"local_step_clipper", Int(1)},
                        {"variance_sync", Str("full-precision")}},
                       {d, n});
  auto one_bit = MakeNamed("onebit-adam", {{"warmup_steps", Int(warmup)}}, {d, n});
  Eigen::VectorXd x = Eigen::VectorXd::LinSpaced(d, 1, 3), y = x;
  for (std::int64_t t = 1; t <= 12; ++t) {
    std::vector<Message> up_zoa, up_one_bit;
    Message down_zoa, down_one_bit;
    Step<double>(*zoa, t, gamma, SmoothGradients(t, n, d), x, testing::kStepSeed, &up_zoa,
                 &down_zoa);
    Step<double>(*one_bit, t, gamma, SmoothGradients(t, n, d), y, testing::kStepSeed, &up_one_bit,
                 &down_one_bit);
    EXPECT_EQ(x, y) << "t = " << t;
    EXPECT_EQ(*zoa->Observe(Quantity::kMomentum, kServer),
              *one_bit->Observe(Quantity::kMomentum, kServer))
        << "t = " << t;
    EXPECT_EQ(*zoa->Observe(Quantity::kVariance, kServer),
              *one_bit->Observe(Quantity::kVariance, kServer));
    ASSERT_EQ(up_zoa.size(), up_one_bit.size());
    for (std::size_t i = 0; i < up_zoa.size(); ++i) {
      EXPECT_EQ(up_zoa[i].bytes.size(), up_one_bit[i].bytes.size()) << "t = " << t;
    }
    EXPECT_EQ(down_zoa.bytes.size(), down_one_bit.bytes.size());
    if (t > warmup) {
      for (int i = 0; i < n; ++i) {
        EXPECT_EQ(*zoa->Observe(Quantity::kWorkerError, i),
                  gamma * *one_bit->Observe(Quantity::kWorkerError, i))
            << "t = " << t;
      }
      EXPECT_EQ(*zoa->Observe(Quantity::kServerError, kServer),
                gamma * *one_bit->Observe(Quantity::kServerError, kServer));
    }
  }
  EXPECT_NE(one_bit->Observe(Quantity::kServerError, kServer)->squaredNorm(), 0.0);

  auto literal = MakeNamed("zero-one-adam",
                           {{"var_freeze_step", Int(warmup)},
                            {"var_update_scaler", Int(warmup)},
                            {"local_step_clipper", Int(1)},
                            {"compressor", Str("identity")},
                            {"variance_sync", Str("one-bit")}},
                           {d, n});
  auto fp32 = MakeNamed("onebit-adam-fp32", {{"warmup_steps", Int(warmup)}}, {d, n});
  x = y = Eigen::VectorXd::LinSpaced(d, 1, 3);
  for (std::int64_t t = 1; t <= 12; ++t) {
    Step(*literal, t, Rate(t), SmoothGradients(t, n, d), x);
    Step(*fp32, t, Rate(t), SmoothGradients(t, n, d), y);
    EXPECT_LT(RelativeDistance(x, y), 1e-14) << "t = " << t;
    EXPECT_EQ(*literal->Observe(Quantity::kVariance, kServer),
              *fp32->Observe(Quantity::kVariance, kServer));
  }
}

// With a step size that changes, 0/1 Adam's classic error feedback on u = gamma_t m carries
// gamma_(t-1) delta_m into step t: C(gamma_t m + gamma_(t-1) delta_m) = gamma_t C(m + (gamma_(t-1)
// / gamma_t) delta_m), which is 1-bit Adam with "scaled" feedback (one_bit-adam.txt Sec. 4.2) on
// both sides, up to rounding: scaled sign sends its scale as a float32, and float32(gamma s) is
// not gamma float32(s) for a gamma that is not a power of two (up to 2^-24 relative per message),
// so the runs agree to 1e-7, where classic feedback on m departs by far more.
TEST(ZeroOneAdam, ClassicFeedbackOnUIsOneBitAdamsScaledFeedback) {
  const int n = 2;
  const Eigen::Index d = 6;
  auto zoa = MakeNamed("zero-one-adam",
                       {{"var_freeze_step", Int(2)},
                        {"var_update_scaler", Int(2)},
                        {"local_step_clipper", Int(1)},
                        {"variance_sync", Str("full-precision")}},
                       {d, n});
  auto one_bit = MakeNamed("onebit-adam",
                           {{"warmup_steps", Int(2)},
                            {"worker_feedback", Str("scaled")},
                            {"server_feedback", Str("scaled")}},
                           {d, n});
  auto classic = MakeNamed("onebit-adam", {{"warmup_steps", Int(2)}}, {d, n});
  Eigen::VectorXd x = Eigen::VectorXd::LinSpaced(d, -1, 2), y = x, z = x;
  for (std::int64_t t = 1; t <= 15; ++t) {
    Step(*zoa, t, Rate(t), SmoothGradients(t, n, d), x);
    Step(*one_bit, t, Rate(t), SmoothGradients(t, n, d), y);
    Step(*classic, t, Rate(t), SmoothGradients(t, n, d), z);
    EXPECT_LT(RelativeDistance(x, y), 1e-7) << "t = " << t;
  }
  EXPECT_GT(RelativeDistance(x, z), 1e-5) << RelativeDistance(x, y);  // the kind matters here
}

// The volume through the cluster, which counts every message's bytes: d = 16 in fp64, n = 2,
// T = 200 steps, var_freeze_step = 40, kappa = 4, alpha = 8, H = 8.
//   T_v = {1, 2, 3, 4, 6, 8, 10, 12, 16, 20, 24, 28, 36}: 13 raw gradients of 128 bytes;
//   T_u = {1..40} u {41..48} u {50, 52, ..., 64} u {68, ..., 96} u {104, 112, ..., 200}:
//         40 + 8 + 8 + 8 + 13 = 77 syncs, of which the 13 in T_v go in full precision and
//         64 as 1-bit messages of 2 + 4 bytes;
//   so each worker sends 13 x 128 + 64 x 6 = 2048 bytes and receives as many (with
//   variance_sync "one-bit", 13 x 128 + 77 x 6 = 2126).
// 1-bit Adam with T_w = 40 on the same steps sends 40 x 128 + 160 x 6 = 6080 bytes each way:
// 0/1 Adam sends 2048 / 6080 = 34% of it. On local steps the replicas x^(i), where the cluster
// takes the workers' gradients, move apart.
TEST(ZeroOneAdam, ClusterCountsTheScheduleBytes) {
  constexpr std::int64_t kD = 16;
  QuadraticOptions q;
  q.spectrum.dimension = kD;
  q.noise.sigma = 0.1;
  const auto problem = MakeQuadratic<double>(BuildQuadraticModel(q, 2, 5));
  const testing::OptionPairs schedule = {{"var_freeze_step", Int(40)},
                                         {"var_update_scaler", Int(4)},
                                         {"local_step_scaler", Int(8)},
                                         {"local_step_clipper", Int(8)}};
  auto zoa = MakeNamed("zero-one-adam", schedule, {kD, 2});
  auto literal = MakeNamed("zero-one-adam", ReadLiterally(schedule), {kD, 2});
  auto one_bit = MakeNamed("onebit-adam", {{"warmup_steps", Int(40)}}, {kD, 2});
  const auto run = [&](DistributedOptimizer<double>& opt, std::vector<std::int64_t>* per_step) {
    Cluster<double> cluster(*problem, opt);
    Eigen::VectorXd x = problem->InitialPoint();
    std::int64_t sent = 0, received = 0;
    for (std::int64_t t = 1; t <= 200; ++t) {
      const StepResult& r = cluster.Step({t, 0.01, 3}, x);
      EXPECT_EQ(r.traffic.sent(0), r.traffic.sent(1));
      EXPECT_EQ(r.traffic.received(0), r.traffic.sent(0));
      sent += r.traffic.sent(0);
      received += r.traffic.received(0);
      if (per_step != nullptr) per_step->push_back(r.traffic.sent(0));
      if (t == 49 && opt.LocalParameters(0) != nullptr) {
        // A local step: the replicas have moved apart, from x and from each other.
        EXPECT_NE(*opt.LocalParameters(0), *opt.LocalParameters(1));
        EXPECT_NE(*opt.LocalParameters(0), x);
      }
    }
    EXPECT_EQ(sent, received);
    return sent;
  };
  std::vector<std::int64_t> per_step;
  EXPECT_EQ(run(*zoa, &per_step), 2048);
  EXPECT_EQ(run(*literal, nullptr), 2126);
  EXPECT_EQ(run(*one_bit, nullptr), 6080);
  EXPECT_EQ(per_step[0], 128);  // t = 1: T_v (and T_u, synced by the raw gradient)
  EXPECT_EQ(per_step[4], 6);    // t = 5: a 1-bit sync
  EXPECT_EQ(per_step[48], 0);   // t = 49: a local step
  EXPECT_EQ(per_step[49], 6);   // t = 50
  EXPECT_EQ(per_step[199], 6);  // t = 200
}

// The assertion on a hand-made record of T = 6 steps, d = 16, fp64, F = 2, kappa = 1, alpha = 1,
// H = 2: T_v = {1}, T_u = {1, 2, 3, 5}, steps 4 and 6 local. Per worker and way: 128 + 6, 6, 6,
// 0, 6, 0 bytes = 1216 bits in all, against 1-bit Adam's (T_w = 2) 2 x 128 + 4 x 6 = 280 bytes
// = 2240 bits: a ratio of 0.543.
RunEvidence VolumeRecord() {
  RunEvidence run;
  run.label = "zero-one-adam";
  run.optimizer = "zero-one-adam";
  run.status = "completed";
  run.steps_done = 6;
  run.workers = 2;
  run.dimension = 16;
  run.precision = Precision::kFp64;
  Hyperparameters& h = run.hyperparameters;
  h.Set("var_freeze_step", std::int64_t{2});
  h.Set("var_update_scaler", std::int64_t{1});
  h.Set("local_step_scaler", std::int64_t{1});
  h.Set("local_step_clipper", std::int64_t{2});
  h.Set("variance_sync", std::string("one-bit"));
  h.Set("compressor.name", std::string("scaled-sign"));
  h.Set("compressor.chunk", std::int64_t{0});
  h.Set("communication.scheme", std::string("parameter-server"));
  const std::vector<double> bytes = {134, 6, 6, 0, 6, 0};
  for (std::int64_t t = 1; t <= 6; ++t) {
    const double bits = 8 * bytes[static_cast<std::size_t>(t - 1)];
    run.metrics["bits_sent"].Record({t, kRunWide, bits});
    run.metrics["bits_received"].Record({t, kRunWide, bits});
  }
  return run;
}

TEST(ZeroOneAdamVolume, KnownAnswerAndPlantedFaults) {
  using testing::Judge;
  RunEvidence run = VolumeRecord();
  Verdict v = Judge("zero-one-adam-volume", run);
  EXPECT_EQ(v.kind, VerdictKind::kHolds) << v.measured << " | " << v.detail;
  EXPECT_DOUBLE_EQ(v.measured_value, 1216.0 * 2 / 4480);
  EXPECT_EQ(Judge("zero-one-adam-volume", run, "fraction = 0.55").kind, VerdictKind::kHolds);
  EXPECT_EQ(Judge("zero-one-adam-volume", run, "fraction = 0.5").kind, VerdictKind::kViolated);
  // Against a 1-bit Adam with a shorter warmup (T_w = 1: 128 + 5 x 6 = 158 bytes) 0/1 Adam
  // still sends less; against one without warmup (6 x 6 = 36 bytes), more.
  v = Judge("zero-one-adam-volume", run, "onebit_warmup = 1");
  EXPECT_EQ(v.kind, VerdictKind::kHolds);
  EXPECT_DOUBLE_EQ(v.measured_value, 152.0 / 158);
  v = Judge("zero-one-adam-volume", run, "onebit_warmup = 0");
  EXPECT_EQ(v.kind, VerdictKind::kViolated);
  EXPECT_DOUBLE_EQ(v.measured_value, 152.0 / 36);
  // Planted: a local step that sent a message.
  // The record of a "one-bit" run judged as if it had run "full-precision" (step 1 would then
  // carry no 1-bit part): the count departs at step 1.
  RunEvidence relabelled = run;
  relabelled.hyperparameters.Set("variance_sync", std::string("full-precision"));
  v = Judge("zero-one-adam-volume", relabelled);
  EXPECT_EQ(v.kind, VerdictKind::kViolated);
  EXPECT_EQ(v.worst_step, 1);
  RunEvidence leaky = run;
  leaky.metrics["bits_sent"].EditPoints()[3].value = 48;
  v = Judge("zero-one-adam-volume", leaky);
  EXPECT_EQ(v.kind, VerdictKind::kViolated);
  EXPECT_EQ(v.worst_step, 4);
  EXPECT_THAT(v.detail, HasSubstr("steps 4..4"));
  // Windows of several steps (metrics_every = 3) are compared window by window.
  RunEvidence windows = run;
  for (const char* name : {"bits_sent", "bits_received"}) {
    windows.metrics[name].EditPoints() = {{3, kRunWide, 8.0 * 146}, {6, kRunWide, 8.0 * 6}};
  }
  EXPECT_EQ(Judge("zero-one-adam-volume", windows).kind, VerdictKind::kHolds);
  // Premises: another scheme, another compressor, another optimizer.
  RunEvidence allgather = run;
  allgather.hyperparameters.Set("communication.scheme", std::string("allgather"));
  EXPECT_EQ(Judge("zero-one-adam-volume", allgather).kind, VerdictKind::kInconclusive);
  RunEvidence identity = run;
  identity.hyperparameters.Set("compressor.name", std::string("identity"));
  EXPECT_EQ(Judge("zero-one-adam-volume", identity).kind, VerdictKind::kInconclusive);
  RunEvidence other = run;
  other.optimizer = "onebit-adam";
  EXPECT_EQ(Judge("zero-one-adam-volume", other).kind, VerdictKind::kInconclusive);
  EXPECT_THAT(UserErrorOf([&] { Judge("zero-one-adam-volume", run, "fraction = 0"); }),
              HasSubstr("fraction"));
}

// The same claim end to end: lemmalab check runs the spec, the cluster counts the bytes, the
// assertion reads them back. A schedule that updates v on every step up to the freeze and never
// skips a sync is 1-bit Adam's count exactly (ratio 1: no reduction); read literally
// (variance_sync "one-bit") it sends the raw gradient and the 1-bit u on each of those steps,
// more than 1-bit Adam.
TEST(ZeroOneAdamVolume, CheckJudgesCountedBytes) {
  const testing::TempDir dir;
  const std::string spec = R"(
seed = 1
steps = 200
workers = 2
precision = "fp64"
metrics_every = 7

[problem]
name = "quadratic"
dimension = 16
L = 1.0
mu = 0.1
noise = "sphere"
sigma = 0.1

[schedule]
name = "constant"
lr = 0.01

[[optimizer]]
name = "zero-one-adam"
var_freeze_step = 40
var_update_scaler = 4
local_step_scaler = 8
local_step_clipper = 8

[[optimizer]]
name = "zero-one-adam"
label = "no-skipping"
var_freeze_step = 40
var_update_scaler = 40
local_step_clipper = 1

[[optimizer]]
name = "zero-one-adam"
label = "literal-no-skipping"
var_freeze_step = 40
var_update_scaler = 40
local_step_clipper = 1
variance_sync = "one-bit"

[[assert]]
assertion = "zero-one-adam-volume"
runs = ["zero-one-adam"]
fraction = 0.34

[[assert]]
assertion = "zero-one-adam-volume"
runs = ["no-skipping"]
fraction = 0.34
expect = "violated"

[[assert]]
assertion = "zero-one-adam-volume"
runs = ["literal-no-skipping"]
expect = "violated"
)";
  const CheckReport report = testing::CheckSpecText(spec, dir.path());
  const Verdict& honest = testing::RowOf(report, "zero-one-adam-volume", "zero-one-adam").verdict;
  EXPECT_EQ(honest.kind, VerdictKind::kHolds) << honest.measured << " | " << honest.detail;
  EXPECT_DOUBLE_EQ(honest.measured_value, 2048.0 / 6080);
  const Verdict& same = testing::RowOf(report, "zero-one-adam-volume", "no-skipping").verdict;
  EXPECT_EQ(same.kind, VerdictKind::kViolated) << same.measured;
  EXPECT_EQ(same.measured_value, 1.0);
  const Verdict& more =
      testing::RowOf(report, "zero-one-adam-volume", "literal-no-skipping").verdict;
  EXPECT_EQ(more.kind, VerdictKind::kViolated) << more.measured;
  // 40 x (128 + 6) + 160 x 6 = 6320 bytes against 6080.
  EXPECT_DOUBLE_EQ(more.measured_value, 6320.0 / 6080);
}

// A checkpoint taken on a local step (replicas apart, u and the lr sum pending) resumes bit for
// bit.
TEST(ZeroOneAdam, ResumesBitForBitBetweenSyncs) {
  constexpr std::int64_t kD = 8;
  QuadraticOptions q;
  q.spectrum.dimension = kD;
  q.noise.sigma = 0.1;
  const auto problem = MakeQuadratic<double>(BuildQuadraticModel(q, 3, 5));
  const testing::OptionPairs options = {{"var_freeze_step", Int(3)},
                                        {"var_update_scaler", Int(2)},
                                        {"local_step_scaler", Int(1)},
                                        {"local_step_clipper", Int(4)}};
  // T_u = {1, 2, 3, 4, 6, 10, 14, ...}: step 8 is local, inside a 4-step interval.
  auto original = MakeNamed("zero-one-adam", options, {kD, 3});
  Cluster<double> cluster(*problem, *original);
  Eigen::VectorXd x = problem->InitialPoint(), x_saved;
  std::vector<Eigen::VectorXd> expected;
  StateSnapshot saved;
  for (std::int64_t t = 1; t <= 16; ++t) {
    cluster.Step({t, Rate(t), 11}, x);
    expected.push_back(x);
    if (t == 8) {
      saved = SaveState(*original);
      x_saved = x;
      ASSERT_NE(*original->LocalParameters(0), x);
    }
  }
  auto resumed = MakeNamed("zero-one-adam", options, {kD, 3});
  RestoreState(saved, *resumed);
  Cluster<double> resumed_cluster(*problem, *resumed);
  for (std::int64_t t = 9; t <= 16; ++t) {
    resumed_cluster.Step({t, Rate(t), 11}, x_saved);
    EXPECT_EQ(x_saved, expected[static_cast<std::size_t>(t - 1)]) << "t = " << t;
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(*resumed->LocalParameters(i), *original->LocalParameters(i));
    EXPECT_EQ(*resumed->Observe(Quantity::kWorkerError, i),
              *original->Observe(Quantity::kWorkerError, i));
  }
}

TEST(ZeroOneAdam, RejectsBadOptions) {
  const OptimizerContext context{4, 2};
  const auto error = [&](const testing::OptionPairs& options) {
    return UserErrorOf([&] { MakeNamed("zero-one-adam", options, context); });
  };
  EXPECT_THAT(error({{"var_freeze_step", Int(-1)}}),
              HasSubstr("var_freeze_step must be >= 0, got -1"));
  EXPECT_THAT(error({{"var_update_scaler", Int(0)}}),
              HasSubstr("var_update_scaler must be >= 1, got 0"));
  EXPECT_THAT(error({{"local_step_scaler", Int(0)}}),
              HasSubstr("local_step_scaler must be >= 1, got 0"));
  EXPECT_THAT(error({{"local_step_clipper", Int(0)}}),
              HasSubstr("local_step_clipper must be >= 1, got 0"));
  EXPECT_THAT(error({{"beta1", Real(1)}}), HasSubstr("beta1 must be in [0, 1), got 1"));
  EXPECT_THAT(error({{"beta2", Real(-0.5)}}), HasSubstr("beta2 must be in [0, 1), got -0.5"));
  EXPECT_THAT(error({{"eps", Real(0)}}), HasSubstr("eps must be"));
  EXPECT_THAT(error({{"variance_sync", Str("sometimes")}}),
              HasSubstr("variance_sync must be one of full-precision, one-bit; got 'sometimes'"));
  EXPECT_THAT(error({{"compressor", Str("no-such")}}), HasSubstr("no-such"));
  EXPECT_THAT(error({{"freeze_step", Int(3)}}), HasSubstr("freeze_step"));  // 1-bit Adam's name
}

}  // namespace
}  // namespace lemmalab
