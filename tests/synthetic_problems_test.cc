// Synthetic problems with known constants (quadratic, nonconvex-quadratic, rosenbrock): gradients
// against central finite differences, every reported constant against a check that does not
// trust the implementation (Hessians rebuilt from gradient differences, brute-force 1-D minima,
// noise statistics), determinism, fp32 against fp64, and option errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <Eigen/LU>
#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_real_distribution.hpp>
#include <cmath>
#include <functional>
#include <limits>

#include "problems/problem.h"
#include "problems/quadratic.h"
#include "problems/rosenbrock.h"
#include "problems/synthetic.h"
#include "tests/problem_checks.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using testing::CentralDifferenceGradient;
using testing::DifferenceHessian;
using testing::HessianNorm;

using ::testing::HasSubstr;

// ---------------------------------------------------------------------------------------------
// Helpers

// A [problem] table as engine/spec.cc would build it: the table on line 1 of "s.toml", its name on
// line 2, and each further value on the next line.
class Spec {
 public:
  explicit Spec(const std::string& name) : table_("[problem]", "s.toml:1:1") { Set("name", name); }
  Spec& Set(const std::string& key, const std::string& value) { return Put(key, value); }
  Spec& Set(const std::string& key, const char* value) { return Put(key, std::string(value)); }
  Spec& Set(const std::string& key, double value) { return Put(key, value); }
  Spec& Set(const std::string& key, std::int64_t value) { return Put(key, value); }
  Spec& Set(const std::string& key, bool value) { return Put(key, value); }

  template <typename T = double>
  std::unique_ptr<Problem<T>> Make(int workers, std::uint64_t seed = 1) {
    return MakeProblem<T>(table_, {workers, seed, nullptr});
  }
  std::string ErrorOf(int workers) {
    return testing::UserErrorOf([&] { Make(workers); });
  }

 private:
  template <typename V>
  Spec& Put(const std::string& key, V value) {
    table_.Set(key, {std::move(value), "s.toml:" + std::to_string(++line_) + ":1"});
    return *this;
  }
  OptionTable table_;
  int line_ = 1;
};

Eigen::VectorXd Normal(std::int64_t d, PhiloxStream& stream) {
  boost::random::normal_distribution<double> normal(0.0, 1.0);
  Eigen::VectorXd x(d);
  for (std::int64_t j = 0; j < d; ++j) x[j] = normal(stream);
  return x;
}

Eigen::VectorXd Uniform(std::int64_t d, double radius, PhiloxStream& stream) {
  boost::random::uniform_real_distribution<double> uniform(-radius, radius);
  Eigen::VectorXd x(d);
  for (std::int64_t j = 0; j < d; ++j) x[j] = uniform(stream);
  return x;
}

// A test-side stream, apart from the problems' own.
PhiloxStream TestStream(std::uint64_t seed) {
  return PhiloxStream({seed, Purpose::kMinibatch, 12345, 0});
}

// A worker's minibatch stream of one step, as the cluster hands it to the problem.
PhiloxStream StepStream(std::uint64_t seed, int worker, std::uint64_t step) {
  return PhiloxStream({seed, Purpose::kMinibatch, static_cast<std::uint32_t>(worker), step});
}

double ConstantValue(const Problem<double>& problem, std::string_view name) {
  return testing::ConstantValue(problem.Constants(), name);
}

bool HasConstant(const Problem<double>& problem, std::string_view name) {
  for (const Constant& c : problem.Constants()) {
    if (c.name == name) return true;
  }
  return false;
}

Eigen::VectorXd Gradient(const Problem<double>& problem, const Eigen::VectorXd& x) {
  Eigen::VectorXd g;
  problem.Objective(x, &g);
  return g;
}

Eigen::VectorXd HessianEigenvalues(const Problem<double>& problem, const Eigen::VectorXd& x) {
  return Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(DifferenceHessian(problem, x),
                                                        Eigen::EigenvaluesOnly)
      .eigenvalues();
}

// The checks shared by the tests and their negative control.
bool SameValue(double a, double b, double relative = 1e-9) {
  return std::abs(a - b) <= relative * std::max({1.0, std::abs(a), std::abs(b)});
}
bool NeverExceeds(double observed, double bound) { return observed <= bound * (1 + 1e-6); }

QuadraticOptions SmallQuadratic(std::int64_t d, double zeta = 0.0) {
  QuadraticOptions o;
  o.spectrum.dimension = d;
  o.spectrum.l = 2.0;
  o.spectrum.mu = 0.1;
  o.heterogeneity = zeta;
  return o;
}

// ---------------------------------------------------------------------------------------------
// Gradients, for every problem

struct Case {
  std::string label;
  std::function<std::unique_ptr<Problem<double>>()> make;
  double scale;  // of the random points around 0
};

std::vector<Case> AllProblems() {
  return {
      {"quadratic",
       [] {
         return Spec("quadratic")
             .Set("dimension", std::int64_t{9})
             .Set("heterogeneity", 0.4)
             .Make(3);
       },
       2.0},
      {"quadratic diagonal geometric",
       [] {
         return Spec("quadratic")
             .Set("dimension", std::int64_t{7})
             .Set("spectrum", "geometric")
             .Set("rotate", false)
             .Set("heterogeneity", 1.0)
             .Make(4);
       },
       2.0},
      {"nonconvex-quadratic",
       [] {
         return Spec("nonconvex-quadratic")
             .Set("dimension", std::int64_t{9})
             .Set("mu", 0.1)
             .Set("heterogeneity", 0.3)
             .Make(3);
       },
       3.0},
      {"rosenbrock", [] { return Spec("rosenbrock").Set("dimension", std::int64_t{7}).Make(2); },
       1.5},
  };
}

TEST(SyntheticProblems, GradientsMatchCentralFiniteDifferences) {
  for (const Case& c : AllProblems()) {
    SCOPED_TRACE(c.label);
    const auto problem = c.make();
    const std::int64_t d = problem->dimension();
    PhiloxStream points = TestStream(1);
    for (int point = 0; point < 3; ++point) {
      const Eigen::VectorXd x = c.scale * Normal(d, points);
      const Eigen::VectorXd analytic = Gradient(*problem, x);
      const Eigen::VectorXd numeric = CentralDifferenceGradient(
          [&](const Eigen::VectorXd& z) { return problem->Objective(z, nullptr); }, x);
      EXPECT_LT((analytic - numeric).norm(), 1e-6 * (1 + analytic.norm()))
          << "analytic " << analytic.transpose() << "\nnumeric  " << numeric.transpose();

      // sigma = 0: worker i's stochastic gradient is the exact gradient of the loss it returns,
      // and the workers' gradients average to grad f.
      Eigen::VectorXd mean = Eigen::VectorXd::Zero(d);
      for (int i = 0; i < problem->num_workers(); ++i) {
        const auto worker_loss = [&](const Eigen::VectorXd& z) {
          Eigen::VectorXd unused(d);
          PhiloxStream stream = StepStream(1, i, 0);
          return problem->StochasticGradient(i, z, stream, unused);
        };
        Eigen::VectorXd g(d);
        PhiloxStream stream = StepStream(1, i, 0);
        problem->StochasticGradient(i, x, stream, g);
        const Eigen::VectorXd worker_numeric = CentralDifferenceGradient(worker_loss, x);
        EXPECT_LT((g - worker_numeric).norm(), 1e-6 * (1 + g.norm())) << "worker " << i;
        mean += g / static_cast<double>(problem->num_workers());
      }
      EXPECT_LT((mean - analytic).norm(), 1e-12 * (1 + analytic.norm()));
    }
  }
}

TEST(SyntheticProblems, RegistryBuildsTheDocumentedModel) {
  // The spec path with defaults (nu = L/2) builds the same function as the options struct.
  QuadraticOptions o = SmallQuadratic(6, 0.2);
  o.nu = o.spectrum.l / 2;
  const auto direct = MakeQuadratic<double>(BuildQuadraticModel(o, 3, 5));
  const auto from_spec = Spec("nonconvex-quadratic")
                             .Set("dimension", std::int64_t{6})
                             .Set("L", 2.0)
                             .Set("mu", 0.1)
                             .Set("heterogeneity", 0.2)
                             .Make(3, 5);
  PhiloxStream points = TestStream(2);
  const Eigen::VectorXd x = Normal(6, points);
  EXPECT_EQ(direct->Objective(x, nullptr), from_spec->Objective(x, nullptr));
  EXPECT_EQ(Gradient(*direct, x), Gradient(*from_spec, x));
  EXPECT_EQ(from_spec->InitialPoint(), Eigen::VectorXd::Zero(6));
  EXPECT_THAT(from_spec->Describe(), HasSubstr("nonconvex quadratic (nu = 1, "));
}

// ---------------------------------------------------------------------------------------------
// quadratic

TEST(Quadratic, ConstantsMatchTheHessianAndTheMinimiser) {
  for (const bool rotate : {true, false}) {
    for (const SpectrumKind kind : {SpectrumKind::kLinear, SpectrumKind::kGeometric}) {
      SCOPED_TRACE(::testing::Message() << "rotate " << rotate << " " << SpectrumName(kind));
      QuadraticOptions o = SmallQuadratic(10, 0.5);
      o.spectrum.rotate = rotate;
      o.spectrum.kind = kind;
      const QuadraticModel model = BuildQuadraticModel(o, 4, 3);
      const auto problem = MakeQuadratic<double>(model);
      PhiloxStream points = TestStream(3);

      // The gradient is affine, so differences rebuild A exactly up to rounding.
      const Eigen::MatrixXd a = DifferenceHessian(*problem, Normal(10, points), 1.0);
      const Eigen::VectorXd eigenvalues =
          Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(a, Eigen::EigenvaluesOnly).eigenvalues();
      EXPECT_TRUE(SameValue(eigenvalues[9], ConstantValue(*problem, "L")));
      EXPECT_TRUE(SameValue(eigenvalues[0], ConstantValue(*problem, "mu")));
      EXPECT_EQ(ConstantValue(*problem, "L"), 2.0);
      EXPECT_EQ(ConstantValue(*problem, "mu"), 0.1);

      // f(x) = 1/2 x^T A x - b^T x with b = -grad f(0); x* = A^{-1} b is the drawn minimiser.
      const Eigen::VectorXd b = -Gradient(*problem, Eigen::VectorXd::Zero(10));
      EXPECT_NEAR(problem->Objective(Eigen::VectorXd::Zero(10), nullptr), 0.0, 1e-12);
      for (int point = 0; point < 3; ++point) {
        const Eigen::VectorXd x = 3 * Normal(10, points);
        EXPECT_TRUE(SameValue(problem->Objective(x, nullptr), 0.5 * x.dot(a * x) - b.dot(x)));
      }
      const Eigen::VectorXd x_star = a.partialPivLu().solve(b);
      EXPECT_LT((x_star - model.minimizer).norm(), 1e-9 * x_star.norm());
      const double f_star = ConstantValue(*problem, "f_star");
      EXPECT_TRUE(SameValue(f_star, -0.5 * x_star.dot(a * x_star)));
      EXPECT_EQ(problem->Objective(model.minimizer, nullptr), f_star);
      EXPECT_LT(Gradient(*problem, model.minimizer).norm(), 1e-13);
      for (int point = 0; point < 10; ++point) {
        EXPECT_GE(problem->Objective(model.minimizer + Normal(10, points), nullptr), f_star);
      }
    }
  }
}

TEST(Quadratic, GBoundsEveryStochasticGradientOnTheBall) {
  QuadraticOptions o = SmallQuadratic(8, 0.6);
  o.noise = {GradientNoise::Kind::kSphere, 0.3};
  const QuadraticModel model = BuildQuadraticModel(o, 3, 4);
  const auto problem = MakeQuadratic<double>(model);
  const double g_bound = ConstantValue(*problem, "G");
  EXPECT_EQ(model.radius, model.minimizer.norm());  // default R = ||x_0 - x*||, x_0 = 0
  PhiloxStream points = TestStream(4);
  double largest = 0;
  for (int point = 0; point < 200; ++point) {
    const Eigen::VectorXd z = Normal(8, points);
    const Eigen::VectorXd x = model.minimizer + model.radius * z / z.norm();  // on the sphere
    for (int i = 0; i < 3; ++i) {
      Eigen::VectorXd g(8);
      PhiloxStream stream = StepStream(4, i, static_cast<std::uint64_t>(point));
      problem->StochasticGradient(i, x, stream, g);
      largest = std::max(largest, g.norm());
    }
  }
  EXPECT_TRUE(NeverExceeds(largest, g_bound)) << largest << " > " << g_bound;
  EXPECT_GT(largest, 0.5 * g_bound);  // the bound is not vacuous

  // Gaussian noise has no finite G, so none is reported.
  o.noise = {GradientNoise::Kind::kGaussian, 0.3};
  EXPECT_FALSE(HasConstant(*MakeQuadratic<double>(BuildQuadraticModel(o, 3, 4)), "G"));
  o.noise.sigma = 0;
  EXPECT_TRUE(HasConstant(*MakeQuadratic<double>(BuildQuadraticModel(o, 3, 4)), "G"));
}

TEST(Quadratic, GCountsTheHeterogeneityShifts) {
  // On a tiny ball around x*, worker i's exact gradient is -delta_i: the bound must include
  // max_i ||delta_i||, and nearly nothing else.
  QuadraticOptions o = SmallQuadratic(8, 2.0);
  o.radius = 1e-9;
  const QuadraticModel model = BuildQuadraticModel(o, 4, 6);
  const auto problem = MakeQuadratic<double>(model);
  double largest = 0;
  for (int i = 0; i < 4; ++i) {
    Eigen::VectorXd g(8);
    PhiloxStream stream = StepStream(6, i, 1);
    problem->StochasticGradient(i, model.minimizer, stream, g);
    largest = std::max(largest, g.norm());
  }
  const double g_bound = ConstantValue(*problem, "G");
  EXPECT_TRUE(NeverExceeds(largest, g_bound)) << largest << " > " << g_bound;
  EXPECT_GT(largest, 0.999 * g_bound);
}

// ---------------------------------------------------------------------------------------------
// nonconvex-quadratic

double BruteForceDoubleWellMinimum(double lambda, double nu) {
  // The profile is even in y; scan [0, 2 nu / lambda] (the minimiser is below nu / lambda), then
  // refine around the best grid point by golden-section search.
  const auto phi = [&](double y) { return 0.5 * lambda * y * y - nu * std::log(std::cosh(y)); };
  const double hi = 2 * std::max(1.0, nu / lambda);
  const int n = 20000;
  int best = 0;
  for (int k = 1; k <= n; ++k) {
    if (phi(hi * k / n) < phi(hi * best / n)) best = k;
  }
  double a = hi * std::max(best - 1, 0) / n, b = hi * std::min(best + 1, n) / n;
  const double ratio = (std::sqrt(5.0) - 1) / 2;
  for (int iteration = 0; iteration < 200; ++iteration) {
    const double left = b - ratio * (b - a), right = a + ratio * (b - a);
    if (phi(left) < phi(right)) {
      b = right;
    } else {
      a = left;
    }
  }
  return phi(0.5 * (a + b));
}

// What a quadratic holds (its rotation and the workers' shifts, in T) counts in a run's memory
// estimate, and what building it takes is known before it is built, heterogeneity or not (the
// shifts are held as zeros without it).
TEST(Quadratic, ItsMemoryIsKnownBeforeAndCountedAfterItIsBuilt) {
  for (const double zeta : {0.0, 0.5}) {
    QuadraticOptions o;
    o.spectrum.dimension = 30;
    o.heterogeneity = zeta;
    const MemoryEstimate building = QuadraticMemory(o, 3, sizeof(float));
    EXPECT_EQ(building.total(), 2 * 30 * 30 * 12 + 30 * 3 * 12) << zeta;
    const auto problem = MakeQuadratic<float>(BuildQuadraticModel(o, 3, 1));
    MemoryEstimate held;
    problem->AddWorkingMemory(3, 1, held);
    ASSERT_EQ(held.parts.size(), 2u);
    EXPECT_EQ(held.parts[0].what, "the rotation");
    EXPECT_EQ(held.parts[0].bytes, 30 * 30 * 4);
    EXPECT_EQ(held.parts[1].what, "the workers' shifts");
    EXPECT_EQ(held.parts[1].bytes, 30 * 3 * 4);
  }
  QuadraticOptions diagonal;
  diagonal.spectrum.dimension = 30;
  diagonal.spectrum.rotate = false;
  MemoryEstimate held;
  MakeQuadratic<double>(BuildQuadraticModel(diagonal, 2, 1))->AddWorkingMemory(2, 1, held);
  ASSERT_EQ(held.parts.size(), 1u);
  EXPECT_EQ(held.parts[0].bytes, 30 * 2 * 8);
}

TEST(NonconvexQuadratic, FStarIsTheSumOfBruteForceMinima) {
  for (const double nu : {0.3, 1.0, 5.0}) {
    SCOPED_TRACE(::testing::Message() << "nu " << nu);
    QuadraticOptions o = SmallQuadratic(8, 0.3);
    o.nu = nu;
    const QuadraticModel model = BuildQuadraticModel(o, 3, 6);
    const auto problem = MakeQuadratic<double>(model);
    double brute_force = 0;
    for (Eigen::Index j = 0; j < model.lambda.size(); ++j) {
      brute_force += BruteForceDoubleWellMinimum(model.lambda[j], nu);
    }
    const double f_star = ConstantValue(*problem, "f_star");
    EXPECT_NEAR(f_star, brute_force, 1e-10 * (1 + std::abs(f_star)));
    EXPECT_NEAR(problem->Objective(model.minimizer, nullptr), f_star,
                1e-13 * (1 + std::abs(f_star)));
    EXPECT_LT(Gradient(*problem, model.minimizer).norm(), 1e-12);

    PhiloxStream points = TestStream(6);
    for (const double scale : {0.1, 1.0, 5.0, 30.0}) {
      for (int point = 0; point < 50; ++point) {
        const Eigen::VectorXd x = model.centre + scale * Normal(8, points);
        EXPECT_GE(problem->Objective(x, nullptr), f_star);
      }
    }
  }
}

TEST(NonconvexQuadratic, DoubleWellMinimizerSolvesItsEquation) {
  for (const double lambda : {1e-8, 1e-3, 0.1, 0.999, 1.0, 3.0}) {
    const double y = DoubleWellMinimizer(lambda, 1.0);
    if (lambda >= 1.0) {
      EXPECT_EQ(y, 0.0);
    } else {
      EXPECT_GT(y, 0.0);
      EXPECT_NEAR(lambda * y, std::tanh(y), 4 * std::numeric_limits<double>::epsilon());
    }
  }
  EXPECT_NEAR(LogCosh(800.0), 800.0 - std::log(2.0), 1e-12);
  EXPECT_NEAR(LogCosh(-0.3), std::log(std::cosh(0.3)), 1e-16);
}

// The largest Hessian norm over points c + scale z, for each scale.
double LargestHessianNorm(const Problem<double>& problem, const Eigen::VectorXd& centre,
                          std::initializer_list<double> scales, std::uint64_t seed) {
  PhiloxStream points = TestStream(seed);
  double largest = 0;
  for (const double scale : scales) {
    for (int point = 0; point < 12; ++point) {
      const Eigen::VectorXd x = centre + scale * Normal(centre.size(), points);
      largest = std::max(largest, HessianNorm(problem, x));
    }
  }
  return largest;
}

TEST(NonconvexQuadratic, SmoothnessConstantIsTheSupremumOfTheHessianNorm) {
  // nu = L/2 (the default): L = lambda_max, approached far from c. nu = 2L: L = nu - lambda_min,
  // attained at c.
  for (const double nu_over_l : {0.5, 2.0}) {
    SCOPED_TRACE(::testing::Message() << "nu / L " << nu_over_l);
    QuadraticOptions o = SmallQuadratic(8);
    o.nu = nu_over_l * o.spectrum.l;
    const QuadraticModel model = BuildQuadraticModel(o, 1, 7);
    const auto problem = MakeQuadratic<double>(model);
    const double l = ConstantValue(*problem, "L");
    EXPECT_EQ(l, std::max(o.spectrum.l, o.nu - o.spectrum.mu));

    const Eigen::VectorXd at_centre = HessianEigenvalues(*problem, model.centre);
    EXPECT_LT(at_centre[0], 0.0) << "the Hessian at c is indefinite";
    EXPECT_NEAR(at_centre[0], o.spectrum.mu - o.nu, 1e-6);

    const double largest = LargestHessianNorm(*problem, model.centre, {0.01, 1.0, 10.0}, 7);
    EXPECT_TRUE(NeverExceeds(largest, l)) << largest << " > " << l;
    EXPECT_GT(largest, 0.99 * l);
  }
}

TEST(NonconvexQuadratic, ConvexWhenNuIsBelowMuWithMuShifted) {
  // nu < lambda_min: every direction stays convex, and the smallest Hessian eigenvalue,
  // lambda_min - nu sech^2(0), is reached at the centre.
  QuadraticOptions o = SmallQuadratic(6);
  o.nu = 0.05;
  const QuadraticModel model = BuildQuadraticModel(o, 1, 8);
  const auto problem = MakeQuadratic<double>(model);
  const double mu = ConstantValue(*problem, "mu");
  EXPECT_NEAR(mu, 0.1 - 0.05, 1e-15);
  const Eigen::VectorXd at_centre =
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(DifferenceHessian(*problem, model.centre))
          .eigenvalues();
  EXPECT_NEAR(at_centre.minCoeff(), mu, 1e-6);
  o.nu = 0.5;  // now some directions are double wells: no strong convexity to report
  EXPECT_FALSE(HasConstant(*MakeQuadratic<double>(BuildQuadraticModel(o, 1, 8)), "mu"));
}

TEST(SyntheticProblems, NegativeControlAPlantedWrongLIsCaught) {
  // The same checks with L/2 planted in place of L must fail.
  QuadraticOptions o = SmallQuadratic(8);
  const auto quadratic = MakeQuadratic<double>(BuildQuadraticModel(o, 1, 8));
  const double wrong = ConstantValue(*quadratic, "L") / 2;
  PhiloxStream points = TestStream(8);
  const Eigen::VectorXd eigenvalues = HessianEigenvalues(*quadratic, Normal(8, points));
  EXPECT_FALSE(SameValue(eigenvalues[7], wrong));

  o.nu = 2 * o.spectrum.l;
  const QuadraticModel model = BuildQuadraticModel(o, 1, 8);
  const auto nonconvex = MakeQuadratic<double>(model);
  const double largest = LargestHessianNorm(*nonconvex, model.centre, {0.01, 1.0, 10.0}, 8);
  EXPECT_FALSE(NeverExceeds(largest, ConstantValue(*nonconvex, "L") / 2));
}

// ---------------------------------------------------------------------------------------------
// rosenbrock

TEST(Rosenbrock, KnownMinimumAndClassicStart) {
  const auto problem = Spec("rosenbrock").Set("dimension", std::int64_t{5}).Make(2);
  EXPECT_EQ(problem->InitialPoint(), (Eigen::VectorXd(5) << -1.2, 1, -1.2, 1, -1.2).finished());
  const Eigen::VectorXd ones = Eigen::VectorXd::Ones(5);
  EXPECT_EQ(problem->Objective(ones, nullptr), 0.0);
  EXPECT_EQ(Gradient(*problem, ones).norm(), 0.0);
  EXPECT_EQ(ConstantValue(*problem, "f_star"), 0.0);
  // The classic 2-d value at (-1.2, 1): 100 (1 - 1.44)^2 + 2.2^2 = 24.2.
  const auto two = Spec("rosenbrock").Set("dimension", std::int64_t{2}).Make(1);
  EXPECT_NEAR(two->Objective(two->InitialPoint(), nullptr), 24.2, 1e-12);
}

TEST(Rosenbrock, LAndGHoldOnTheBox) {
  for (const std::int64_t d : {2, 3, 6}) {
    SCOPED_TRACE(::testing::Message() << "d " << d);
    const double radius = 1.5;
    const double sigma = 0.2;
    const auto problem = Spec("rosenbrock")
                             .Set("dimension", d)
                             .Set("a", 10.0)
                             .Set("radius", radius)
                             .Set("noise", "sphere")
                             .Set("sigma", sigma)
                             .Make(2);
    const double l = ConstantValue(*problem, "L");
    const double g_bound = ConstantValue(*problem, "G");
    PhiloxStream points = TestStream(9);
    double largest_hessian = 0, largest_gradient = 0;
    for (int point = 0; point < 60; ++point) {
      // Corners and faces of the box as well as its inside.
      Eigen::VectorXd x = Uniform(d, radius, points);
      if (point % 3 == 0) x = radius * x.cwiseSign();
      largest_hessian = std::max(largest_hessian, HessianNorm(*problem, x));
      Eigen::VectorXd g(d);
      PhiloxStream stream = StepStream(9, 0, static_cast<std::uint64_t>(point));
      problem->StochasticGradient(0, x, stream, g);
      largest_gradient = std::max(largest_gradient, g.norm());
    }
    EXPECT_TRUE(NeverExceeds(largest_hessian, l)) << largest_hessian << " > " << l;
    EXPECT_TRUE(NeverExceeds(largest_gradient, g_bound)) << largest_gradient << " > " << g_bound;
    // G without the noise is the largest gradient norm on the box, reached at -R (1, ..., 1).
    const Eigen::VectorXd corner = -radius * Eigen::VectorXd::Ones(d);
    EXPECT_NEAR(Gradient(*problem, corner).norm(), g_bound - sigma, 1e-12 * g_bound);
  }
}

// ---------------------------------------------------------------------------------------------
// Noise and heterogeneity

// Each problem with a point where its exact gradient is exactly 0, so g is the noise itself.
struct StationaryCase {
  std::string label;
  std::function<std::unique_ptr<Problem<double>>(const std::string& noise, double sigma)> make;
  Eigen::VectorXd point;
};

std::vector<StationaryCase> StationaryCases(std::int64_t d) {
  QuadraticOptions convex = SmallQuadratic(d);
  QuadraticOptions nonconvex = SmallQuadratic(d);
  nonconvex.nu = 1.0;
  const QuadraticModel convex_model = BuildQuadraticModel(convex, 2, 10);
  const QuadraticModel nonconvex_model = BuildQuadraticModel(nonconvex, 2, 10);
  const auto kind = [](const std::string& noise) {
    return noise == "sphere" ? GradientNoise::Kind::kSphere : GradientNoise::Kind::kGaussian;
  };
  return {
      {"quadratic",
       [=](const std::string& noise, double sigma) {
         QuadraticOptions o = convex;
         o.noise = {kind(noise), sigma};
         return MakeQuadratic<double>(BuildQuadraticModel(o, 2, 10));
       },
       convex_model.minimizer},
      {"nonconvex-quadratic",
       [=](const std::string& noise, double sigma) {
         QuadraticOptions o = nonconvex;
         o.noise = {kind(noise), sigma};
         return MakeQuadratic<double>(BuildQuadraticModel(o, 2, 10));
       },
       nonconvex_model.centre},
      {"rosenbrock",
       [=](const std::string& noise, double sigma) {
         return Spec("rosenbrock")
             .Set("dimension", d)
             .Set("noise", noise)
             .Set("sigma", sigma)
             .Make(2);
       },
       Eigen::VectorXd::Ones(d)},
  };
}

TEST(SyntheticProblems, SphereNoiseHasNormExactlySigma) {
  const double sigma = 0.3;
  for (const StationaryCase& c : StationaryCases(16)) {
    SCOPED_TRACE(c.label);
    const auto problem = c.make("sphere", sigma);
    EXPECT_EQ(ConstantValue(*problem, "sigma"), sigma);
    double worst = 0;
    for (std::uint64_t step = 0; step < 500; ++step) {
      Eigen::VectorXd g(16);
      PhiloxStream stream = StepStream(11, 1, step);
      problem->StochasticGradient(1, c.point, stream, g);
      worst = std::max(worst, std::abs(g.norm() - sigma));
    }
    EXPECT_LE(worst, 8 * std::numeric_limits<double>::epsilon() * sigma);
  }
}

TEST(SyntheticProblems, GaussianNoiseHasMeanSquaredNormSigmaSquared) {
  // ||xi||^2 = sigma^2/d chi^2_d has variance 2 sigma^4 / d, so the mean of N draws has standard
  // deviation sigma^2 sqrt(2 / (d N)) = 0.5% of sigma^2 for d = 20, N = 4000; we allow 4 of
  // them (2%). The mean of xi has E||mean||^2 = sigma^2 / N; we allow 4 times that.
  const std::int64_t d = 20;
  const int draws = 4000;
  const double sigma = 0.7;
  for (const StationaryCase& c : StationaryCases(d)) {
    SCOPED_TRACE(c.label);
    const auto problem = c.make("gaussian", sigma);
    EXPECT_EQ(ConstantValue(*problem, "sigma"), sigma);
    double sum_sq = 0;
    Eigen::VectorXd sum = Eigen::VectorXd::Zero(d);
    for (int step = 0; step < draws; ++step) {
      Eigen::VectorXd g(d);
      PhiloxStream stream = StepStream(12, 0, static_cast<std::uint64_t>(step));
      problem->StochasticGradient(0, c.point, stream, g);
      sum_sq += g.squaredNorm();
      sum += g;
    }
    EXPECT_NEAR(sum_sq / draws, sigma * sigma, 4 * sigma * sigma * std::sqrt(2.0 / (d * draws)));
    EXPECT_LT((sum / draws).squaredNorm(), 4 * sigma * sigma / draws);
  }
}

TEST(SyntheticProblems, HeterogeneityIsExactlyZetaEverywhere) {
  const double zeta = 0.7;
  const int n = 5;
  for (const double nu : {0.0, 1.0}) {
    QuadraticOptions o = SmallQuadratic(9, zeta);
    o.nu = nu;
    const auto problem = MakeQuadratic<double>(BuildQuadraticModel(o, n, 13));
    EXPECT_EQ(ConstantValue(*problem, "sigma_g"), zeta);
    PhiloxStream points = TestStream(13);
    for (int point = 0; point < 5; ++point) {
      const Eigen::VectorXd x = 3 * Normal(9, points);
      const Eigen::VectorXd full = Gradient(*problem, x);
      double spread = 0;
      for (int i = 0; i < n; ++i) {
        Eigen::VectorXd g(9);
        PhiloxStream stream = StepStream(13, i, 0);
        problem->StochasticGradient(i, x, stream, g);
        spread += (g - full).squaredNorm() / n;
      }
      EXPECT_NEAR(spread, zeta * zeta, 1e-13);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Determinism and precision

Spec NoisySpec(const std::string& name) {
  Spec spec(name);
  spec.Set("dimension", std::int64_t{12}).Set("noise", "gaussian").Set("sigma", 0.5);
  if (name != "rosenbrock") spec.Set("heterogeneity", 0.5).Set("mu", 0.1);
  return spec;
}

TEST(SyntheticProblems, SameSeedSameProblemAndNoise) {
  for (const std::string name : {"quadratic", "nonconvex-quadratic", "rosenbrock"}) {
    SCOPED_TRACE(name);
    const auto a = NoisySpec(name).Make(3, 21);
    const auto b = NoisySpec(name).Make(3, 21);
    const auto other = NoisySpec(name).Make(3, 22);
    PhiloxStream points = TestStream(21);
    const Eigen::VectorXd x = Normal(12, points);
    EXPECT_EQ(a->Objective(x, nullptr), b->Objective(x, nullptr));
    Eigen::VectorXd ga(12), gb(12);
    PhiloxStream sa = StepStream(21, 2, 5), sb = StepStream(21, 2, 5);
    EXPECT_EQ(a->StochasticGradient(2, x, sa, ga), b->StochasticGradient(2, x, sb, gb));
    EXPECT_EQ(ga, gb);
    PhiloxStream next = StepStream(21, 2, 6);
    b->StochasticGradient(2, x, next, gb);
    EXPECT_NE(ga, gb) << "a new step draws new noise";
    if (name != "rosenbrock") {  // rosenbrock draws nothing at construction
      EXPECT_NE(a->Objective(x, nullptr), other->Objective(x, nullptr));
    }
  }
}

TEST(SyntheticProblems, Fp32AgreesWithFp64) {
  for (const std::string name : {"quadratic", "nonconvex-quadratic", "rosenbrock"}) {
    SCOPED_TRACE(name);
    const auto p64 = NoisySpec(name).Make<double>(3, 31);
    const auto p32 = NoisySpec(name).Make<float>(3, 31);
    PhiloxStream points = TestStream(31);
    const Eigen::VectorXd x = Normal(12, points).cast<float>().cast<double>();
    Eigen::VectorXd g64;
    Vector<float> g32;
    const double f64 = p64->Objective(x, &g64);
    EXPECT_NEAR(p32->Objective(x.cast<float>(), &g32), f64, 1e-5 * (1 + std::abs(f64)));
    EXPECT_LT((g32.cast<double>() - g64).norm(), 1e-5 * (1 + g64.norm()));
    // Noise is drawn in double, so noisy gradients agree too.
    Eigen::VectorXd n64(12);
    Vector<float> n32(12);
    PhiloxStream s64 = StepStream(31, 1, 3), s32 = StepStream(31, 1, 3);
    p64->StochasticGradient(1, x, s64, n64);
    p32->StochasticGradient(1, x.cast<float>(), s32, n32);
    EXPECT_LT((n32.cast<double>() - n64).norm(), 1e-5 * (1 + n64.norm()));
  }
}

// ---------------------------------------------------------------------------------------------
// Option errors

TEST(SyntheticProblems, OptionErrorsNameTheRule) {
  EXPECT_THAT(Spec("quadratic").Set("spectrum", "geometric").Set("mu", 0.0).ErrorOf(2),
              HasSubstr("s.toml:4:1: problem 'quadratic': spectrum = 'geometric' needs mu > 0"));
  EXPECT_THAT(Spec("quadratic").Set("L", 1.0).Set("mu", 2.0).ErrorOf(2),
              HasSubstr("s.toml:4:1: problem 'quadratic': mu must be <= L = 1, got 2"));
  EXPECT_THAT(Spec("nonconvex-quadratic").Set("heterogeneity", 0.5).ErrorOf(1),
              HasSubstr("s.toml:3:1: problem 'nonconvex-quadratic': heterogeneity = 0.5 needs at "
                        "least 2 workers"));
  EXPECT_THAT(Spec("quadratic").Set("dimension", std::int64_t{5000}).ErrorOf(1),
              HasSubstr("s.toml:3:1: problem 'quadratic': rotate = true needs a dense 5000 x 5000 "
                        "rotation"));
  EXPECT_THAT(Spec("quadratic").Set("dimension", std::int64_t{5000}).Set("rotate", true).ErrorOf(1),
              HasSubstr("s.toml:4:1: problem 'quadratic': rotate = true"));
  EXPECT_THAT(Spec("rosenbrock").Set("dimension", std::int64_t{1}).ErrorOf(1),
              HasSubstr("s.toml:3:1: problem 'rosenbrock': rosenbrock needs dimension >= 2"));
  EXPECT_THAT(Spec("nonconvex-quadratic").Set("mu", 0.0).ErrorOf(1),
              HasSubstr("nonconvex-quadratic needs mu > 0"));
  EXPECT_THAT(Spec("quadratic").Set("noise", "uniform").ErrorOf(1),
              HasSubstr("noise must be one of"));
  EXPECT_THAT(Spec("quadratic").Set("sigma", -1.0).ErrorOf(1), HasSubstr("sigma must be >= 0"));
  EXPECT_THAT(Spec("rosenbrock").Set("heterogeneity", 0.1).ErrorOf(2), HasSubstr("heterogeneity"));
  // Diagonal problems go far beyond the rotation limit.
  EXPECT_EQ(Spec("quadratic")
                .Set("dimension", std::int64_t{5000})
                .Set("rotate", false)
                .Make(1)
                ->dimension(),
            5000);
}

}  // namespace
}  // namespace lemmalab
