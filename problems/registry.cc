// The problem registry: adding a problem is one file and one line in the table below.
#include <fmt/format.h>

#include "problems/logistic_regression.h"
#include "problems/problem.h"
#include "problems/quadratic.h"
#include "problems/rosenbrock.h"
#include "problems/synthetic.h"

namespace lemmalab {
namespace {

template <typename T>
std::unique_ptr<Problem<T>> LogisticRegressionFromOptions(OptionTable& options,
                                                          const ProblemContext& context) {
  LogisticRegressionOptions o;
  o.l2 = options.GetDouble("l2", o.l2, Interval::NonNegative());
  o.intercept = options.GetBool("intercept", o.intercept);
  o.batch_size = options.GetInt("batch_size", o.batch_size, 0, 1 << 24);
  const Dataset& data = *context.data;
  if (data.train.size() < context.workers) {
    options.Fail("name", fmt::format("{} samples cannot be split across {} workers",
                                     data.train.size(), context.workers));
  }
  return MakeLogisticRegression<T>(data, o,
                                   IidShards(data.train.size(), context.workers, context.seed));
}

// The options of `quadratic`; `nonconvex-quadratic` adds nu.
QuadraticOptions ReadQuadraticOptions(OptionTable& options, const ProblemContext& context) {
  QuadraticOptions o;
  o.spectrum = ReadSpectrum(options);
  o.noise = ReadGradientNoise(options);
  o.heterogeneity = ReadHeterogeneity(options, context.workers);
  o.radius = ReadRadius(options);
  return o;
}

template <typename T>
std::unique_ptr<Problem<T>> QuadraticFromOptions(OptionTable& options,
                                                 const ProblemContext& context) {
  const QuadraticOptions o = ReadQuadraticOptions(options, context);
  return MakeQuadratic<T>(BuildQuadraticModel(o, context.workers, context.seed));
}

template <typename T>
std::unique_ptr<Problem<T>> NonconvexQuadraticFromOptions(OptionTable& options,
                                                          const ProblemContext& context) {
  QuadraticOptions o = ReadQuadraticOptions(options, context);
  // nu = L/2: the directions with lambda < L/2 are double wells, and the problem's L stays L.
  o.nu = options.GetDouble("nu", o.spectrum.l / 2, Interval::Positive());
  if (o.spectrum.mu == 0) {
    options.Fail("mu",
                 "nonconvex-quadratic needs mu > 0: along an eigenvalue 0, -nu log cosh(y) makes "
                 "f unbounded below");
  }
  return MakeQuadratic<T>(BuildQuadraticModel(o, context.workers, context.seed));
}

template <typename T>
std::unique_ptr<Problem<T>> RosenbrockFromOptions(OptionTable& options,
                                                  const ProblemContext& context) {
  RosenbrockOptions o;
  o.dimension = ReadDimension(options);
  if (o.dimension < 2) {
    options.Fail("dimension",
                 fmt::format("rosenbrock needs dimension >= 2 (its terms couple x_i and x_i+1), "
                             "got {}",
                             o.dimension));
  }
  o.a = options.GetDouble("a", o.a, Interval::Positive());
  o.radius = options.GetDouble("radius", o.radius, Interval::Positive());
  o.noise = ReadGradientNoise(options);
  return MakeRosenbrock<T>(o, context.workers);
}

}  // namespace

const Registry<ProblemInfo>& Problems() {
  static const Registry<ProblemInfo> registry(
      "problem",
      {
          {"logreg", "binary logistic regression with optional L2, exact gradients, iid shards",
           true, &LogisticRegressionFromOptions<float>, &LogisticRegressionFromOptions<double>},
          {"nonconvex-quadratic",
           "sum of double wells lambda/2 y^2 - nu log cosh y along rotated eigenvectors; exact "
           "L and f_star",
           false, &NonconvexQuadraticFromOptions<float>, &NonconvexQuadraticFromOptions<double>},
          {"quadratic",
           "1/2 x^T A x - (b + delta_i)^T x with a chosen spectrum; exact L, mu, f_star, sigma, "
           "sigma_g",
           false, &QuadraticFromOptions<float>, &QuadraticFromOptions<double>},
          {"rosenbrock", "d-dimensional Rosenbrock; f_star = 0, L and G bounded on a box", false,
           &RosenbrockFromOptions<float>, &RosenbrockFromOptions<double>},
      });
  return registry;
}

template <typename T>
std::unique_ptr<Problem<T>> MakeProblem(OptionTable& options, const ProblemContext& context) {
  const ProblemInfo& info = Problems().Get(options);
  options.set_context(fmt::format("problem '{}'", info.name));
  if (info.needs_data && context.data == nullptr) {
    options.Fail("name",
                 fmt::format("problem '{}' learns from data: add a [data] table", info.name));
  }
  std::unique_ptr<Problem<T>> problem = FactoryFor<T>(info)(options, context);
  options.RejectUnknownKeys();
  return problem;
}

template std::unique_ptr<Problem<float>> MakeProblem(OptionTable&, const ProblemContext&);
template std::unique_ptr<Problem<double>> MakeProblem(OptionTable&, const ProblemContext&);

}  // namespace lemmalab
