#include "core/rng.h"

#include "core/error.h"

namespace lemmalab {

PhiloxStream::PhiloxStream(const StreamKey& key) : stream_key_(key) {
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

void PhiloxStream::Fill(std::span<result_type> words) {
  std::size_t done = 0;
  while (done < words.size() && index_ < 4) words[done++] = block_[index_++];
  const std::uint64_t blocks = (words.size() - done) / 4;
  if (blocks > 0) {
    LEMMALAB_CHECK(blocks < 0xFFFFFFFFull - counter_[0], "Philox stream exhausted (2^34 words)");
    PhiloxBlocks(key_, counter_, blocks, words.data() + done);
    counter_[0] += static_cast<std::uint32_t>(blocks);
    done += 4 * blocks;
  }
  while (done < words.size()) words[done++] = (*this)();
}

void PhiloxStream::Seek(std::uint64_t word) {
  const std::uint64_t block = word / 4;
  LEMMALAB_CHECK(block < 0xFFFFFFFFull, "seek to word {} is past the end of the stream", word);
  counter_[0] = static_cast<std::uint32_t>(block);
  NextBlock();
  index_ = static_cast<int>(word % 4);
}

}  // namespace lemmalab
