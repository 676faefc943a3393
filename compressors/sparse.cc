#include "compressors/sparse.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "compressors/multibit.h"
#include "compressors/sparse_element.h"
#include "core/error.h"

namespace lemmalab {

SparseCount SparseCount::FromOptions(OptionTable& options) {
  const bool has_k = options.Has("k");
  const bool has_fraction = options.Has("fraction");
  if (has_k && has_fraction) {
    options.Fail("fraction", "give either k (a count) or fraction (a share of d), not both");
  }
  if (!has_k && !has_fraction) {
    options.Fail("k",
                 "needs k (a count of coordinates, >= 1) or fraction (a share of d, in "
                 "(0, 1]) to say how many coordinates to keep");
  }
  std::string context = options.where().empty()
                            ? options.context()
                            : fmt::format("{}: {}", options.where(), options.context());
  if (has_k) return SparseCount(options.RequireInt("k", 1), 0.0, std::move(context));
  return SparseCount(0, options.RequireDouble("fraction", {0.0, 1.0, true, false}),
                     std::move(context));
}

void CheckSparseDimension(std::string_view context, std::int64_t dimension) {
  if (dimension > kMaxSparseDimension) {
    throw UserError(
        fmt::format("{}: sparse messages carry 32-bit indices, so d must be <= 2^32, got d = {}",
                    context, dimension));
  }
}

std::int64_t SparseCount::For(std::int64_t dimension) const {
  CheckSparseDimension(context_, dimension);
  std::int64_t k = k_;
  if (fraction_ > 0) {
    double product = fraction_ * static_cast<double>(dimension);
    if (const double nearest = std::round(product);
        std::abs(product - nearest) <= 1e-12 * product) {
      product = nearest;
    }
    k = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(product)));
  }
  if (k > dimension) {
    throw UserError(
        fmt::format("{}: k = {} is larger than the dimension d = {} of the vectors it compresses",
                    context_, k, dimension));
  }
  return k;
}

int IndexBytes(std::int64_t dimension) {
  if (dimension <= (std::int64_t{1} << 8)) return 1;
  if (dimension <= (std::int64_t{1} << 16)) return 2;
  return 4;
}

template <typename T>
SparseCompressor<T>::SparseCompressor(std::string_view name, std::int64_t dimension, std::int64_t k,
                                      T scale)
    : name_(name),
      dimension_(dimension),
      k_(k),
      scale_(scale),
      index_bytes_(IndexBytes(dimension)) {
  LEMMALAB_CHECK(k >= 0 && k <= dimension && dimension <= kMaxSparseDimension,
                 "{}: k = {} for d = {}", name, k, dimension);
}

template <typename T>
SparseCompressor<T>::SparseCompressor(std::string_view name, std::int64_t dimension, std::int64_t k,
                                      ScaleByCount)
    : SparseCompressor(name, dimension, k, SparseScale<T>(dimension, k)) {
  LEMMALAB_CHECK(k >= 1, "{}: k = {} for d = {}", name, k, dimension);
  scale_by_count_ = true;
}

template <typename T>
void SparseCompressor<T>::CheckDimension(Eigen::Index size) const {
  LEMMALAB_CHECK(size == dimension_, "{} made for d = {} got a vector of {}", name_, dimension_,
                 size);
}

template <typename T>
void SparseCompressor<T>::SubtractKept(std::span<const std::uint32_t> indices,
                                       VectorRef<T> e) const {
  for (const std::uint32_t j : indices) e[j] = sparse::KeptResidual(e[j], scale_);
}

template <typename T>
void SparseCompressor<T>::Write(std::span<const std::uint32_t> indices, ConstVectorRef<T> x,
                                Message& out) const {
  LEMMALAB_CHECK(static_cast<std::int64_t>(indices.size()) == k_, "{}: {} indices for k = {}",
                 name_, indices.size(), k_);
  const std::size_t index_part = indices.size() * static_cast<std::size_t>(index_bytes_);
  out.bytes.resize(index_part + indices.size() * sizeof(T));
  std::uint8_t* p = out.bytes.data();
  for (const std::uint32_t j : indices) {
    for (int b = 0; b < index_bytes_; ++b) *p++ = static_cast<std::uint8_t>(j >> (8 * b));
  }
  for (const std::uint32_t j : indices) {
    const T v = WireNaN(x[j]);      // a computed NaN's bits depend on the hardware
    std::memcpy(p, &v, sizeof(T));  // the host is little-endian, as the wire
    p += sizeof(T);
  }
}

template <typename T>
template <typename F>
void SparseCompressor<T>::ForEach(const Message& in, std::int64_t size, F&& f) const {
  CheckDimension(size);
  const std::size_t entry = static_cast<std::size_t>(index_bytes_) + sizeof(T);
  std::size_t k = static_cast<std::size_t>(k_);
  T scale = scale_;
  if (scale_by_count_) {
    k = in.bytes.size() / entry;
    LEMMALAB_CHECK(
        in.bytes.size() % entry == 0 && k >= 1 && k <= static_cast<std::size_t>(dimension_),
        "{} message of {} bytes is not 1 to {} entries of {} bytes", name_, in.bytes.size(),
        dimension_, entry);
    scale = SparseScale<T>(dimension_, static_cast<std::int64_t>(k));
  }
  CheckMessageSize(name_, in, k * entry);
  const std::uint8_t* index = in.bytes.data();
  const std::uint8_t* value = index + k * static_cast<std::size_t>(index_bytes_);
  std::int64_t previous = -1;
  for (std::size_t i = 0; i < k; ++i) {
    std::int64_t j = 0;
    for (int b = 0; b < index_bytes_; ++b) j |= std::int64_t{*index++} << (8 * b);
    // Ascending and in range: a corrupt message must not write out of bounds.
    LEMMALAB_CHECK(j > previous && j < dimension_, "{} message: index {} after {}, d = {}", name_,
                   j, previous, dimension_);
    previous = j;
    T v;
    std::memcpy(&v, value, sizeof(T));
    value += sizeof(T);
    f(j, scale * v);
  }
}

template <typename T>
void SparseCompressor<T>::Decode(const Message& in, VectorRef<T> out) const {
  out.setZero();
  ForEach(in, out.size(), [&](std::int64_t j, T y) { out[j] = y; });
}

template <typename T>
void SparseCompressor<T>::DecodeAdd(const Message& in, T weight, VectorRef<T> acc) const {
  ForEach(in, acc.size(), [&](std::int64_t j, T y) { acc[j] += weight * y; });
}

template <typename T>
EncodeStats SampledSparseCompressor<T>::Encode(ConstVectorRef<T> x, PhiloxStream& stream,
                                               Message& out) {
  this->CheckDimension(x.size());
  const std::int64_t non_finite =
      multibit::Norms<T>({x.data()}, x.size(), false, nullptr).non_finite;
  this->Write(Choose(stream), x, out);
  return {.elements = x.size(), .non_finite = non_finite};
}

template <typename T>
EncodeStats SampledSparseCompressor<T>::EncodeWithFeedback(ConstVectorRef<T> x, T a, VectorRef<T> e,
                                                           PhiloxStream& stream, Message& out) {
  this->CheckDimension(x.size());
  this->CheckDimension(e.size());
  const std::int64_t non_finite =
      multibit::Norms<T>({x.data(), e.data(), a}, x.size(), false, e.data()).non_finite;
  const std::span<const std::uint32_t> kept = Choose(stream);
  this->Write(kept, e, out);
  this->SubtractKept(kept, e);
  return {.elements = x.size(), .non_finite = non_finite};
}

template class SparseCompressor<float>;
template class SparseCompressor<double>;
template class SampledSparseCompressor<float>;
template class SampledSparseCompressor<double>;

}  // namespace lemmalab
