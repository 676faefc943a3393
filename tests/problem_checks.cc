#include "tests/problem_checks.h"

#include <ceres/dynamic_numeric_diff_cost_function.h>
#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <boost/random/normal_distribution.hpp>
#include <cmath>

#include "core/error.h"
#include "problems/reference.h"

namespace lemmalab::testing {
namespace {

// f(x) as a Ceres cost function with one residual, so Ceres' central differences give grad f.
struct ScalarFunctor {
  const std::function<double(const Eigen::VectorXd&)>* f;
  Eigen::Index d;
  bool operator()(double const* const* parameters, double* residual) const {
    *residual = (*f)(Eigen::Map<const Eigen::VectorXd>(parameters[0], d));
    return true;
  }
};

}  // namespace

Eigen::VectorXd CentralDifferenceGradient(const std::function<double(const Eigen::VectorXd&)>& f,
                                          const Eigen::VectorXd& x) {
  ceres::DynamicNumericDiffCostFunction<ScalarFunctor, ceres::CENTRAL> cost(
      new ScalarFunctor{&f, x.size()});
  cost.AddParameterBlock(static_cast<int>(x.size()));
  cost.SetNumResiduals(1);
  const double* parameters[] = {x.data()};
  double residual;
  Eigen::VectorXd gradient(x.size());
  double* jacobians[] = {gradient.data()};
  LEMMALAB_CHECK(cost.Evaluate(parameters, &residual, jacobians), "Ceres could not evaluate");
  return gradient;
}

Eigen::VectorXd CentralDifferenceGradient(const Problem<double>& problem,
                                          const Eigen::VectorXd& x) {
  return CentralDifferenceGradient(
      [&](const Eigen::VectorXd& at) { return problem.Objective(at, nullptr); }, x);
}

Eigen::MatrixXd DifferenceHessian(const Problem<double>& problem, const Eigen::VectorXd& x,
                                  double h) {
  const Eigen::Index d = x.size();
  Eigen::MatrixXd hessian(d, d);
  Eigen::VectorXd up, down;
  for (Eigen::Index k = 0; k < d; ++k) {
    Eigen::VectorXd plus = x, minus = x;
    plus[k] += h;
    minus[k] -= h;
    problem.Objective(plus, &up);
    problem.Objective(minus, &down);
    hessian.col(k) = (up - down) / (2 * h);
  }
  return 0.5 * (hessian + hessian.transpose());
}

double HessianNorm(const Problem<double>& problem, const Eigen::VectorXd& x) {
  return Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(DifferenceHessian(problem, x),
                                                        Eigen::EigenvaluesOnly)
      .eigenvalues()
      .cwiseAbs()
      .maxCoeff();
}

double GradientError(const Problem<double>& problem, const Eigen::VectorXd& x) {
  Eigen::VectorXd analytic;
  problem.Objective(x, &analytic);
  return (analytic - CentralDifferenceGradient(problem, x)).norm() / (1 + analytic.norm());
}

double ConstantValue(const std::vector<Constant>& constants, std::string_view name) {
  const Constant* constant = FindConstant(constants, name);
  if (constant == nullptr) {
    ADD_FAILURE() << "no constant " << name;
    return std::nan("");
  }
  return constant->value;
}

Eigen::VectorXd RandomPoint(std::int64_t d, std::uint64_t seed) {
  PhiloxStream stream({seed, Purpose::kDataSynthesis, 0, 0});
  boost::random::normal_distribution<double> normal;
  Eigen::VectorXd x(d);
  for (auto& v : x) v = normal(stream);
  return x;
}

}  // namespace lemmalab::testing
