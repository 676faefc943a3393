#include "cuda/one_bit.h"

#include <cstring>
#include <type_traits>

#include "core/bits.h"

namespace lemmalab::cuda {

namespace kernels = one_bit_kernels;

namespace {

// A message's scales are its first `count` words, as float32 (the wire format); its bits follow.
template <typename Word>
auto ScaleWords(Word* message, std::size_t count) {
  using Float = std::conditional_t<std::is_const_v<Word>, const float, float>;
  return count == 0 ? nullptr : reinterpret_cast<Float*>(message);
}

}  // namespace

OneBitLayout::OneBitLayout(const OneBitFormat& format) {
  LEMMALAB_CHECK(!format.blocks.empty(), "{} needs at least one block", format.name);
  for (const auto& [lo, hi] : format.blocks) {
    LEMMALAB_CHECK(lo == dimension && hi > lo, "{}: blocks do not tile [0, d) in order",
                   format.name);
    block_ends.push_back(hi);
    dimension = hi;
  }
  scale_count = format.scale == OneBitFormat::Scale::kNone ? 0 : format.blocks.size();
}

std::size_t OneBitLayout::message_bytes() const {
  return scale_count * sizeof(float) + static_cast<std::size_t>(PackedBytes(dimension));
}

std::size_t OneBitLayout::message_words() const {
  return scale_count + static_cast<std::size_t>((dimension + 31) / 32);
}

OneBitCoder::OneBitCoder(const OneBitFormat& format)
    : format_(format),
      layout_(format),
      block_ends_(layout_.block_ends.size()),
      message_(layout_.message_words()),
      counts_(2) {
  block_ends_.CopyFrom(layout_.block_ends);
  LEMMALAB_CUDA_CHECK(cudaMemset(counts_.data(), 0, 2 * sizeof(unsigned long long)));  // stats()
  switch (format_.scale) {
    case OneBitFormat::Scale::kNone:
      break;
    case OneBitFormat::Scale::kMaxAbs:
      max_bits_ = DeviceBuffer<std::uint32_t>(layout_.block_ends.size());
      break;
    case OneBitFormat::Scale::kRms:
    case OneBitFormat::Scale::kMeanAbs:
      partials_ = DeviceBuffer<double>(layout_.block_ends.size() * one_bit::kPartials);
      break;
  }
}

kernels::Blocks OneBitCoder::blocks() const {
  return {block_ends_.data(), static_cast<std::int64_t>(block_ends_.size())};
}

void OneBitCoder::Encode(const float* x, const float* e, float a, float* e_out,
                         PhiloxStream& stream) {
  const kernels::Input u{x, e, a};
  const StreamAt words = stream.At(stream.position());
  // Where the CPU leaves the stream (and its check that the stream holds enough words).
  if (format_.draw == OneBitFormat::Draw::kStochastic) {
    stream.Seek(stream.position() + static_cast<std::uint64_t>(layout_.dimension));
  }
  float* scale_words = ScaleWords(message_.data(), layout_.scale_count);
  LEMMALAB_CUDA_CHECK(cudaMemsetAsync(counts_.data(), 0, 2 * sizeof(unsigned long long)));
  if (format_.scale == OneBitFormat::Scale::kMaxAbs) {
    LEMMALAB_CUDA_CHECK(
        cudaMemsetAsync(max_bits_.data(), 0, max_bits_.size() * sizeof(std::uint32_t)));
  }
  if (scale_words != nullptr) {
    kernels::Reduce(format_.scale, u, layout_.dimension, blocks(), partials_.data(),
                    max_bits_.data(), nullptr);
    kernels::Scales(format_.scale, blocks(), partials_.data(), max_bits_.data(), scale_words,
                    nullptr);
  }
  kernels::Quantize(format_.draw, u, layout_.dimension, blocks(), scale_words, words,
                    message_.data() + layout_.scale_count, e_out, counts_.data(), nullptr);
  LEMMALAB_CUDA_CHECK(cudaGetLastError());
  elements_ = layout_.dimension;
}

EncodeStats OneBitCoder::stats() const {
  unsigned long long counts[2];
  LEMMALAB_CUDA_CHECK(cudaMemcpy(counts, counts_.data(), sizeof(counts), cudaMemcpyDeviceToHost));
  EncodeStats stats;
  stats.elements = elements_;
  stats.out_of_domain = static_cast<std::int64_t>(counts[0]);
  stats.non_finite = static_cast<std::int64_t>(counts[1]);
  return stats;
}

Message OneBitCoder::CopyMessage() const {
  Message out;
  out.bytes.resize(layout_.message_bytes());
  LEMMALAB_CUDA_CHECK(
      cudaMemcpy(out.bytes.data(), message_.data(), out.bytes.size(), cudaMemcpyDeviceToHost));
  return out;
}

DeviceBuffer<std::uint32_t> OneBitCoder::Upload(const Message& message) const {
  CheckMessageSize(format_.name, message, layout_.message_bytes());
  std::vector<std::uint32_t> words(layout_.message_words(), 0);
  std::memcpy(words.data(), message.bytes.data(), message.bytes.size());
  DeviceBuffer<std::uint32_t> device(words.size());
  device.CopyFrom(words);
  return device;
}

void OneBitCoder::Decode(const std::uint32_t* message, float* out) const {
  Expand(message, 1.0f, false, out);
}

void OneBitCoder::DecodeAdd(const std::uint32_t* message, float weight, float* acc) const {
  Expand(message, weight, true, acc);
}

void OneBitCoder::Expand(const std::uint32_t* message, float weight, bool accumulate,
                         float* out) const {
  kernels::Expand(message + layout_.scale_count, layout_.dimension, blocks(),
                  ScaleWords(message, layout_.scale_count), weight, accumulate, out, nullptr);
  LEMMALAB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace lemmalab::cuda
