// Assignment of samples to workers.
//
// Every rule returns one list of sample indices per worker, each in ascending order. The
// non-iid rules let the global variance sigma_g of spams.txt Assumption 4 be varied: sorted
// labels give the most skewed shards, Dirichlet(alpha) label skew anything from there (alpha ->
// 0) to iid-like shards (alpha -> infinity).
#pragma once

#include <cstdint>
#include <vector>

#include "core/types.h"

namespace lemmalab {

using Shards = std::vector<std::vector<std::int64_t>>;

// iid shards: a seeded Fisher-Yates shuffle of 0..samples-1 (drawn from the kShardShuffle
// stream through Boost's uniform_int_distribution, so the permutation is the same with every
// standard library), cut into `workers` contiguous pieces: worker w receives positions
// [floor(w*N/n), floor((w+1)*N/n)) of the permutation. Sizes differ by at most one. Needs
// samples >= workers.
Shards IidShards(std::int64_t samples, int workers, std::uint64_t seed);

// Contiguous blocks in file order: sample i goes to worker floor(i*n/N), so another tool can
// reproduce the assignment from the data file alone. Sizes differ by at most one.
Shards ContiguousShards(std::int64_t samples, int workers);

// Sorted labels: samples stably sorted by label, then cut into contiguous blocks as above, so
// each worker sees one or a few classes.
Shards SortedLabelShards(const Eigen::VectorXi& labels, int workers);

// Dirichlet label skew (Hsu, Qi and Brown 2019): for each class c in turn, worker proportions
// p ~ Dirichlet(alpha, ..., alpha) (normalised Gamma(alpha) draws), the class's samples shuffled
// and cut at round(N_c * cumsum(p)). Draws come from one kShardShuffle stream in that order. A
// draw that leaves a worker without samples is redrawn (the stream goes on), up to 1000 times;
// then the alpha is too small for this many workers and the call fails with a UserError.
Shards DirichletShards(const Eigen::VectorXi& labels, int classes, int workers, double alpha,
                       std::uint64_t seed);

}  // namespace lemmalab
