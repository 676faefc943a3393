#include "optimizers/schedule.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace lemmalab {
namespace {

constexpr std::int64_t kNoLimit = std::numeric_limits<std::int64_t>::max();

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

// alpha_t = lr gamma^k, k = #{decay points p : p < t}; the decay points are the multiples of
// step_size or the milestones. Matches PyTorch's StepLR / MultiStepLR with one "epoch" per step
// (their epoch counter starts at 0 where our t starts at 1).
class StepDecay final : public Schedule {
 public:
  StepDecay(double lr, double gamma, std::int64_t step_size, std::vector<std::int64_t> milestones)
      : lr_(lr), gamma_(gamma), step_size_(step_size), milestones_(std::move(milestones)) {}

  double Rate(std::int64_t t) const override {
    std::int64_t k = 0;
    if (milestones_.empty()) {
      k = (t - 1) / step_size_;
    } else {
      k = std::count_if(milestones_.begin(), milestones_.end(),
                        [t](std::int64_t p) { return p < t; });
    }
    return lr_ * std::pow(gamma_, static_cast<double>(k));
  }
  std::string Describe() const override {
    if (milestones_.empty()) return fmt::format("{} x {}^floor((t-1)/{})", lr_, gamma_, step_size_);
    return fmt::format("{} x {} at steps after [{}]", lr_, gamma_, fmt::join(milestones_, ", "));
  }

 private:
  double lr_, gamma_;
  std::int64_t step_size_;
  std::vector<std::int64_t> milestones_;
};

// Linear warmup to lr over `warmup` steps, then a decay; warmup = 0 starts at lr.
class Warmup final : public Schedule {
 public:
  enum class Decay { kLinear, kExponential };
  Warmup(double lr, std::int64_t warmup, Decay decay, std::int64_t total, double gamma,
         std::int64_t every)
      : lr_(lr), warmup_(warmup), decay_(decay), total_(total), gamma_(gamma), every_(every) {}

  double Rate(std::int64_t t) const override {
    if (t <= warmup_) return lr_ * static_cast<double>(t) / static_cast<double>(warmup_);
    if (decay_ == Decay::kLinear) {
      // lr at t = warmup + 1, lr / (T - warmup) at t = T: positive on every step of the run.
      const double left = static_cast<double>(std::max<std::int64_t>(total_ + 1 - t, 0));
      return lr_ * left / static_cast<double>(total_ - warmup_);
    }
    return lr_ * std::pow(gamma_, static_cast<double>((t - warmup_ - 1) / every_));
  }
  std::string Describe() const override {
    if (decay_ == Decay::kLinear) {
      return fmt::format("{} with {} warmup steps, linear decay to step {}", lr_, warmup_, total_);
    }
    return fmt::format("{} with {} warmup steps, then x{} every {} steps", lr_, warmup_, gamma_,
                       every_);
  }

 private:
  double lr_;
  std::int64_t warmup_;
  Decay decay_;
  std::int64_t total_;
  double gamma_;
  std::int64_t every_;
};

// lr times n^a T^b: the step sizes the corollaries prescribe as functions of the number of
// workers and the horizon (SPAMS Corollary 1's eta = L sqrt(n / T) is lr = L, a = 1/2, b = -1/2),
// so one spec swept over workers runs each n at its own prescribed step size.
class Scaled final : public Schedule {
 public:
  Scaled(std::unique_ptr<Schedule> inner, double factor, std::string how)
      : inner_(std::move(inner)), factor_(factor), how_(std::move(how)) {}
  double Rate(std::int64_t t) const override { return factor_ * inner_->Rate(t); }
  std::string Describe() const override {
    return fmt::format("({}) x {} = x {:.6g}", inner_->Describe(), how_, factor_);
  }

 private:
  std::unique_ptr<Schedule> inner_;
  double factor_;
  std::string how_;
};

double ReadRate(OptionTable& options) { return options.RequireDouble("lr", Interval::Positive()); }

std::unique_ptr<Schedule> MakeConstant(OptionTable& options, const ScheduleContext&) {
  return std::make_unique<Constant>(ReadRate(options));
}

std::unique_ptr<Schedule> MakeInverseSqrt(OptionTable& options, const ScheduleContext&) {
  return std::make_unique<InverseSqrt>(ReadRate(options));
}

std::unique_ptr<Schedule> MakeStep(OptionTable& options, const ScheduleContext&) {
  const double lr = ReadRate(options);
  const double gamma = options.GetDouble("gamma", 0.1, {0.0, 1.0, true, false});
  const bool has_step = options.Has("step_size"), has_milestones = options.Has("milestones");
  if (has_step == has_milestones) {
    options.Fail(has_step ? "milestones" : "name",
                 "the step schedule needs exactly one of step_size (decay every that many "
                 "steps) and milestones (decay after each listed step)");
  }
  const std::int64_t step_size = has_step ? options.GetInt("step_size", 1, 1) : 1;
  std::vector<std::int64_t> milestones = options.GetIntList("milestones", {}, 1, kNoLimit);
  options.Describe("step_size", "an integer >= 1; decay every step_size steps (or milestones)");
  options.Describe("milestones",
                   "an increasing array of integers >= 1; decay after each (or step_size)");
  if (!std::is_sorted(milestones.begin(), milestones.end()) ||
      std::adjacent_find(milestones.begin(), milestones.end()) != milestones.end()) {
    options.Fail("milestones", fmt::format("milestones must be strictly increasing, got [{}]",
                                           fmt::join(milestones, ", ")));
  }
  return std::make_unique<StepDecay>(lr, gamma, step_size, std::move(milestones));
}

std::int64_t ReadWarmup(OptionTable& options) { return options.GetInt("warmup", 0, 0); }

std::unique_ptr<Schedule> MakeWarmupLinear(OptionTable& options, const ScheduleContext& context) {
  const double lr = ReadRate(options);
  const std::int64_t total = options.GetInt("total", context.steps, 1);
  options.Describe("total", "an integer >= 1; default: the run's steps");
  const std::int64_t warmup = ReadWarmup(options);
  if (warmup >= total) {
    options.Fail("warmup", fmt::format("warmup must be < total ({}), got {}", total, warmup));
  }
  return std::make_unique<Warmup>(lr, warmup, Warmup::Decay::kLinear, total, 1.0, 1);
}

std::unique_ptr<Schedule> MakeWarmupExp(OptionTable& options, const ScheduleContext&) {
  const double lr = ReadRate(options);
  const std::int64_t warmup = ReadWarmup(options);
  const double gamma = options.GetDouble("gamma", 0.99, {0.0, 1.0, true, false});
  const std::int64_t every = options.GetInt("every", 520, 1);
  return std::make_unique<Warmup>(lr, warmup, Warmup::Decay::kExponential, 0, gamma, every);
}

}  // namespace

const Registry<ScheduleInfo>& Schedules() {
  static const Registry<ScheduleInfo> registry(
      "schedule",
      {
          {"constant", "alpha_t = lr", &MakeConstant},
          {"inv-sqrt", "alpha_t = lr / sqrt(t) (Birder Theorem 1)", &MakeInverseSqrt},
          {"step", "alpha_t = lr gamma^k after k decay points (step_size or milestones)",
           &MakeStep},
          {"warmup-linear",
           "linear warmup over `warmup` steps, then linear decay to the end (BERT)",
           &MakeWarmupLinear},
          {"warmup-exp",
           "linear warmup, then x gamma after every `every` steps (onebit-adam Sec. 7.1)",
           &MakeWarmupExp},
      });
  return registry;
}

std::unique_ptr<Schedule> MakeSchedule(OptionTable& options, const ScheduleContext& context) {
  if (!options.Has("name")) options.Set("name", {std::string("constant"), options.where()});
  std::unique_ptr<Schedule> schedule = Schedules().Get(options).make(options, context);
  const double a = options.GetDouble("workers_exponent", 0, Interval{-2, 2});
  const double b = options.GetDouble("steps_exponent", 0, Interval{-2, 2});
  options.RejectUnknownKeys();
  if (a == 0 && b == 0) return schedule;
  const double factor = std::pow(static_cast<double>(context.workers), a) *
                        std::pow(static_cast<double>(context.steps), b);
  return std::make_unique<Scaled>(
      std::move(schedule), factor,
      fmt::format("n^{} T^{} (n = {}, T = {})", a, b, context.workers, context.steps));
}

}  // namespace lemmalab
