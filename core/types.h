// Scalar and vector types shared by every lemmalab target.
//
// Parameters and optimizer state live in a scalar type T chosen per run (`precision = "fp32"`,
// the default, or `"fp64"` for identity checks). Statistics (losses, norms, probe values) are
// always accumulated in double, whatever T is.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <string_view>

namespace lemmalab {

template <typename T>
using Vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;

// Data matrices hold one sample per row, so a minibatch is a set of contiguous rows.
template <typename T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Inputs and outputs pass as Ref so segments (a layer, a chunk) travel without copies.
template <typename T>
using ConstVectorRef = Eigen::Ref<const Vector<T>>;
template <typename T>
using VectorRef = Eigen::Ref<Vector<T>>;

enum class Precision { kFp32, kFp64 };

constexpr std::string_view PrecisionName(Precision p) {
  return p == Precision::kFp64 ? "fp64" : "fp32";
}

template <typename T>
constexpr Precision PrecisionOf() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  return std::is_same_v<T, double> ? Precision::kFp64 : Precision::kFp32;
}

// Calls `f.template operator()<T>()` with T the scalar type of precision `p`; the one place
// where a run's precision turns into a template argument.
template <typename F>
decltype(auto) DispatchPrecision(Precision p, F&& f) {
  if (p == Precision::kFp64) return f.template operator()<double>();
  return f.template operator()<float>();
}

}  // namespace lemmalab
