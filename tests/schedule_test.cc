// Learning-rate schedules: values at chosen steps by hand, and their validation.
#include "optimizers/schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "engine/spec.h"

namespace lemmalab {
namespace {

std::unique_ptr<Schedule> Make(const std::string& toml, std::int64_t steps = 100) {
  auto table = ParseOptionTable(toml, "schedule", "test.toml");
  return MakeSchedule(*table, {steps});
}

TEST(Schedule, ConstantAndInverseSqrt) {
  EXPECT_EQ(Make("lr = 0.3")->Rate(17), 0.3);
  const auto inv = Make("name = 'inv-sqrt'\nlr = 0.3");
  EXPECT_EQ(inv->Rate(1), 0.3);
  EXPECT_EQ(inv->Rate(4), 0.15);
}

TEST(Schedule, StepDecayEveryStepSizeAndAtMilestones) {
  const auto every = Make("name = 'step'\nlr = 1\ngamma = 0.5\nstep_size = 3");
  // t = 1, 2, 3 -> 1; t = 4..6 -> 0.5; t = 7 -> 0.25 (PyTorch StepLR with epoch = t - 1).
  for (const auto& [t, rate] :
       std::vector<std::pair<int, double>>{{1, 1}, {3, 1}, {4, 0.5}, {6, 0.5}, {7, 0.25}}) {
    EXPECT_EQ(every->Rate(t), rate) << "t = " << t;
  }
  const auto milestones = Make("name = 'step'\nlr = 1\nmilestones = [2, 5]");
  EXPECT_EQ(milestones->Rate(2), 1.0);
  EXPECT_DOUBLE_EQ(milestones->Rate(3), 0.1);
  EXPECT_DOUBLE_EQ(milestones->Rate(5), 0.1);
  EXPECT_DOUBLE_EQ(milestones->Rate(6), 0.01);
}

TEST(Schedule, LinearWarmupThenLinearDecayStaysPositive) {
  const auto s = Make("name = 'warmup-linear'\nlr = 1\nwarmup = 4", 10);
  EXPECT_EQ(s->Rate(1), 0.25);
  EXPECT_EQ(s->Rate(4), 1.0);
  EXPECT_EQ(s->Rate(5), 1.0);       // (10 + 1 - 5) / (10 - 4)
  EXPECT_EQ(s->Rate(8), 0.5);       // 3 / 6
  EXPECT_EQ(s->Rate(10), 1.0 / 6);  // last step: still positive
  EXPECT_EQ(s->Rate(11), 0.0);
  const auto no_warmup = Make("name = 'warmup-linear'\nlr = 2\ntotal = 4");
  EXPECT_EQ(no_warmup->Rate(1), 2.0);
  EXPECT_EQ(no_warmup->Rate(4), 0.5);
}

TEST(Schedule, WarmupThenExponentialDecayAsOneBitAdamsBert) {
  const auto s = Make("name = 'warmup-exp'\nlr = 4e-4\nwarmup = 10\ngamma = 0.99\nevery = 5");
  EXPECT_DOUBLE_EQ(s->Rate(5), 2e-4);
  EXPECT_DOUBLE_EQ(s->Rate(10), 4e-4);
  // Five steps at lr after the warmup (t = 11..15), then x0.99 after every five.
  EXPECT_DOUBLE_EQ(s->Rate(15), 4e-4);
  EXPECT_DOUBLE_EQ(s->Rate(16), 4e-4 * 0.99);
  EXPECT_DOUBLE_EQ(s->Rate(25), 4e-4 * 0.99 * 0.99);
  EXPECT_DOUBLE_EQ(s->Rate(26), 4e-4 * 0.99 * 0.99 * 0.99);
}

TEST(Schedule, RejectsBadOptions) {
  using ::testing::HasSubstr;
  using ::testing::ThrowsMessage;
  EXPECT_THAT([] { Make("lr = 0"); }, ThrowsMessage<UserError>(HasSubstr("lr must be > 0")));
  EXPECT_THAT([] { Make("name = 'step'\nlr = 1"); },
              ThrowsMessage<UserError>(HasSubstr("exactly one of step_size")));
  EXPECT_THAT([] { Make("name = 'step'\nlr = 1\nstep_size = 2\nmilestones = [3]"); },
              ThrowsMessage<UserError>(HasSubstr("exactly one of step_size")));
  EXPECT_THAT([] { Make("name = 'step'\nlr = 1\nmilestones = [5, 3]"); },
              ThrowsMessage<UserError>(HasSubstr("strictly increasing, got [5, 3]")));
  EXPECT_THAT([] { Make("name = 'step'\nlr = 1\nstep_size = 2\ngamma = 1.5"); },
              ThrowsMessage<UserError>(HasSubstr("gamma must be in (0, 1]")));
  EXPECT_THAT([] { Make("name = 'warmup-linear'\nlr = 1\nwarmup = 10", 10); },
              ThrowsMessage<UserError>(HasSubstr("warmup must be < total (10), got 10")));
}

}  // namespace
}  // namespace lemmalab
