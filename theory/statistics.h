// Small statistics the assertions share: quantiles and the standard error of a mean of a series
// whose values are correlated in time (batch means), so that a verdict's confidence level means
// what it says.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>

namespace lemmalab {

// The larger (smaller) of a and b, and NaN when either is: the running extremes the probes keep
// never let a NaN pass unseen (std::max(a, NaN) is a).
inline double NanMax(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? a + b : (a < b ? b : a);
}
inline double NanMin(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? a + b : (b < a ? b : a);
}

// The standard normal quantile Phi^{-1}(p), 0 < p < 1 (Boost.Math; Student's t is
// StudentTQuantile in theory/rate_fit.h).
double NormalQuantile(double p);

// The mean of `values` and the standard error of that mean estimated by non-overlapping batch
// means (`batches` batches of equal length, the remainder at the front dropped): successive
// steps of an optimizer are correlated, and the naive s/sqrt(N) would understate the error.
// With fewer than 2 * batches values the error is infinite (too few samples to judge).
struct MeanEstimate {
  double mean = 0;
  double standard_error = 0;
  std::int64_t samples = 0;
  double dof = 0;  // degrees of freedom of the batch-means t statistic (batches - 1)
};
inline constexpr int kBatches = 10;
MeanEstimate BatchMeans(std::span<const double> values, int batches = kBatches);

// The mean of independent values and its standard error s / sqrt(N) (N - 1 degrees of freedom;
// infinite with fewer than 2 values).
MeanEstimate IndependentMean(std::span<const double> values);

}  // namespace lemmalab
