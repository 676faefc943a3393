// Weight decay (optimizers/weight_decay.h) around any optimizer's phases: decoupled as PyTorch's
// AdamW, L2 as a gradient term that travels through the algorithm.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "optimizers/optimizer.h"
#include "tests/optimizer_test_util.h"

namespace lemmalab {
namespace {

using testing::MakeFromToml;
using testing::Step;

// The StepContext seed of every Step in this file.
constexpr std::uint64_t kSeed = 1;

// SGD: decoupled x <- (1 - lr lambda) x - lr g; L2: x <- x - lr (g + lambda x). The two agree
// in exact arithmetic for SGD (and only for SGD); the test checks each against its formula.
TEST(WeightDecay, SgdByHandInBothModes) {
  const std::vector<Eigen::VectorXd> g = {Eigen::Vector2d(1, -1), Eigen::Vector2d(3, 1)};
  auto decoupled = MakeFromToml("name = 'sgd'\nweight_decay = 0.5", 2);
  auto l2 = MakeFromToml("name = 'sgd'\nweight_decay = 0.5\nweight_decay_mode = 'l2'", 2);
  Eigen::VectorXd x1 = Eigen::Vector2d(2, -4), x2 = x1;
  Step(*decoupled, 1, 0.1, g, x1, kSeed);
  Step(*l2, 1, 0.1, g, x2, kSeed);
  // mean g = (2, 0): decoupled (1 - 0.05) (2, -4) - 0.1 (2, 0) = (1.7, -3.8).
  EXPECT_NEAR((x1 - Eigen::Vector2d(1.7, -3.8)).norm(), 0.0, 1e-15);
  // L2: mean of (g_i + 0.5 x) = (2, 0) + (1, -2) = (3, -2); x - 0.1 (3, -2) = (1.7, -3.8).
  EXPECT_NEAR((x2 - Eigen::Vector2d(1.7, -3.8)).norm(), 0.0, 1e-15);
}

// For Adam the two modes differ: L2 goes through the preconditioner, decoupled does not
// (Loshchilov & Hutter's point). With g = 0 and x != 0, decoupled Adam only shrinks x by
// (1 - lr lambda), while L2 Adam moves x by about lr sign(x) (the normalised step).
TEST(WeightDecay, DecoupledAndL2DifferForAdam) {
  const std::vector<Eigen::VectorXd> zero = {Eigen::Vector2d(0, 0)};
  auto decoupled = MakeFromToml("name = 'adam'\nweight_decay = 0.1", 2, 1);
  auto l2 = MakeFromToml("name = 'adam'\nweight_decay = 0.1\nweight_decay_mode = 'l2'", 2, 1);
  Eigen::VectorXd x1 = Eigen::Vector2d(2, -4), x2 = x1;
  Step(*decoupled, 1, 0.01, zero, x1, kSeed);
  Step(*l2, 1, 0.01, zero, x2, kSeed);
  EXPECT_NEAR((x1 - Eigen::Vector2d(2 * 0.999, -4 * 0.999)).norm(), 0.0, 1e-15);
  // Adam's first bias-corrected step is lr * g / (|g| + eps') = lr sign(g), g = 0.1 x.
  EXPECT_NEAR((x2 - Eigen::Vector2d(2 - 0.01, -4 + 0.01)).norm(), 0.0, 1e-9);
}

TEST(WeightDecay, LeavesTheOptimizerAsProbesSeeIt) {
  auto plain = MakeFromToml("name = 'birder'", 3);
  auto decayed = MakeFromToml("name = 'birder'\nweight_decay = 0.1", 3);
  // Decay is applied around the phases, so the optimizer probes read is the algorithm itself
  // (tests/probe_contract_test.cc runs every probe with it).
  EXPECT_EQ(decayed->weight_decay().lambda, 0.1);
  EXPECT_TRUE(decayed->weight_decay().decoupled());
  EXPECT_NE(decayed->observable().Observe(Quantity::kRawDenominator, 0), nullptr);
  EXPECT_NE(plain->observable().Observe(Quantity::kRawDenominator, 0), nullptr);
  EXPECT_TRUE(decayed->observable().CanKeepCompressionRecords());
}

TEST(WeightDecay, RejectsBadValues) {
  EXPECT_THAT([] { MakeFromToml("name = 'sgd'\nweight_decay = -1", 2); },
              ::testing::ThrowsMessage<UserError>(
                  ::testing::HasSubstr("weight_decay must be >= 0, got -1")));
  EXPECT_THAT([] { MakeFromToml("name = 'sgd'\nweight_decay_mode = 'l1'", 2); },
              ::testing::ThrowsMessage<UserError>(::testing::HasSubstr("decoupled, l2")));
}

}  // namespace
}  // namespace lemmalab
