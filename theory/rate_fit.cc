#include "theory/rate_fit.h"

#include <ceres/ceres.h>
#include <fmt/format.h>

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"

namespace lemmalab {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One point of y ~ A (x / x_ref)^-p + c. The fit works with log A and x / x_ref (x_ref the
// geometric mean of the x's), which keeps the three parameters on comparable scales when x spans
// decades; a = A x_ref^p afterwards.
struct PowerLawResidual {
  double log_x;  // log(x / x_ref)
  double y;
  double weight;  // 1 / y (relative) or 1 (absolute)

  template <typename T>
  bool operator()(const T* log_a, const T* p, const T* c, T* residual) const {
    residual[0] = (exp(log_a[0] - p[0] * log_x) + c[0] - y) * weight;
    return true;
  }
};

struct Start {
  double log_a;
  double p;
  double c;
};

// Straight-line least squares of log(y - c0) on log_x: p0 = -slope, log A0 = intercept.
Start LogLogStart(const std::vector<double>& log_x, std::span<const double> y, double c0) {
  const double n = static_cast<double>(log_x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t k = 0; k < log_x.size(); ++k) {
    const double ly = std::log(y[k] - c0);
    sx += log_x[k];
    sy += ly;
    sxx += log_x[k] * log_x[k];
    sxy += log_x[k] * ly;
  }
  const double var = sxx - sx * sx / n;
  const double slope = var > 0 ? (sxy - sx * sy / n) / var : 0.0;
  const double p0 = std::max(-slope, 0.01);  // p >= 0; a rising curve starts at a small p
  return {(sy + p0 * sx) / n, p0, c0};
}

void RequireCurve(std::span<const double> x, std::span<const double> y,
                  const PowerLawFitOptions& options) {
  if (x.size() != y.size()) {
    throw UserError(fmt::format("power-law fit: x and y must have the same length, got {} and {}",
                                x.size(), y.size()));
  }
  const std::size_t needed = options.fit_offset ? 3 : 2;
  if (x.size() < needed) {
    throw UserError(fmt::format("power-law fit: needs at least {} points {}, got {}", needed,
                                options.fit_offset ? "with a fitted offset" : "", x.size()));
  }
  for (std::size_t k = 0; k < x.size(); ++k) {
    if (!(std::isfinite(x[k]) && x[k] > 0 && std::isfinite(y[k]) && y[k] > 0)) {
      throw UserError(fmt::format(
          "power-law fit: every x and y must be finite and > 0, got x[{}] = {}, y[{}] = {}", k,
          x[k], k, y[k]));
    }
  }
  if (options.max_iterations < 1) {
    throw UserError(
        fmt::format("power-law fit: max_iterations must be >= 1, got {}", options.max_iterations));
  }
}

}  // namespace

PowerLawFit FitPowerLaw(std::span<const double> x, std::span<const double> y,
                        const PowerLawFitOptions& options) {
  RequireCurve(x, y, options);
  const std::size_t m = x.size();
  double mean_log_x = 0;
  for (double v : x) mean_log_x += std::log(v);
  mean_log_x /= static_cast<double>(m);
  std::vector<double> log_x(m);
  for (std::size_t k = 0; k < m; ++k) log_x[k] = std::log(x[k]) - mean_log_x;
  const double y_min = *std::min_element(y.begin(), y.end());

  // Several starting offsets: a curve that flattens onto c is poorly described by a line in
  // log-log unless most of c is taken out first.
  std::vector<double> offsets = {0.0};
  if (options.fit_offset) offsets = {0.0, 0.5 * y_min, 0.9 * y_min};

  PowerLawFit best;
  double best_cost = std::numeric_limits<double>::infinity();
  for (double c0 : offsets) {
    Start start = LogLogStart(log_x, y, c0);
    ceres::Problem problem;
    for (std::size_t k = 0; k < m; ++k) {
      const double weight = options.weighting == FitWeighting::kRelative ? 1 / y[k] : 1.0;
      problem.AddResidualBlock(new ceres::AutoDiffCostFunction<PowerLawResidual, 1, 1, 1, 1>(
                                   new PowerLawResidual{log_x[k], y[k], weight}),
                               nullptr, &start.log_a, &start.p, &start.c);
    }
    problem.SetParameterLowerBound(&start.p, 0, 0.0);
    problem.SetParameterLowerBound(&start.c, 0, 0.0);
    if (!options.fit_offset) problem.SetParameterBlockConstant(&start.c);

    ceres::Solver::Options solver;
    solver.minimizer_type = ceres::TRUST_REGION;
    solver.trust_region_strategy_type = ceres::LEVENBERG_MARQUARDT;
    solver.linear_solver_type = ceres::DENSE_QR;
    solver.max_num_iterations = options.max_iterations;
    solver.function_tolerance = 1e-14;
    solver.gradient_tolerance = 1e-14;
    solver.parameter_tolerance = 1e-12;
    solver.num_threads = 1;
    solver.logging_type = ceres::SILENT;
    solver.minimizer_progress_to_stdout = false;
    ceres::Solver::Summary summary;
    ceres::Solve(solver, &problem, &summary);

    if (summary.final_cost < best_cost || best_cost == std::numeric_limits<double>::infinity()) {
      best_cost = summary.final_cost;
      best.p = start.p;
      best.c = start.c;
      // a = A x_ref^p with x_ref = exp(mean_log_x).
      best.a = std::exp(start.log_a + start.p * mean_log_x);
      best.converged = summary.termination_type == ceres::CONVERGENCE;
      best.residual_rms = std::sqrt(2 * summary.final_cost / static_cast<double>(m));
      best.message = summary.message;
    }
  }
  return best;
}

std::optional<double> TailExponent(std::span<const double> per_step, std::int64_t first,
                                   int batches) {
  const auto steps = static_cast<std::int64_t>(per_step.size());
  const std::int64_t length = (steps - first + 1) / batches;
  if (first < 1 || batches < 2 || length < 2) return std::nullopt;
  std::vector<double> log_t, log_y;
  for (std::int64_t b = 0; b < batches; ++b) {
    const std::int64_t begin = steps - (batches - b) * length + 1;  // paper's t of its first step
    double sum = 0;
    for (std::int64_t t = begin; t < begin + length; ++t) {
      sum += per_step[static_cast<std::size_t>(t - 1)];
    }
    const double mean = sum / static_cast<double>(length);
    if (!(mean > 0) || !std::isfinite(mean)) return std::nullopt;
    log_t.push_back(std::log(static_cast<double>(begin) + 0.5 * static_cast<double>(length - 1)));
    log_y.push_back(std::log(mean));
  }
  const double n = static_cast<double>(batches);
  const double mx = std::accumulate(log_t.begin(), log_t.end(), 0.0) / n;
  const double my = std::accumulate(log_y.begin(), log_y.end(), 0.0) / n;
  double sxx = 0, sxy = 0;
  for (std::size_t k = 0; k < log_t.size(); ++k) {
    sxx += (log_t[k] - mx) * (log_t[k] - mx);
    sxy += (log_t[k] - mx) * (log_y[k] - my);
  }
  return -sxy / sxx;
}

double StudentTQuantile(double probability, double degrees_of_freedom) {
  if (!(probability > 0 && probability < 1)) {
    throw UserError(
        fmt::format("Student t quantile: probability must be in (0, 1), got {}", probability));
  }
  if (!(degrees_of_freedom > 0 && std::isfinite(degrees_of_freedom))) {
    throw UserError(
        fmt::format("Student t quantile: degrees of freedom must be finite and > 0, got {}",
                    degrees_of_freedom));
  }
  const boost::math::students_t distribution(degrees_of_freedom);
  return boost::math::quantile(distribution, probability);
}

ExponentEstimate FitAcrossSeeds(std::span<const Curve> curves, const AcrossSeedsOptions& options) {
  if (!(options.confidence > 0 && options.confidence < 1)) {
    throw UserError(
        fmt::format("fit across seeds: confidence must be in (0, 1), got {}", options.confidence));
  }
  ExponentEstimate estimate;
  estimate.confidence = options.confidence;
  estimate.seeds = static_cast<int>(curves.size());
  std::vector<double> exponents;
  for (const Curve& curve : curves) {
    estimate.fits.push_back(FitPowerLaw(curve.x, curve.y, options.fit));
    if (estimate.fits.back().converged) exponents.push_back(estimate.fits.back().p);
  }
  const int k = static_cast<int>(exponents.size());
  estimate.converged_seeds = k;
  estimate.lower = estimate.upper = kNaN;
  estimate.std_dev = kNaN;
  if (k == 0) {
    estimate.mean = kNaN;
    estimate.message =
        fmt::format("no fit converged ({} seeds): exponent unavailable", estimate.seeds);
    return estimate;
  }
  estimate.mean = std::accumulate(exponents.begin(), exponents.end(), 0.0) / k;
  if (k == 1) {
    estimate.message = fmt::format(
        "one converged seed of {}: no spread across seeds, so no interval (inconclusive)",
        estimate.seeds);
    return estimate;
  }
  double squares = 0;
  for (double p : exponents) squares += (p - estimate.mean) * (p - estimate.mean);
  estimate.std_dev = std::sqrt(squares / (k - 1));
  const double t = StudentTQuantile(0.5 + 0.5 * options.confidence, k - 1);
  const double half_width = t * estimate.std_dev / std::sqrt(static_cast<double>(k));
  estimate.lower = estimate.mean - half_width;
  estimate.upper = estimate.mean + half_width;
  estimate.interval_available = true;
  estimate.message = fmt::format("{} of {} seeds converged; {:.0f}% t-interval with {} dof", k,
                                 estimate.seeds, 100 * options.confidence, k - 1);
  return estimate;
}

ExponentEstimate FitSpeedup(std::span<const double> n_values,
                            std::span<const std::vector<double>> y_per_seed,
                            const AcrossSeedsOptions& options) {
  std::vector<Curve> curves;
  for (std::size_t s = 0; s < y_per_seed.size(); ++s) {
    if (y_per_seed[s].size() != n_values.size()) {
      throw UserError(fmt::format("speedup fit: seed {} has {} values for {} worker counts", s,
                                  y_per_seed[s].size(), n_values.size()));
    }
    curves.push_back({std::vector<double>(n_values.begin(), n_values.end()), y_per_seed[s]});
  }
  return FitAcrossSeeds(curves, options);
}

std::vector<double> RunningAverage(std::span<const double> series) {
  std::vector<double> running(series.size());
  double sum = 0;
  for (std::size_t t = 0; t < series.size(); ++t) {
    sum += series[t];
    running[t] = sum / static_cast<double>(t + 1);
  }
  return running;
}

std::vector<std::int64_t> LogSpacedGrid(std::int64_t t_min, std::int64_t t_max, int points) {
  if (t_min < 1 || t_max < t_min) {
    throw UserError(
        fmt::format("log-spaced grid: needs 1 <= t_min <= t_max, got t_min = {}, "
                    "t_max = {}",
                    t_min, t_max));
  }
  if (points < 1) {
    throw UserError(fmt::format("log-spaced grid: points must be >= 1, got {}", points));
  }
  std::vector<std::int64_t> grid;
  if (points == 1 || t_min == t_max) return {t_max};
  const double log_min = std::log(static_cast<double>(t_min));
  const double log_max = std::log(static_cast<double>(t_max));
  for (int k = 0; k < points; ++k) {
    const double u = static_cast<double>(k) / (points - 1);
    auto t = static_cast<std::int64_t>(std::llround(std::exp(log_min + u * (log_max - log_min))));
    t = std::clamp(t, t_min, t_max);
    if (!grid.empty() && t <= grid.back()) t = grid.back() + 1;  // crowded small T: next integer
    if (t > t_max) break;
    grid.push_back(t);
  }
  if (grid.back() != t_max) grid.back() = t_max;
  return grid;
}

Curve RunningAverageCurve(std::span<const double> per_step, int points, std::int64_t t_min) {
  const auto t_max = static_cast<std::int64_t>(per_step.size());
  if (t_max < t_min) {
    throw UserError(fmt::format(
        "running-average curve: the series has {} steps, fewer than t_min = {}", t_max, t_min));
  }
  const std::vector<double> running = RunningAverage(per_step);
  Curve curve;
  for (std::int64_t t : LogSpacedGrid(t_min, t_max, points)) {
    curve.x.push_back(static_cast<double>(t));
    curve.y.push_back(running[static_cast<std::size_t>(t - 1)]);
  }
  return curve;
}

}  // namespace lemmalab
