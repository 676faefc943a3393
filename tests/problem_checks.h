// Checks shared by the problem tests: gradients against Ceres' central finite differences.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "problems/problem.h"

namespace lemmalab::testing {

// grad f(x) by Ceres' central differences of f, or of Problem::Objective.
Eigen::VectorXd CentralDifferenceGradient(const std::function<double(const Eigen::VectorXd&)>& f,
                                          const Eigen::VectorXd& x);
Eigen::VectorXd CentralDifferenceGradient(const Problem<double>& problem, const Eigen::VectorXd& x);

// The Hessian of f at x rebuilt column by column from central differences of the gradient
// (step h), symmetrised; and its largest |eigenvalue|.
Eigen::MatrixXd DifferenceHessian(const Problem<double>& problem, const Eigen::VectorXd& x,
                                  double h = 1e-4);
double HessianNorm(const Problem<double>& problem, const Eigen::VectorXd& x);

// ||analytic - numeric|| / (1 + ||analytic||) at x.
double GradientError(const Problem<double>& problem, const Eigen::VectorXd& x);

// The value of the constant called `name`; a test failure (and NaN) when there is none.
double ConstantValue(const std::vector<Constant>& constants, std::string_view name);

// A standard normal point of dimension d, the same for the same seed.
Eigen::VectorXd RandomPoint(std::int64_t d, std::uint64_t seed);

}  // namespace lemmalab::testing
