// Empirical convergence rates: the exponent p of y ~ a T^-p + c fitted to a measured curve (the
// averaged squared gradient norm against the horizon T), per seed and then across seeds with a
// Student-t interval, and the same model in the number of workers n for the linear-speedup check
// (every theorem in theory/bounds.h promises some T^-p n^-q; theory/rate_assertions.cc judges
// the fits).
//
// The fits are nonlinear least squares with Ceres (Levenberg-Marquardt). The interval on p comes
// from the spread of the per-seed exponents, not from one fit's covariance: the points of a
// running-average curve are strongly correlated (each average contains the previous one), so a
// single fit's residuals understate the uncertainty, while seeds are independent runs.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace lemmalab {

enum class FitWeighting {
  // Residual (model - y) / y. A power law spans decades: absolute residuals let the largest
  // values (the first, short horizons) decide the fit and ignore the tail, where the exponent is
  // read. Relative residuals weigh every decade alike, like a fit of log y, but stay defined when
  // the model is near 0 and keep c as an additive offset. The default.
  kRelative,
  // Residual model - y: for curves that span less than a decade or have additive noise.
  kAbsolute,
};

struct PowerLawFitOptions {
  bool fit_offset = true;  // fit c >= 0; false: c is fixed at 0 (a pure power law)
  FitWeighting weighting = FitWeighting::kRelative;
  int max_iterations = 200;
};

// y ~ a x^-p + c with a > 0, p >= 0, c >= 0.
struct PowerLawFit {
  double a = 0;
  double p = 0;
  double c = 0;
  bool converged = false;   // Ceres reported CONVERGENCE
  double residual_rms = 0;  // root mean square residual in the fit's weighting
  std::string message;      // Ceres's termination message
};

// Fits y ~ a x^-p + c. x must be positive and y positive (relative weighting divides by y); at
// least 3 points with a fitted offset, 2 without. Initialisation: a straight-line fit of
// log(y - c0) against log x for a few starting offsets c0 in [0, min y), the best final cost
// kept.
PowerLawFit FitPowerLaw(std::span<const double> x, std::span<const double> y,
                        const PowerLawFitOptions& options = {});

// One seed's curve: y measured at the points x (horizons T, or worker counts n).
struct Curve {
  std::vector<double> x;
  std::vector<double> y;
};

struct AcrossSeedsOptions {
  PowerLawFitOptions fit;
  double confidence = 0.95;  // two-sided level of the interval, in (0, 1)
};

// The exponent across seeds: mean of the per-seed exponents and mean +- t_{(1+level)/2, k-1}
// s / sqrt(k) over the k seeds whose fit converged.
struct ExponentEstimate {
  double mean = 0;
  double std_dev = 0;  // sample standard deviation (k - 1 in the denominator)
  double lower = 0;
  double upper = 0;
  double confidence = 0;
  int seeds = 0;            // curves given
  int converged_seeds = 0;  // those whose fit converged: the interval uses only these
  // False with fewer than two converged seeds: no spread, no interval (lower and upper NaN);
  // callers report "inconclusive".
  bool interval_available = false;
  std::string message;
  std::vector<PowerLawFit> fits;  // per seed, in the order given
};

ExponentEstimate FitAcrossSeeds(std::span<const Curve> curves,
                                const AcrossSeedsOptions& options = {});

// The linear-speedup check: y ~ a n^-q + c over the worker counts n_values, one y series per
// seed (each the length of n_values); the estimate is q (1 for linear speedup in the variance
// term, 1/2 for a sigma / sqrt(nT) rate read at fixed T).
ExponentEstimate FitSpeedup(std::span<const double> n_values,
                            std::span<const std::vector<double>> y_per_seed,
                            const AcrossSeedsOptions& options = {});

// The exponent q of the per-step values' own decay over the tail, y_t ~ b t^-q for the paper's t
// from `first` to T (per_step[t-1], T = per_step.size()): the steps are cut into `batches` runs
// of equal length (the remainder at the front dropped) and q is minus the least-squares slope of
// log(batch mean) on log(the batch's middle step). A running mean can keep decaying like T^-1
// long after the values themselves stopped falling (its early sum dominates), so what the values
// do at the end is read here. nullopt when a batch mean is not positive or finite, or the tail
// has fewer than 2 steps per batch.
std::optional<double> TailExponent(std::span<const double> per_step, std::int64_t first,
                                   int batches = 10);

// The quantile of Student's t distribution with `degrees_of_freedom` > 0 at `probability` in
// (0, 1) (Boost.Math).
double StudentTQuantile(double probability, double degrees_of_freedom);

// running[T-1] = (1/T) sum_{t=1}^T series[t-1].
std::vector<double> RunningAverage(std::span<const double> series);

// About `points` integers from t_min to t_max (both included, 1 <= t_min <= t_max), spaced
// evenly in log T and strictly increasing; fewer when the range holds fewer integers.
std::vector<std::int64_t> LogSpacedGrid(std::int64_t t_min, std::int64_t t_max, int points);

// The curve to fit from a per-step series: per_step[t-1] = ||grad f(x_t)||^2 for t = 1..T, read
// as the running average (1/T) sum_{t<=T} at log-spaced horizons T from t_min to the series'
// length, so that each decade of T carries the same number of points and late steps do not
// dominate the fit.
Curve RunningAverageCurve(std::span<const double> per_step, int points, std::int64_t t_min = 1);

}  // namespace lemmalab
