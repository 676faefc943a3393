#include "optimizers/schedule.h"

#include <fmt/format.h>

#include <cmath>

namespace lemmalab {
namespace {

class Constant final : public Schedule {
 public:
  explicit Constant(double lr) : lr_(lr) {}
  double Rate(std::int64_t /*t*/) const override { return lr_; }
  std::string Describe() const override { return fmt::format("constant {}", lr_); }

 private:
  double lr_;
};

class InverseSqrt final : public Schedule {
 public:
  explicit InverseSqrt(double c) : c_(c) {}
  double Rate(std::int64_t t) const override { return c_ / std::sqrt(static_cast<double>(t)); }
  std::string Describe() const override { return fmt::format("{}/sqrt(t)", c_); }

 private:
  double c_;
};

std::unique_ptr<Schedule> MakeConstant(OptionTable& options) {
  return std::make_unique<Constant>(options.RequireDouble("lr", Interval::Positive()));
}

std::unique_ptr<Schedule> MakeInverseSqrt(OptionTable& options) {
  return std::make_unique<InverseSqrt>(options.RequireDouble("lr", Interval::Positive()));
}

}  // namespace

const Registry<ScheduleInfo>& Schedules() {
  static const Registry<ScheduleInfo> registry(
      "schedule", {
                      {"constant", "alpha_t = lr", &MakeConstant},
                      {"inv-sqrt", "alpha_t = lr / sqrt(t) (Birder Theorem 1)", &MakeInverseSqrt},
                  });
  return registry;
}

std::unique_ptr<Schedule> MakeSchedule(OptionTable& options) {
  if (!options.Has("name")) options.Set("name", {std::string("constant"), options.where()});
  std::unique_ptr<Schedule> schedule = Schedules().Get(options).make(options);
  options.RejectUnknownKeys();
  return schedule;
}

}  // namespace lemmalab
