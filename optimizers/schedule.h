// Learning-rate schedules alpha_t, t = 1, 2, ...
//
//   [schedule]
//   name = "constant"   # alpha_t = lr
//   name = "inv-sqrt"   # alpha_t = lr / sqrt(t): the c / sqrt(t) of Birder's Theorem 1
//   lr = 0.01           # > 0
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

struct ScheduleInfo {
  std::string_view name;
  std::string_view summary;
  std::unique_ptr<Schedule> (*make)(OptionTable& options);
};

const Registry<ScheduleInfo>& Schedules();

// Builds the schedule a table names (name defaults to "constant") and rejects unknown keys.
std::unique_ptr<Schedule> MakeSchedule(OptionTable& options);

}  // namespace lemmalab
