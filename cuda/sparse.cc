#include "cuda/sparse.h"

#include <algorithm>

#include "compressors/random_k.h"
#include "compressors/sparse.h"

namespace lemmalab::cuda {

namespace kernels = sparse_kernels;

SparseCoder::SparseCoder(std::int64_t dimension, std::int64_t k, float scale)
    : dimension_(dimension),
      k_(k),
      index_bytes_(IndexBytes(dimension)),
      scale_(scale),
      message_(static_cast<std::size_t>(k) * (static_cast<std::size_t>(index_bytes_) + 4)),
      indices_(static_cast<std::size_t>(k)),
      non_finite_(1) {
  LEMMALAB_CHECK(k >= 1 && k <= dimension && dimension <= (std::int64_t{1} << 32),
                 "sparse coder: k = {} for d = {}", k, dimension);
  LEMMALAB_CUDA_CHECK(cudaMemset(non_finite_.data(), 0, sizeof(unsigned long long)));  // stats()
}

SparseCoder SparseCoder::TopK(std::int64_t dimension, std::int64_t k) {
  SparseCoder coder(dimension, k, 1.0f);
  const auto d = static_cast<std::size_t>(dimension);
  coder.selection_ = DeviceBuffer<kernels::Selection>(1);
  coder.flags_ = DeviceBuffer<std::uint32_t>(d);
  coder.ranks_ = DeviceBuffer<std::uint32_t>(d);
  coder.scratch_ = DeviceBuffer<std::uint8_t>(kernels::ScanScratchBytes(dimension));
  return coder;
}

SparseCoder SparseCoder::RandomK(std::int64_t dimension, std::int64_t k, bool scaled) {
  SparseCoder coder(dimension, k, RandomKScale<float>(dimension, k, scaled));
  const auto d = static_cast<std::size_t>(dimension), kept = static_cast<std::size_t>(k);
  coder.random_ = true;
  coder.draws_ = DeviceBuffer<std::uint32_t>(kept);
  coder.rejected_ = DeviceBuffer<std::uint32_t>(kept);
  coder.first_draws_ = DeviceBuffer<std::uint32_t>(d);
  coder.flags_ = DeviceBuffer<std::uint32_t>(d);
  coder.ranks_ = DeviceBuffer<std::uint32_t>(d);
  coder.words_used_ = DeviceBuffer<unsigned long long>(1);
  // (Scans of k flags, then of d.)
  coder.scratch_ = DeviceBuffer<std::uint8_t>(
      std::max(kernels::ScanScratchBytes(dimension), kernels::ScanScratchBytes(k)));
  return coder;
}

void SparseCoder::Encode(const float* x, float* e, float a, PhiloxStream& stream) {
  LEMMALAB_CUDA_CHECK(cudaMemsetAsync(non_finite_.data(), 0, sizeof(unsigned long long)));
  // The values the message carries: x, or u = x + a e stored in e.
  kernels::Prepare({x, e, a}, dimension_, e, non_finite_.data(), nullptr);
  const float* values = e == nullptr ? x : e;
  if (random_) {
    const StreamAt words = stream.At(stream.position());
    kernels::RandomKIndices(words, dimension_, k_, draws_.data(), rejected_.data(),
                            first_draws_.data(), flags_.data(), ranks_.data(), scratch_.data(),
                            scratch_.size(), indices_.data(), words_used_.data(), nullptr);
    stream.Seek(stream.position() + words_used_.ToHost()[0]);  // where the CPU leaves it
  } else {
    kernels::TopKIndices(values, dimension_, k_, selection_.data(), flags_.data(), ranks_.data(),
                         scratch_.data(), scratch_.size(), indices_.data(), nullptr);
  }
  kernels::WriteMessage(indices_.data(), k_, values, index_bytes_, message_.data(), e, scale_,
                        nullptr);
  LEMMALAB_CUDA_CHECK(cudaGetLastError());
}

EncodeStats SparseCoder::stats() const {
  EncodeStats stats;
  stats.elements = dimension_;
  stats.non_finite = static_cast<std::int64_t>(non_finite_.ToHost()[0]);
  return stats;
}

Message SparseCoder::CopyMessage() const { return {message_.ToHost()}; }

DeviceBuffer<std::uint8_t> SparseCoder::Upload(const Message& message) const {
  CheckMessageSize(random_ ? "random-k" : "top-k", message, message_.size());
  DeviceBuffer<std::uint8_t> device(message.bytes.size());
  device.CopyFrom(message.bytes);
  return device;
}

void SparseCoder::Decode(const std::uint8_t* message, float* out) const {
  LEMMALAB_CUDA_CHECK(
      cudaMemsetAsync(out, 0, sizeof(float) * static_cast<std::size_t>(dimension_)));
  kernels::Expand(message, k_, index_bytes_, dimension_, scale_, 1.0f, false, out, nullptr);
  LEMMALAB_CUDA_CHECK(cudaGetLastError());
}

void SparseCoder::DecodeAdd(const std::uint8_t* message, float weight, float* acc) const {
  kernels::Expand(message, k_, index_bytes_, dimension_, scale_, weight, true, acc, nullptr);
  LEMMALAB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace lemmalab::cuda
