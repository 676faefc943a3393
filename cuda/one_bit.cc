#include "cuda/one_bit.h"

#include <cstring>

#include "core/bits.h"

namespace lemmalab::cuda {

namespace kernels = one_bit_kernels;

OneBitCoder::OneBitCoder(const OneBitFormat& format) : format_(format) {
  LEMMALAB_CHECK(!format_.blocks.empty(), "{} needs at least one block", format_.name);
  dimension_ = format_.blocks.back().second;
  block_count_ = static_cast<std::int64_t>(format_.blocks.size());
  std::vector<std::int64_t> ends;
  std::int64_t previous = 0;
  for (const auto& [lo, hi] : format_.blocks) {
    LEMMALAB_CHECK(lo == previous && hi > lo, "{}: blocks do not tile [0, {}) in order",
                   format_.name, dimension_);
    ends.push_back(hi);
    previous = hi;
  }
  block_ends_ = DeviceBuffer<std::int64_t>(ends.size());
  block_ends_.CopyFrom(ends);
  message_ = DeviceBuffer<std::uint32_t>(message_words());
  counts_ = DeviceBuffer<unsigned long long>(2);
  switch (format_.scale) {
    case OneBitFormat::Scale::kNone:
      break;
    case OneBitFormat::Scale::kMaxAbs:
      max_bits_ = DeviceBuffer<std::uint32_t>(ends.size());
      break;
    case OneBitFormat::Scale::kRms:
    case OneBitFormat::Scale::kMeanAbs:
      partials_ = DeviceBuffer<double>(ends.size() * one_bit::kPartials);
      break;
  }
}

std::size_t OneBitCoder::scale_count() const {
  return format_.scale == OneBitFormat::Scale::kNone ? 0 : format_.blocks.size();
}

std::size_t OneBitCoder::message_bytes() const {
  return scale_count() * sizeof(float) + static_cast<std::size_t>(PackedBytes(dimension_));
}

std::size_t OneBitCoder::message_words() const {
  return scale_count() + static_cast<std::size_t>((dimension_ + 31) / 32);
}

// The scales are the message's first words, as float32 (the wire format), when it sends any.
const float* OneBitCoder::scales(const std::uint32_t* message) const {
  return scale_count() == 0 ? nullptr : reinterpret_cast<const float*>(message);
}

void OneBitCoder::Encode(const float* x, const float* e, float a, float* e_out,
                         PhiloxStream& stream) {
  const kernels::Input u{x, e, a};
  const kernels::DrawWords words{stream.key(), stream.counter(), stream.position()};
  // Where the CPU leaves the stream (and its check that the stream holds enough words).
  if (format_.draw == OneBitFormat::Draw::kStochastic) {
    stream.Seek(stream.position() + static_cast<std::uint64_t>(dimension_));
  }
  float* scale_words = scale_count() == 0 ? nullptr : reinterpret_cast<float*>(message_.data());
  LEMMALAB_CUDA_CHECK(cudaMemsetAsync(counts_.data(), 0, 2 * sizeof(unsigned long long)));
  if (format_.scale == OneBitFormat::Scale::kMaxAbs) {
    LEMMALAB_CUDA_CHECK(
        cudaMemsetAsync(max_bits_.data(), 0, max_bits_.size() * sizeof(std::uint32_t)));
  }
  if (scale_words != nullptr) {
    kernels::Reduce(format_.scale, u, dimension_, blocks(), partials_.data(), max_bits_.data(),
                    nullptr);
    kernels::Scales(format_.scale, blocks(), partials_.data(), max_bits_.data(), scale_words,
                    nullptr);
  }
  kernels::Quantize(format_.draw, u, dimension_, blocks(), scale_words, words,
                    message_.data() + scale_count(), e_out, counts_.data(), nullptr);
  LEMMALAB_CUDA_CHECK(cudaGetLastError());
  elements_ = dimension_;
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
  out.bytes.resize(message_bytes());
  LEMMALAB_CUDA_CHECK(
      cudaMemcpy(out.bytes.data(), message_.data(), out.bytes.size(), cudaMemcpyDeviceToHost));
  return out;
}

DeviceBuffer<std::uint32_t> OneBitCoder::Upload(const Message& message) const {
  CheckMessageSize(format_.name, message, message_bytes());
  std::vector<std::uint32_t> words(message_words(), 0);
  std::memcpy(words.data(), message.bytes.data(), message.bytes.size());
  DeviceBuffer<std::uint32_t> device(words.size());
  device.CopyFrom(words);
  return device;
}

void OneBitCoder::Decode(const std::uint32_t* message, float* out) const {
  kernels::Expand(message + scale_count(), dimension_, blocks(), scales(message), 1.0f, false, out,
                  nullptr);
  LEMMALAB_CUDA_CHECK(cudaGetLastError());
}

void OneBitCoder::DecodeAdd(const std::uint32_t* message, float weight, float* acc) const {
  kernels::Expand(message + scale_count(), dimension_, blocks(), scales(message), weight, true, acc,
                  nullptr);
  LEMMALAB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace lemmalab::cuda
