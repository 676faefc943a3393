// Top-k and random-k (compressors/top_k.h, compressors/random_k.h) encoded and decoded on an
// NVIDIA GPU, for float vectors in device memory.
//
// Equality contract, as for the 1-bit formats (cuda/one_bit.h): for the same input, error buffer
// and stream, the message is the CPU compressor's byte for byte (the kept indices ascending, then
// their values), the error buffer afterwards holds the CPU's floats, decoding gives the CPU's
// floats, and the stream is left where the CPU leaves it. Top-k's kept set is unique by its
// definition (key descending, then index ascending), so how the GPU finds it (radix selection)
// cannot change it; random-k's choice draws all k at once from the CPU's words
// (compressors/random_k_element.h), which gives the set the CPU's RandomKChoice draws.
//
// Work is queued on the default stream; stats() and CopyMessage() wait for it. Random-k's Encode
// also waits, for the number of words its choice used (where it leaves the stream).
#pragma once

#include <cstdint>

#include "compressors/compressor.h"
#include "cuda/runtime.h"
#include "cuda/sparse_kernels.h"

namespace lemmalab::cuda {

class SparseCoder {
 public:
  static SparseCoder TopK(std::int64_t dimension, std::int64_t k);
  static SparseCoder RandomK(std::int64_t dimension, std::int64_t k, bool scaled);

  std::int64_t dimension() const { return dimension_; }
  std::int64_t k() const { return k_; }
  std::size_t message_bytes() const { return message_.size(); }

  // Encodes x, or with error feedback (e set) u = x + a e, leaving u - C(u) in e. Device
  // pointers to dimension() floats.
  void Encode(const float* x, float* e, float a, PhiloxStream& stream);
  EncodeStats stats() const;  // of the last Encode; waits for it
  const std::uint8_t* message() const { return message_.data(); }
  Message CopyMessage() const;

  // out = C(x), or acc += weight C(x), from a message in device memory.
  void Decode(const std::uint8_t* message, float* out) const;
  void DecodeAdd(const std::uint8_t* message, float weight, float* acc) const;
  DeviceBuffer<std::uint8_t> Upload(const Message& message) const;

 private:
  SparseCoder(std::int64_t dimension, std::int64_t k, float scale);

  std::int64_t dimension_, k_;
  int index_bytes_;
  float scale_;
  bool random_ = false;  // random-k; else top-k
  DeviceBuffer<std::uint8_t> message_;
  DeviceBuffer<std::uint32_t> indices_;
  DeviceBuffer<unsigned long long> non_finite_;
  // Top-k's selection state; both kinds' flags and ranks (a word per element) and CUB's scratch.
  DeviceBuffer<sparse_kernels::Selection> selection_;
  DeviceBuffer<std::uint32_t> flags_, ranks_;
  DeviceBuffer<std::uint8_t> scratch_;
  // Random-k's draws and rejected draws (k each), the first draw of each value (d), and the
  // number of stream words its last choice used.
  DeviceBuffer<std::uint32_t> draws_, rejected_, first_draws_;
  DeviceBuffer<unsigned long long> words_used_;
};

}  // namespace lemmalab::cuda
