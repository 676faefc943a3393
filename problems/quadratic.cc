#include "problems/quadratic.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/random/normal_distribution.hpp>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace lemmalab {

double LogCosh(double y) {
  const double a = std::abs(y);
  return a + std::log1p(std::exp(-2 * a)) - std::log(2.0);
}

double DoubleWellMinimizer(double lambda, double nu) {
  LEMMALAB_CHECK(lambda > 0 && nu > 0, "double well with lambda {} and nu {}", lambda, nu);
  if (lambda >= nu) return 0;
  // h(y) = lambda y - nu tanh(y) is convex on y > 0, negative just right of 0 and positive at
  // nu / lambda (tanh < 1), with its minimum where sech^2(y) = lambda / nu. The positive root lies
  // between that minimum and nu / lambda; Newton from the right end stays in the bracket for a
  // convex increasing h, and a bisection step guards against rounding near the root.
  double lo = std::acosh(std::sqrt(nu / lambda));
  double hi = nu / lambda;
  double y = hi;
  for (int iteration = 0; iteration < 200; ++iteration) {
    const double h = lambda * y - nu * std::tanh(y);
    if (h == 0) return y;
    (h > 0 ? hi : lo) = y;
    const double sech = 1 / std::cosh(y);
    double next = y - h / (lambda - nu * sech * sech);
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    if (next == y || hi - lo <= 4 * std::numeric_limits<double>::epsilon() * hi) break;
    y = next;
  }
  return y;
}

MemoryEstimate QuadraticMemory(const QuadraticOptions& options, int workers, int scalar_bytes) {
  const auto d = static_cast<double>(options.spectrum.dimension);
  const double each = 8.0 + scalar_bytes;  // the model's double and the problem's T
  MemoryEstimate estimate;
  if (options.spectrum.rotate) {
    estimate.Add(
        "the rotation", 2 * d * d * each,
        fmt::format("dimension = {} squared, the rotation and its QR", options.spectrum.dimension));
  }
  // Held whatever the heterogeneity (zero shifts without it).
  estimate.Add("the workers' shifts", d * workers * each,
               fmt::format("dimension = {} x workers = {}", options.spectrum.dimension, workers));
  return estimate;
}

QuadraticModel BuildQuadraticModel(const QuadraticOptions& options, int workers,
                                   std::uint64_t seed) {
  const std::int64_t d = options.spectrum.dimension;
  const double nu = options.nu;
  QuadraticModel m;
  m.options = options;
  m.workers = workers;
  m.lambda = Eigenvalues(options.spectrum);
  LEMMALAB_CHECK(nu == 0 || m.lambda[0] > 0, "nonconvex quadratic needs mu > 0");

  PhiloxStream stream = SyntheticConstructionStream(seed);
  boost::random::normal_distribution<double> normal(0.0, 1.0);
  m.centre.resize(d);
  for (std::int64_t j = 0; j < d; ++j) m.centre[j] = normal(stream);
  if (options.spectrum.rotate) m.q = HaarOrthogonal(d, stream);
  m.delta = HeterogeneityShifts(d, workers, options.heterogeneity, stream);

  // Minimiser in the rotated coordinates y = Q^T (x - c).
  Eigen::VectorXd y_star = Eigen::VectorXd::Zero(d);
  if (nu == 0) {
    // f_0 = -1/2 c^T A c makes f(x) = 1/2 x^T A x - (A c)^T x.
    const Eigen::VectorXd qc =
        m.q.size() == 0 ? m.centre : Eigen::VectorXd(m.q.transpose() * m.centre);
    m.offset = -0.5 * (m.lambda.array() * qc.array().square()).sum();
    m.f_star = m.offset;
    m.l = m.lambda[d - 1];
  } else {
    double f_star = 0;
    for (std::int64_t j = 0; j < d; ++j) {
      y_star[j] = DoubleWellMinimizer(m.lambda[j], nu);
      f_star += 0.5 * m.lambda[j] * y_star[j] * y_star[j] - nu * LogCosh(y_star[j]);
    }
    m.f_star = f_star;
    m.l = std::max(m.lambda[d - 1], nu - m.lambda[0]);
  }
  m.minimizer = m.q.size() == 0 ? Eigen::VectorXd(m.centre + y_star)
                                : Eigen::VectorXd(m.centre + m.q * y_star);
  m.radius = options.radius.value_or(m.minimizer.norm());  // x_0 = 0
  return m;
}

namespace {

// The position G's ball is measured in: ||x - x*||.
constexpr const char* kBallPosition = "x_distance_to_minimizer";

template <typename T>
class RotatedSeparable final : public Problem<T> {
 public:
  explicit RotatedSeparable(const QuadraticModel& model)
      : d_(model.options.spectrum.dimension),
        workers_(model.workers),
        nu_(model.options.nu),
        offset_(model.offset),
        lambda_(model.lambda),
        q_(model.q.template cast<T>()),
        centre_(model.centre.template cast<T>()),
        minimizer_(model.minimizer),
        delta_(model.delta.template cast<T>()),
        noise_(model.options.noise),
        constants_(MakeConstants(model)),
        description_(MakeDescription(model)) {}

  std::int64_t dimension() const override { return d_; }
  int num_workers() const override { return workers_; }
  Vector<T> InitialPoint() const override { return Vector<T>::Zero(d_); }
  std::vector<std::pair<std::string, double>> Positions(ConstVectorRef<T> x) const override {
    return {{kBallPosition, (x.template cast<double>() - minimizer_).norm()}};
  }
  // What the problem holds beside the run's vectors: the rotation and the workers' shifts in T.
  void AddWorkingMemory(int /*local_workers*/, int /*threads*/,
                        MemoryEstimate& estimate) const override {
    const auto t = static_cast<double>(sizeof(T));
    if (q_.size() > 0) {
      estimate.Add("the rotation", t * static_cast<double>(q_.size()),
                   fmt::format("dimension = {} squared x {} bytes", d_, sizeof(T)));
    }
    if (delta_.size() > 0) {
      estimate.Add(
          "the workers' shifts", t * static_cast<double>(delta_.size()),
          fmt::format("dimension = {} x workers = {} x {} bytes", d_, workers_, sizeof(T)));
    }
  }

  // g = grad f_i(x) + xi; returns f_i(x), without noise.
  double StochasticGradient(int worker, ConstVectorRef<T> x, PhiloxStream& stream,
                            VectorRef<T> g) const override {
    const double loss = ValueAndGradient(x, g);
    g -= delta_.col(worker);
    noise_.Add(stream, g);
    return loss - delta_.col(worker).template cast<double>().dot(x.template cast<double>());
  }

  double Objective(ConstVectorRef<T> x, Vector<T>* gradient) const override {
    if (gradient == nullptr) {
      Vector<T> unused(d_);
      return ValueAndGradient(x, unused);
    }
    gradient->resize(d_);
    return ValueAndGradient(x, *gradient);
  }

  Evaluation Evaluate(ConstVectorRef<T> x) const override {
    Vector<T> gradient(d_);
    Evaluation e;
    e.loss = ValueAndGradient(x, gradient);
    e.grad_sq_norm = gradient.template cast<double>().squaredNorm();
    return e;
  }

  std::vector<Constant> Constants() const override { return constants_; }
  std::string Describe() const override { return description_; }

 private:
  // f(x) in double, and grad f(x) into g. The shifts cancel in f, so they do not appear here.
  double ValueAndGradient(ConstVectorRef<T> x, VectorRef<T> g) const {
    Vector<T> y = x - centre_;
    if (q_.size() != 0) y = q_.transpose() * y;
    Vector<T> slope(d_);
    double value = offset_;
    for (std::int64_t j = 0; j < d_; ++j) {
      const double yj = static_cast<double>(y[j]);
      value += 0.5 * lambda_[j] * yj * yj;
      double s = lambda_[j] * yj;
      if (nu_ > 0) {
        value -= nu_ * LogCosh(yj);
        s -= nu_ * std::tanh(yj);
      }
      slope[j] = static_cast<T>(s);
    }
    if (q_.size() != 0) {
      g.noalias() = q_ * slope;
    } else {
      g = slope;
    }
    return value;
  }

  static std::vector<Constant> MakeConstants(const QuadraticModel& m) {
    const bool convex = m.options.nu == 0;
    const double lambda_min = m.lambda[0];
    const double lambda_max = m.lambda[m.lambda.size() - 1];
    std::vector<Constant> c;
    if (convex) {
      c.push_back({"L", m.l, Certainty::kExact, "largest eigenvalue of A"});
      c.push_back({"mu", lambda_min, Certainty::kExact, "smallest eigenvalue of A"});
      c.push_back({"f_star", m.f_star, Certainty::kExact, "-1/2 x*^T A x* at the drawn x*"});
    } else {
      c.push_back({"L", m.l, Certainty::kExact,
                   fmt::format("sup of the Hessian norm, max(lambda_max, nu - lambda_min) = "
                               "max({}, {} - {}), approached as |y| grows or attained at y = 0",
                               lambda_max, m.options.nu, lambda_min)});
      if (m.options.nu <= lambda_min) {
        c.push_back({"mu", lambda_min - m.options.nu, Certainty::kExact,
                     "smallest Hessian eigenvalue lambda_min - nu, attained at y = 0"});
      }
      c.push_back({"f_star", m.f_star, Certainty::kExact,
                   "sum of per-direction minima of lambda/2 y^2 - nu log cosh y (root of "
                   "lambda y = nu tanh y to machine precision; error second order)"});
    }
    c.push_back(m.options.noise.SigmaConstant());
    if (m.options.heterogeneity == 0) {
      c.push_back({"sigma_g", 0.0, Certainty::kExact, "every worker has the same f"});
    } else {
      c.push_back({"sigma_g", m.options.heterogeneity, Certainty::kExact,
                   "shifts delta_i with sum 0 and (1/n) sum ||delta_i||^2 = zeta^2: the same at "
                   "every x"});
    }
    // Gaussian noise has no finite bound, so G is left out rather than reported as infinite.
    if (m.options.noise.bounded()) {
      double max_shift = 0;
      for (Eigen::Index i = 0; i < m.delta.cols(); ++i) {
        max_shift = std::max(max_shift, m.delta.col(i).norm());
      }
      const double g = m.l * m.radius + max_shift + m.options.noise.sigma;
      c.push_back({"G", g, Certainty::kBound,
                   fmt::format("on ||x - x*|| <= {}{}: L R + max_i ||delta_i|| + sigma", m.radius,
                               m.options.radius ? "" : " (= ||x_0 - x*||)"),
                   Region{kBallPosition, m.radius,
                          fmt::format("the ball ||x - x*|| <= {:.6g}", m.radius)}});
    }
    return c;
  }

  static std::string MakeDescription(const QuadraticModel& m) {
    const SpectrumOptions& s = m.options.spectrum;
    std::string kind = "quadratic";
    if (m.options.nu > 0) {
      const auto wells = (m.lambda.array() < m.options.nu).count();
      kind = fmt::format("nonconvex quadratic (nu = {}, {} double-well directions)", m.options.nu,
                         wells);
    }
    const std::string shifts =
        m.options.heterogeneity == 0
            ? std::string("identical workers")
            : fmt::format("heterogeneity {} across {} workers", m.options.heterogeneity, m.workers);
    return fmt::format("{}: d = {}, {} spectrum [{}, {}], {}, {}, {}", kind, s.dimension,
                       SpectrumName(s.kind), s.mu, s.l, s.rotate ? "rotated" : "diagonal", shifts,
                       m.options.noise.Describe());
  }

  std::int64_t d_;
  int workers_;
  double nu_;
  double offset_;
  Eigen::VectorXd lambda_;
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> q_;
  Vector<T> centre_;
  Eigen::VectorXd minimizer_;  // x*, the centre of G's ball
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> delta_;
  GradientNoise noise_;
  std::vector<Constant> constants_;
  std::string description_;
};

}  // namespace

template <typename T>
std::unique_ptr<Problem<T>> MakeQuadratic(const QuadraticModel& model) {
  return std::make_unique<RotatedSeparable<T>>(model);
}

template std::unique_ptr<Problem<float>> MakeQuadratic(const QuadraticModel&);
template std::unique_ptr<Problem<double>> MakeQuadratic(const QuadraticModel&);

}  // namespace lemmalab
