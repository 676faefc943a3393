#include "core/rng.h"

#include "core/error.h"

namespace lemmalab {

PhiloxStream::PhiloxStream(const StreamKey& key) {
  LEMMALAB_CHECK(key.step <= 0xFFFFFFFFull, "step {} does not fit in the stream key", key.step);
  key_ = {{static_cast<std::uint32_t>(key.seed), static_cast<std::uint32_t>(key.seed >> 32)}};
  counter_ = {{0u, static_cast<std::uint32_t>(key.step), key.worker,
               static_cast<std::uint32_t>(key.purpose)}};
}

void PhiloxStream::NextBlock() {
  LEMMALAB_CHECK(counter_[0] != 0xFFFFFFFFu, "Philox stream exhausted (2^34 words)");
  const Cipher::ctr_type out = Cipher()(counter_, key_);
  for (int k = 0; k < 4; ++k) block_[k] = out[k];
  ++counter_[0];
  index_ = 0;
}

void PhiloxStream::Seek(std::uint64_t word) {
  const std::uint64_t block = word / 4;
  LEMMALAB_CHECK(block < 0xFFFFFFFFull, "seek to word {} is past the end of the stream", word);
  counter_[0] = static_cast<std::uint32_t>(block);
  NextBlock();
  index_ = static_cast<int>(word % 4);
}

}  // namespace lemmalab
