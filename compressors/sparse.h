// What the sparse compressors (top-k, random-k, PermK) share: the count of kept coordinates, read
// from the options, the wire format of a sparse message with its decoder, and the encoder of the
// compressors that draw their coordinates (SampledSparseCompressor).
//
// Wire format: k indices in ascending order, each in the narrowest unsigned little-endian integer
// that holds d - 1 (1 byte if d <= 256, 2 if d <= 65536, else 4), followed by the k values in the
// run's precision T (float32 or float64, little-endian) in the same order, a NaN as the wire's
// NaN (core/wire_nan.h). k and d are known to
// both ends from the configuration and the shape, so nothing else is sent:
//   bits = k * (8 * IndexBytes(d) + 8 * sizeof(T)).
// Values travel in T rather than float32 because a sparse message is meant to carry the kept
// coordinates exactly (Top-k's q of spams.txt Remark 1 then needs no rounding slack). Decoding
// zero-fills and scatters value * scale, scale being fixed per instance (d/k for scaled
// random-k, 1 otherwise), or, for a format whose senders keep different counts (PermK's blocks),
// read from the message: k' = bytes / (IndexBytes(d) + sizeof(T)) kept coordinates, each scaled
// by d/k' (SparseScale), so that any instance of the configuration decodes any sender's message.
//
// Split (chunked collectives) is not supported (Compressor::Split returns false): an instance
// for a range [lo, hi) expects exactly its own k' = k(hi - lo) entries (and, for scaled random-k,
// multiplies by (hi - lo) / k'), while the number of kept coordinates that fall in the range
// depends on x; so no part can carry the range's values in the format that instance decodes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "compressors/compressor.h"
#include "compressors/sparse_element.h"

namespace lemmalab {

// How many coordinates a sparse compressor keeps: option `k` (a count, >= 1) or `fraction`
// (in (0, 1]; k = max(1, ceil(fraction * d))), exactly one of them.
class SparseCount {
 public:
  static SparseCount FromOptions(OptionTable& options);

  // k for vectors of `dimension` elements. Throws UserError when a count exceeds d, or when d is
  // too large for 32-bit indices. The product fraction * d is taken as the integer it is within
  // a relative 1e-12 of, if any, so that fraction = 0.07 keeps 7 of 100 although the double
  // nearest 0.07 is slightly larger than 0.07.
  std::int64_t For(std::int64_t dimension) const;

 private:
  SparseCount(std::int64_t k, double fraction, std::string context)
      : k_(k), fraction_(fraction), context_(std::move(context)) {}

  std::int64_t k_;       // > 0 when given as a count
  double fraction_;      // > 0 when given as a fraction
  std::string context_;  // "<where>: compressor 'top-k'", for shape-dependent errors
};

// The largest d a sparse message can index (its indices have 32 bits).
inline constexpr std::int64_t kMaxSparseDimension = std::int64_t{1} << 32;

// Throws UserError when d exceeds kMaxSparseDimension; `context` names the compressor
// ("<where>: compressor 'top-k'").
void CheckSparseDimension(std::string_view context, std::int64_t dimension);

// Bytes of one index for vectors of `dimension` elements (at most kMaxSparseDimension).
int IndexBytes(std::int64_t dimension);

// The factor d/k of a message keeping k of d coordinates uniformly at random, rounded to T: what
// makes it unbiased.
template <typename T>
T SparseScale(std::int64_t dimension, std::int64_t k) {
  return static_cast<T>(static_cast<double>(dimension) / static_cast<double>(k));
}

// The common part of the sparse compressors: the message layout and its decoding.
template <typename T>
class SparseCompressor : public Compressor<T> {
 public:
  std::string_view name() const override { return name_; }

  void Decode(const Message& in, VectorRef<T> out) const override;
  void DecodeAdd(const Message& in, T weight, VectorRef<T> acc) const override;

  // The coordinates this instance keeps, and what the receiver multiplies each value by (the
  // batched senders, batched/senders.h, encode the same messages).
  std::int64_t k() const { return k_; }
  T scale() const { return scale_; }

 protected:
  // `scale` multiplies every received value (1 for an unscaled message).
  SparseCompressor(std::string_view name, std::int64_t dimension, std::int64_t k, T scale);
  // Messages of any count k' in [1, d], each value multiplied by SparseScale(d, k'); this
  // instance encodes k.
  struct ScaleByCount {};
  SparseCompressor(std::string_view name, std::int64_t dimension, std::int64_t k, ScaleByCount);

  std::int64_t dimension() const { return dimension_; }
  // Checks that a vector to encode or decode into has the instance's dimension.
  void CheckDimension(Eigen::Index size) const;

  // Writes the message for the k kept coordinates, given in ascending order.
  void Write(std::span<const std::uint32_t> indices, ConstVectorRef<T> x, Message& out) const;

  // Error feedback for a message of u's kept coordinates: e holds u on entry and u - C(u) on
  // return. C(u) is zero off the kept coordinates, so only those change, each by the default's
  // expression (e_j + (-1) (scale u_j), as DecodeAdd would add it): the same bits as decoding the
  // whole message back.
  void SubtractKept(std::span<const std::uint32_t> indices, VectorRef<T> e) const;

 private:
  // Calls f(index, scale * value) for each kept coordinate, checking the message.
  template <typename F>
  void ForEach(const Message& in, std::int64_t size, F&& f) const;

  std::string_view name_;
  std::int64_t dimension_;
  std::int64_t k_;
  T scale_;  // of this instance's own messages
  bool scale_by_count_ = false;
  int index_bytes_;
};

// A sparse compressor whose k kept coordinates are drawn from the stream, each k-subset equally
// likely, whatever x holds (random-k; each sender of PermK): the derived class supplies the draw,
// Choose, documented in its own header, and the encoding is this one. Non-finite inputs are
// counted over all d coordinates, kept or not.
template <typename T>
class SampledSparseCompressor : public SparseCompressor<T> {
 public:
  EncodeStats Encode(ConstVectorRef<T> x, PhiloxStream& stream, Message& out) final;
  // The choice does not depend on u, so one pass stores u = x + a e in e, and only the kept
  // coordinates need u - C(u) (SubtractKept): what the default's full decoding pass leaves, bit
  // for bit.
  EncodeStats EncodeWithFeedback(ConstVectorRef<T> x, T a, VectorRef<T> e, PhiloxStream& stream,
                                 Message& out) final;

 protected:
  using SparseCompressor<T>::SparseCompressor;

  // The k kept coordinates, ascending, valid until the next call.
  virtual std::span<const std::uint32_t> Choose(PhiloxStream& stream) = 0;

  // omega of the message scaled by d/k: each coordinate is kept with probability k/d, so
  // E||C(x) - x||^2 = (d/k - 1) ||x||^2 for every x.
  double ScaledOmega() const {
    return static_cast<double>(this->dimension()) / static_cast<double>(this->k()) - 1;
  }
};

// Exactly uniform integer in [0, range), 1 <= range <= 2^32, by Lemire's multiply-and-reject
// method ("Fast random integer generation in an interval", ACM TOMACS 2019): the candidate is
// the high half of word * range, rejected when the low half falls below 2^32 mod range (at most
// range - 1 of the 2^32 words, so with probability < range / 2^32). `word` is the first attempt;
// each rejection calls next() for a fresh word.
template <typename Next>
std::uint32_t UniformBelow(std::uint64_t range, std::uint32_t word, Next&& next) {
  std::uint64_t product = std::uint64_t{word} * range;
  while (sparse::LemireRejects(product, range)) product = std::uint64_t{next()} * range;
  return static_cast<std::uint32_t>(product >> 32);
}

}  // namespace lemmalab
