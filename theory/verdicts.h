// Helpers the assertion functions share: naming senders and building the common verdicts.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "optimizers/optimizer.h"
#include "theory/assertion.h"
#include "theory/statistics.h"

namespace lemmalab {

// "worker 3", "server", or "" for run-wide values.
std::string SenderName(int worker);

// The verdict of a deterministic claim "value <= bound at every value the series took", judged
// on the exact extremes of all the values (Series::extent), whatever was recorded: holds when the
// largest is within the bound, violated at the largest otherwise (a NaN is never within). The
// detail says where the recorded points first break it, as far as they go. Several series
// (the workers' and the server's, say) are judged together. `what` names the quantity.
Verdict EveryValueAtMost(std::initializer_list<const Series*> series, double bound,
                         std::string_view what, std::string bound_text);
// The same for "value >= bound", judged on the smallest value.
Verdict EveryValueAtLeast(std::initializer_list<const Series*> series, double bound,
                          std::string_view what, std::string bound_text);

// One run against a bound on an expectation E X <= B (X >= 0): a single draw X proves nothing
// about E X, but X <= B is what the bound predicts (holds), and by Markov's inequality
// P(X > B / a) <= a, so X > B / (1 - c) rejects the bound at confidence c (violated). In between
// the one draw cannot decide (inconclusive).
VerdictKind ExpectationVerdict(double measured, double bound, double confidence);

// One form of a bound on an expectation judged from one run: ExpectationVerdict, except that a
// bound that is not finite makes no claim (inconclusive) and a met bound not below `trivial`
// (named by `trivial_text`) is vacuous. `bound_text` says what the bound is.
BoundForm ExpectationForm(std::string name, std::string bound_text, double measured, double bound,
                          double trivial, std::string_view trivial_text, double confidence);

// The relative slack a bound checked against a run's stored state allows for rounding: the state
// is stored in the run's precision (1e-6 for fp32, 1e-12 for fp64), unless `given`.
double RoundingSlack(const RunEvidence& run, std::optional<double> given = std::nullopt);

// "over all 6000 values (600 recorded)": how many values an extent-based measurement covers.
std::string OverAllValues(const Series& series);

// A mean estimated from a sample of a series' values (`from_sample`, BatchMeans or
// IndependentMean of the recorded values) made the mean of every value (the extent's: exact,
// whatever was recorded). For independent values the standard error is every value's too
// (s / sqrt(N) from the extent's sum of squares); for correlated steps the batch-means error of
// the recorded values is kept, the one statistic a sample of them must estimate. A non-finite
// value makes the mean NaN.
MeanEstimate MeanOfEveryValue(MeanEstimate from_sample, const Extent& every, bool independent);

// The series `probe/series` of the run, or nullptr with `why` set to an inconclusive reason.
const Series* RequireProbe(const RunEvidence& run, std::string_view probe, std::string_view series,
                           std::string& why);

// What the theorems that bound (1/T) sum_{t<T} ||grad f(x^t)||^2 read from a run's metrics: the
// step size (the lr of step 1; that it stays constant is a premise of their own),
// ||grad f(x^t)||^2 for every t < T (grad_sq_norm at steps 0..T-1, so eval_every = 1) and f(x^0)
// (train_loss at step 0).
struct GradientAverage {
  double step_size = 0;
  std::vector<double> grad_sq;  // by step, T values
  double sum = 0;               // their sum in step order
  double initial_loss = 0;
  Verdict::Statistic statistic;  // the running mean of grad_sq_norm, what the bound is against
};
// nullopt with `why` set when the run lacks one of them; `steps` (T) must be at least 1.
std::optional<GradientAverage> ReadGradientAverage(const RunEvidence& run, std::int64_t steps,
                                                   std::string& why);

// options.GetChoice with the choices written inline.
std::string Choose(OptionTable& options, std::string_view key, std::string_view fallback,
                   std::initializer_list<std::string_view> choices);

// How a constant was obtained, for a verdict's detail: "L = 1 (exact: largest eigenvalue of A)".
std::string DescribeConstant(const Constant& constant);

}  // namespace lemmalab
