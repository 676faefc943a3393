// The compressor interface, the wire message, and the compressor registry.
//
// A compressor turns a vector into a Message: the exact bytes a transport would carry (packed
// bits, index lists, scales). Communication volume is counted from message.bytes, never from a
// formula. What a compressor sends (the message) is kept apart from what a sender keeps
// (error feedback, compressors/error_feedback.h), as in GRACE's compressor/memory split.
//
// An instance is made for one shape (the length of the vectors it compresses and their layers)
// and belongs to one sender, so it may keep state (PowerSGD's warm start) and is never shared
// between threads. Stochastic compressors draw from the PhiloxStream they are given, in an order
// each one documents; the stream is left after the last word used, so results do not depend on
// threading, and a vectorised encoder reproduces the scalar one bit for bit.
//
// Adding a compressor (5 files, docs/extending.md): its header and source with a `...FromOptions`
// maker, its row in registry.cc, its test file with its contract and split configurations
// (tests/compressor_examples.h), and its row in docs/compressors.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "core/layers.h"
#include "core/options.h"
#include "core/registry.h"
#include "core/rng.h"
#include "core/state.h"
#include "core/types.h"

namespace lemmalab {

struct Message {
  std::vector<std::uint8_t> bytes;
  // The size of a message whose bytes stay where they were made (a GPU run's stay on the
  // device): counted like bytes, never carried. Zero for a message that carries its bytes.
  std::int64_t bytes_elsewhere = 0;

  // A message of `size` bytes kept elsewhere.
  static Message Elsewhere(std::int64_t size) { return {{}, size}; }
  // The bytes the message counts as: what it carries, or what it stands for.
  std::int64_t size() const { return static_cast<std::int64_t>(bytes.size()) + bytes_elsewhere; }
  std::int64_t bits() const { return 8 * size(); }
};

// What happened to the input of one Encode call.
struct EncodeStats {
  std::int64_t elements = 0;
  std::int64_t out_of_domain = 0;  // finite inputs outside the compressor's domain
  std::int64_t non_finite = 0;  // NaN or infinite inputs: the caller must treat the run as failed

  EncodeStats& operator+=(const EncodeStats& other) {
    elements += other.elements;
    out_of_domain += other.out_of_domain;
    non_finite += other.non_finite;
    return *this;
  }
};

// The vectors an instance compresses: their length, and their layers (covering [0, dimension)
// in order; one layer when the vector has no structure).
struct CompressorShape {
  std::int64_t dimension = 0;
  std::vector<Layer> layers;
  // Which of `senders` workers compresses with the instance: compressors whose senders share one
  // draw and split the work between them (PermK's blocks of one permutation) read it; for the
  // others every sender is alike. One sender by default (a server, a node, a probe's draws).
  int sender = 0;
  int senders = 1;

  static CompressorShape Flat(std::int64_t dimension) {
    return {dimension, SingleLayer(dimension)};
  }
  // This shape for worker `sender` of `senders`.
  CompressorShape ForSender(int sender_index, int sender_count) const {
    CompressorShape shape = *this;
    shape.sender = sender_index;
    shape.senders = sender_count;
    return shape;
  }

  // [begin, end) of each layer (one range when there are no layers); checks that the layers
  // tile [0, dimension) in order.
  std::vector<std::pair<std::int64_t, std::int64_t>> LayerRanges() const;

  // The shape of the coordinates [begin, end): the pieces of the layers that overlap it, with
  // offsets relative to begin. A layer cut by the range becomes a flat piece (rows = its length,
  // cols = 1); a layer inside it keeps its rows and columns.
  CompressorShape Restrict(std::int64_t begin, std::int64_t end) const;
};

// The chunked collectives (comm/) cut vectors at multiples of kChunkAlign coordinates (and at
// the end), so that packed 1-bit messages split on 64-bit word boundaries.
inline constexpr std::int64_t kChunkAlign = 64;

// What a compressor claims of itself for one shape: the properties that proofs and probes read
// (tests/compressor_contract_test.cc checks them). Compressor::claims() returns them, and
// Compressor's accessors of the same names read them one by one.
struct CompressorClaims {
  // E[Decode(Encode(x))] = x for every finite x.
  bool unbiased = false;
  // q of spams.txt Assumption 1 for this shape: ||C(x) - x|| <= q ||x|| for every x, with
  // q < 1; nullopt when the compressor has no such bound (stochastic ones, sign, scaled sign).
  std::optional<double> q = std::nullopt;
  // The constants of the compressed-optimisation literature for this shape, each a proven bound
  // over the compressor's own draws for every x, or nullopt when it has none:
  //   omega: E||C(x) - x||^2 <= omega ||x||^2 for an unbiased C (DIANA, MARINA: "C in U(omega)");
  //   alpha: E||C(x) - x||^2 <= (1 - alpha) ||x||^2, alpha in (0, 1] (EF21: "C in C(alpha)").
  // A deterministic q (above) gives alpha = 1 - q^2, the default; stochastic contractive
  // compressors (unscaled random-k, lazy sending) declare theirs.
  std::optional<double> omega = std::nullopt;
  std::optional<double> alpha = std::nullopt;  // nullopt with a q: 1 - q^2 (see Compressor::alpha)
  // Whether Encode ignores its stream: then the message is a function of x alone (a bound
  // over the draws holds for every call).
  bool deterministic = false;
  // Whether the senders of a step share their draws (PermK's one permutation): their errors are
  // then correlated, which proofs that add independent errors (the variance of DIANA's and
  // MARINA's mean message) do not cover.
  bool correlated_senders = false;
  // Whether the encoding depends on the layer boundaries of the shape.
  bool uses_layers = false;
  // Whether element j's stochastic decision is made by word j of the stream from where Encode
  // starts, and by no other word: then a trace can name the word behind each element
  // (optimizers/trace.h). False for deterministic compressors and other draw orders.
  bool draws_word_per_element = false;
};

struct OneBitFormat;

template <typename T>
class Compressor {
 public:
  virtual ~Compressor() = default;

  virtual std::string_view name() const = 0;
  // What this instance claims of itself (CompressorClaims), for its shape.
  virtual CompressorClaims claims() const = 0;
  bool unbiased() const { return claims().unbiased; }
  std::optional<double> q() const { return claims().q; }
  std::optional<double> omega() const { return claims().omega; }
  // The declared alpha, or 1 - q^2 from a declared q (CompressorClaims::alpha).
  std::optional<double> alpha() const {
    const CompressorClaims c = claims();
    if (c.alpha) return c.alpha;
    if (!c.q) return std::nullopt;
    return 1 - *c.q * *c.q;
  }
  bool deterministic() const { return claims().deterministic; }
  bool correlated_senders() const { return claims().correlated_senders; }
  bool uses_layers() const { return claims().uses_layers; }
  bool draws_word_per_element() const { return claims().draws_word_per_element; }
  // The scales a message carries (one per block, in block order), for a trace to show; empty
  // when the format sends none.
  virtual std::vector<double> MessageScales(const Message& /*in*/) const { return {}; }

  // Encodes x (of the shape's dimension) into `out`, replacing its bytes.
  virtual EncodeStats Encode(ConstVectorRef<T> x, PhiloxStream& stream, Message& out) = 0;
  // The receiver's reconstruction C(x) of the message.
  virtual void Decode(const Message& in, VectorRef<T> out) const = 0;
  // acc += weight * Decode(in).
  virtual void DecodeAdd(const Message& in, T weight, VectorRef<T> acc) const = 0;

  // Error feedback fused with compression: sends C(u) for u = x + a e and sets e <- u - C(u).
  // This default computes u, encodes it and decodes the message back into e; compressors with a
  // one-pass kernel override it with bit-identical results.
  virtual EncodeStats EncodeWithFeedback(ConstVectorRef<T> x, T a, VectorRef<T> e,
                                         PhiloxStream& stream, Message& out);

  // The 1-bit format this instance encodes (compressors/one_bit_compressor.h), or null: what a
  // batched step (batched/optimizers.h) runs in its place, on the CPU or the GPU.
  virtual const OneBitFormat* one_bit_format() const { return nullptr; }

  // The state one Encode leaves for the next (core/state.h): PowerSGD's warm start. Most
  // compressors have none.
  virtual void Persist(StateArchive& /*archive*/) {}

  // Splits a message this instance encoded into the messages of the ranges
  // [bounds[k], bounds[k+1]) (bounds start at 0, end at the dimension, and are multiples of
  // kChunkAlign in between), for the chunked collectives that send each server only its part.
  // parts[k] must decode, by an instance of this configuration made for
  // shape.Restrict(bounds[k], bounds[k+1]), to exactly the segment of Decode(whole); a part may
  // repeat what the whole message shares (scaled sign's scale), and those bytes count as sent.
  // Returns false when the format cannot be split so (a global index list, a low-rank
  // factorisation): the default.
  virtual bool Split(const Message& /*whole*/, std::span<const std::int64_t> /*bounds*/,
                     std::vector<Message>& /*parts*/) const {
    return false;
  }

 private:
  Vector<T> input_;  // u, for the default EncodeWithFeedback
};

// Base of compressors whose message decodes one element at a time. Derived provides
//   template <typename F> void ForEachValue(const Message& in, Eigen::Index d, F f) const
// calling f(j, value_j) for every j (and befriends this class); Decode and DecodeAdd follow.
template <typename T, typename Derived>
class ElementwiseDecoded : public Compressor<T> {
 public:
  void Decode(const Message& in, VectorRef<T> out) const override {
    Self().ForEachValue(in, out.size(), [&](std::int64_t j, T v) { out[j] = v; });
  }
  void DecodeAdd(const Message& in, T weight, VectorRef<T> acc) const override {
    Self().ForEachValue(in, acc.size(), [&](std::int64_t j, T v) { acc[j] += weight * v; });
  }

 private:
  const Derived& Self() const { return static_cast<const Derived&>(*this); }
};

// Makes fresh instances of one validated configuration (one per sender and shape).
template <typename T>
using CompressorMaker = std::function<std::unique_ptr<Compressor<T>>(const CompressorShape&)>;

struct CompressorInfo {
  std::string_view name;
  std::string_view summary;
  CompressorMaker<float> (*make_f32)(OptionTable& options);
  CompressorMaker<double> (*make_f64)(OptionTable& options);
};

const Registry<CompressorInfo>& Compressors();

// Validates the compressor a component table names (`{ name = "...", options... }`), rejects
// unknown keys, and returns its maker.
template <typename T>
CompressorMaker<T> MakeCompressorMaker(OptionTable& options);

// Checks that a message has the size its decoder expects (an internal error otherwise).
void CheckMessageSize(std::string_view compressor, const Message& in, std::size_t expected);

}  // namespace lemmalab
