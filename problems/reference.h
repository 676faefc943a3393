// Reference values for a problem that it does not know a priori: f* by Ceres Solver's L-BFGS on
// the full-batch objective, and L by power iteration on Hessian-vector products. Both work on
// the fp64 instance of the problem whatever the run's precision.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "problems/problem.h"

namespace lemmalab {

inline constexpr double kReferenceGradientTolerance = 1e-10;
inline constexpr int kPowerIterations = 200;

struct FullBatchMinimum {
  Eigen::VectorXd x;
  double value = 0;
  double grad_norm = 0;  // ||grad f|| at x
  int iterations = 0;
  std::string termination;  // Ceres' reason for stopping
};

// Minimises f from `start` with Ceres' GradientProblemSolver (L-BFGS, strong Wolfe line search)
// until the gradient's max-norm falls below `gradient_tolerance`, progress stops at rounding
// level, or after `max_iterations`. For a convex problem the value is f* to that tolerance;
// otherwise a local minimum. `termination` says which.
//
// Each of these honours `stop` (e.g. set by SIGINT) between iterations, by throwing Interrupted.
FullBatchMinimum MinimizeFullBatch(const Problem<double>& problem, const Eigen::VectorXd& start,
                                   int max_iterations = 10000,
                                   double gradient_tolerance = kReferenceGradientTolerance,
                                   const std::atomic<bool>* stop = nullptr);

// The largest |eigenvalue| of the Hessian of f at x, by power iteration on central
// finite-difference Hessian-vector products (H v ~ (grad f(x + h v) - grad f(x - h v)) / 2h),
// from a start vector drawn from `seed`, until the estimate changes by less than 1e-6
// relatively or after `iterations` products.
double EstimateSmoothness(const Problem<double>& problem, const Eigen::VectorXd& x,
                          std::uint64_t seed, int iterations = kPowerIterations,
                          const std::atomic<bool>* stop = nullptr);

// The problem's own constants, plus estimates of f_star (when the problem has none) and of L
// (when it has none): L is the larger of the estimates at the initial point and at the
// minimiser. Each estimate says how it was made. `max_iterations` bounds L-BFGS.
std::vector<Constant> ReferenceConstants(const Problem<double>& problem, std::uint64_t seed,
                                         int max_iterations = 10000,
                                         const std::atomic<bool>* stop = nullptr);

// The constant called `name`, or null.
const Constant* FindConstant(const std::vector<Constant>& constants, std::string_view name);

}  // namespace lemmalab
