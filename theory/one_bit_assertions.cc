// 1-bit Adam's and 1-bit LAMB's claims, judged from the probes of theory/one_bit_probes.h:
//   onebit-adam-icml-with-appendix.txt Assumption 1.3 (bounded compression errors) and Sec. 3.3 /
//   Sec. 7.1 (the variance stabilises, which is what makes freezing it at T_w sound);
//   onebit-lamb.txt Eq. (1) and Algorithm 1 lines 1-3 and 17-20 (the clips of c and r, and
//   c = r c_avg with c_avg frozen).
// Hyper-parameters are the run's resolved options (RunEvidence::hyperparameters).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "theory/assertion_examples.h"
#include "theory/assertions.h"
#include "theory/bounds.h"
#include "theory/metrics.h"
#include "theory/optimizer_options.h"
#include "theory/premises.h"
#include "theory/statistics.h"
#include "theory/verdicts.h"

namespace lemmalab {
namespace {

// T_w of the run (1-bit Adam's or 1-bit LAMB's warmup_steps); nullopt for an optimizer without
// a warmup.
std::optional<std::int64_t> WarmupSteps(const RunEvidence& run) {
  return WarmupStepsOf(run.optimizer, run.hyperparameters);
}

// A heuristic, not a claim of the paper. Assumption 1.3 (lines 720-740) assumes that the workers'
// errors delta_t^(i) and the server's delta_bar_t are bounded by a constant for all t; the paper
// never claims it, and no finite run can tell a bounded sequence from one growing slowly enough.
// So the check asks a question a run can answer, and its verdict speaks for that question only:
// whether the error keeps growing during the compression phase (steps T_w+1..T; T_w = 0 for
// optimizers without warmup). For every sender it splits that phase into two halves of equal
// length and compares the largest ||delta|| of the second half with the largest of the first:
// violated when max2 > (1 + tolerance) max1 (option `tolerance`, default 0.25). The maximum (not
// the mean) is used because error feedback starts from delta = 0 and ramps up: a bounded error
// reaches its level within the first half, and the first half's maximum includes that level,
// whereas its mean is dragged down by the ramp. An error growing like t^p multiplies its maximum
// by about 2^p from one half to the next, so growth faster than t^0.32 is flagged at the
// default; errors that hover at a constant level pass. Each half needs `min_steps` (default 10)
// steps, and the halves' maxima need every step's error (the recorded points, all of them). A
// NaN error is not bounded: violated.
Verdict CheckOneBitErrorBounded(const AssertionInput& input, double tolerance,
                                std::int64_t min_steps) {
  const RunEvidence& run = input.runs.front();
  if (!run.completed()) return Verdict::Inconclusive(fmt::format("the run {}", run.status));
  const std::int64_t warmup = WarmupSteps(run).value_or(0);
  // worker index or kServer -> its compression-phase values, every one
  std::map<int, std::vector<Series::Point>> senders;
  for (const char* name : {"worker_norm", "server_norm"}) {
    const Series* s = run.Probe("onebit-error", name);
    if (s == nullptr) continue;
    for (const Series::Point& p : s->points()) {
      if (p.step > warmup) senders[p.worker].push_back(p);
    }
  }
  if (senders.empty()) {
    return Verdict::Inconclusive(fmt::format(
        "no compression error recorded after the warmup (T_w = {}; probe onebit-error)", warmup));
  }
  Verdict verdict;
  verdict.kind = VerdictKind::kHolds;
  double worst = -1;
  std::vector<std::string> parts;
  for (const auto& [sender, points] : senders) {
    const std::size_t n = points.size();
    if (static_cast<std::int64_t>(n) < 2 * min_steps) {
      return Verdict::Inconclusive(fmt::format(
          "{} compression steps after T_w = {} for {}; the check needs {} (two halves of "
          "min_steps = {})",
          n, warmup, SenderName(sender), 2 * min_steps, min_steps));
    }
    const auto half = static_cast<std::ptrdiff_t>(n / 2);
    const auto first_end = points.begin() + (static_cast<std::ptrdiff_t>(n) - 2 * half) + half;
    // With an odd count the first half takes the extra (earlier) step.
    const auto by_value = [](const Series::Point& a, const Series::Point& b) {
      return a.value < b.value || std::isnan(b.value);
    };
    const Series::Point max1 = *std::max_element(points.begin(), first_end, by_value);
    const Series::Point max2 = *std::max_element(first_end, points.end(), by_value);
    double ratio = max1.value > 0 ? max2.value / max1.value : (max2.value > 0 ? INFINITY : 1.0);
    if (std::isnan(ratio)) ratio = INFINITY;  // a NaN error is not bounded
    parts.push_back(fmt::format("{}: max {:.4g} then {:.4g} (x{:.3g})", SenderName(sender),
                                max1.value, max2.value, ratio));
    if (ratio > worst) {
      worst = ratio;
      verdict.worst_step = max2.step;
      verdict.worst_worker = sender;
      verdict.measured_value = ratio;
    }
    if (ratio > 1 + tolerance) verdict.kind = VerdictKind::kViolated;
  }
  verdict.bound_value = 1 + tolerance;
  verdict.measured = fmt::format(
      "largest growth of max ||delta|| from the first to the second "
      "half of the compression phase: x{:.4g} ({})",
      worst, SenderName(*verdict.worst_worker));
  verdict.bound = fmt::format("<= 1 + tolerance = {:.3g}", 1 + tolerance);
  verdict.detail = fmt::format(
      "a growth heuristic, not a statement of the paper (Assumption 1.3 is assumed there, never "
      "shown): {} says whether the error {} over this run; compression phase: steps {}..{} (T_w = "
      "{}); {}",
      VerdictName(verdict.kind),
      verdict.kind == VerdictKind::kViolated ? "kept growing" : "stopped growing", warmup + 1,
      run.steps_done, warmup, fmt::join(parts, "; "));
  return verdict;
}

// Sec. 3.3 (Fig. 2) and Sec. 7.1 (lines 962-974): Adam's variance becomes stable, which is what
// justifies freezing it at T_w. The paper's own indicator is ||v_t||_1 / ||v_{t-Delta}||_1 with
// Delta = 1/(1-beta2), and warmup ends when it reaches 0.96. Here the relative change over a
// window, |r - 1| with r = ||v_t|| / ||v_{t-window}||, must be <= `tolerance` at t = T_w (a
// two-sided rule, and the verdict says so):
//   window     default ceil(1/(1-beta2)), the paper's Delta and v's own time constant: over a
//              shorter window v can fall by at most 1 - beta2^window whatever the gradients do,
//              so a short window says little. When T_w - 1 is shorter than that, the longest
//              window that fits (T_w - 1) is used, and the detail says so.
//   tolerance  default 0.04, the paper's 0.96 threshold; the change is taken in absolute value,
//              because the paper's one-sided ratio >= 0.96 is met at once while v still ramps up
//              from v_0 = 0 (it only falls in BERT's Fig. 2 after an early peak).
//   norm       "l1" (default, Sec. 7.1's indicator) or "l2" (Fig. 2's norm).
//   at         the step to judge (default T_w: the run's warmup_steps, the algorithm's default).
// Scope: the claim is about v while it is still updated, so `at` must lie in the warmup (after
// T_w, 1-bit Adam's v is frozen and compared with itself: a premise), and "holds" needs a window
// of at least the paper's 1/(1-beta2) (a shorter one can show a change, never its absence).
// The verdict also reports the first recorded step of the warmup at which the change was within
// the tolerance: the T_w the paper's rule would have chosen on this run.
struct VarianceStableOptions {
  std::string norm = "l1";
  double tolerance = 0.04;
  std::optional<std::int64_t> window, at;
};

Verdict CheckVarianceStable(const AssertionInput& input, const VarianceStableOptions& o) {
  const RunEvidence& run = input.runs.front();
  const std::string& norm = o.norm;
  const double tolerance = o.tolerance;
  const Series* series = run.Probe("variance-norm", norm);
  if (series == nullptr || series->empty()) {
    return Verdict::Inconclusive("the run has no ||v_t|| series (probe variance-norm)");
  }
  const std::optional<std::int64_t> warmup = WarmupSteps(run);
  const std::optional<std::int64_t> at = o.at ? o.at : warmup;
  if (!at) {
    return Verdict::Inconclusive(fmt::format(
        "optimizer '{}' has no warmup; give the check the step to judge (`at`)", run.optimizer));
  }
  const std::optional<MomentOptions> moments = MomentOptionsOf(run.optimizer, run.hyperparameters);
  if (!moments) return Verdict::Inconclusive("the run's optimizer has no beta2");
  const double beta2 = moments->beta2;
  // 1 / (1 - 0.9) is 10.000000000000002 in binary: round before taking the ceiling.
  const auto paper_window = static_cast<std::int64_t>(std::ceil(1 / (1 - beta2) * (1 - 1e-12)));
  std::int64_t window = paper_window;
  std::string window_note = fmt::format("window = 1/(1-beta2) = {}", window);
  if (o.window) {
    window = *o.window;
    window_note = fmt::format("window = {} (the check's option; the paper's 1/(1-beta2) = {})",
                              window, paper_window);
  } else if (*at - window < 1) {
    window = *at - 1;
    window_note = fmt::format(
        "window = T_w - 1 = {}: the paper's 1/(1-beta2) = {} does not fit in the warmup", window,
        paper_window);
  }
  if (window < 1 || *at - window < 1) {
    return Verdict::Inconclusive(fmt::format(
        "step {} leaves no window of {} steps after step 1 (v_0 = 0 has no relative change)", *at,
        window));
  }
  // The recorded values, each a sample of the step it was recorded at.
  std::map<std::int64_t, double> by_step;
  for (const Series::Point& p : series->sample()) by_step[p.step] = p.value;
  const auto change = [&](std::int64_t t) -> std::optional<double> {
    const auto now = by_step.find(t), before = by_step.find(t - window);
    if (now == by_step.end() || before == by_step.end() || before->second == 0) return std::nullopt;
    return std::abs(now->second / before->second - 1);
  };
  const std::optional<double> at_change = change(*at);
  if (!at_change) {
    return Verdict::Inconclusive(
        fmt::format("||v|| is not recorded (or is 0) at steps {} and {}", *at - window, *at));
  }
  // After T_w, v is frozen (1-bit Adam) or no longer the warmup's: only steps whose window lies
  // in the warmup, where v is still updated, say when the rule would have ended it.
  const std::int64_t last_updated = warmup.value_or(run.steps_done);
  std::optional<std::int64_t> first;
  for (const auto& [t, value] : by_step) {
    if (t > last_updated) break;
    const std::optional<double> c = change(t);
    if (c && *c <= tolerance) {
      first = t;
      break;
    }
  }
  Verdict verdict;
  verdict.kind = *at_change <= tolerance ? VerdictKind::kHolds : VerdictKind::kViolated;
  verdict.measured_value = *at_change;
  verdict.bound_value = tolerance;
  verdict.worst_step = *at;
  verdict.worst_worker = kServer;
  const std::string where =
      o.at ? fmt::format("step {} (the check's `at`)", *at) : fmt::format("T_w = {}", *at);
  verdict.measured = fmt::format("|{} ||v_t|| / ||v_(t-{})|| - 1| = {:.4g} at {}", norm, window,
                                 *at_change, where);
  const std::string phase = "the judged step lies where v is still updated (t <= T_w)";
  if (warmup) {
    verdict.premises.push_back(
        *at <= *warmup
            ? Premise::Met(phase, fmt::format("{} <= T_w = {}", where, *warmup))
            : Premise::Failed(phase,
                              fmt::format("{} > T_w = {}: v is frozen there and compared with "
                                          "itself",
                                          where, *warmup),
                              *at));
  }
  verdict.bound = fmt::format(
      "|r - 1| <= tolerance = {:.3g} (two-sided; the paper's rule is the one-sided r >= {:.3g}, "
      "which v meets at once while it still grows from v_0 = 0)",
      tolerance, 1 - tolerance);
  verdict.detail =
      fmt::format("{}; first recorded step of the warmup (steps <= {}) within the tolerance: {}",
                  window_note, last_updated,
                  first ? fmt::format("{} (a T_w the paper's rule would choose)", *first)
                        : std::string("none"));
  if (window < paper_window) {
    verdict.detail += fmt::format(
        "; over {} steps v can fall by at most 1 - beta2^{} = {:.3g}, so a decrease cannot show",
        window, window, 1 - std::pow(beta2, static_cast<double>(window)));
    // A change within the tolerance over a window shorter than v's time constant is no evidence
    // that v has settled; a larger change still is evidence that it has not.
    if (verdict.kind == VerdictKind::kHolds) {
      verdict.kind = VerdictKind::kInconclusive;
      verdict.detail = fmt::format(
          "the window of {} steps is shorter than the paper's horizon 1/(1-beta2) = {}: a small "
          "change there does not show that v has settled; the bound alone would say holds; {}",
          window, paper_window, verdict.detail);
    }
  }
  return verdict;
}

// onebit-lamb.txt Eq. (1) and Algorithm 1, per layer l, at every step, from the rule excesses
// the probe lamb-ratios records at every step whatever probe_every keeps (its `worker` field is
// the layer; each excess is 0 where its rule holds, else the relative slack it would need):
//   warmup (t <= T_w; every step for lamb): c_t in [c_min, c_max] (Eq. 1's clip; with
//     zero_norm = "one", c = 1 where a norm is 0, docs/conventions.md §8)      c_clip_excess;
//   compression (t > T_w): r_t in [r_min, r_max] (line 19)                      r_clip_excess;
//     r_t within [(1 - r_threshold) r_{t-1}, (1 + r_threshold) r_{t-1}] (line 18; r_{T_w} = 1,
//     line 1) when r_{t-1} lies in [r_min, r_max] (otherwise line 19's clip may move it out of
//     that band)                                                                r_step_excess;
//     c_t = r_t c_avg (line 20) with c_avg the beta3-average from 0 of the warmup's c_t (lines
//     1-3)                                                                      c_product_excess.
// Deterministic: any step over the rounding slack `rtol` (1e-6 for fp32 runs, which store r and c
// in float, 1e-12 for fp64) is a violation.
Verdict CheckOneBitLambClips(const AssertionInput& input, std::optional<double> rtol_option) {
  const RunEvidence& run = input.runs.front();
  const double rtol = RoundingSlack(run, rtol_option);
  const Series* c_clip = run.Probe("lamb-ratios", "c_clip_excess");
  if (c_clip == nullptr || c_clip->empty()) {
    return Verdict::Inconclusive("the run has no c_t rule series (probe lamb-ratios)");
  }
  const std::optional<std::int64_t> warmup = WarmupSteps(run);  // 1-bit LAMB's; LAMB has none
  // The clips as the run's LAMB or 1-bit LAMB had them (0 where it has none: LAMB has no r).
  const std::optional<LambOptions> lamb = LambOptionsOf(run.optimizer, run.hyperparameters);
  const std::optional<OneBitLambOptions> one_bit =
      OneBitLambOptionsOf(run.optimizer, run.hyperparameters);
  struct Rule {
    const char* series;
    std::string text;
  };
  const std::vector<Rule> rules = {
      {"c_clip_excess", fmt::format("c in [c_min, c_max] = [{}, {}]{}", lamb ? lamb->c_min : 0,
                                    lamb ? lamb->c_max : 0,
                                    warmup ? fmt::format(" in warmup (T_w = {})", *warmup) : "")},
      {"r_clip_excess", fmt::format("r in [r_min, r_max] = [{}, {}]", one_bit ? one_bit->r_min : 0,
                                    one_bit ? one_bit->r_max : 0)},
      {"r_step_excess",
       fmt::format("|r_t / r_(t-1) - 1| <= r_threshold = {}", one_bit ? one_bit->r_threshold : 0)},
      {"c_product_excess", "c = r c_avg"},
  };
  if (warmup && run.steps_done > *warmup) {
    for (const char* needed : {"r_clip_excess", "c_product_excess"}) {
      if (run.Probe("lamb-ratios", needed) == nullptr) {
        return Verdict::Inconclusive(
            fmt::format("the run has no {} after the warmup (probe lamb-ratios)", needed));
      }
    }
  }
  Verdict verdict;
  verdict.kind = VerdictKind::kHolds;
  verdict.bound_value = rtol;
  std::vector<std::string> parts, bounds;
  for (const Rule& rule : rules) {
    const Series* s = run.Probe("lamb-ratios", rule.series);
    if (s == nullptr || s->empty()) continue;
    bounds.push_back(rule.text);
    const Verdict one = EveryValueAtMost({s}, rtol, rule.series, "");
    parts.push_back(fmt::format("{}: {}", rule.text, one.measured));
    if (!verdict.statistic) verdict.statistic = one.statistic;
    if (one.kind == VerdictKind::kHolds) continue;
    // The earliest broken rule is the one reported.
    if (verdict.kind != VerdictKind::kViolated || *one.worst_step < *verdict.worst_step) {
      verdict.statistic = one.statistic;
      verdict.worst_step = one.worst_step;
      verdict.worst_worker = one.worst_worker;
      verdict.measured_value = one.measured_value;
      verdict.detail =
          fmt::format("{} broken at layer {}, step {} (excess {:.4g})", rule.text,
                      one.worst_worker.value_or(0), *one.worst_step, one.measured_value);
    }
    verdict.kind = VerdictKind::kViolated;
  }
  if (verdict.kind == VerdictKind::kHolds) verdict.measured_value = 0;
  verdict.measured = fmt::format("largest relative excess per rule, {}", fmt::join(parts, "; "));
  verdict.bound = fmt::format("every rule at every step within rtol = {:.1g}: {}", rtol,
                              fmt::join(bounds, "; "));
  verdict.detail = fmt::format("{}{}the worker field is the layer", verdict.detail,
                               verdict.detail.empty() ? "" : "; ");
  return verdict;
}

// Ranks 1..L of `values` (ties get their average rank).
std::vector<double> Ranks(const std::vector<double>& values) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
    for (std::size_t k = i; k <= j; ++k) ranks[order[k]] = (static_cast<double>(i + j) / 2) + 1;
    i = j + 1;
  }
  return ranks;
}

// Pearson's correlation of two rank vectors (Spearman's rho on the values).
double RankCorrelation(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = static_cast<double>(a.size());
  const double mean_a = std::accumulate(a.begin(), a.end(), 0.0) / n;
  const double mean_b = std::accumulate(b.begin(), b.end(), 0.0) / n;
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ab += (a[i] - mean_a) * (b[i] - mean_b);
    aa += (a[i] - mean_a) * (a[i] - mean_a);
    bb += (b[i] - mean_b) * (b[i] - mean_b);
  }
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
}

// onebit-lamb.txt Fig. 6 and lines 300-306: "for those layers with less stable variance ... the
// corresponding 1-bit LAMB scaling ratios are also larger": 1-bit LAMB adapts its scaling to the
// difference between the frozen and the fresh variance. Over the compression phase, per layer,
// the mean of line 17's target (max_j v_Tw,j / v_t,j, the layer's variance drift; probe
// lamb-ratios/target) and the mean ratio r_t^(l) are compared across the layers by Spearman's
// rank correlation, with an exact permutation test (every ordering of the layers: at most 8
// layers) or, with more layers, the normal approximation rho sqrt(L - 1). Holds when rho > 0 at
// the check's confidence, violated when rho < 0 at it; with fewer layers than the confidence can
// resolve (L! < 1 / (1 - confidence)) the claim cannot be shown: inconclusive.
Verdict CheckRatioAdapts(const AssertionInput& input) {
  const RunEvidence& run = input.runs.front();
  Verdict v;
  v.premises.push_back(RunCompleted(run));
  const std::optional<std::int64_t> warmup = WarmupSteps(run);
  const Series* r = run.Probe("lamb-ratios", "r");
  const Series* target = run.Probe("lamb-ratios", "target");
  if (!warmup || r == nullptr || target == nullptr || target->empty()) {
    v.detail =
        "the run recorded no r_t or line-17 target after a warmup (1-bit LAMB, probe "
        "lamb-ratios)";
    return v;
  }
  // Per layer, the means over every step of the phase (the series exist only there): their
  // extents, whatever was recorded.
  std::vector<double> rs, targets;
  for (const int layer : target->workers()) {
    const Extent drift = target->extent(layer), ratio = r->extent(layer);
    if (drift.empty() || ratio.empty()) continue;
    targets.push_back(drift.mean());
    rs.push_back(ratio.mean());
  }
  const std::size_t layers = rs.size();
  double orderings = 1;
  for (std::size_t k = 2; k <= layers; ++k) orderings *= static_cast<double>(k);
  const double alpha = 1 - input.confidence;
  const std::string layers_name =
      fmt::format("enough layers to resolve a rank correlation at {:.0f}% (L! >= {:.0f})",
                  100 * input.confidence, 1 / alpha);
  if (orderings * alpha < 1) {
    v.premises.push_back(Premise::Failed(layers_name, fmt::format("{} layers: the smallest "
                                                                  "attainable p is 1/{}! = {:.3g}",
                                                                  layers, layers, 1 / orderings)));
    return v;
  }
  v.premises.push_back(Premise::Met(layers_name, fmt::format("{} layers", layers)));
  const std::vector<double> rank_r = Ranks(rs), rank_target = Ranks(targets);
  const double rho = RankCorrelation(rank_target, rank_r);
  double p_above = 0, p_below = 0;  // one-sided p-values
  if (layers <= 8) {
    std::vector<double> permuted = rank_r;
    std::sort(permuted.begin(), permuted.end());
    double total = 0, at_least = 0, at_most = 0;
    do {
      const double x = RankCorrelation(rank_target, permuted);
      total += 1;
      if (x >= rho - 1e-12) at_least += 1;
      if (x <= rho + 1e-12) at_most += 1;
    } while (std::next_permutation(permuted.begin(), permuted.end()));
    p_above = at_least / total;
    p_below = at_most / total;
  } else {
    const double z = rho * std::sqrt(static_cast<double>(layers) - 1);
    p_above = 1 - boost::math::cdf(boost::math::normal(), z);
    p_below = boost::math::cdf(boost::math::normal(), z);
  }
  v.measured_value = rho;
  v.bound_value = 0;
  std::vector<std::string> parts;
  for (std::size_t l = 0; l < layers; ++l) {
    parts.push_back(fmt::format("({:.3g}, {:.3g})", targets[l], rs[l]));
  }
  v.measured = fmt::format(
      "Spearman's rho between the layers' mean variance drift and mean r = {:.3g} over {} layers "
      "(one-sided p = {:.3g}); per layer (drift, r): {}",
      rho, layers, p_above, fmt::join(parts, ", "));
  v.bound = fmt::format("rho > 0 at {:.0f}% (p <= {:.3g})", 100 * input.confidence, alpha);
  v.kind = p_above <= alpha && rho > 0   ? VerdictKind::kHolds
           : p_below <= alpha && rho < 0 ? VerdictKind::kViolated
                                         : VerdictKind::kInconclusive;
  if (v.kind == VerdictKind::kInconclusive) {
    v.detail = "the layers' ratios are not ordered by their variance drift at this confidence";
  }
  return v;
}

// What Theorems 1 of 1-bit Adam and 1-bit LAMB read of a run's compression phase: the paper's x_0
// is lemmalab's x after step T_w, and its t = 0..T are the evaluations at steps T_w..T_w + T.
struct CompressionPhase {
  std::int64_t warmup = 0, T = 0;
  double beta1 = 0, gamma = 0;
  double measured = 0;       // (1/(T+1)) sum_t ||grad f(x_t)||^2, Euclidean
  double grad_at_start = 0;  // ||grad f(x_Tw)||^2: what a run that stood still would show
  double f_gap = 0;          // f(x_Tw) - f*, 0 if below (only an estimated f* allows it)
  // eps^2, the bound on E||delta_t||^2 of the combined error (1/n) sum_i delta_t^(i) +
  // delta_bar_t that Lemma 2 uses, estimated as the largest of ten batch means of ||delta_t||^2
  // over the phase (an estimate of sup_t E||delta_t||^2, not a single draw; the premise that the
  // series is stationary guards it).
  double eps = 0;
  double denominator_min = 0, denominator_max = 0;  // of sqrt(v_Tw) + eta (or sqrt(v_Tw + eta))
  const Constant* lipschitz = nullptr;
  const Constant* sigma = nullptr;
  const Constant* f_star = nullptr;
};

// What both theorems read of the run's optimizer: 1-bit Adam's or 1-bit LAMB's T_w, beta1 and
// eta, and whether eta is added outside the root (1-bit Adam's eps_placement; LAMB's always is);
// nullopt for another optimizer.
struct CompressionOptions {
  std::int64_t warmup = 0;
  double beta1 = 0, eta = 0;
  bool eta_outside = true;
};
std::optional<CompressionOptions> CompressionOptionsOf(const RunEvidence& run) {
  if (const auto o = OneBitAdamOptionsOf(run.optimizer, run.hyperparameters)) {
    return CompressionOptions{o->warmup_steps, o->beta1, o->eps,
                              o->eps_placement == EpsPlacement::kOutside};
  }
  if (const auto o = OneBitLambOptionsOf(run.optimizer, run.hyperparameters)) {
    return CompressionOptions{o->warmup_steps, o->lamb.beta1, o->lamb.eps, true};
  }
  return std::nullopt;
}

// Reads the compression phase into `phase`, adding the premises both theorems share to `v`
// (Assumptions 1.1-1.3, a constant step, beta1 < 1, classic error feedback, no weight decay); on
// missing evidence returns false with v.detail saying what is missing.
bool ReadCompressionPhase(const RunEvidence& run, double confidence, Verdict& v,
                          CompressionPhase& phase) {
  const std::optional<CompressionOptions> options = CompressionOptionsOf(run);
  if (!options) {
    v.detail = "the run's optimizer has no warmup_steps, beta1 or eps";
    return false;
  }
  phase.warmup = options->warmup;
  phase.beta1 = options->beta1;
  phase.T = run.steps_done - phase.warmup;
  if (phase.T < 1) {
    v.detail = "the run ends before the compression phase";
    return false;
  }
  const Series* gsq = run.Metric(metric::kGradSqNorm);
  const Series* lr = run.Metric(metric::kLr);
  const Series* loss = run.Metric(metric::kTrainLoss);
  if (gsq == nullptr || lr == nullptr || lr->empty() || loss == nullptr) {
    v.detail = "the run has no grad_sq_norm, train_loss or lr metric";
    return false;
  }
  double sum = 0, f0 = std::nan("");
  phase.grad_at_start = std::nan("");
  std::int64_t count = 0;
  for (const Series::Point& p : gsq->points()) {
    if (p.step >= phase.warmup) {
      sum += p.value;
      ++count;
    }
    if (p.step == phase.warmup) phase.grad_at_start = p.value;
  }
  f0 = loss->At(phase.warmup).value_or(f0);
  if (count != phase.T + 1 || std::isnan(f0)) {
    v.detail =
        "Theorem 1's left-hand side needs ||grad f(x_t)|| at every step of the compression phase "
        "and f at its start: set eval_every = 1";
    return false;
  }
  phase.measured = sum / static_cast<double>(count);
  phase.gamma = lr->sample().front().value;
  v.premises.push_back(ConstantStepSize(run));
  v.premises.push_back(
      OptionWithin(run, "beta1", kMovingAverageFactor, "the proof divides by 1 - beta"));
  v.premises.push_back(OptionIs(run, "worker_feedback", "classic", "Lemma 2's error recursion"));
  v.premises.push_back(OptionIs(run, "server_feedback", "classic", "Lemma 2's error recursion"));
  v.premises.push_back(NoWeightDecay(run));
  v.premises.push_back(OneDistribution(run, "Assumption 1.2"));

  const Series* combined = run.Probe("onebit-error", "combined_norm");
  const Series* root_min = run.Probe("onebit-error", "frozen_sqrt_min");
  const Series* root_max = run.Probe("onebit-error", "frozen_sqrt_max");
  if (combined == nullptr || root_min == nullptr || root_max == nullptr || root_min->empty()) {
    v.detail = "the run recorded no combined error or frozen variance (probe onebit-error)";
    return false;
  }
  // eps^2 estimates a supremum of expectations from batch means: the recorded steps are a
  // sample of the phase.
  std::vector<double> squared;
  for (const Series::Point& p : combined->sample()) {
    if (p.step > phase.warmup) squared.push_back(p.value * p.value);
  }
  double eps_squared = 0;
  if (squared.empty()) {
    v.premises.push_back(Premise::Failed(
        "Assumption 1.3 (a bounded combined compression error)",
        "the run recorded no combined error after the warmup (probe onebit-error)"));
  } else {
    const std::size_t length = std::max<std::size_t>(1, squared.size() / kBatches);
    for (std::size_t begin = 0; begin < squared.size(); begin += length) {
      const std::size_t end = std::min(squared.size(), begin + length);
      double batch = 0;
      for (std::size_t k = begin; k < end; ++k) batch += squared[k];
      eps_squared = std::max(eps_squared, batch / static_cast<double>(end - begin));
    }
    v.premises.push_back(
        Stationary(squared, "Assumption 1.3's combined error ||delta_t||^2", confidence));
  }
  phase.eps = std::sqrt(eps_squared);
  phase.lipschitz = run.FindConstant("L");
  phase.sigma = run.FindConstant("sigma");
  phase.f_star = run.FindConstant("f_star");
  if (phase.lipschitz == nullptr || phase.sigma == nullptr || phase.f_star == nullptr) {
    v.detail = "Theorem 1 needs L, sigma and f*, which this problem does not all know";
    return false;
  }
  const double eta = options->eta;
  const auto denominator = [&](double root) {
    return options->eta_outside ? root + eta : std::sqrt(root * root + eta);
  };
  phase.denominator_min = denominator(root_min->sample().front().value);
  phase.denominator_max = denominator(root_max->sample().front().value);
  phase.f_gap = std::max(0.0, f0 - phase.f_star->value);
  return true;
}

// The verdict of a compression-phase theorem from its two Euclidean mean bounds (the proof's and
// the printed) and its left coefficients: a coefficient <= 0 is a failed premise (the theorem
// makes no claim); one run against an expectation (ExpectationVerdict); vacuous when the bound is
// not below ||grad f(x_Tw)||^2.
void JudgeCompressionPhase(Verdict& v, const CompressionPhase& phase, double confidence,
                           bool printed, double coefficient, double corrected_bound,
                           double printed_bound, std::string_view coefficient_text,
                           std::string constants) {
  v.measured_value = phase.measured;
  v.measured =
      fmt::format("(1/(T+1)) sum_t ||grad f(x_t)||^2 = {:.6g} over the T = {} steps after T_w = {}",
                  phase.measured, phase.T, phase.warmup);
  const std::string coefficient_name =
      fmt::format("{} > 0 (the left coefficient)", coefficient_text);
  if (!std::isfinite(printed ? printed_bound : corrected_bound)) {
    v.premises.push_back(Premise::Failed(
        coefficient_name,
        fmt::format("{:.4g} at this step size: Theorem 1 makes no claim", coefficient)));
    v.detail = constants;
    return;
  }
  v.premises.push_back(Premise::Met(coefficient_name, fmt::format("{:.4g}", coefficient)));
  const std::string trivial_text = fmt::format("||grad f(x_Tw)||^2 = {:.4g}", phase.grad_at_start);
  const auto judge = [&](double bound, std::string_view form) {
    return ExpectationForm(std::string(form),
                           fmt::format("<= {:.6g} ({}; the V-norm bound / (T+1), times the "
                                       "largest denominator); slack x{:.3g}",
                                       bound, form, bound / phase.measured),
                           phase.measured, bound, phase.grad_at_start, trivial_text, confidence);
  };
  const BoundForm corrected = judge(corrected_bound, "the proof's slips corrected");
  const BoundForm statement = judge(printed_bound, "as printed");
  const BoundForm& main = printed ? statement : corrected;
  v.kind = main.kind;
  v.premises.push_back(OptimalValueFor(*phase.f_star, v.kind));
  v.bound_value = main.bound_value;
  v.bound = main.bound;
  v.other_forms.push_back(printed ? corrected : statement);
  v.detail = fmt::format(
      "{}one run against an expectation bound: holds at or below it, violated above bound / "
      "{:.2g} (Markov), inconclusive between; {}",
      main.detail.empty() ? "" : main.detail + "; ", 1 - confidence, constants);
}

// The constants both theorems share (OneBitLambConstants extends OneBitAdamConstants).
OneBitAdamConstants PhaseConstants(const CompressionPhase& phase, const RunEvidence& run) {
  OneBitAdamConstants k;
  k.lipschitz = phase.lipschitz->value;
  k.sigma = phase.sigma->value;
  k.eps = phase.eps;
  k.beta = phase.beta1;
  k.n = run.workers;
  k.denominator_min = phase.denominator_min;
  k.denominator_max = phase.denominator_max;
  k.f_gap = phase.f_gap;
  k.gamma = phase.gamma;
  return k;
}

std::string DescribePhase(const CompressionPhase& phase, const RunEvidence& run) {
  return fmt::format(
      "gamma = {:.4g}, beta1 = {:.4g}, n = {}, eps = {:.4g} (estimate: the largest batch mean of "
      "||delta_t||^2, rooted), denominator in [{:.4g}, {:.4g}], f(x_Tw) - f* = {:.6g}; {}; {}; {}",
      phase.gamma, phase.beta1, run.workers, phase.eps, phase.denominator_min,
      phase.denominator_max, phase.f_gap, DescribeConstant(*phase.lipschitz),
      DescribeConstant(*phase.sigma), DescribeConstant(*phase.f_star));
}

// Theorem 1 (onebit-adam-icml-with-appendix.txt Eq. 6, theory/bounds.h) over the compression
// phase. Measured: (1/(T+1)) sum_t ||grad f(x_t)||^2 (Euclidean), against the bound's Euclidean
// form (the V-norm bound times max_j of the update's denominator), with the proof's two slips
// corrected (bounds.cc; the bound as printed is shown beside it). The run's own constants: gamma
// its constant rate, beta = beta1, n, L and sigma the problem's, the denominator's extremes from
// v_Tw and eta, f(x_0) - f* from the train loss at T_w, eps as CompressionPhase estimates it.
//
// Premises: Assumption 1.1 (L), 1.2 (sigma, and one data distribution, since the bound's sigma
// measures each worker's gradient against grad f), 1.3 (a stationary compression error), a
// constant step size, beta1 < 1, classic error feedback at the workers and the server, no weight
// decay, and a positive left-hand coefficient (otherwise the theorem makes no claim).
Verdict CheckOneBitAdamTheorem1(const AssertionInput& input, bool printed) {
  const RunEvidence& run = input.runs.front();
  Verdict v;
  v.premises.push_back(RunCompleted(run));
  CompressionPhase phase;
  if (!ReadCompressionPhase(run, input.confidence, v, phase)) return v;
  const OneBitAdamConstants k = PhaseConstants(phase, run);
  const OneBitAdamTheorem1Result r = OneBitAdamTheorem1(k, static_cast<double>(phase.T));
  JudgeCompressionPhase(v, phase, input.confidence, printed, r.coefficient,
                        r.euclidean_mean_bound_rederived, r.euclidean_mean_bound,
                        "1 - gamma L / v_min - 2 gamma^2 L^2 / ((1-beta)^2 v_min^2)",
                        DescribePhase(phase, run));
  v.worst_step = run.steps_done;
  return v;
}

// 1-bit LAMB's Theorem 1 (onebit-lamb.txt Eq. 3, App. A.9; theory/bounds.h) over the compression
// phase, read as 1-bit Adam's (CompressionPhase). The step of the analysis is gamma_t = gamma
// c_{t-1}, with c the layerwise scaling coefficient (probe lamb-ratios); the proof's auxiliary
// sequence needs it constant (bounds.cc), and the analysis uses one rule for every layer
// (line 420), so a premise is that c takes one value over the phase and the layers (1-bit LAMB
// with r_min = r_max = 1 on a one-layer problem). With the proof's three slips corrected by
// default; the printed Eq. 3 beside it.
Verdict CheckOneBitLambTheorem1(const AssertionInput& input, bool printed) {
  const RunEvidence& run = input.runs.front();
  Verdict v;
  v.premises.push_back(RunCompleted(run));
  CompressionPhase phase;
  if (!ReadCompressionPhase(run, input.confidence, v, phase)) return v;
  const Series* c = run.Probe("lamb-ratios", "c");
  double c_min = INFINITY, c_max = 0;
  // Every step's c of the phase: one value over the phase and the layers is a claim about each.
  if (c != nullptr) {
    for (const Series::Point& p : c->points()) {
      if (p.step <= phase.warmup) continue;
      c_min = NanMin(c_min, p.value);
      c_max = NanMax(c_max, p.value);
    }
  }
  if (!(c_max > 0)) {
    v.detail = "the run recorded no scaling coefficient c_t after the warmup (probe lamb-ratios)";
    return v;
  }
  const std::string c_name =
      "one scaling coefficient c over the phase and the layers (the proof's auxiliary sequence "
      "needs gamma_t = gamma c_(t-1) constant, lines 546-554)";
  v.premises.push_back(
      c_max <= c_min * (1 + 1e-12)
          ? Premise::Met(c_name, fmt::format("c = {:.6g}", c_min))
          : Premise::Failed(c_name, fmt::format("c ranges over [{:.6g}, {:.6g}]", c_min, c_max)));
  OneBitLambConstants k{PhaseConstants(phase, run)};
  k.c_min = c_min;
  k.c_max = c_max;
  const OneBitLambTheorem1Result r = OneBitLambTheorem1(k, static_cast<double>(phase.T));
  JudgeCompressionPhase(
      v, phase, input.confidence, printed, printed ? r.coefficient : r.coefficient_rederived,
      r.euclidean_mean_bound_rederived, r.euclidean_mean_bound,
      "1 - gamma_max L V_max - 8 gamma_max^3 L^2 V_max^2 / ((1-beta)^2 gamma_min)",
      fmt::format("{}; c in [{:.6g}, {:.6g}]", DescribePhase(phase, run), c_min, c_max));
  v.worst_step = run.steps_done;
  return v;
}

Judgement MakeOneBitErrorBoundedCheck(OptionTable& options, const AssertionContext& /*context*/) {
  const double tolerance = options.GetDouble("tolerance", 0.25, Interval::NonNegative());
  const std::int64_t min_steps = options.GetInt("min_steps", 10, 1);
  return [tolerance, min_steps](const AssertionInput& input) {
    return CheckOneBitErrorBounded(input, tolerance, min_steps);
  };
}

Judgement MakeVarianceStableCheck(OptionTable& options, const AssertionContext& /*context*/) {
  VarianceStableOptions o;
  o.norm = Choose(options, "norm", "l1", {"l1", "l2"});
  o.tolerance = options.GetDouble("tolerance", o.tolerance, Interval::NonNegative());
  o.window = options.GetOptionalInt("window", 1);
  o.at = options.GetOptionalInt("at", 1);
  return [o](const AssertionInput& input) { return CheckVarianceStable(input, o); };
}

Judgement MakeOneBitLambClipsCheck(OptionTable& options, const AssertionContext& /*context*/) {
  const std::optional<double> rtol = options.GetOptionalDouble("rtol", Interval::NonNegative());
  return [rtol](const AssertionInput& input) { return CheckOneBitLambClips(input, rtol); };
}

Judgement MakeOneBitAdamTheorem1Check(OptionTable& options, const AssertionContext& /*context*/) {
  const bool printed = Choose(options, "bound", "rederived", {"rederived", "printed"}) == "printed";
  return [printed](const AssertionInput& input) { return CheckOneBitAdamTheorem1(input, printed); };
}

Judgement MakeRatioAdaptsCheck(OptionTable& /*options*/, const AssertionContext& /*context*/) {
  return [](const AssertionInput& input) { return CheckRatioAdapts(input); };
}

Judgement MakeOneBitLambTheorem1Check(OptionTable& options, const AssertionContext& /*context*/) {
  const bool printed = Choose(options, "bound", "rederived", {"rederived", "printed"}) == "printed";
  return [printed](const AssertionInput& input) { return CheckOneBitLambTheorem1(input, printed); };
}

// Noise that dominates the gradient, so that Adam's variance settles (1-bit Adam and LAMB): the
// setting of the examples below.
constexpr std::string_view kNoiseDominated = R"(seed = 5
steps = 300
workers = 4
precision = "fp64"

[problem]
name = "quadratic"
dimension = 16
L = 1.0
mu = 0.1
rotate = true
noise = "sphere"
sigma = 10.0

[schedule]
name = "constant"
lr = 0.01
)";

}  // namespace

// This file's rows of the assertion registry (theory/assertions.h).
std::vector<AssertionInfo> OneBitAssertions() {
  return {
      {.name = "onebit-error-bounded",
       .summary =
           "heuristic (no statement of the paper): the compression errors ||delta^(i)_t||, "
           "||delta_bar_t|| stop growing in the compression phase (max over its second half <= "
           "(1 + tolerance) x max over the first)",
       .source =
           "lemmalab's growth heuristic for onebit-adam-icml-with-appendix.txt Assumption 1.3 "
           "(lines 720-740), which the paper assumes and never shows",
       .probes = {"onebit-error"},
       .make = &MakeOneBitErrorBoundedCheck,
       .judges_failure = true,
       .example = {ExampleSpec(kNoiseDominated, R"(
[[optimizer]]
name = "onebit-adam"
beta2 = 0.98
warmup_steps = 100
)",
                               "onebit-error-bounded", "tolerance = 1.0\n"),
                   {{"too few compression steps for two halves", {"optimizer.warmup_steps=290"}}}}},
      {.name = "onebit-theorem1",
       .summary = "(1/(T+1)) sum ||grad f(x_t)||^2 over the compression phase <= Theorem 1's bound "
                  "(Markov at the confidence)",
       .source = "onebit-adam-icml-with-appendix.txt Thm 1, Eq. 6",
       .probes = {"onebit-error"},
       .make = &MakeOneBitAdamTheorem1Check,
       .algorithms = {"onebit-adam", "onebit-adam-fp32"},
       .example = {ExampleSpec(kNoiseDominated, R"(
[[optimizer]]
name = "onebit-adam"
beta2 = 0.98
warmup_steps = 150
)",
                               "onebit-theorem1", "expect = \"vacuous\"\n"),
                   {{"no worker error feedback: Lemma 2's recursion",
                     {"optimizer.worker_feedback=none"}}}}},
      {.name = "onebit-lamb-clips",
       .summary =
           "c_t in [c_min, c_max] in warmup; then r_t in [r_min, r_max], within r_threshold of "
           "r_(t-1), and c_t = r_t c_avg, per layer",
       .source = "onebit-lamb.txt Eq. (1) and Algorithm 1 lines 1-3, 18-20",
       .probes = {"lamb-ratios"},
       .make = &MakeOneBitLambClipsCheck,
       .algorithms = {"lamb", "onebit-lamb"},
       .example = {ExampleSpec(kNoiseDominated, R"(
[[optimizer]]
name = "onebit-lamb"
warmup_steps = 100
)",
                               "onebit-lamb-clips")}},
      {.name = "onebit-lamb-ratio-adapts",
       .summary =
           "layers whose variance drifts more from the frozen one get larger scaling ratios r "
           "(Spearman's rho across layers > 0)",
       .source = "onebit-lamb.txt Fig. 6, lines 300-306",
       .probes = {"lamb-ratios"},
       .make = &MakeRatioAdaptsCheck,
       .algorithms = {"onebit-lamb"},
       .example = {R"(seed = 2023
steps = 300
workers = 4
precision = "fp64"

[data]
source = "synthetic-logistic"
samples = 400
features = 20

[problem]
name = "mlp"
hidden = [16, 8]
activation = "tanh"
batch_size = 16

[schedule]
name = "constant"
lr = 0.01

[[optimizer]]
name = "onebit-lamb"
warmup_steps = 100

[[assert]]
assertion = "onebit-lamb-ratio-adapts"
)",
                   {{"r clipped to 1: no ratio to adapt",
                     {"optimizer.r_min=1.0", "optimizer.r_max=1.0"}}}}},
      {.name = "onebit-lamb-theorem1",
       .summary = "(1/(T+1)) sum ||grad f(x_t)||^2 over the compression phase <= 1-bit LAMB's "
                  "Theorem 1 "
                  "bound (Markov at the confidence)",
       .source = "onebit-lamb.txt Thm 1, Eq. 3 (App. A.9)",
       .probes = {"onebit-error", "lamb-ratios"},
       .make = &MakeOneBitLambTheorem1Check,
       .algorithms = {"onebit-lamb"},
       .example = {ExampleSpec(kNoiseDominated, R"(
[[optimizer]]
name = "onebit-lamb"
warmup_steps = 100
r_min = 1.0
r_max = 1.0
)",
                               "onebit-lamb-theorem1", "expect = \"vacuous\"\n"),
                   {{"r adapting, so c takes more than one value", {"optimizer.r_max=4.0"}}}}},
      {.name = "onebit-variance-stable",
       .summary = "||v_t|| changes by <= tolerance over a window of 1/(1-beta2) steps at T_w",
       .source = "onebit-adam-icml-with-appendix.txt Sec. 3.3, Fig. 2, Sec. 7.1 (lines 962-974)",
       .probes = {"variance-norm"},
       .make = &MakeVarianceStableCheck,
       .example =
           {ExampleSpec(kNoiseDominated, R"(
[[optimizer]]
name = "onebit-adam"
beta2 = 0.98
warmup_steps = 250
)",
                        "onebit-variance-stable"),
            {{"a step after T_w, where v is frozen and compared with itself", {}, "at = 280\n"},
             {"a window shorter than v's time constant", {}, "window = 5\n"}}}},
  };
}

}  // namespace lemmalab
