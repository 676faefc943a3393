// Claims about whole runs: rates fitted over seeds and worker counts, where a run ends up, and
// how far it drifts from a reference run.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "theory/assertions.h"
#include "theory/rate_fit.h"
#include "theory/verdicts.h"

namespace lemmalab {
namespace {

// The per-step values metric[t-1] for the paper's t = 1..T (lemmalab's evaluations at steps
// 0..T-1), or empty when the run did not evaluate every step.
std::vector<double> PerStep(const RunEvidence& run, std::string_view metric) {
  const Series* s = run.Metric(metric);
  if (s == nullptr) return {};
  std::vector<double> values(static_cast<std::size_t>(run.steps_done), std::nan(""));
  for (const Series::Point& p : s->points) {
    if (p.step >= 0 && p.step < run.steps_done) values[static_cast<std::size_t>(p.step)] = p.value;
  }
  if (std::any_of(values.begin(), values.end(), [](double v) { return std::isnan(v); })) return {};
  return values;
}

struct RateOptions {
  std::string quantity;
  double exponent = 0.5;
  bool at_least = true;
  std::int64_t from = 10;
  int points = 30;
  AcrossSeedsOptions fit;
};

RateOptions ReadRateOptions(const AssertionInput& input) {
  RateOptions o;
  o.quantity =
      Choose(input.options, "quantity", "grad_sq_norm", {"grad_sq_norm", "optimality_gap"});
  o.exponent = input.options.GetDouble("exponent", 0.5, Interval::NonNegative());
  o.at_least = Choose(input.options, "compare", "at-least", {"at-least", "equal"}) == "at-least";
  o.from = input.options.GetInt("from", 10, 1);
  o.points = static_cast<int>(input.options.GetInt("points", 30, 3, 1000));
  o.fit.fit.fit_offset = input.options.GetBool("offset", true);
  o.fit.confidence = input.confidence;
  return o;
}

// The verdict on an exponent estimate against the theorem's: "at-least" (the theorem bounds the
// quantity by O(T^-p): a measured decay significantly slower violates it) or "equal" (the
// exponent must lie in the interval).
Verdict ExponentVerdict(const ExponentEstimate& e, const RateOptions& o, std::string_view variable,
                        std::string what) {
  Verdict v;
  v.measured_value = e.mean;
  v.bound_value = o.exponent;
  v.measured =
      fmt::format("{}: p = {:.4g}, {:.0f}% interval [{:.4g}, {:.4g}] over {} of {} seeds", what,
                  e.mean, 100 * e.confidence, e.lower, e.upper, e.converged_seeds, e.seeds);
  v.bound = fmt::format("{} {:.4g} (decay like {}^-p)", o.at_least ? "p >=" : "p =", o.exponent,
                        variable);
  if (!e.interval_available) {
    v.kind = VerdictKind::kInconclusive;
    v.detail = e.message;
    return v;
  }
  const bool holds =
      o.at_least ? e.upper >= o.exponent : e.lower <= o.exponent && o.exponent <= e.upper;
  v.kind = holds ? VerdictKind::kHolds : VerdictKind::kViolated;
  std::vector<std::string> fits;
  for (const PowerLawFit& f : e.fits) fits.push_back(fmt::format("{:.3g}", f.p));
  v.detail = fmt::format("per-seed p: {}; model a {}^-p + c fitted with Ceres",
                         fmt::join(fits, ", "), variable);
  return v;
}

}  // namespace

// The running average (1/T) sum_{t<=T} of ||grad f(x_t)||^2 (or of f(x_t) - f*) decays like
// a T^-p + c; p is fitted per seed (Ceres) and its Student-t interval over the seeds is compared
// with the theorem's exponent (`exponent`, default 1/2).
Verdict CheckRate(const AssertionInput& input) {
  const RateOptions o = ReadRateOptions(input);
  std::vector<Curve> curves;
  for (const RunEvidence& run : input.runs) {
    if (!run.completed())
      return Verdict::Inconclusive(
          fmt::format("seed {}: the run did not complete: {}", run.seed, run.status));
    const std::vector<double> values = PerStep(run, o.quantity);
    if (values.empty()) {
      return Verdict::Inconclusive(fmt::format(
          "seed {}: {} is not recorded at every step (eval_every = 1 and, for optimality_gap, a "
          "known f*)",
          run.seed, o.quantity));
    }
    if (o.from >= run.steps_done) {
      return Verdict::Inconclusive(
          fmt::format("from = {} leaves nothing of {} steps to fit", o.from, run.steps_done));
    }
    Curve curve = RunningAverageCurve(values, o.points, o.from);
    if (curve.x.size() < 3 ||
        std::any_of(curve.y.begin(), curve.y.end(), [](double y) { return !(y > 0); })) {
      return Verdict::Inconclusive(fmt::format(
          "seed {}: the running mean of {} from step {} gives {} points, not 3 or more positive "
          "ones a power law can be fitted to",
          run.seed, o.quantity, o.from, curve.x.size()));
    }
    curves.push_back(std::move(curve));
  }
  return ExponentVerdict(FitAcrossSeeds(curves, o.fit), o, "T",
                         fmt::format("running mean of {}", o.quantity));
}

// Linear speedup: the mean of the quantity over the paper's t = from..T falls with the number of
// workers like a n^-q + c (sigma / sqrt(n T) gives q = 1/2 for the averaged squared gradient
// norm); q is fitted per seed over the check's worker counts. A late `from` leaves out the
// transient from x_0, which no number of workers shortens.
Verdict CheckSpeedup(const AssertionInput& input) {
  const RateOptions o = ReadRateOptions(input);
  std::map<std::uint64_t, std::map<int, double>> by_seed;  // seed -> n -> value
  std::vector<int> ns;
  for (const RunEvidence& run : input.runs) {
    if (!run.completed())
      return Verdict::Inconclusive(
          fmt::format("n = {}, seed {}: the run did not complete", run.workers, run.seed));
    const std::vector<double> values = PerStep(run, o.quantity);
    if (values.empty()) return Verdict::Inconclusive(o.quantity + " is not recorded every step");
    if (o.from >= static_cast<std::int64_t>(values.size())) {
      return Verdict::Inconclusive(
          fmt::format("from = {} leaves nothing of {} steps", o.from, values.size()));
    }
    double mean = 0;
    for (std::size_t t = static_cast<std::size_t>(o.from) - 1; t < values.size(); ++t) {
      mean += values[t];
    }
    by_seed[run.seed][run.workers] =
        mean / static_cast<double>(values.size() - static_cast<std::size_t>(o.from) + 1);
    if (std::find(ns.begin(), ns.end(), run.workers) == ns.end()) ns.push_back(run.workers);
  }
  std::sort(ns.begin(), ns.end());
  if (ns.size() < 3) {
    return Verdict::Inconclusive("a speedup fit needs at least 3 worker counts ([check] workers)");
  }
  std::vector<double> n_values(ns.begin(), ns.end());
  std::vector<std::vector<double>> y_per_seed;
  for (const auto& [seed, values] : by_seed) {
    std::vector<double> y;
    for (const int n : ns) {
      if (!values.contains(n)) {
        return Verdict::Inconclusive(fmt::format(
            "seed {} has no run with n = {}: every seed needs every worker count", seed, n));
      }
      if (!(values.at(n) > 0)) {
        return Verdict::Inconclusive(
            fmt::format("seed {}, n = {}: the mean of {} is {:.3g}; a power law needs it > 0", seed,
                        n, o.quantity, values.at(n)));
      }
      y.push_back(values.at(n));
    }
    y_per_seed.push_back(std::move(y));
  }
  return ExponentVerdict(FitSpeedup(n_values, y_per_seed, o.fit), o, "n",
                         fmt::format("mean of {} over t = {}..{}, n = {}", o.quantity, o.from,
                                     input.runs.front().steps_done, fmt::join(ns, ", ")));
}

// Where the run ends: f(x_T) - f* <= `tolerance` at the last evaluation (the signSGD
// counterexamples converge, but to the wrong point).
Verdict CheckOptimalityGap(const AssertionInput& input) {
  const RunEvidence& run = input.runs.front();
  const double tolerance = input.options.GetDouble("tolerance", 1e-3, Interval::Positive());
  const Series* gap = run.Metric("optimality_gap");
  if (gap == nullptr || gap->empty()) {
    return Verdict::Inconclusive(
        "no optimality_gap: the problem does not know f* (set reference "
        "= true to estimate it)");
  }
  const Series::Point last = gap->points.back();
  Verdict v;
  v.measured_value = last.value;
  v.bound_value = tolerance;
  v.measured = fmt::format("f(x_T) - f* = {:.6g} at step {}{}", last.value, last.step,
                           run.completed() ? "" : " (" + run.status + ")");
  v.bound = fmt::format("<= {:.3g}", tolerance);
  v.worst_step = last.step;
  v.kind =
      last.value <= tolerance && run.completed() ? VerdictKind::kHolds : VerdictKind::kViolated;
  return v;
}

// How far a run ends from a reference run of the same experiment (`reference`, a label):
// |metric(run) - metric(reference)| <= `tolerance` at the last evaluation, for `metric`
// (default train_loss). Adam with naively compressed gradients drifts from Adam (onebit-adam.txt
// Sec. 3.2); 1-bit Adam's compressed momentum does not.
Verdict CheckTracksReference(const AssertionInput& input) {
  const RunEvidence& run = input.runs.front();
  const std::string reference = input.options.RequireString("reference");
  const std::string metric = input.options.GetString("metric", "train_loss");
  const double tolerance = input.options.GetDouble("tolerance", 0.01, Interval::Positive());
  const RunEvidence* ref = nullptr;
  for (const RunEvidence& r : input.experiment) {
    if (r.label == reference) ref = &r;
  }
  if (ref == nullptr) {
    input.options.Fail("reference", fmt::format("no run is labelled '{}'", reference));
  }
  const Series* a = run.Metric(metric);
  const Series* b = ref->Metric(metric);
  if (a == nullptr || b == nullptr || a->empty() || b->empty()) {
    return Verdict::Inconclusive(fmt::format("metric {} is not recorded by both runs", metric));
  }
  const double x = a->points.back().value, y = b->points.back().value;
  Verdict v;
  v.measured_value = std::abs(x - y);
  v.bound_value = tolerance;
  v.measured = fmt::format("|{} - {}| = |{:.6g} - {:.6g}| = {:.4g}{}", metric, reference, x, y,
                           v.measured_value, run.completed() ? "" : " (" + run.status + ")");
  v.bound = fmt::format("<= {:.3g}", tolerance);
  v.worst_step = a->points.back().step;
  v.kind = v.measured_value <= tolerance && run.completed() ? VerdictKind::kHolds
                                                            : VerdictKind::kViolated;
  return v;
}

}  // namespace lemmalab
