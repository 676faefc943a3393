// Learning-rate schedules alpha_t, t = 1, 2, ..., T (T = the run's steps).
//
//   [schedule]
//   name = "constant"       # alpha_t = lr
//   name = "inv-sqrt"       # alpha_t = lr / sqrt(t): the c / sqrt(t) of Birder's Theorem 1
//   name = "step"           # alpha_t = lr gamma^k, k = the number of decay points before t:
//                           #   every `step_size` steps, or at the steps listed in `milestones`
//   name = "warmup-linear"  # linear warmup over `warmup` steps (alpha_t = lr t / warmup), then
//                           #   linear decay towards 0 at T + 1 (BERT; onebit-lamb App. A.1)
//   name = "warmup-exp"     # linear warmup, then lr times gamma after every `every` steps:
//                           #   alpha_t = lr gamma^floor((t - warmup - 1) / every)
//                           #   (onebit-adam.txt Sec. 7.1: "0.99 ... after every 520 steps")
//   lr = 0.01               # > 0, required
//   workers_exponent = 0.5  # any schedule: alpha_t times n^a T^b (a = workers_exponent,
//   steps_exponent = -0.5   #   b = steps_exponent, each in [-2, 2], default 0): the step sizes
//                           #   the corollaries prescribe as functions of n and T
//
// Every schedule is positive for t <= T (scaled error feedback divides by it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/options.h"
#include "core/registry.h"

namespace lemmalab {

class Schedule {
 public:
  virtual ~Schedule() = default;
  virtual double Rate(std::int64_t t) const = 0;
  virtual std::string Describe() const = 0;
};

// What a schedule may need to know about the run.
struct ScheduleContext {
  std::int64_t steps = 1;  // T
  int workers = 1;         // n
};

struct ScheduleInfo {
  std::string_view name;
  std::string_view summary;
  std::unique_ptr<Schedule> (*make)(OptionTable& options, const ScheduleContext& context);
};

const Registry<ScheduleInfo>& Schedules();

// Builds the schedule a table names (name defaults to "constant") and rejects unknown keys.
std::unique_ptr<Schedule> MakeSchedule(OptionTable& options, const ScheduleContext& context);

}  // namespace lemmalab
