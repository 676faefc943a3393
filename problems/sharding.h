// Assignment of samples to workers.
#pragma once

#include <cstdint>
#include <vector>

namespace lemmalab {

using Shards = std::vector<std::vector<std::int64_t>>;

// iid shards: a seeded Fisher-Yates shuffle of 0..samples-1 (drawn from the kShardShuffle
// stream through Boost's uniform_int_distribution, so the permutation is the same with every
// standard library), cut into `workers` contiguous pieces: worker w receives positions
// [floor(w*N/n), floor((w+1)*N/n)) of the permutation. Each shard lists its samples in
// ascending order. Sizes differ by at most one. Needs samples >= workers.
Shards IidShards(std::int64_t samples, int workers, std::uint64_t seed);

}  // namespace lemmalab
