// Two synthetic problems with exactly known constants, both separable along the eigenvectors of
// A = Q diag(lambda) Q^T (spectrum, rotation, noise and heterogeneity from problems/synthetic.h):
//
//   f(x) = f_0 + sum_j phi_j(y_j),  y = Q^T (x - c),  phi_j(y) = lambda_j/2 y^2 - nu log cosh(y),
//   f_i(x) = f(x) - delta_i^T x,    g_i = grad f_i(x) + xi.
//
// `quadratic` (nu = 0): c = x* ~ N(0, I) and f_0 = -1/2 x*^T A x*, which is the same function as
// f_i(x) = 1/2 x^T A x - (b + delta_i)^T x with b = A x*. L = lambda_d, mu = lambda_1, f_star =
// f_0.
//
// `nonconvex-quadratic` (nu > 0): c ~ N(0, I) and f_0 = 0. Each direction with lambda_j < nu is a
// symmetric double well (phi_j''(0) = lambda_j - nu < 0), the others are convex; f is bounded
// below because mu > 0 (the quadratic outgrows the linear growth of log cosh). The Hessian
// eigenvalues lambda_j - nu sech^2(y_j) lie in [lambda_j - nu, lambda_j], the lower end attained at
// y_j = 0 and the upper one approached as |y_j| grows, so L = max_j max(lambda_j, nu - lambda_j)
// exactly (a supremum). f_star is the sum of the per-direction minima: 0 at y = 0 where
// lambda_j >= nu, else at y = +-r_j with r_j the positive root of lambda_j r = nu tanh(r). The
// reported minimiser takes +r_j in every double well (there are 2^k minimisers for k wells).
// The default nu = L/2 makes the directions with lambda_j < L/2 double wells (about half of them
// with the linear spectrum) and keeps the problem's L equal to the `L` option.
//
// Both start at x_0 = 0. Construction draws, in this order, from SyntheticConstructionStream(seed):
// c (d normals), Q (d*d normals, column by column, only when rotated), and the heterogeneity
// shifts (n*d normals, worker by worker, only when zeta > 0).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "problems/problem.h"
#include "problems/synthetic.h"

namespace lemmalab {

struct QuadraticOptions {
  SpectrumOptions spectrum;
  GradientNoise noise;
  double heterogeneity = 0;      // zeta
  double nu = 0;                 // 0: the convex quadratic; > 0: nonconvex-quadratic
  std::optional<double> radius;  // of G's ball around the minimiser; default ||x_0 - x*||
};

// Everything a problem is built from, in double, with its known answer; tests rebuild it from
// the same options and seed to compare against.
struct QuadraticModel {
  QuadraticOptions options;
  int workers = 1;
  Eigen::VectorXd lambda;     // ascending
  Eigen::MatrixXd q;          // the rotation; empty when not rotated (Q = I)
  Eigen::VectorXd centre;     // c
  Eigen::MatrixXd delta;      // d x n, column i is worker i's shift
  double offset = 0;          // f_0
  Eigen::VectorXd minimizer;  // a global minimiser x*
  double f_star = 0;
  double l = 0;       // smoothness constant of every f_i
  double radius = 0;  // G's ball: ||x - x*|| <= radius
};

QuadraticModel BuildQuadraticModel(const QuadraticOptions& options, int workers,
                                   std::uint64_t seed);

// What building the model and a problem on it in scalar type T takes: the rotation and its QR
// (d x d, twice), and the d x n shifts of the workers' minimisers, each in double and in T.
// `dimension` and `workers` drive it.
MemoryEstimate QuadraticMemory(const QuadraticOptions& options, int workers, int scalar_bytes);

template <typename T>
std::unique_ptr<Problem<T>> MakeQuadratic(const QuadraticModel& model);

// The positive minimiser of lambda/2 y^2 - nu log cosh(y) (lambda > 0, nu > 0), i.e. the root of
// lambda y = nu tanh(y), or 0 when lambda >= nu (then y = 0 is the only minimiser).
double DoubleWellMinimizer(double lambda, double nu);

// log cosh(y) without overflow: |y| + log1p(exp(-2|y|)) - log 2.
double LogCosh(double y);

}  // namespace lemmalab
