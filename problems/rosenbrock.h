// The d-dimensional Rosenbrock function (the "extended" form with coupled neighbours),
//
//   f(x) = sum_{i=0}^{d-2} [ a (x_{i+1} - x_i^2)^2 + (1 - x_i)^2 ],   d >= 2,
//
// with f_star = 0 at x = (1, ..., 1), started from the classic x_0 = (-1.2, 1, -1.2, 1, ...).
// Every worker has the same f (sigma_g = 0); stochastic gradients add the noise of
// problems/synthetic.h. f is not globally smooth, so L and G are reported on the box
// |x_j| <= R (option `radius`, default 2), which holds x_0 and x*. Nothing is drawn at
// construction.
#pragma once

#include <cstdint>
#include <memory>

#include "problems/problem.h"
#include "problems/synthetic.h"

namespace lemmalab {

struct RosenbrockOptions {
  std::int64_t dimension = 100;  // >= 2
  double a = 100;                // > 0
  double radius = 2;             // the box |x_j| <= radius of L and G
  GradientNoise noise;
};

template <typename T>
std::unique_ptr<Problem<T>> MakeRosenbrock(const RosenbrockOptions& options, int workers);

// sup of ||Hessian|| on the box, bounded by Gershgorin (derivation in rosenbrock.cc).
double RosenbrockSmoothnessBound(std::int64_t d, double a, double radius);
// max_j |x_0,j| of the initial point (-1.2, 1, -1.2, ...): the smallest box radius that holds it.
double RosenbrockStartRadius(std::int64_t d);
// max of ||grad f|| on the box, attained at x = -radius (1, ..., 1).
double RosenbrockGradientBound(std::int64_t d, double a, double radius);

}  // namespace lemmalab
