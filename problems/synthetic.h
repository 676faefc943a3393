// Pieces shared by the synthetic problems (problems/quadratic.h, problems/rosenbrock.h): the
// eigenvalue spectrum, a Haar-random rotation, the per-worker heterogeneity shifts, the
// gradient-noise model, and the options that choose them.
//
// Synthetic problems are built so that the constants of the analyses (L, mu, G, sigma, sigma_g,
// f_star; see Constant in problems/problem.h) are known exactly, which lets a run check a rate
// against its theorem without estimating anything.
//
// Options every synthetic problem reads:
//   dimension      d, default 100, in [1, 2^24]
//   noise          "gaussian" (default): xi ~ N(0, sigma^2/d I), so E||xi||^2 = sigma^2;
//                  "sphere": xi uniform on the sphere of radius sigma, so ||xi|| = sigma exactly
//   sigma          >= 0, default 0 (exact gradients; the minibatch stream is then not drawn from)
// and the problems with a spectrum (quadratic, nonconvex-quadratic) also:
//   L              > 0, default 1: the largest eigenvalue
//   mu             in [0, L], default 0.01: the smallest eigenvalue
//   spectrum       "linear" (default) or "geometric" (needs mu > 0): lambda_1 = mu < ... <
//                  lambda_d = L, evenly spaced or in geometric progression; d = 1 gives {L}
//   rotate         default true: A = Q diag(lambda) Q^T with Q Haar-random orthogonal; false
//                  keeps A diagonal. The rotation is a dense d x d matrix, so it is refused above
//                  d = 4096 (kMaxRotatedDimension)
//   heterogeneity  zeta >= 0, default 0: worker i's objective gains -delta_i^T x with
//                  sum_i delta_i = 0 and (1/n) sum_i ||delta_i||^2 = zeta^2, so f is unchanged
//                  and sigma_g = zeta at every x. Needs at least two workers when zeta > 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/options.h"
#include "core/rng.h"
#include "core/types.h"
#include "problems/problem.h"

namespace lemmalab {

inline constexpr std::int64_t kMaxSyntheticDimension = std::int64_t{1} << 24;
inline constexpr std::int64_t kMaxRotatedDimension = 4096;

// The one stream all construction randomness of a synthetic problem comes from; each problem
// documents the order of its draws.
PhiloxStream SyntheticConstructionStream(std::uint64_t seed);

// Additive gradient noise xi, drawn from the worker's minibatch stream.
struct GradientNoise {
  enum class Kind { kGaussian, kSphere };
  Kind kind = Kind::kGaussian;
  double sigma = 0;  // E||xi||^2 = sigma^2 (gaussian); ||xi|| = sigma (sphere)

  // Gaussian noise is unbounded: with sigma > 0 no finite G exists.
  bool bounded() const { return kind == Kind::kSphere || sigma == 0; }

  // g += xi. Draws d standard normals from `stream` (none when sigma = 0) in double, so fp32
  // and fp64 runs see the same noise up to the final rounding.
  template <typename T>
  void Add(PhiloxStream& stream, VectorRef<T> g) const;

  std::string Describe() const;  // "gaussian noise sigma = 0.1", "exact gradients"
  // The constant sigma, exact in both models.
  Constant SigmaConstant() const;
};

enum class SpectrumKind { kLinear, kGeometric };

struct SpectrumOptions {
  std::int64_t dimension = 100;
  double l = 1.0;
  double mu = 0.01;
  SpectrumKind kind = SpectrumKind::kLinear;
  bool rotate = true;
};

// lambda_1 = mu, ..., lambda_d = L (ascending); d = 1 gives {L}. The ends are set exactly, not
// computed, so L and mu are the extreme eigenvalues bit for bit.
Eigen::VectorXd Eigenvalues(const SpectrumOptions& spectrum);

// A Haar-distributed orthogonal d x d matrix: the Q of a Householder QR of a matrix of standard
// normals (drawn column by column), with column j multiplied by sign(R_jj) so that the
// factorisation is unique and Q is Haar (Mezzadri, "How to generate random matrices from the
// classical compact groups", Notices AMS 2007).
Eigen::MatrixXd HaarOrthogonal(std::int64_t d, PhiloxStream& stream);

// The heterogeneity shifts as the columns of a d x n matrix: standard normals drawn worker by
// worker, centred across workers, and scaled so that (1/n) sum_i ||delta_i||^2 = zeta^2.
// zeta = 0 gives zeros and draws nothing.
Eigen::MatrixXd HeterogeneityShifts(std::int64_t d, int workers, double zeta, PhiloxStream& stream);

std::string SpectrumName(SpectrumKind kind);

// Option readers, validating as described at the top of this file.
std::int64_t ReadDimension(OptionTable& options, std::int64_t min = 1);
GradientNoise ReadGradientNoise(OptionTable& options);
SpectrumOptions ReadSpectrum(OptionTable& options);
double ReadHeterogeneity(OptionTable& options, int workers);
// The `radius` option (> 0), or nullopt when it is absent.
std::optional<double> ReadRadius(OptionTable& options);

}  // namespace lemmalab
