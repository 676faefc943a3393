// The configurations of the registered compressors that the contract test
// (tests/compressor_contract_test.cc) and the split test (tests/compressor_split_test.cc) run,
// each with what its format promises: its exact message size on a shape, and for which bounds
// its messages split. Every compressor's own test file adds its configurations
// (LEMMALAB_COMPRESSOR_EXAMPLES), so adding a compressor adds no line to the shared tests; their
// coverage tests fail for a registered compressor without a configuration of each kind.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

#include "compressors/compressor.h"
#include "core/bits.h"

namespace lemmalab {

// The message sizes in bits a format allows for a shape: one for most, and one per outcome for a
// format whose size depends on the draw (lazy sending: the flag alone, or the flag and values).
struct MessageSizes {
  std::vector<std::int64_t> allowed;
  MessageSizes(std::int64_t bits) : allowed{bits} {}  // NOLINT: a single size converts implicitly
  MessageSizes(std::initializer_list<std::int64_t> all) : allowed(all) {}
  bool Allows(std::int64_t bits) const {
    return std::find(allowed.begin(), allowed.end(), bits) != allowed.end();
  }
};

// A configuration the contract test runs: a name for its tests, the component table, and the
// message sizes in bits for a shape with scalars of `scalar_bits` (32 or 64).
struct ContractExample {
  std::string label;
  std::string toml;
  std::function<MessageSizes(const CompressorShape&, int scalar_bits)> bits;
};

// The 64-aligned cuts a chunked collective makes: [bounds[k], bounds[k + 1]).
using ChunkBounds = std::vector<std::int64_t>;

// A configuration the split test runs: a name, the component table, and whether Split must
// succeed on given bounds.
struct SplitExample {
  std::string label;
  std::string toml;
  std::function<bool(const ChunkBounds&)> splits;
};

inline std::vector<ContractExample>& ContractExamples() {
  static std::vector<ContractExample> examples;
  return examples;
}
inline std::vector<SplitExample>& SplitExamples() {
  static std::vector<SplitExample> examples;
  return examples;
}

// gtest prints a parameter in test names and failures: the label, not the bytes.
inline void PrintTo(const ContractExample& e, std::ostream* os) { *os << e.label; }
inline void PrintTo(const SplitExample& e, std::ostream* os) { *os << e.label; }

// Registers a test file's configurations (at static initialisation, before any test runs).
struct CompressorExamples {
  CompressorExamples(std::vector<ContractExample> contract, std::vector<SplitExample> split) {
    for (ContractExample& e : contract) ContractExamples().push_back(std::move(e));
    for (SplitExample& e : split) SplitExamples().push_back(std::move(e));
  }
};

// Formats' sizes, as the headers define them.
inline std::int64_t SignBits(std::int64_t d) { return 8 * PackedBytes(d); }
inline std::int64_t Chunks(std::int64_t d, std::int64_t size) { return (d + size - 1) / size; }
// A float32 scale and d fields of `width` bits in a packed bit-stream.
inline std::int64_t ScaleAndFields(std::int64_t d, std::int64_t width) {
  return 32 + 8 * Chunks(d * width, 8);
}
// k indices of the narrowest unsigned type holding d - 1, then k values of the run's precision.
inline std::int64_t SparseBits(std::int64_t d, std::int64_t k, int scalar_bits) {
  const std::int64_t index_bits = d <= 256 ? 8 : d <= 65536 ? 16 : 32;
  return k * (index_bits + scalar_bits);
}

// Split predicates: every bound, none, or the bounds that line up with fixed blocks of n (each
// range starts on a block boundary or lies inside one block, as an instance for a range restarts
// its blocks at the range's start).
inline bool SplitsAlways(const ChunkBounds&) { return true; }
inline bool SplitsNever(const ChunkBounds&) { return false; }
inline bool FixedBlocksLineUp(const ChunkBounds& bounds, std::int64_t n) {
  for (std::size_t k = 0; k + 1 < bounds.size(); ++k) {
    const std::int64_t lo = bounds[k], hi = bounds[k + 1];
    if (lo % n != 0 && lo / n != (hi - 1) / n) return false;
  }
  return true;
}
inline std::function<bool(const ChunkBounds&)> SplitsOnBlocksOf(std::int64_t n) {
  return [n](const ChunkBounds& b) { return FixedBlocksLineUp(b, n); };
}

}  // namespace lemmalab
