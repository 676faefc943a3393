#include "problems/sharding.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/random/gamma_distribution.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "core/rng.h"

namespace lemmalab {
namespace {

// Steps of the kShardShuffle stream, one per rule, so rules never share random words.
constexpr std::uint64_t kIidStep = 0;
constexpr std::uint64_t kDirichletStep = 1;

void Shuffle(std::vector<std::int64_t>& items, PhiloxStream& stream) {
  for (auto i = static_cast<std::int64_t>(items.size()) - 1; i > 0; --i) {
    const std::int64_t j = boost::random::uniform_int_distribution<std::int64_t>(0, i)(stream);
    std::swap(items[static_cast<std::size_t>(i)], items[static_cast<std::size_t>(j)]);
  }
}

// Worker w receives order[floor(w*N/n) .. floor((w+1)*N/n)), sorted.
Shards CutIntoBlocks(const std::vector<std::int64_t>& order, int workers) {
  const auto samples = static_cast<std::int64_t>(order.size());
  LEMMALAB_CHECK(workers >= 1 && samples >= workers, "{} samples cannot feed {} workers", samples,
                 workers);
  Shards shards(static_cast<std::size_t>(workers));
  for (int w = 0; w < workers; ++w) {
    auto& shard = shards[static_cast<std::size_t>(w)];
    shard.assign(order.begin() + samples * w / workers,
                 order.begin() + samples * (w + 1) / workers);
    std::sort(shard.begin(), shard.end());
  }
  return shards;
}

std::vector<std::int64_t> Identity(std::int64_t samples) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(samples));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  return order;
}

}  // namespace

Shards IidShards(std::int64_t samples, int workers, std::uint64_t seed) {
  std::vector<std::int64_t> order = Identity(samples);
  PhiloxStream stream({seed, Purpose::kShardShuffle, kGlobalStream, kIidStep});
  Shuffle(order, stream);
  return CutIntoBlocks(order, workers);
}

Shards ContiguousShards(std::int64_t samples, int workers) {
  LEMMALAB_CHECK(workers >= 1 && samples >= workers, "{} samples cannot feed {} workers", samples,
                 workers);
  Shards shards(static_cast<std::size_t>(workers));
  for (std::int64_t i = 0; i < samples; ++i) {
    shards[static_cast<std::size_t>(i * workers / samples)].push_back(i);
  }
  return shards;
}

Shards SortedLabelShards(const Eigen::VectorXi& labels, int workers) {
  std::vector<std::int64_t> order = Identity(labels.size());
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int64_t a, std::int64_t b) { return labels[a] < labels[b]; });
  return CutIntoBlocks(order, workers);
}

Shards DirichletShards(const Eigen::VectorXi& labels, int classes, int workers, double alpha,
                       std::uint64_t seed) {
  LEMMALAB_CHECK(alpha > 0 && workers >= 1, "alpha {} workers {}", alpha, workers);
  std::vector<std::vector<std::int64_t>> by_class(static_cast<std::size_t>(classes));
  for (Eigen::Index i = 0; i < labels.size(); ++i) {
    by_class[static_cast<std::size_t>(labels[i])].push_back(i);
  }
  PhiloxStream stream({seed, Purpose::kShardShuffle, kGlobalStream, kDirichletStep});
  boost::random::gamma_distribution<double> gamma(alpha, 1.0);
  constexpr int kAttempts = 1000;
  std::vector<double> p(static_cast<std::size_t>(workers));
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    Shards shards(static_cast<std::size_t>(workers));
    bool lost = false;  // a class whose proportions all underflowed to 0
    for (std::vector<std::int64_t>& members : by_class) {
      double total = 0;
      for (double& share : p) total += (share = gamma(stream));
      Shuffle(members, stream);
      if (total <= 0) {
        lost = true;
        continue;
      }
      const auto count = static_cast<double>(members.size());
      double cumulative = 0;
      std::size_t begin = 0;
      for (int w = 0; w < workers; ++w) {
        cumulative += p[static_cast<std::size_t>(w)];
        const auto end = w + 1 == workers
                             ? members.size()
                             : static_cast<std::size_t>(std::lround(count * cumulative / total));
        auto& shard = shards[static_cast<std::size_t>(w)];
        shard.insert(shard.end(), members.begin() + static_cast<std::ptrdiff_t>(begin),
                     members.begin() + static_cast<std::ptrdiff_t>(std::max(begin, end)));
        begin = std::max(begin, end);
      }
    }
    if (!lost &&
        std::all_of(shards.begin(), shards.end(), [](const auto& s) { return !s.empty(); })) {
      for (auto& shard : shards) std::sort(shard.begin(), shard.end());
      return shards;
    }
  }
  throw UserError(fmt::format(
      "Dirichlet label skew with alpha = {} left some of the {} workers without samples in {} "
      "draws; raise alpha or use fewer workers",
      alpha, workers, kAttempts));
}

}  // namespace lemmalab
