#include "theory/verdicts.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "theory/metrics.h"

namespace lemmalab {

std::string_view VerdictName(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::kHolds:
      return "holds";
    case VerdictKind::kVacuous:
      return "holds (vacuous)";
    case VerdictKind::kViolated:
      return "violated";
    case VerdictKind::kInconclusive:
      break;
  }
  return "inconclusive";
}

std::string_view ExpectationName(VerdictKind kind) {
  return kind == VerdictKind::kVacuous ? "vacuous" : VerdictName(kind);
}

Verdict Settle(Verdict verdict) {
  std::vector<std::string> failed, unchecked;
  bool all_forms = false;
  for (const Premise& p : verdict.premises) {
    if (p.status == Premise::Status::kUnchecked) unchecked.push_back(p.name);
    if (!p.failed()) continue;
    all_forms = all_forms || !p.own_form_only;
    std::string where;
    if (p.step)
      where = fmt::format(" (step {}{})", *p.step,
                          p.worker ? ", " + SenderName(*p.worker) : std::string());
    failed.push_back(fmt::format("{}{}", p.name, where));
  }
  if (failed.empty()) {
    if (!unchecked.empty() && verdict.kind != VerdictKind::kInconclusive) {
      const std::string note =
          fmt::format("taken on trust (unchecked on this run): {}", fmt::join(unchecked, "; "));
      verdict.detail = verdict.detail.empty() ? note : fmt::format("{}; {}", note, verdict.detail);
    }
    return verdict;
  }
  const std::string alone =
      verdict.kind == VerdictKind::kInconclusive
          ? std::string()
          : fmt::format("; the bound alone would say {}", VerdictName(verdict.kind));
  verdict.kind = VerdictKind::kInconclusive;
  // The other forms of the bound rest on the same premises.
  for (BoundForm& form : verdict.other_forms) {
    if (!all_forms || form.kind == VerdictKind::kInconclusive) continue;
    form.detail = fmt::format("the bound alone would say {}{}{}", VerdictName(form.kind),
                              form.detail.empty() ? "" : "; ", form.detail);
    form.kind = VerdictKind::kInconclusive;
  }
  const std::string why =
      fmt::format("premise failed: {}{}", fmt::join(failed, "; premise failed: "), alone);
  verdict.detail = verdict.detail.empty() ? why : fmt::format("{}; {}", why, verdict.detail);
  return verdict;
}

std::string SenderName(int worker) {
  if (worker == kServer) return "server";
  if (worker == kRunWide) return "";
  return fmt::format("worker {}", worker);
}

namespace {

template <typename Breaks>
Verdict EveryValue(std::initializer_list<const Series*> series, double bound, std::string_view what,
                   std::string bound_text, bool upper, Breaks breaks) {
  Extent all;
  std::int64_t recorded = 0;
  Verdict::Statistic statistic{{}, upper ? "max" : "min"};
  for (const Series* s : series) {
    if (s == nullptr) continue;
    all.Merge(s->extent());
    recorded += static_cast<std::int64_t>(s->recorded());
    statistic.series.push_back(s->name());
  }
  if (all.empty()) return Verdict::Inconclusive(fmt::format("no values of {} recorded", what));
  Verdict v;
  v.statistic = std::move(statistic);
  v.kind = VerdictKind::kHolds;
  v.bound = std::move(bound_text);
  v.bound_value = bound;
  // The extreme of the finite values, or the first non-finite value when there are no others.
  Series::Point extreme = upper ? Series::Point{all.max_step, all.max_worker, all.max}
                                : Series::Point{all.min_step, all.min_worker, all.min};
  if (all.finite_count() == 0 || (!all.finite() && !breaks(extreme.value))) {
    extreme = {all.first_non_finite_step, all.first_non_finite_worker, all.first_non_finite};
  }
  v.measured_value = extreme.value;
  v.measured = fmt::format("{} {} {:.6g} over all {} values ({} recorded)", upper ? "max" : "min",
                           what, extreme.value, all.count, recorded);
  v.worst_step = extreme.step;
  if (extreme.worker != kRunWide) v.worst_worker = extreme.worker;
  if (!breaks(extreme.value)) return v;
  v.kind = VerdictKind::kViolated;
  // Where the recorded points break it: all the breaks when the points are every value (then the
  // verdict's step is the first), a sample of them otherwise.
  std::int64_t broken = 0;
  std::optional<Series::Point> first;
  bool complete = true;
  for (const Series* s : series) {
    if (s == nullptr) continue;
    complete = complete && s->Complete();
    for (const Series::Point& p : s->sample()) {
      if (!breaks(p.value)) continue;
      ++broken;
      if (!first || p.step < first->step) first = p;
    }
  }
  if (complete && first) {
    v.worst_step = first->step;
    v.worst_worker = first->worker == kRunWide ? std::nullopt : std::optional<int>(first->worker);
  }
  const std::string at =
      fmt::format("step {}{}", extreme.step,
                  extreme.worker == kRunWide ? "" : ", " + SenderName(extreme.worker));
  v.detail =
      first ? fmt::format(
                  "{} at {} ({:.6g}); {} of the {} recorded values break it, the "
                  "first at step {}{}",
                  upper ? "the largest" : "the smallest", at, extreme.value, broken, recorded,
                  first->step, first->worker == kRunWide ? "" : ", " + SenderName(first->worker))
            : fmt::format(
                  "{} at {} ({:.6g}), between the recorded values, none of which "
                  "breaks it",
                  upper ? "the largest" : "the smallest", at, extreme.value);
  return v;
}

}  // namespace

Verdict EveryValueAtMost(std::initializer_list<const Series*> series, double bound,
                         std::string_view what, std::string bound_text) {
  return EveryValue(series, bound, what, std::move(bound_text), true,
                    [bound](double value) { return !(value <= bound); });
}

Verdict EveryValueAtLeast(std::initializer_list<const Series*> series, double bound,
                          std::string_view what, std::string bound_text) {
  return EveryValue(series, bound, what, std::move(bound_text), false,
                    [bound](double value) { return !(value >= bound); });
}

std::string OverAllValues(const Series& series) {
  return fmt::format("over all {} values ({} recorded)", series.observed(), series.recorded());
}

VerdictKind ExpectationVerdict(double measured, double bound, double confidence) {
  if (measured <= bound) return VerdictKind::kHolds;
  if (measured > bound / (1 - confidence)) return VerdictKind::kViolated;
  return VerdictKind::kInconclusive;
}

BoundForm ExpectationForm(std::string name, std::string bound_text, double measured, double bound,
                          double trivial, std::string_view trivial_text, double confidence) {
  BoundForm f;
  f.name = std::move(name);
  f.bound = std::move(bound_text);
  f.bound_value = bound;
  if (!std::isfinite(bound)) {
    f.detail = "no claim at these constants (the bound is infinite)";
    return f;
  }
  f.kind = ExpectationVerdict(measured, bound, confidence);
  if (f.kind == VerdictKind::kHolds && bound >= trivial) {
    f.kind = VerdictKind::kVacuous;
    f.detail = fmt::format("vacuous: not below {}", trivial_text);
  }
  return f;
}

double RoundingSlack(const RunEvidence& run, std::optional<double> given) {
  return given.value_or(run.precision == Precision::kFp64 ? 1e-12 : 1e-6);
}

MeanEstimate MeanOfEveryValue(MeanEstimate from_sample, const Extent& every, bool independent) {
  if (every.empty()) return from_sample;
  from_sample.mean = every.mean();
  from_sample.samples = every.count;
  if (independent) {
    const auto n = static_cast<double>(every.count);
    from_sample.standard_error = every.count >= 2 ? std::sqrt(every.variance() / n)
                                                  : std::numeric_limits<double>::infinity();
    from_sample.dof = n - 1;
  }
  return from_sample;
}

const Series* RequireProbe(const RunEvidence& run, std::string_view probe, std::string_view series,
                           std::string& why) {
  const Series* s = run.Probe(probe, series);
  if (s == nullptr || s->empty()) {
    why = fmt::format("run '{}' recorded no {}/{} (probe {} did not apply or ran no step)",
                      run.label, probe, series, probe);
    return nullptr;
  }
  return s;
}

std::optional<GradientAverage> ReadGradientAverage(const RunEvidence& run, std::int64_t steps,
                                                   std::string& why) {
  const Series* lr = run.Metric(metric::kLr);
  const Series* grad = run.Metric(metric::kGradSqNorm);
  const Series* loss = run.Metric(metric::kTrainLoss);
  if (lr == nullptr || lr->empty() || grad == nullptr || loss == nullptr) {
    why = "the run has no lr, grad_sq_norm or train_loss metric";
    return std::nullopt;
  }
  GradientAverage a;
  a.step_size = lr->sample().front().value;
  a.grad_sq.assign(static_cast<std::size_t>(steps), NAN);
  std::vector<bool> seen(static_cast<std::size_t>(steps), false);
  for (const Series::Point& p : grad->points()) {
    if (p.step < 0 || p.step >= steps) continue;
    a.grad_sq[static_cast<std::size_t>(p.step)] = p.value;
    seen[static_cast<std::size_t>(p.step)] = true;
  }
  const std::optional<double> f0 = loss->At(0);
  const auto gaps = std::count(seen.begin(), seen.end(), false);
  if (gaps > 0 || !f0) {
    why = fmt::format(
        "grad_sq_norm is missing at {} of the steps 0..{} (the theorem averages over every "
        "iterate: run with eval_every = 1)",
        gaps, steps - 1);
    return std::nullopt;
  }
  for (const double v : a.grad_sq) a.sum += v;
  a.initial_loss = *f0;
  a.statistic = {{grad->name()}, "running mean", false};
  return a;
}

std::string Choose(OptionTable& options, std::string_view key, std::string_view fallback,
                   std::initializer_list<std::string_view> choices) {
  const std::vector<std::string> allowed(choices.begin(), choices.end());
  return options.GetChoice(key, fallback, allowed);
}

std::string DescribeConstant(const Constant& constant) {
  return fmt::format("{} = {:.6g} ({}{}{})", constant.name, constant.value,
                     CertaintyName(constant.certainty), constant.basis.empty() ? "" : ": ",
                     constant.basis);
}

}  // namespace lemmalab
