#include "problems/synthetic.h"

#include <fmt/format.h>

#include <Eigen/QR>
#include <array>
#include <boost/random/normal_distribution.hpp>
#include <cmath>

#include "core/error.h"

namespace lemmalab {

PhiloxStream SyntheticConstructionStream(std::uint64_t seed) {
  return PhiloxStream({seed, Purpose::kDataSynthesis, kGlobalStream, 0});
}

template <typename T>
void GradientNoise::Add(PhiloxStream& stream, VectorRef<T> g) const {
  if (sigma == 0) return;
  boost::random::normal_distribution<double> normal(0.0, 1.0);
  Eigen::VectorXd xi(g.size());
  for (Eigen::Index j = 0; j < xi.size(); ++j) xi[j] = normal(stream);
  if (kind == Kind::kGaussian) {
    xi *= sigma / std::sqrt(static_cast<double>(xi.size()));
  } else {
    // A standard normal vector has a uniformly distributed direction; it is zero with
    // probability 0, but a draw of exactly 0.0 in d = 1 is possible, so draw again then.
    while (xi.squaredNorm() == 0) {
      for (Eigen::Index j = 0; j < xi.size(); ++j) xi[j] = normal(stream);
    }
    xi *= sigma / xi.norm();
  }
  g += xi.cast<T>();
}

template void GradientNoise::Add<float>(PhiloxStream&, VectorRef<float>) const;
template void GradientNoise::Add<double>(PhiloxStream&, VectorRef<double>) const;

std::string GradientNoise::Describe() const {
  if (sigma == 0) return "exact gradients";
  return fmt::format("{} noise sigma = {}", kind == Kind::kGaussian ? "gaussian" : "sphere", sigma);
}

Constant GradientNoise::SigmaConstant() const {
  if (sigma == 0) return {"sigma", 0.0, Certainty::kExact, "exact gradients (no noise)"};
  if (kind == Kind::kGaussian) {
    return {"sigma", sigma, Certainty::kExact,
            "gaussian noise N(0, sigma^2/d I): E||xi||^2 = sigma^2"};
  }
  return {"sigma", sigma, Certainty::kExact, "noise uniform on the sphere: ||xi|| = sigma"};
}

std::string SpectrumName(SpectrumKind kind) {
  return kind == SpectrumKind::kLinear ? "linear" : "geometric";
}

Eigen::VectorXd Eigenvalues(const SpectrumOptions& spectrum) {
  const std::int64_t d = spectrum.dimension;
  LEMMALAB_CHECK(d >= 1, "dimension {}", d);
  Eigen::VectorXd lambda(d);
  for (std::int64_t j = 0; j < d; ++j) {
    const double t = static_cast<double>(j) / static_cast<double>(std::max<std::int64_t>(d - 1, 1));
    lambda[j] = spectrum.kind == SpectrumKind::kLinear
                    ? spectrum.mu + (spectrum.l - spectrum.mu) * t
                    : spectrum.mu * std::pow(spectrum.l / spectrum.mu, t);
  }
  lambda[0] = spectrum.mu;
  lambda[d - 1] = spectrum.l;
  return lambda;
}

Eigen::MatrixXd HaarOrthogonal(std::int64_t d, PhiloxStream& stream) {
  boost::random::normal_distribution<double> normal(0.0, 1.0);
  Eigen::MatrixXd gaussian(d, d);
  for (std::int64_t c = 0; c < d; ++c) {
    for (std::int64_t r = 0; r < d; ++r) gaussian(r, c) = normal(stream);
  }
  const Eigen::HouseholderQR<Eigen::MatrixXd> qr(gaussian);
  Eigen::MatrixXd q = qr.householderQ();
  for (std::int64_t j = 0; j < d; ++j) {
    if (qr.matrixQR()(j, j) < 0) q.col(j) *= -1.0;
  }
  return q;
}

Eigen::MatrixXd HeterogeneityShifts(std::int64_t d, int workers, double zeta,
                                    PhiloxStream& stream) {
  Eigen::MatrixXd delta = Eigen::MatrixXd::Zero(d, workers);
  if (zeta == 0) return delta;
  LEMMALAB_CHECK(workers >= 2, "heterogeneity {} with {} worker", zeta, workers);
  boost::random::normal_distribution<double> normal(0.0, 1.0);
  for (int i = 0; i < workers; ++i) {
    for (std::int64_t j = 0; j < d; ++j) delta(j, i) = normal(stream);
  }
  // Centring makes sum_i delta_i = 0, so the shifts cancel in f = (1/n) sum_i f_i.
  const Eigen::VectorXd mean = delta.rowwise().mean();
  delta.colwise() -= mean;
  const double mean_sq_norm = delta.squaredNorm() / workers;
  LEMMALAB_CHECK(mean_sq_norm > 0, "centred heterogeneity draws are all zero");
  delta *= zeta / std::sqrt(mean_sq_norm);
  return delta;
}

std::int64_t ReadDimension(OptionTable& options, std::int64_t min) {
  return options.GetInt("dimension", 100, min, kMaxSyntheticDimension);
}

GradientNoise ReadGradientNoise(OptionTable& options) {
  static const std::array<std::string, 2> kinds = {"gaussian", "sphere"};
  GradientNoise noise;
  noise.kind = options.GetChoice("noise", "gaussian", kinds) == "sphere"
                   ? GradientNoise::Kind::kSphere
                   : GradientNoise::Kind::kGaussian;
  noise.sigma = options.GetDouble("sigma", 0.0, Interval::NonNegative());
  return noise;
}

SpectrumOptions ReadSpectrum(OptionTable& options) {
  static const std::array<std::string, 2> kinds = {"linear", "geometric"};
  SpectrumOptions s;
  s.dimension = ReadDimension(options);
  s.l = options.GetDouble("L", s.l, Interval::Positive());
  s.mu = options.GetDouble("mu", s.mu, Interval::NonNegative());
  if (s.mu > s.l) options.Fail("mu", fmt::format("mu must be <= L = {}, got {}", s.l, s.mu));
  s.kind = options.GetChoice("spectrum", "linear", kinds) == "geometric" ? SpectrumKind::kGeometric
                                                                         : SpectrumKind::kLinear;
  if (s.kind == SpectrumKind::kGeometric && s.mu == 0) {
    options.Fail("mu", "spectrum = 'geometric' needs mu > 0, got mu = 0 (use spectrum = 'linear')");
  }
  s.rotate = options.GetBool("rotate", s.rotate);
  if (s.rotate && s.dimension > kMaxRotatedDimension) {
    const double megabytes =
        8.0 * static_cast<double>(s.dimension) * static_cast<double>(s.dimension) / (1 << 20);
    options.Fail(options.Has("rotate") ? "rotate" : "dimension",
                 fmt::format("rotate = true needs a dense {0} x {0} rotation ({1:.0f} MiB) and "
                             "its QR; it is limited to dimension <= {2}: set rotate = false",
                             s.dimension, megabytes, kMaxRotatedDimension));
  }
  return s;
}

double ReadHeterogeneity(OptionTable& options, int workers) {
  const double zeta = options.GetDouble("heterogeneity", 0.0, Interval::NonNegative());
  if (zeta > 0 && workers < 2) {
    options.Fail("heterogeneity",
                 fmt::format("heterogeneity = {} needs at least 2 workers (the shifts sum to zero, "
                             "so a single worker's shift is 0); the run has {}",
                             zeta, workers));
  }
  return zeta;
}

std::optional<double> ReadRadius(OptionTable& options) {
  if (!options.Has("radius")) return std::nullopt;
  return options.GetDouble("radius", 1.0, Interval::Positive());
}

}  // namespace lemmalab
