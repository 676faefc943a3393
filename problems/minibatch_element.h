// The supervised problems' minibatch draw (problems/supervised.h), compiled by g++ for the CPU's
// runs and by nvcc for a GPU run's (batched/gradient_kernels.h), so both draw the same samples
// from a worker's kMinibatch stream of the step.
//
// A minibatch is `count` positions in the worker's shard, uniform and with replacement, drawn one
// after another. Each is Boost.Random's uniform_int_distribution<int64>(0, size - 1) fed 32-bit
// words (generate_uniform_int in boost/random/uniform_int_distribution.hpp, the rule lemmalab's
// runs have always used): for a shard of size < 2^32, the words fall in buckets of
// floor(2^32 / size) and a word whose bucket is size or more is rejected for the next; a shard of
// one sample takes no word; one of 2^32 samples takes the word itself.
// tests/minibatch_element_test.cc holds this against Boost's distribution.
//
// nvcc compiles this header for the device: C++17, no standard containers.
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace lemmalab::minibatch {

// The largest shard a minibatch is drawn from: each position takes one 32-bit word (the rule
// above). Larger shards are refused where the problem is built (problems/supervised.cc): Boost
// would join several words per draw there, a rule lemmalab's draws never use.
inline constexpr std::uint64_t kLargestShard = std::uint64_t{1} << 32;

// A position uniform below `size` (1 <= size <= kLargestShard), from next_word().
template <typename NextWord>
LEMMALAB_HOST_DEVICE std::int64_t UniformPosition(std::uint64_t size, NextWord& next_word) {
  if (size == 1) return 0;
  if (size == kLargestShard) return static_cast<std::int64_t>(next_word());
  const std::uint32_t bucket = static_cast<std::uint32_t>(kLargestShard / size);
  for (;;) {
    const std::uint32_t position = static_cast<std::uint32_t>(next_word()) / bucket;
    if (position < size) return position;
  }
}

// `count` positions of a shard of `size` samples into positions[0 .. count).
template <typename NextWord>
LEMMALAB_HOST_DEVICE void DrawPositions(std::uint64_t size, NextWord& next_word,
                                        std::int64_t* positions, std::int64_t count) {
  for (std::int64_t r = 0; r < count; ++r) positions[r] = UniformPosition(size, next_word);
}

}  // namespace lemmalab::minibatch
