// Keyed Philox streams: the only source of randomness in lemmalab.
//
// Every random draw comes from a stream keyed by (run seed, purpose, worker, step). A worker's
// draws therefore never depend on how many threads run, which thread runs which worker, or in
// which order ranks finish: the same spec and seed give the same bits on any backend.
//
// The bijection is Random123's Philox4x32-10 (Salmon et al., SC'11). Word i of a stream is word
// i % 4 of Philox4x32-10(counter = {i / 4, step, worker, purpose}, key = {seed_lo, seed_hi}),
// a layout simple enough that a vectorised generator can reproduce it bit for bit.
// PhiloxStream is a UniformRandomBitGenerator, so Boost.Random distributions draw from it.
#pragma once

#include <Random123/philox.h>

#include <array>
#include <cstdint>
#include <limits>
#include <span>

#include "core/stream_words.h"

namespace lemmalab {

// What a stream is used for. Values are part of the stream key: never renumber them.
enum class Purpose : std::uint32_t {
  kDataSynthesis = 1,      // synthetic data sets
  kShardShuffle = 2,       // assignment of samples to workers
  kMinibatch = 3,          // minibatch sampling, per worker and step
  kWorkerCompression = 4,  // stochastic compressors on a worker
  kServerCompression = 5,  // stochastic compressors at the aggregation point
  kInitialization = 6,     // random initial parameters (neural networks)
  kProbe = 7,              // probes' own draws (repeated quantizations of a recorded input)
  kSharedCompression = 8,  // draws all senders of a step share: PermK's permutation (worker field
                           // kGlobalStream), MARINA's coin (kGlobalStream - 1: independent of it)
};

// Worker field of streams that belong to no worker.
inline constexpr std::uint32_t kGlobalStream = 0xFFFFFFFEu;
inline constexpr std::uint32_t kServerStream = 0xFFFFFFFFu;

struct StreamKey {
  std::uint64_t seed = 0;
  Purpose purpose = Purpose::kDataSynthesis;
  std::uint32_t worker = kGlobalStream;
  std::uint64_t step = 0;  // must fit in 32 bits
};

class PhiloxStream {
 public:
  using result_type = std::uint32_t;
  using Cipher = r123::Philox4x32;

  explicit PhiloxStream(const StreamKey& key);

  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return std::numeric_limits<result_type>::max(); }

  result_type operator()() {
    if (index_ == 4) NextBlock();
    return block_[index_++];
  }

  // Fills `words` with the next words.size() draws, exactly as that many calls of operator()
  // would, and leaves the stream after them. Whole blocks come from a vectorised Philox
  // (core/philox_blocks.cc) that is bit-identical to Random123's.
  void Fill(std::span<result_type> words);

  // Positions the stream so that the next draw is word `word` (0-based).
  void Seek(std::uint64_t word);
  // The stream at word `word`, for kernels that generate its words themselves
  // (core/stream_words.h).
  StreamAt At(std::uint64_t word) const { return {key_, counter_, word}; }
  // Index of the word the next draw returns.
  std::uint64_t position() const { return 4 * std::uint64_t{counter_[0]} - (4 - index_); }
  // The key this stream was made from: a compressor whose senders share draws (PermK) makes the
  // step's shared stream from its seed and step.
  const StreamKey& stream_key() const { return stream_key_; }

 private:
  void NextBlock();

  StreamKey stream_key_;
  Cipher::key_type key_;
  Cipher::ctr_type counter_;  // counter_[0] is the index of the *next* block to generate
  std::array<result_type, 4> block_{};
  int index_ = 4;
};

// Philox4x32-10 blocks first_block, ..., first_block + blocks - 1 with the counter's other words
// and the key fixed, written in stream order (4 words per block) to `out`. Runs on the best
// SIMD target of the CPU (Google Highway dispatch); every target gives Random123's bits.
void PhiloxBlocks(const r123::Philox4x32::key_type& key, const r123::Philox4x32::ctr_type& counter,
                  std::uint64_t blocks, std::uint32_t* out);

}  // namespace lemmalab
