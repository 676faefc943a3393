// Scalar kernels of compressors/one_bit.h: the definition the SIMD kernels must reproduce bit for
// bit, and the double-precision path.
#include <algorithm>
#include <cmath>

#include "compressors/one_bit.h"
#include "core/bits.h"

namespace lemmalab::one_bit::reference {
namespace {

inline void SetBit(std::uint8_t* bits, std::int64_t j) {
  bits[j >> 3] |= static_cast<std::uint8_t>(1u << (j & 7));
}

template <typename T, typename F>
double FixedOrderSum(const Input<T>& in, std::int64_t begin, std::int64_t end, F f) {
  double p[kPartials] = {};
  for (std::int64_t j = begin; j < end; ++j) {
    const double u = static_cast<double>(in[j]);
    p[(j - begin) % kPartials] += f(u);
  }
  return CombinePartials(p);
}

}  // namespace

template <typename T>
double SumSquares(const Input<T>& in, std::int64_t begin, std::int64_t end) {
  return FixedOrderSum(in, begin, end, [](double u) { return u * u; });
}

template <typename T>
double SumAbs(const Input<T>& in, std::int64_t begin, std::int64_t end) {
  return FixedOrderSum(in, begin, end, [](double u) { return std::abs(u); });
}

template <typename T>
double MaxAbsFinite(const Input<T>& in, std::int64_t begin, std::int64_t end) {
  T largest = 0;
  for (std::int64_t j = begin; j < end; ++j) {
    const T u = in[j];
    if (IsFinite(u)) largest = std::max(largest, std::abs(u));
  }
  return static_cast<double>(largest);
}

template <typename T>
Counts QuantizeStochastic(const Input<T>& in, T scale, const std::uint32_t* words,
                          std::int64_t begin, std::int64_t end, std::uint8_t* bits, T* e_out) {
  Counts counts;
  const T inverse = T(1) / scale;
  for (std::int64_t j = begin; j < end; ++j) {
    const T u = in[j];
    counts.non_finite += !IsFinite(u);
    counts.out_of_domain += OutOfDomain(u);
    const bool plus = StochasticBit(u, inverse, words[j - begin]);
    if (plus) SetBit(bits, j);
    if (e_out != nullptr) e_out[j] = Residual(u, plus, scale);
  }
  return counts;
}

template <typename T>
Counts QuantizeSign(const Input<T>& in, T scale, std::int64_t begin, std::int64_t end,
                    std::uint8_t* bits, T* e_out) {
  Counts counts;
  for (std::int64_t j = begin; j < end; ++j) {
    const T u = in[j];
    counts.non_finite += !IsFinite(u);
    const bool plus = SignBit(u);
    if (plus) SetBit(bits, j);
    if (e_out != nullptr) e_out[j] = Residual(u, plus, scale);
  }
  return counts;
}

template <typename T>
void Expand(const std::uint8_t* bits, T value, std::int64_t begin, std::int64_t end, T* out) {
  for (std::int64_t j = begin; j < end; ++j) out[j] = GetBit(bits, j) ? value : -value;
}

template <typename T>
void ExpandAdd(const std::uint8_t* bits, T value, std::int64_t begin, std::int64_t end, T* acc) {
  for (std::int64_t j = begin; j < end; ++j) acc[j] += GetBit(bits, j) ? value : -value;
}

#define LEMMALAB_INSTANTIATE(T)                                                                    \
  template double SumSquares(const Input<T>&, std::int64_t, std::int64_t);                         \
  template double SumAbs(const Input<T>&, std::int64_t, std::int64_t);                             \
  template double MaxAbsFinite(const Input<T>&, std::int64_t, std::int64_t);                       \
  template Counts QuantizeStochastic(const Input<T>&, T, const std::uint32_t*, std::int64_t,       \
                                     std::int64_t, std::uint8_t*, T*);                             \
  template Counts QuantizeSign(const Input<T>&, T, std::int64_t, std::int64_t, std::uint8_t*, T*); \
  template void Expand(const std::uint8_t*, T, std::int64_t, std::int64_t, T*);                    \
  template void ExpandAdd(const std::uint8_t*, T, std::int64_t, std::int64_t, T*);
LEMMALAB_INSTANTIATE(float)
LEMMALAB_INSTANTIATE(double)
#undef LEMMALAB_INSTANTIATE

}  // namespace lemmalab::one_bit::reference
