// A 1-bit format (compressors/one_bit_compressor.h: Birder's Q as stochastic-binary, sign,
// scaled sign, Block-Sign) encoded and decoded on an NVIDIA GPU, for float vectors in device
// memory.
//
// Equality contract: for the same input, error buffer and Philox stream, the message is the CPU
// compressor's, byte for byte (the scales, then the packed bits), the error buffer after
// encoding holds the CPU's floats, and decoding gives the CPU's floats; the stream is left where
// the CPU leaves it. This holds because every element and every scale is computed by
// compressors/one_bit_element.h's functions, in the CPU's order where the order matters
// (tests/cuda_one_bit_test.cc checks it on a GPU).
//
// Work is queued on the default stream: Encode returns before the GPU is done; stats() and
// CopyMessage() wait for it.
#pragma once

#include <cstdint>
#include <vector>

#include "compressors/compressor.h"
#include "compressors/one_bit_compressor.h"
#include "cuda/one_bit_kernels.h"
#include "cuda/runtime.h"

namespace lemmalab::cuda {

// Where a format's message keeps what, on the host: the scales (float32 words, one per block when
// the format sends scales), then the bits, packed 32 to a word; the wire message is the first
// message_bytes() bytes of these words.
struct OneBitLayout {
  explicit OneBitLayout(const OneBitFormat& format);  // checks that the blocks tile [0, d)

  std::int64_t dimension = 0;
  std::size_t scale_count = 0;
  std::vector<std::int64_t> block_ends;  // blocks [ends[b - 1], ends[b]), ends[-1] = 0

  std::size_t message_bytes() const;
  std::size_t message_words() const;
};

class OneBitCoder {
 public:
  explicit OneBitCoder(const OneBitFormat& format);

  std::int64_t dimension() const { return layout_.dimension; }
  const OneBitLayout& layout() const { return layout_; }

  // Encodes u = x + a e (u = x when e is null) into message(); when e_out is set (it may be e),
  // e_out = u - C(u). All pointers are device pointers to dimension() floats.
  void Encode(const float* x, const float* e, float a, float* e_out, PhiloxStream& stream);
  // What the last Encode saw (waits for it).
  EncodeStats stats() const;
  const std::uint32_t* message() const { return message_.data(); }
  Message CopyMessage() const;

  // out = C(x), or acc += weight C(x), from a message in this layout in device memory.
  void Decode(const std::uint32_t* message, float* out) const;
  void DecodeAdd(const std::uint32_t* message, float weight, float* acc) const;
  // A host message (the CPU's, or one received) copied into device words for Decode.
  DeviceBuffer<std::uint32_t> Upload(const Message& message) const;

 private:
  one_bit_kernels::Blocks blocks() const;
  // out = the decoded message, or (accumulate) out += weight times it.
  void Expand(const std::uint32_t* message, float weight, bool accumulate, float* out) const;

  OneBitFormat format_;
  OneBitLayout layout_;
  DeviceBuffer<std::int64_t> block_ends_;
  DeviceBuffer<std::uint32_t> message_;
  DeviceBuffer<double> partials_;
  DeviceBuffer<std::uint32_t> max_bits_;
  DeviceBuffer<unsigned long long> counts_;
  std::int64_t elements_ = 0;  // of the last Encode
};

}  // namespace lemmalab::cuda
