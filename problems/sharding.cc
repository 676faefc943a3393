#include "problems/sharding.h"

#include <algorithm>
#include <boost/random/uniform_int_distribution.hpp>
#include <numeric>

#include "core/error.h"
#include "core/rng.h"

namespace lemmalab {

Shards IidShards(std::int64_t samples, int workers, std::uint64_t seed) {
  LEMMALAB_CHECK(workers >= 1 && samples >= workers, "{} samples cannot feed {} workers", samples,
                 workers);
  std::vector<std::int64_t> order(static_cast<std::size_t>(samples));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  PhiloxStream stream({seed, Purpose::kShardShuffle, kGlobalStream, 0});
  for (std::int64_t i = samples - 1; i > 0; --i) {
    const std::int64_t j = boost::random::uniform_int_distribution<std::int64_t>(0, i)(stream);
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  Shards shards(static_cast<std::size_t>(workers));
  for (int w = 0; w < workers; ++w) {
    const auto begin = order.begin() + samples * w / workers;
    const auto end = order.begin() + samples * (w + 1) / workers;
    auto& shard = shards[static_cast<std::size_t>(w)];
    shard.assign(begin, end);
    std::sort(shard.begin(), shard.end());
  }
  return shards;
}

}  // namespace lemmalab
