#include "theory/premises.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "theory/metrics.h"
#include "theory/rate_fit.h"
#include "theory/statistics.h"
#include "theory/verdicts.h"

namespace lemmalab {

Premise RunCompleted(const RunEvidence& run) {
  const std::string name = "the run completed without diverging";
  if (!run.completed()) return Premise::Failed(name, run.status, run.steps_done);
  if (!std::isfinite(run.final_loss)) return Premise::Failed(name, "the final loss is not finite");
  // A run can diverge without leaving the finite numbers: a loss that grows a thousandfold
  // beyond where it started has blown up, whatever its status says.
  const Series* start = run.Metric(metric::kTrainLoss);
  const Series* minibatch = run.Metric(metric::kMinibatchLoss);
  const std::optional<double> initial = start == nullptr ? std::nullopt : start->At(0);
  if (initial && minibatch != nullptr && !minibatch->empty()) {
    const double limit = BlowUpLimit(*initial);
    if (const std::optional<Series::Point> largest = minibatch->Max(); !(largest->value <= limit)) {
      return Premise::Failed(
          name,
          fmt::format("the minibatch loss reached {:.4g} at step {}, more than 1000 x (1 + "
                      "|f(x_0)|) with f(x_0) = {:.4g}: the run blew up",
                      largest->value, largest->step, *initial),
          largest->step);
    }
  }
  return Premise::Met(name,
                      fmt::format("{} steps, final loss {:.6g}", run.steps_done, run.final_loss));
}

std::optional<UsedConstant> FindUsedConstant(const RunEvidence& run, std::string_view name,
                                             std::optional<double> given) {
  if (given) {
    return UsedConstant{*given, Certainty::kBound,
                        fmt::format("{} = {:.6g} (given in the [[assert]] table)", name, *given),
                        true};
  }
  const Constant* c = run.FindConstant(name);
  if (c == nullptr) return std::nullopt;
  return UsedConstant{c->value, c->certainty, DescribeConstant(*c), false};
}

Premise OptimalValueFor(const Constant& f_star, VerdictKind kind) {
  const std::string name = "f* exact, or an upper bound on it where the bound is met";
  switch (f_star.certainty) {
    case Certainty::kExact:
      return Premise::Met(name, DescribeConstant(f_star));
    case Certainty::kBound:
      if (kind != VerdictKind::kViolated) {
        return Premise::Met(name, fmt::format("{}: the bound computed with it is at most the true "
                                              "one, so meeting it is evidence",
                                              DescribeConstant(f_star)));
      }
      return Premise::Failed(name, fmt::format("{}: the true f* may lie below it and the true "
                                               "bound above the run's value",
                                               DescribeConstant(f_star)));
    case Certainty::kEstimate:
      break;
  }
  return Premise::Failed(name, fmt::format("{}: an estimate may lie on either side of inf f",
                                           DescribeConstant(f_star)));
}

// Assumption 3: every worker's stochastic gradient is unbiased for grad f, i.e. the workers
// sample one distribution. Shards whose objectives f_i differ (sigma_g > 0) break it.
Premise OneDistribution(const RunEvidence& run, std::string_view assumption) {
  const std::string name = fmt::format(
      "{} (E g_t^(i) = grad f(x_t) for every worker: one data distribution)", assumption);
  if (run.workers == 1) return Premise::Met(name, "one worker");
  const Constant* sigma_g = run.FindConstant("sigma_g");
  if (sigma_g == nullptr) {
    const Series* spread = run.Metric(metric::kShardSpread);
    if (spread == nullptr || spread->empty()) {
      return Premise::Unchecked(
          name,
          "the problem does not know sigma_g and the run measured no spread of its shards' "
          "gradients");
    }
    const Series::Point largest = *spread->Max();
    const std::string rule = run.hyperparameters.Text("problem.shards.name").value_or("iid");
    const std::string measured = fmt::format(
        "(1/n) sum_i ||grad f_i - grad f||^2 up to {:.4g} at step {} over all {} evaluations "
        "(the shards' full gradients)",
        largest.value, largest.step, spread->observed());
    if (rule == "iid") {
      return Premise::Unchecked(
          name, fmt::format("{}; the shards are an iid split of one data set, so grad f_i = grad "
                            "f only in expectation over the split",
                            measured));
    }
    if (largest.value == 0) return Premise::Met(name, measured);
    return Premise::Failed(
        name, fmt::format("{} shards: {}: the workers' objectives differ", rule, measured),
        largest.step);
  }
  if (sigma_g->value == 0) return Premise::Met(name, DescribeConstant(*sigma_g));
  return Premise::Failed(
      name, fmt::format("{}: the workers' objectives differ", DescribeConstant(*sigma_g)));
}

Premise GradientsWithin(const RunEvidence& run, const UsedConstant& g, std::string_view assumption,
                        bool full_gradient) {
  const std::string name =
      fmt::format("{} (||g_t^(i)|| <= G{})", assumption, full_gradient ? ", ||grad f|| <= G" : "");
  const Series* stochastic = run.Metric(metric::kMaxGradNorm);
  if (stochastic == nullptr || stochastic->empty()) {
    return Premise::Failed(name,
                           "the run recorded no max_grad_norm: the premise cannot be checked");
  }
  const bool estimated = !g.given && g.certainty == Certainty::kEstimate;
  std::vector<std::string> checked;
  // The largest value over every step (a NaN, if any), as a norm.
  const auto above_g = [&](const Series& series, bool squared) -> std::optional<Series::Point> {
    Series::Point largest = *series.Max();
    if (squared) largest.value = std::sqrt(largest.value);
    if (largest.value <= g.value * (1 + 1e-12)) return std::nullopt;
    return largest;
  };
  // With G the run's own largest stochastic norm, ||g|| <= G holds by construction; the full
  // gradient is still checked against it.
  std::optional<Series::Point> above;
  if (estimated) {
    checked.push_back(
        "||g_t^(i)|| <= G by construction (G is the run's own largest norm, an estimate, not a "
        "bound)");
  } else {
    above = above_g(*stochastic, false);
    checked.push_back(fmt::format("largest ||g_t^(i)|| {:.6g} over all {} steps",
                                  stochastic->Max()->value, stochastic->observed()));
  }
  if (full_gradient && !above) {
    const Series* full = run.Metric(metric::kGradSqNorm);
    if (full == nullptr || full->empty()) {
      return Premise::Failed(name, "the run recorded no grad_sq_norm: ||grad f|| <= G unchecked");
    }
    above = above_g(*full, true);
    checked.push_back(fmt::format("largest ||grad f(x_t)|| {:.6g} over all {} evaluations",
                                  std::sqrt(full->Max()->value), full->observed()));
  }
  if (above) {
    return Premise::Failed(
        name,
        fmt::format("{:.6g} at step {} exceeds {}{}: the iterates left the region where G bounds "
                    "the gradients",
                    above->value, above->step, g.description,
                    g.given ? " (the given G is contradicted by the run)" : ""),
        above->step);
  }
  return Premise::Met(name, fmt::format("{}; {}", fmt::join(checked, ", "), g.description));
}

Premise CompressorWithinQ(const RunEvidence& run, std::optional<double> workers_q,
                          std::optional<double> server_q, std::string_view q_source, double rtol) {
  const std::string name = fmt::format(
      "spams.txt Assumption 1 (||C(u) - u|| <= q ||u|| with the q the bound uses: {})", q_source);
  const Series* ratio = run.Probe("q-deviate", "ratio");
  if (ratio == nullptr || ratio->empty()) {
    return Premise::Failed(name, "the run recorded no ||C(u) - u|| / ||u|| (probe q-deviate)");
  }
  // Every call of each sender, by the exact extremes of its ratios.
  std::int64_t checked = 0;
  double largest = 0;
  for (const int sender : ratio->workers()) {
    const std::optional<double> q = sender == kServer ? server_q : workers_q;
    if (!q) continue;
    const Extent e = ratio->extent(sender);
    checked += e.count;
    const Series::Point worst =
        e.finite() ? Series::Point{e.max_step, sender, e.max}
                   : Series::Point{e.first_non_finite_step, sender, e.first_non_finite};
    largest = std::max(largest, worst.value);
    if (!(worst.value <= *q * (1 + rtol))) {
      return Premise::Failed(
          name,
          fmt::format("||C(u) - u|| / ||u|| = {:.6g} at step {} ({}) exceeds q = {:.6g}: the run "
                      "contradicts that q",
                      worst.value, worst.step, SenderName(sender), *q),
          worst.step, sender);
    }
  }
  if (checked == 0) {
    return Premise::Failed(name, "no compressor call of the run was checked against the q");
  }
  return Premise::Met(
      name, fmt::format("largest ||C(u) - u|| / ||u|| {:.6g} over all {} calls", largest, checked));
}

namespace {

// A per-sender flag probe q-deviate records at step 1 (1 or 0) for the workers; nullopt when the
// run has none.
std::optional<bool> WorkersFlag(const RunEvidence& run, std::string_view series) {
  const Series* flags = run.Probe("q-deviate", series);
  if (flags == nullptr) return std::nullopt;
  std::optional<bool> all;
  for (const Series::Point& p : flags->sample()) {
    if (p.worker == kServer) continue;
    all = all.value_or(true) && p.value != 0;
  }
  return all;
}

// The largest value of `probe/series` of each worker (not the server) over the whole run, summed
// (or the largest of them): for q-deviate's running totals, which never decrease, the totals over
// all the run's calls. nullopt when no worker has one.
std::optional<double> WorkersLargest(const RunEvidence& run, std::string_view series,
                                     bool largest = false) {
  const Series* s = run.Probe("q-deviate", series);
  if (s == nullptr) return std::nullopt;
  std::optional<double> total;
  for (const int worker : s->workers()) {
    if (worker == kServer) continue;
    const Extent e = s->extent(worker);
    const double value = e.finite() ? e.max : e.first_non_finite;
    total = !total ? value : largest ? std::max(*total, value) : *total + value;
  }
  return total;
}

}  // namespace

Premise CompressorErrorWithin(const RunEvidence& run, double limit, std::string_view assumption,
                              std::string_view source, bool claimed, double rtol,
                              double confidence) {
  const std::string name =
      fmt::format("{}: E||C(u) - u||^2 <= {:.6g} ||u||^2 ({})", assumption, limit, source);
  // The running totals over every call (q-deviate records them whatever probe_every keeps).
  const std::optional<double> calls = WorkersLargest(run, "calls");
  const std::optional<double> sq_sum = WorkersLargest(run, "sq_ratio_sum");
  const std::optional<double> sq_sq_sum = WorkersLargest(run, "sq_ratio_sq_sum");
  const std::optional<double> max_ratio = WorkersLargest(run, "ratio", true);
  if (!calls || !sq_sum || !sq_sq_sum || !max_ratio || *calls < 1) {
    return Premise::Failed(name,
                           "the run recorded no worker's ||C(u) - u|| / ||u|| totals (probe "
                           "q-deviate)");
  }
  if (WorkersFlag(run, "deterministic").value_or(false)) {
    const double largest = *max_ratio * *max_ratio;
    const std::string over = fmt::format(
        "largest ||C(u) - u||^2 / ||u||^2 {:.6g} over all {} "
        "calls of a deterministic compressor",
        largest, *calls);
    if (!(largest <= limit * (1 + rtol))) {
      return Premise::Failed(name, over + ": the run contradicts the constant");
    }
    return Premise::Met(name, over);
  }
  const double n = *calls;
  const double mean = *sq_sum / n;
  const double variance = n > 1 ? std::max(0.0, (*sq_sq_sum - n * mean * mean) / (n - 1)) : 0.0;
  const double standard_error = n > 1 ? std::sqrt(variance / n) : INFINITY;
  const double z = NormalQuantile(confidence);
  const std::string estimate =
      fmt::format("mean ||C(u) - u||^2 / ||u||^2 = {:.6g} +- {:.3g} (standard error) over {} calls",
                  mean, standard_error, n);
  if (mean - z * standard_error > limit * (1 + rtol)) {
    return Premise::Failed(name,
                           fmt::format("{}: its lower {} bound {:.6g} exceeds {:.6g}, so the "
                                       "run contradicts the constant",
                                       estimate, confidence, mean - z * standard_error, limit));
  }
  // A constant the compressor declares is proven for it; a claim of the check's must be shown.
  if (claimed && mean + z * standard_error > limit * (1 + rtol)) {
    return Premise::Failed(name,
                           fmt::format("{}: its upper {} bound {:.6g} is above the claimed "
                                       "{:.6g}, so the run does not show the claim",
                                       estimate, confidence, mean + z * standard_error, limit));
  }
  return Premise::Met(
      name, fmt::format("{}, {}", estimate,
                        claimed ? "below the claim at the confidence" : "consistent with it"));
}

Premise IndependentCompressors(const RunEvidence& run, std::string_view why) {
  const std::string name = fmt::format("the workers compress independently ({})", why);
  const std::optional<bool> correlated = WorkersFlag(run, "correlated_senders");
  if (!correlated) {
    return Premise::Failed(name, "the run recorded no compressor (probe q-deviate)");
  }
  if (*correlated) {
    return Premise::Failed(name,
                           fmt::format("compressor '{}' shares its draws across the workers",
                                       run.hyperparameters.Text("compressor.name").value_or("?")));
  }
  return Premise::Met(name, "each worker draws from its own stream");
}

Premise FullGradients(const RunEvidence& run, std::string_view statement) {
  const std::string name = fmt::format("full gradients, sigma = 0 ({})", statement);
  const Constant* sigma = run.FindConstant("sigma");
  if (sigma == nullptr) {
    return Premise::Failed(name, "the problem's gradient noise sigma is unknown");
  }
  if (sigma->value != 0 || sigma->certainty == Certainty::kEstimate) {
    return Premise::Failed(name, DescribeConstant(*sigma));
  }
  return Premise::Met(name, DescribeConstant(*sigma));
}

Premise OptionWithin(const RunEvidence& run, std::string_view key, const Interval& rule,
                     std::string_view why) {
  const std::string name = fmt::format("{} {} ({})", key, rule.ToString(), why);
  const std::optional<double> value = run.hyperparameters.Number(key);
  if (!value) return Premise::Failed(name, fmt::format("the run's optimizer has no {}", key));
  if (!rule.Contains(*value)) {
    return Premise::Failed(name, fmt::format("{} = {:.6g}", key, *value));
  }
  return Premise::Met(name, fmt::format("{} = {:.6g}", key, *value));
}

Premise OptionIs(const RunEvidence& run, std::string_view key, std::string_view value,
                 std::string_view why) {
  const std::string name = fmt::format("{} = {} ({})", key, value, why);
  const std::optional<std::string> actual = run.hyperparameters.Text(key);
  if (!actual) return Premise::Failed(name, fmt::format("the run's optimizer has no {}", key));
  if (*actual != value) return Premise::Failed(name, fmt::format("{} = {}", key, *actual));
  return Premise::Met(name, fmt::format("{} = {}", key, *actual));
}

Premise AlgorithmIs(const RunEvidence& run, std::span<const std::string_view> names,
                    std::string_view statement) {
  const std::string name = fmt::format("the algorithm is {}", statement);
  if (std::find(names.begin(), names.end(), run.optimizer) != names.end()) {
    return Premise::Met(name, fmt::format("optimizer {}", run.optimizer));
  }
  return Premise::Failed(name, fmt::format("the run's optimizer is {}; the statement is about {}",
                                           run.optimizer, fmt::join(names, ", ")));
}

Premise NoWeightDecay(const RunEvidence& run) {
  const std::string name = "no weight decay (the paper's algorithm has none)";
  const std::optional<double> decay = run.hyperparameters.Number("weight_decay");
  if (!decay) return Premise::Unchecked(name, "the run's options do not record weight_decay");
  const double lambda = *decay;
  if (lambda == 0) return Premise::Met(name, "weight_decay = 0");
  return Premise::Failed(
      name, fmt::format("weight_decay = {:.6g} ({})", lambda,
                        run.hyperparameters.Text("weight_decay_mode").value_or("decoupled")));
}

Premise ConstantStepSize(const RunEvidence& run) {
  const std::string name = "a constant step size";
  const Series* lr = run.Metric(metric::kLr);
  if (lr == nullptr || lr->empty()) return Premise::Failed(name, "the run recorded no lr");
  // Every step's rate, by its extremes.
  const Extent e = lr->extent();
  if (!e.finite() || e.min != e.max) {
    const Series::Point low = *lr->Min(), high = *lr->Max();
    return Premise::Failed(name,
                           fmt::format("lr = {:.6g} at step {}, {:.6g} at step {}", low.value,
                                       low.step, high.value, high.step),
                           std::max(low.step, high.step));
  }
  return Premise::Met(name, fmt::format("lr = {:.6g} at every one of {} steps", e.max, e.count));
}

Premise Stationary(std::span<const double> values, std::string_view what, double confidence) {
  const std::string name = fmt::format("{} is stationary (its mean is taken over the run)", what);
  const std::size_t burn_in = values.size() / 10;
  const std::span<const double> kept = values.subspan(burn_in);
  const std::size_t half = kept.size() / 2;
  constexpr int kHalfBatches = kBatches / 2;
  if (half < 2 * kHalfBatches) {
    return Premise::Failed(name, fmt::format("{} values are too few to tell (at least {} needed)",
                                             values.size(), 4 * kHalfBatches + burn_in));
  }
  const MeanEstimate first = BatchMeans(kept.first(half), kHalfBatches);
  const MeanEstimate second = BatchMeans(kept.subspan(kept.size() - half), kHalfBatches);
  if (!std::isfinite(first.mean) || !std::isfinite(second.mean)) {
    return Premise::Failed(name, "the series holds values that are not finite");
  }
  const double overall = (first.mean + second.mean) / 2;
  const double change = second.mean - first.mean;
  const double se = std::hypot(first.standard_error, second.standard_error);
  const double t = se > 0 ? std::abs(change) / se : (change == 0 ? 0.0 : INFINITY);
  const double critical = StudentTQuantile(0.5 + confidence / 2, 2 * (kHalfBatches - 1));
  const double relative = overall != 0 ? std::abs(change) / std::abs(overall) : 0.0;
  const std::string numbers =
      fmt::format("mean {:.4g} over the first half, {:.4g} over the second (t = {:.3g})",
                  first.mean, second.mean, t);
  if (t > critical && relative > 0.25) {
    return Premise::Failed(name,
                           fmt::format("{}: it drifts by {:.3g}x its mean", numbers, relative));
  }
  return Premise::Met(name, numbers);
}

}  // namespace lemmalab
