#include "problems/rosenbrock.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace lemmalab {

// With [.] the indicator, the gradient and the tridiagonal Hessian are
//   g_i    = [i < d-1] (-4a x_i (x_{i+1} - x_i^2) - 2 (1 - x_i)) + [i > 0] 2a (x_i - x_{i-1}^2),
//   H_ii   = [i < d-1] (12a x_i^2 - 4a x_{i+1} + 2) + [i > 0] 2a,
//   H_i,i+1 = H_i+1,i = -4a x_i.
// On the box |x_j| <= R, |12a x_i^2 - 4a x_{i+1} + 2| <= 12aR^2 + 4aR + 2 (its lowest value,
// 2 - 4aR, is smaller in magnitude), and each off-diagonal entry is at most 4aR in magnitude.
// Gershgorin: every eigenvalue lies within sum_k |H_ik| of H_ii, so ||H|| <= max_i sum_k |H_ik|:
//   row 0:              12aR^2 + 4aR + 2 + 4aR      = 12aR^2 + 8aR + 2
//   rows 1 .. d-2:      12aR^2 + 4aR + 2 + 2a + 8aR = 12aR^2 + 12aR + 2a + 2
//   row d-1:            2a + 4aR
// The middle rows (present when d >= 3) dominate the other two. By the mean value theorem on the
// convex box, this bounds the Lipschitz constant of grad f between any two points of the box.
double RosenbrockSmoothnessBound(std::int64_t d, double a, double radius) {
  LEMMALAB_CHECK(d >= 2, "rosenbrock with dimension {}", d);
  const double r = radius;
  const double first = 12 * a * r * r + 8 * a * r + 2;
  const double last = 2 * a + 4 * a * r;
  const double middle = 12 * a * r * r + 12 * a * r + 2 * a + 2;
  return d == 2 ? std::max(first, last) : std::max({first, middle, last});
}

// Term by term, |g_i| <= [i < d-1] (4aR(R + R^2) + 2(1 + R)) + [i > 0] 2a(R + R^2) on the box,
// and at x = -R (1, ..., 1) every term reaches its bound with the same (negative) sign, so the
// norm of these bounds is the maximum of ||grad f|| on the box, not just a bound.
double RosenbrockGradientBound(std::int64_t d, double a, double radius) {
  LEMMALAB_CHECK(d >= 2, "rosenbrock with dimension {}", d);
  const double r = radius;
  const double forward = 4 * a * r * (r + r * r) + 2 * (1 + r);
  const double backward = 2 * a * (r + r * r);
  const double middle = forward + backward;
  return std::sqrt(forward * forward + static_cast<double>(d - 2) * middle * middle +
                   backward * backward);
}

double RosenbrockStartRadius(std::int64_t d) { return d >= 1 ? 1.2 : 0.0; }

namespace {

// The position the box of L and G is measured in: max_j |x_j|.
constexpr const char* kBoxPosition = "x_max_abs";

template <typename T>
class Rosenbrock final : public Problem<T> {
 public:
  Rosenbrock(const RosenbrockOptions& options, int workers)
      : options_(options), workers_(workers) {}

  std::int64_t dimension() const override { return options_.dimension; }
  int num_workers() const override { return workers_; }

  Vector<T> InitialPoint() const override {
    Vector<T> x(options_.dimension);
    for (std::int64_t j = 0; j < x.size(); ++j) x[j] = static_cast<T>(j % 2 == 0 ? -1.2 : 1.0);
    return x;
  }

  std::vector<std::pair<std::string, double>> Positions(ConstVectorRef<T> x) const override {
    // A NaN coordinate makes the position NaN: it is in no box.
    return {
        {kBoxPosition, static_cast<double>(x.cwiseAbs().template maxCoeff<Eigen::PropagateNaN>())}};
  }

  // g = grad f(x) + xi; returns f(x), without noise.
  double StochasticGradient(int /*worker*/, ConstVectorRef<T> x, PhiloxStream& stream,
                            VectorRef<T> g) const override {
    const double loss = ValueAndGradient(x, g);
    options_.noise.Add(stream, g);
    return loss;
  }

  double Objective(ConstVectorRef<T> x, Vector<T>* gradient) const override {
    Vector<T> g(options_.dimension);
    const double loss = ValueAndGradient(x, g);
    if (gradient != nullptr) *gradient = std::move(g);
    return loss;
  }

  Evaluation Evaluate(ConstVectorRef<T> x) const override {
    Vector<T> gradient(options_.dimension);
    Evaluation e;
    e.loss = ValueAndGradient(x, gradient);
    e.grad_sq_norm = gradient.template cast<double>().squaredNorm();
    return e;
  }

  std::vector<Constant> Constants() const override {
    const std::int64_t d = options_.dimension;
    const double a = options_.a, r = options_.radius;
    const Region box{kBoxPosition, r, fmt::format("the box |x_j| <= {}", r)};
    std::vector<Constant> c;
    c.push_back(
        {"L", RosenbrockSmoothnessBound(d, a, r), Certainty::kBound,
         fmt::format("on the box |x_j| <= {}: Gershgorin bound on the tridiagonal Hessian", r),
         box});
    c.push_back({"f_star", 0.0, Certainty::kExact, "f(1, ..., 1) = 0 and f >= 0"});
    c.push_back(options_.noise.SigmaConstant());
    c.push_back({"sigma_g", 0.0, Certainty::kExact, "every worker has the same f"});
    // Gaussian noise has no finite bound, so G is left out rather than reported as infinite.
    if (options_.noise.bounded()) {
      c.push_back({"G", RosenbrockGradientBound(d, a, r) + options_.noise.sigma, Certainty::kBound,
                   fmt::format("on the box |x_j| <= {}: max ||grad f|| (at x = -{} (1, ..., 1)) "
                               "+ sigma",
                               r, r),
                   box});
    }
    return c;
  }

  std::string Describe() const override {
    return fmt::format("rosenbrock: d = {}, a = {}, {} identical workers, {}", options_.dimension,
                       options_.a, workers_, options_.noise.Describe());
  }

 private:
  // f(x), and grad f(x) into g, computed in double whatever T is.
  double ValueAndGradient(ConstVectorRef<T> x_in, VectorRef<T> g) const {
    const Eigen::VectorXd x = x_in.template cast<double>();
    const double a = options_.a;
    Eigen::VectorXd grad = Eigen::VectorXd::Zero(x.size());
    double value = 0;
    for (Eigen::Index i = 0; i + 1 < x.size(); ++i) {
      const double coupling = x[i + 1] - x[i] * x[i];
      const double offset = 1 - x[i];
      value += a * coupling * coupling + offset * offset;
      grad[i] += -4 * a * x[i] * coupling - 2 * offset;
      grad[i + 1] += 2 * a * coupling;
    }
    g = grad.cast<T>();
    return value;
  }

  RosenbrockOptions options_;
  int workers_;
};

}  // namespace

template <typename T>
std::unique_ptr<Problem<T>> MakeRosenbrock(const RosenbrockOptions& options, int workers) {
  LEMMALAB_CHECK(options.dimension >= 2, "rosenbrock with dimension {}", options.dimension);
  return std::make_unique<Rosenbrock<T>>(options, workers);
}

template std::unique_ptr<Problem<float>> MakeRosenbrock(const RosenbrockOptions&, int);
template std::unique_ptr<Problem<double>> MakeRosenbrock(const RosenbrockOptions&, int);

}  // namespace lemmalab
