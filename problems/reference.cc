#include "problems/reference.h"

#include <ceres/gradient_problem.h>
#include <ceres/gradient_problem_solver.h>
#include <fmt/format.h>

#include <boost/random/normal_distribution.hpp>
#include <cmath>

#include "core/error.h"

namespace lemmalab {
namespace {

class FullBatchObjective final : public ceres::FirstOrderFunction {
 public:
  explicit FullBatchObjective(const Problem<double>& problem) : problem_(problem) {}
  bool Evaluate(const double* parameters, double* cost, double* gradient) const override {
    const Eigen::Map<const Eigen::VectorXd> x(parameters, problem_.dimension());
    if (gradient == nullptr) {
      *cost = problem_.Objective(x, nullptr);
    } else {
      *cost = problem_.Objective(x, &gradient_);
      Eigen::Map<Eigen::VectorXd>(gradient, problem_.dimension()) = gradient_;
    }
    return std::isfinite(*cost);
  }
  int NumParameters() const override { return static_cast<int>(problem_.dimension()); }

 private:
  const Problem<double>& problem_;
  mutable Eigen::VectorXd gradient_;
};

// Ends Ceres' iterations when a stop is requested (Ceres checks callbacks between iterations).
class StopCallback final : public ceres::IterationCallback {
 public:
  explicit StopCallback(const std::atomic<bool>* stop) : stop_(stop) {}
  ceres::CallbackReturnType operator()(const ceres::IterationSummary& /*summary*/) override {
    return Stopped(stop_) ? ceres::SOLVER_ABORT : ceres::SOLVER_CONTINUE;
  }

  static bool Stopped(const std::atomic<bool>* stop) { return stop != nullptr && stop->load(); }

 private:
  const std::atomic<bool>* stop_;
};

}  // namespace

FullBatchMinimum MinimizeFullBatch(const Problem<double>& problem, const Eigen::VectorXd& start,
                                   int max_iterations, double gradient_tolerance,
                                   const std::atomic<bool>* stop) {
  // The GradientProblem owns the function it is given.
  ceres::GradientProblem gradient_problem(new FullBatchObjective(problem));
  ceres::GradientProblemSolver::Options options;
  options.line_search_direction_type = ceres::LBFGS;
  options.max_num_iterations = max_iterations;
  options.gradient_tolerance = gradient_tolerance;
  options.function_tolerance = 1e-16;
  options.parameter_tolerance = 1e-16;
  options.logging_type = ceres::SILENT;
  StopCallback callback(stop);
  options.callbacks.push_back(&callback);
  FullBatchMinimum minimum;
  minimum.x = start;
  ceres::GradientProblemSolver::Summary summary;
  ceres::Solve(options, gradient_problem, minimum.x.data(), &summary);
  if (StopCallback::Stopped(stop)) throw Interrupted();
  Eigen::VectorXd gradient;
  minimum.value = problem.Objective(minimum.x, &gradient);
  minimum.grad_norm = gradient.norm();
  minimum.iterations = static_cast<int>(summary.iterations.size());
  minimum.termination = summary.message;
  return minimum;
}

double EstimateSmoothness(const Problem<double>& problem, const Eigen::VectorXd& x,
                          std::uint64_t seed, int iterations, const std::atomic<bool>* stop) {
  const std::int64_t d = problem.dimension();
  PhiloxStream stream({seed, Purpose::kDataSynthesis, kGlobalStream, 1});
  boost::random::normal_distribution<double> normal;
  Eigen::VectorXd v(d);
  for (auto& value : v) value = normal(stream);
  v.normalize();
  // Step relative to the point's scale: small enough for the curvature to be local, large
  // enough that the gradient difference is far above rounding.
  const double h = 1e-4 * std::max(1.0, x.norm() / std::sqrt(static_cast<double>(d)));
  Eigen::VectorXd up, down;
  double estimate = 0;
  for (int k = 0; k < iterations; ++k) {
    if (StopCallback::Stopped(stop)) throw Interrupted();
    problem.Objective(x + h * v, &up);
    problem.Objective(x - h * v, &down);
    const Eigen::VectorXd hv = (up - down) / (2 * h);
    const double next = hv.norm();
    if (next == 0) return 0;
    v = hv / next;
    const bool settled = std::abs(next - estimate) <= 1e-6 * next;
    estimate = next;
    if (settled) break;
  }
  return estimate;
}

const Constant* FindConstant(const std::vector<Constant>& constants, std::string_view name) {
  for (const Constant& c : constants) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::vector<Constant> ReferenceConstants(const Problem<double>& problem, std::uint64_t seed,
                                         int max_iterations, const std::atomic<bool>* stop) {
  std::vector<Constant> constants = problem.Constants();
  const Eigen::VectorXd start = problem.InitialPoint();
  std::optional<FullBatchMinimum> minimum;
  if (FindConstant(constants, "f_star") == nullptr) {
    minimum = MinimizeFullBatch(problem, start, max_iterations, kReferenceGradientTolerance, stop);
    // f at a point, so never below inf f: an upper bound on f*, whatever the solver found.
    constants.push_back(
        {"f_star", minimum->value, Certainty::kBound,
         fmt::format("f at the point Ceres L-BFGS reached from x_0, so >= inf f: {} iterations, "
                     "|grad f| = {:.3g} at the end, stopped: {} (the global minimum if f is "
                     "convex, else a local one)",
                     minimum->iterations, minimum->grad_norm, minimum->termination)});
  }
  if (FindConstant(constants, "L") == nullptr) {
    double L = EstimateSmoothness(problem, start, seed, kPowerIterations, stop);
    std::string where = "x_0";
    if (minimum) {
      L = std::max(L, EstimateSmoothness(problem, minimum->x, seed, kPowerIterations, stop));
      where = "x_0 and at the L-BFGS minimiser";
    }
    constants.push_back({"L", L, Certainty::kEstimate,
                         fmt::format("power iteration on finite-difference Hessian-vector "
                                     "products of f (not of each f_i) at {}",
                                     where)});
  }
  return constants;
}

}  // namespace lemmalab
