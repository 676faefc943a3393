#include "tests/problem_checks.h"

#include <ceres/dynamic_numeric_diff_cost_function.h>

#include <boost/random/normal_distribution.hpp>

#include "core/error.h"

namespace lemmalab::testing {
namespace {

// f(x) as a Ceres cost function with one residual, so Ceres' central differences give grad f.
struct ObjectiveFunctor {
  const Problem<double>* problem;
  bool operator()(double const* const* parameters, double* residual) const {
    const Eigen::Map<const Eigen::VectorXd> x(parameters[0], problem->dimension());
    *residual = problem->Objective(x, nullptr);
    return true;
  }
};

}  // namespace

Eigen::VectorXd CentralDifferenceGradient(const Problem<double>& problem,
                                          const Eigen::VectorXd& x) {
  ceres::DynamicNumericDiffCostFunction<ObjectiveFunctor, ceres::CENTRAL> cost(
      new ObjectiveFunctor{&problem});
  cost.AddParameterBlock(static_cast<int>(problem.dimension()));
  cost.SetNumResiduals(1);
  const double* parameters[] = {x.data()};
  double residual;
  Eigen::VectorXd gradient(problem.dimension());
  double* jacobians[] = {gradient.data()};
  LEMMALAB_CHECK(cost.Evaluate(parameters, &residual, jacobians), "Ceres could not evaluate");
  return gradient;
}

double GradientError(const Problem<double>& problem, const Eigen::VectorXd& x) {
  Eigen::VectorXd analytic;
  problem.Objective(x, &analytic);
  return (analytic - CentralDifferenceGradient(problem, x)).norm() / (1 + analytic.norm());
}

Eigen::VectorXd RandomPoint(std::int64_t d, std::uint64_t seed) {
  PhiloxStream stream({seed, Purpose::kDataSynthesis, 0, 0});
  boost::random::normal_distribution<double> normal;
  Eigen::VectorXd x(d);
  for (auto& v : x) v = normal(stream);
  return x;
}

}  // namespace lemmalab::testing
