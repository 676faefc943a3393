// The compressor interface, the wire message, and the compressor registry.
//
// A compressor turns a vector into a Message: the exact bytes a transport would carry (packed
// bits, scales, values). Communication volume is counted from message.bytes, never from a
// formula. What a compressor sends (the message) is kept apart from what a sender keeps
// (error feedback, compressors/error_feedback.h), as in GRACE's compressor/memory split.
//
// Each sender owns its compressor instance, so compressors may keep state and are never shared
// between threads. Stochastic compressors draw from the PhiloxStream they are given: element j
// of a vector consumes word j of the stream, which keeps results independent of threading and
// lets a vectorised encoder reproduce the scalar one bit for bit.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "core/options.h"
#include "core/registry.h"
#include "core/rng.h"
#include "core/types.h"

namespace lemmalab {

struct Message {
  std::vector<std::uint8_t> bytes;
  std::int64_t bits() const { return 8 * static_cast<std::int64_t>(bytes.size()); }
};

// What happened to the input of one Encode call.
struct EncodeStats {
  std::int64_t elements = 0;
  std::int64_t out_of_domain = 0;  // finite inputs outside the compressor's domain
  std::int64_t non_finite = 0;  // NaN or infinite inputs: the caller must treat the run as failed
};

template <typename T>
class Compressor {
 public:
  virtual ~Compressor() = default;

  virtual std::string_view name() const = 0;
  // E[Decode(Encode(x))] = x for every finite x.
  virtual bool unbiased() const = 0;

  // Encodes x into `out` (replacing its bytes).
  virtual EncodeStats Encode(ConstVectorRef<T> x, PhiloxStream& stream, Message& out) = 0;
  // The receiver's reconstruction of the message; out.size() is the dimension.
  virtual void Decode(const Message& in, VectorRef<T> out) const = 0;
  // acc += weight * Decode(in), without a temporary.
  virtual void DecodeAdd(const Message& in, T weight, VectorRef<T> acc) const = 0;
};

// Makes fresh instances of one validated configuration (one per sender).
template <typename T>
using CompressorMaker = std::function<std::unique_ptr<Compressor<T>>()>;

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

}  // namespace lemmalab
