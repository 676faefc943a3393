// The example settings and optimizer tables that the assertion source files' registry rows share
// (AssertionExample, theory/assertion.h): small, quick, every step evaluated and recorded. A
// snippet only one file uses stays in that file.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace lemmalab {

// A noisy quadratic with exact L, G (on the ball ||x - x*|| <= ||x_0 - x*||), sigma, sigma_g = 0
// and f*.
inline constexpr std::string_view kNoisyQuadratic = R"(seed = 1
steps = 200
workers = 2
precision = "fp64"

[problem]
name = "quadratic"
dimension = 10
L = 1.0
mu = 0.1
rotate = true
noise = "sphere"
sigma = 0.1
)";

// Full gradients on heterogeneous workers: the setting of EF21's, DIANA's and MARINA's theorems.
inline constexpr std::string_view kFullGradients = R"(seed = 6
steps = 200
workers = 4
precision = "fp64"

[problem]
name = "quadratic"
dimension = 20
L = 1.0
mu = 0.1
rotate = true
sigma = 0
heterogeneity = 2.0
)";

// Birder with its default quantizer and error feedback, at Theorem 1's step size lr / sqrt(t).
inline constexpr std::string_view kBirder = R"(
[[optimizer]]
name = "birder"
schedule = { name = "inv-sqrt", lr = 0.05 }
)";

// dist-spams with Top-5 of the noisy quadratic's 10 coordinates, at a constant step.
inline constexpr std::string_view kDistSpams = R"(
[[optimizer]]
name = "dist-spams"
compressor = { name = "top-k", k = 5 }
schedule = { name = "constant", lr = 0.01 }
)";

// A spec of `setting`, `optimizers` and one [[assert]] table of `assertion` with `keys`, last, so
// that an out-of-scope variant may add keys to it.
inline std::string ExampleSpec(std::string_view setting, std::string_view optimizers,
                               std::string_view assertion, std::string_view keys = "") {
  return fmt::format("{}{}\n[[assert]]\nassertion = \"{}\"\n{}", setting, optimizers, assertion,
                     keys);
}

}  // namespace lemmalab
