// DIANA and MARINA (optimizers/diana.h, optimizers/marina.h): steps by hand (identity, and
// random-k with its draws replayed from the documented streams), the reductions to gradient
// descent, MARINA's shared coin and its frequency, the chunked layout, and the options' rules.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "compressors/random_k.h"
#include "optimizers/diana.h"
#include "optimizers/marina.h"
#include "tests/optimizer_test_util.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::MakeNamed;
using testing::Step;
using testing::StepChunked;
using testing::Str;
using testing::Traffic;
using testing::Vec;

using Gradients = testing::StepGradients;
using testing::DyadicGradients;
using testing::GaussianGradients;

// The coordinate random-k (k = 1) keeps for `worker` at step t: Floyd's draw on the worker's
// stream (seed, worker-compression, i, t), as compressors/random_k.h documents it.
std::uint32_t RandomOneOf(std::int64_t d, int worker, std::int64_t t) {
  PhiloxStream stream({testing::kStepSeed, Purpose::kWorkerCompression,
                       static_cast<std::uint32_t>(worker), static_cast<std::uint64_t>(t)});
  RandomKChoice choice(d, 1);
  return choice.Choose(stream)[0];
}

// MARINA's coin at step t > 1 as marina.h documents it: word 0 of (seed, shared-compression,
// kMarinaCoinStream, t) below p 2^32.
bool Coin(std::int64_t t, double p) {
  PhiloxStream stream({testing::kStepSeed, Purpose::kSharedCompression, kMarinaCoinStream,
                       static_cast<std::uint64_t>(t)});
  return static_cast<double>(stream()) < p * 4294967296.0;
}

// ---------------------------------------------------------------------------------------------
// DIANA

// DIANA with C = identity, a = 1/2, n = 2, lr = 1/2, x^0 = 0 (h_i^0 = 0):
//   t = 1: Delta_0 = (2, -2), Delta_1 = (4, 0); h_0 = (1, -1), h_1 = (2, 0);
//          Delta_hat = (3, -1), g_hat = 0 + (3, -1), h = (1.5, -0.5), x = (-1.5, 0.5)
//   t = 2: grads (0, 2) and (2, 2): Delta_0 = (0, 2) - (1, -1) = (-1, 3), h_0 = (0.5, 0.5);
//          Delta_1 = (0, 2), h_1 = (2, 1); Delta_hat = (-0.5, 2.5),
//          g_hat = (1.5, -0.5) + (-0.5, 2.5) = (1, 2) (the mean gradient: C is exact),
//          h = (1.5, -0.5) + (1/2)(-0.5, 2.5) = (1.25, 0.75) = mean h_i, x = (-2, -0.5)
TEST(Diana, IdentityTwoStepsByHand) {
  auto opt = MakeNamed("diana", {{"compressor", Str("identity")}, {"a", {0.5, ""}}}, {2, 2});
  Eigen::VectorXd x = Eigen::VectorXd::Zero(2);
  const Traffic traffic = Step(*opt, 1, 0.5, {Vec({2, -2}), Vec({4, 0})}, x);
  EXPECT_THAT(traffic.up, ElementsAre(16, 16));
  EXPECT_EQ(traffic.down, 16u);
  EXPECT_EQ(*opt->Observe(Quantity::kShift, 0), Vec({1, -1}));
  EXPECT_EQ(*opt->Observe(Quantity::kShift, 1), Vec({2, 0}));
  EXPECT_EQ(*opt->Observe(Quantity::kShift, kServer), Vec({1.5, -0.5}));
  EXPECT_EQ(x, Vec({-1.5, 0.5}));
  Step(*opt, 2, 0.5, {Vec({0, 2}), Vec({2, 2})}, x);
  EXPECT_EQ(*opt->Observe(Quantity::kShift, 0), Vec({0.5, 0.5}));
  EXPECT_EQ(*opt->Observe(Quantity::kShift, 1), Vec({2, 1}));
  EXPECT_EQ(*opt->Observe(Quantity::kShift, kServer), Vec({1.25, 0.75}));
  EXPECT_EQ(x, Vec({-2, -0.5}));
}

// DIANA with random-k (k = 1 of d = 3, scaled by 3: omega = 2, default a = 1/3), n = 2: each
// worker's kept coordinate replayed from its stream, the rest computed here in the same order of
// operations as the definition (h_i += a (3 Delta_j) e_j; mean; g_hat = h + mean; h += a mean).
TEST(Diana, RandomKStepsFollowTheReplayedDraws) {
  auto opt =
      testing::MakeFromToml("name = 'diana'\ncompressor = { name = 'random-k', k = 1 }", 3, 2);
  const double a = 1.0 / 3;
  const Gradients g = {{Vec({1, -2, 4}), Vec({-3, 0.5, 2})},
                       {Vec({2, 1, -1}), Vec({0.5, -1, 3})},
                       {Vec({-1, 2, 0.5}), Vec({1, 1, -2})}};
  std::vector<Eigen::VectorXd> h(2, Eigen::VectorXd::Zero(3));
  Eigen::VectorXd h_mean = Eigen::VectorXd::Zero(3), x = Eigen::VectorXd::Zero(3), x_expected = x;
  for (std::int64_t t = 1; t <= 3; ++t) {
    const auto s = static_cast<std::size_t>(t - 1);
    Eigen::VectorXd mean = Eigen::VectorXd::Zero(3);
    for (int i = 0; i < 2; ++i) {
      const auto w = static_cast<std::size_t>(i);
      const Eigen::VectorXd delta = g[s][w] - h[w];
      const std::uint32_t j = RandomOneOf(3, i, t);
      const double sent = delta[j] * 3.0;  // Delta_hat_i = 3 Delta_j e_j
      h[w][j] += a * sent;
      mean[j] += sent;
    }
    mean /= 2;
    const Eigen::VectorXd g_hat = h_mean + mean;
    h_mean += a * mean;
    x_expected -= 0.5 * g_hat;
    const Traffic traffic = Step(*opt, t, 0.5, g[s], x);
    EXPECT_THAT(traffic.up, ElementsAre(9, 9)) << "t = " << t;  // one index, one fp64 value
    for (int i = 0; i < 2; ++i) {
      EXPECT_LE((*opt->Observe(Quantity::kShift, i) - h[static_cast<std::size_t>(i)]).norm(), 1e-15)
          << "t = " << t;
    }
    EXPECT_LE((*opt->Observe(Quantity::kShift, kServer) - h_mean).norm(), 1e-15);
    EXPECT_LE((x - x_expected).norm(), 1e-15) << "t = " << t;
  }
  EXPECT_GT(x.norm(), 1);
}

// With C = identity and a = 1 every h_i becomes the worker's gradient and g_hat = mean grad_i in
// exact arithmetic: gradient descent. Bit for bit on exact (dyadic, n = 2) data; on Gaussian
// data within rounding, g_hat = h + mean(grad_i - h_i) adding a few ulps of |g| per step:
// 1e-14 over 12 steps at lr = 0.1.
TEST(Diana, WithIdentityAndAOneIsGradientDescent) {
  const testing::OptionPairs identity = {{"compressor", Str("identity")}, {"a", {1.0, ""}}};
  {
    auto diana = MakeNamed("diana", identity, {5, 2});
    auto sgd = MakeNamed("sgd", {}, {5, 2});
    Eigen::VectorXd x_diana = Eigen::VectorXd::Zero(5), x_sgd = x_diana;
    const Gradients g = DyadicGradients(2, 8);
    for (std::size_t s = 0; s < g.size(); ++s) {
      Step(*diana, static_cast<std::int64_t>(s) + 1, 0.25, g[s], x_diana);
      Step(*sgd, static_cast<std::int64_t>(s) + 1, 0.25, g[s], x_sgd);
      ASSERT_EQ(x_diana, x_sgd) << "t = " << s + 1;
      EXPECT_EQ(*diana->Observe(Quantity::kShift, 0), g[s][0]);
    }
    EXPECT_GT(x_sgd.norm(), 1);
  }
  auto diana = MakeNamed("diana", identity, {5, 3});
  auto sgd = MakeNamed("sgd", {}, {5, 3});
  Eigen::VectorXd x_diana = Eigen::VectorXd::Zero(5), x_sgd = x_diana;
  const Gradients g = GaussianGradients(3, 12);
  for (std::size_t s = 0; s < g.size(); ++s) {
    Step(*diana, static_cast<std::int64_t>(s) + 1, 0.1, g[s], x_diana);
    Step(*sgd, static_cast<std::int64_t>(s) + 1, 0.1, g[s], x_sgd);
    EXPECT_LE((x_diana - x_sgd).lpNorm<Eigen::Infinity>(), 1e-14) << "t = " << s + 1;
  }
  EXPECT_GT(x_sgd.norm(), 0.1);
}

TEST(Diana, RefusesABiasedCompressorAndDefaultsAFromOmega) {
  using testing::UserErrorOf;
  const std::string biased = UserErrorOf(
      [] { testing::MakeFromToml("name = 'diana'\ncompressor = { name = 'top-k', k = 1 }", 4); });
  EXPECT_THAT(biased, HasSubstr("diana needs an unbiased compressor"));
  EXPECT_THAT(biased, HasSubstr("'top-k' is biased"));
  EXPECT_THAT(UserErrorOf([] {
                MakeNamed("diana", {{"worker_feedback", Str("classic")}}, {4, 2});
              }),
              HasSubstr("diana has no classic error feedback"));
  EXPECT_THAT(UserErrorOf([] {
                MakeNamed("diana", {{"a", {0.0, ""}}}, {4, 2});
              }),
              HasSubstr("a must be"));
  EXPECT_THAT(UserErrorOf([] {
                MakeNamed("diana", {{"a", {1.5, ""}}}, {4, 2});
              }),
              HasSubstr("a must be"));
  // The default: random-k with fraction 0.1 keeps k = 1 of d = 8, omega = 7, a = 1/8.
  const Hyperparameters h = testing::MakeFromTomlHyperparameters("name = 'diana'", 8);
  EXPECT_EQ(h.Text("compressor.name"), "random-k");
  EXPECT_EQ(h.Number("compressor.fraction"), 0.1);
  EXPECT_EQ(h.Number("a"), 1.0 / 8);
  EXPECT_EQ(testing::MakeFromTomlHyperparameters(
                "name = 'diana'\ncompressor = { name = 'random-k', k = 2 }", 8)
                .Number("a"),
            1.0 / 4);
  EXPECT_EQ(testing::MakeFromTomlHyperparameters("name = 'diana'\na = 0.5", 8).Number("a"), 0.5);
}

// The default of a (and of MARINA's p) needs a declared omega; without one the key is required.
TEST(Diana, WithoutADeclaredOmegaTheDefaultIsRefused) {
  const auto read = [](const std::optional<double>& omega, bool given) {
    OptionTable table("optimizer 'diana'", "");
    if (given) table.Set("a", {0.25, ""});
    return DefaultFromOmega(table, "a", {"mine", omega}, "diana", "the shifts' step", "1/(w+1)");
  };
  EXPECT_EQ(read(3.0, false), 0.25);
  EXPECT_EQ(read(0.0, false), 1);
  EXPECT_EQ(read(std::nullopt, true), 0.25);
  const std::string error = testing::UserErrorOf([&] { read(std::nullopt, false); });
  EXPECT_THAT(error, HasSubstr("compressor 'mine' declares no omega"));
  EXPECT_THAT(error, HasSubstr("give a in (0, 1]"));
}

// ---------------------------------------------------------------------------------------------
// MARINA

// With p = 1 every round sends the gradients in full precision and g is their mean: SGD's
// arithmetic exactly (the same raw messages, the same mean), bit for bit on any data.
TEST(Marina, WithPOneIsGradientDescentBitForBit) {
  auto marina = MakeNamed("marina", {{"p", {1.0, ""}}}, {5, 3});
  auto sgd = MakeNamed("sgd", {}, {5, 3});
  Eigen::VectorXd x_marina = testing::GaussianVector(5, 3), x_sgd = x_marina;
  const Gradients g = GaussianGradients(3, 10);
  for (std::size_t s = 0; s < g.size(); ++s) {
    std::vector<Message> up_marina, up_sgd;
    Step(*marina, static_cast<std::int64_t>(s) + 1, 0.1, g[s], x_marina, testing::kStepSeed,
         &up_marina);
    Step(*sgd, static_cast<std::int64_t>(s) + 1, 0.1, g[s], x_sgd, testing::kStepSeed, &up_sgd);
    ASSERT_EQ(x_marina, x_sgd) << "t = " << s + 1;
    for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(up_marina[i].bytes, up_sgd[i].bytes);
  }
}

// With C = identity a compressed round adds the exact mean difference of the gradients, so g is
// the mean gradient in exact arithmetic whatever the coin: bit for bit on dyadic data (n = 2);
// on Gaussian data the telescoping g + mean(g_i - g_i_prev) rounds by a few ulps per compressed
// round (1e-14 over 20 steps at lr = 0.1).
TEST(Marina, WithIdentityIsGradientDescentForAnyP) {
  const testing::OptionPairs identity = {{"compressor", Str("identity")}, {"p", {0.3, ""}}};
  int compressed = 0;
  {
    auto marina = MakeNamed("marina", identity, {5, 2});
    auto sgd = MakeNamed("sgd", {}, {5, 2});
    Eigen::VectorXd x_marina = Eigen::VectorXd::Zero(5), x_sgd = x_marina;
    const Gradients g = DyadicGradients(2, 12);
    for (std::size_t s = 0; s < g.size(); ++s) {
      const auto t = static_cast<std::int64_t>(s) + 1;
      Step(*marina, t, 0.25, g[s], x_marina);
      Step(*sgd, t, 0.25, g[s], x_sgd);
      ASSERT_EQ(x_marina, x_sgd) << "t = " << t;
      if (t > 1 && !Coin(t, 0.3)) ++compressed;
    }
  }
  EXPECT_GE(compressed, 4);  // the reduction is exercised on compressed rounds
  auto marina = MakeNamed("marina", identity, {5, 3});
  auto sgd = MakeNamed("sgd", {}, {5, 3});
  Eigen::VectorXd x_marina = Eigen::VectorXd::Zero(5), x_sgd = x_marina;
  const Gradients g = GaussianGradients(3, 20);
  for (std::size_t s = 0; s < g.size(); ++s) {
    Step(*marina, static_cast<std::int64_t>(s) + 1, 0.1, g[s], x_marina);
    Step(*sgd, static_cast<std::int64_t>(s) + 1, 0.1, g[s], x_sgd);
    EXPECT_LE((x_marina - x_sgd).lpNorm<Eigen::Infinity>(), 1e-14) << "t = " << s + 1;
  }
}

// MARINA with PermK (compressors/permk.h), the pairing of Szlendak et al.: with n = 2 dividing
// d = 4 the two workers' blocks of one shared permutation partition the coordinates, each scaled
// by 2, so for workers that compress the same vector (identical data: the homogeneous regime
// PermK is made for) the mean of the compressed differences is the difference exactly, every
// draw: MARINA is gradient descent bit for bit on dyadic data, whatever the coin (kept apart
// from the permutation's stream). Each worker sends 2 indices and 2 values (18 bytes) on
// compressed rounds.
TEST(Marina, WithPermKOnAPartitionIsGradientDescent) {
  auto marina = MakeNamed("marina", {{"compressor", Str("permk")}, {"p", {0.25, ""}}}, {4, 2});
  auto sgd = MakeNamed("sgd", {}, {4, 2});
  Eigen::VectorXd x_marina = Eigen::VectorXd::Zero(4), x_sgd = x_marina;
  Gradients g = DyadicGradients(1, 12, 4);
  for (auto& step : g) step.push_back(step.front());  // both workers see the same gradient
  int compressed = 0;
  for (std::size_t s = 0; s < g.size(); ++s) {
    const auto t = static_cast<std::int64_t>(s) + 1;
    const Traffic traffic = Step(*marina, t, 0.25, g[s], x_marina);
    Step(*sgd, t, 0.25, g[s], x_sgd);
    ASSERT_EQ(x_marina, x_sgd) << "t = " << t;
    if (traffic.up[0] == 18) ++compressed;
  }
  EXPECT_GE(compressed, 4);
}

// MARINA with random-k (k = 1 of d = 2, scaled by 2), n = 2, p = 1/2, lr = 1/2, x^0 = 0:
//   t = 1: a full round: the gradients (1, -2) and (3, 4) go raw (16 bytes each),
//          g = (2, 1), x = (-1, -0.5)
//   t > 1: the coin and each worker's kept coordinate replayed from their documented streams:
//          full: g = mean grad; else g += mean_i 2 (grad_i - prev_i)_j e_j.
TEST(Marina, RoundsFollowTheReplayedCoinAndDraws) {
  auto opt = testing::MakeFromToml(
      "name = 'marina'\np = 0.5\ncompressor = { name = 'random-k', k = 1 }", 2, 2);
  ASSERT_TRUE(opt->KeepCompressionRecords());
  Eigen::VectorXd x = Eigen::VectorXd::Zero(2);
  Traffic traffic = Step(*opt, 1, 0.5, {Vec({1, -2}), Vec({3, 4})}, x);
  EXPECT_THAT(traffic.up, ElementsAre(16, 16));
  EXPECT_EQ(x, Vec({-1, -0.5}));
  EXPECT_EQ(opt->LastCompression(0), nullptr);
  EXPECT_EQ(opt->LastEncode(1)->elements, 2);

  const Gradients g = {{Vec({2, 1}), Vec({-1, 3})},   {Vec({0.5, 2}), Vec({1, -1})},
                       {Vec({-2, 1}), Vec({2, 0.5})}, {Vec({1, 1}), Vec({-0.5, 2})},
                       {Vec({3, -1}), Vec({0, 1})},   {Vec({-1, -1}), Vec({2, 2})}};
  std::vector<Eigen::VectorXd> previous = {Vec({1, -2}), Vec({3, 4})};
  Eigen::VectorXd g_expected = Vec({2, 1}), x_expected = x;
  int full = 0, compressed = 0;
  for (std::int64_t t = 2; t <= 7; ++t) {
    const auto& grads = g[static_cast<std::size_t>(t - 2)];
    const bool coin = Coin(t, 0.5);
    if (coin) {
      g_expected = (grads[0] + grads[1]) / 2;
      ++full;
    } else {
      Eigen::VectorXd mean = Eigen::VectorXd::Zero(2);
      for (int i = 0; i < 2; ++i) {
        const auto w = static_cast<std::size_t>(i);
        const std::uint32_t j = RandomOneOf(2, i, t);
        mean[j] += 2 * (grads[w][j] - previous[w][j]);
      }
      g_expected += mean / 2;
      ++compressed;
    }
    const std::vector<Eigen::VectorXd> last = previous;
    previous = grads;
    x_expected -= 0.5 * g_expected;
    traffic = Step(*opt, t, 0.5, grads, x);
    EXPECT_THAT(traffic.up, ElementsAre(coin ? 16 : 9, coin ? 16 : 9)) << "t = " << t;
    EXPECT_EQ(x, x_expected) << "t = " << t;  // dyadic values: exact
    EXPECT_EQ(opt->LastCompression(0) == nullptr, coin) << "t = " << t;
    if (!coin) {
      EXPECT_EQ(opt->LastCompression(0)->input, grads[0] - last[0]);  // C_0's input
    }
  }
  EXPECT_GE(full, 1);  // both kinds of round occur in this seed's six coins
  EXPECT_GE(compressed, 1);
}

// The coin is one draw per step that every worker, the server and the replicas make themselves:
// at every step all workers send the same kind (full: 8 fp64 values = 64 bytes; compressed:
// random-k's one index and value = 9 bytes), the kind is the documented stream's coin, and over
// 2000 rounds the share of full ones is p = 1/4 within 4 standard deviations (fixed seed).
TEST(Marina, TheCoinIsSharedAndFullRoundsHaveFrequencyP) {
  const double p = 0.25;
  auto opt = MakeNamed("marina", {{"p", {p, ""}}}, {8, 3});
  Eigen::VectorXd x = Eigen::VectorXd::Zero(8);
  const std::vector<Eigen::VectorXd> g = {
      testing::GaussianVector(8, 1), testing::GaussianVector(8, 2), testing::GaussianVector(8, 3)};
  constexpr int kRounds = 2000;
  int full = 0;
  for (std::int64_t t = 1; t <= kRounds + 1; ++t) {
    const Traffic traffic = Step(*opt, t, 1e-3, g, x);
    const bool is_full = traffic.up[0] == 64;
    ASSERT_THAT(traffic.up, ElementsAre(is_full ? 64 : 9, is_full ? 64 : 9, is_full ? 64 : 9))
        << "t = " << t;
    ASSERT_EQ(is_full, t == 1 || Coin(t, p)) << "t = " << t;
    ASSERT_EQ(MarinaFullRound({t, 1e-3, testing::kStepSeed}, p), is_full);
    if (t > 1 && is_full) ++full;
  }
  const double sd = std::sqrt(kRounds * p * (1 - p));
  EXPECT_LE(std::abs(full - kRounds * p), 4 * sd) << full << " full rounds of " << kRounds;
}

TEST(Marina, RefusesABiasedCompressorAndDefaultsPFromOmega) {
  using testing::UserErrorOf;
  const std::string biased = UserErrorOf(
      [] { testing::MakeFromToml("name = 'marina'\ncompressor = { name = 'top-k', k = 1 }", 4); });
  EXPECT_THAT(biased, HasSubstr("marina needs an unbiased compressor"));
  EXPECT_THAT(UserErrorOf([] {
                MakeNamed("marina", {{"server_feedback", Str("classic")}}, {4, 2});
              }),
              HasSubstr("marina has no classic error feedback"));
  EXPECT_THAT(UserErrorOf([] {
                MakeNamed("marina", {{"p", {0.0, ""}}}, {4, 2});
              }),
              HasSubstr("p must be"));
  // random-k keeping k of d: omega = d/k - 1, so p = 1/(omega + 1) = k/d, the paper's
  // zeta_Q / d.
  EXPECT_EQ(testing::MakeFromTomlHyperparameters("name = 'marina'", 8).Number("p"), 1.0 / 8);
  EXPECT_EQ(testing::MakeFromTomlHyperparameters(
                "name = 'marina'\ncompressor = { name = 'random-k', k = 2 }", 8)
                .Number("p"),
            2.0 / 8);
  EXPECT_EQ(
      testing::MakeFromTomlHyperparameters("name = 'marina'\ncompressor = { name = 'identity' }", 8)
          .Number("p"),
      1);
}

// ---------------------------------------------------------------------------------------------
// Both: the chunked layout

// Every phase is per coordinate and a round's messages are all of one kind, so a run cut into two
// chunks equals the one-chunk run bit for bit (MARINA's full and compressed rounds both occur in
// 8 steps at p = 1/2); hierarchical layouts are refused.
TEST(DianaMarina, ChunkedLayoutEqualsOneChunk) {
  const OptimizerContext chunked{128, 2, {}, ExchangeLayout{{0, 64, 128}}};
  const std::vector<std::pair<std::string, testing::OptionPairs>> configs = {
      {"diana", {{"compressor", Str("natural")}}},
      {"marina", {{"compressor", Str("natural")}, {"p", {0.5, ""}}}}};
  for (const auto& [name, options] : configs) {
    auto one = MakeNamed(name, options, {128, 2});
    auto two = MakeNamed(name, options, chunked);
    EXPECT_TRUE(two->SupportsChunks());
    EXPECT_FALSE(two->SupportsHierarchy());
    Eigen::VectorXd x_one = testing::GaussianVector(128, 1), x_two = x_one;
    const Gradients g = GaussianGradients(2, 8, 128);
    for (std::size_t s = 0; s < g.size(); ++s) {
      Step(*one, static_cast<std::int64_t>(s) + 1, 0.1, g[s], x_one);
      StepChunked(*two, 2, static_cast<std::int64_t>(s) + 1, 0.1, g[s], x_two);
      ASSERT_EQ(x_one, x_two) << name << ", t = " << s + 1;
    }
  }
}

}  // namespace
}  // namespace lemmalab
