// The minibatch draw (problems/minibatch_element.h) against Boost.Random's
// uniform_int_distribution, the rule the CPU's runs used before the draw became a shared element:
// the same positions from the same words and the same number of words taken, over shard sizes
// that reject no word, some words and a quarter of them, the edges 1, 2^31 and 2^32, and random
// sizes. Then the GPU's form, each worker's minibatch at once from its row of the step's
// streams (batched/gradient_kernels.h's DrawMinibatch on the host backend), against the CPU's
// draw from ctx.Stream(kMinibatch, w).
#include "problems/minibatch_element.h"

#include <gtest/gtest.h>

#include <boost/random/uniform_int_distribution.hpp>
#include <cstdint>
#include <vector>

#include "batched/backend.h"
#include "batched/gradient_kernels.h"
#include "core/rng.h"
#include "optimizers/optimizer.h"

namespace lemmalab {
namespace {

// `count` positions of a shard of `size` by Boost and by the element, from identical streams; the
// streams must end at the same word.
void ExpectBoostsDraws(std::uint64_t size, int count, std::uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << "shard size " << size << ", seed " << seed);
  PhiloxStream boost_stream({seed, Purpose::kMinibatch, 3, 17});
  PhiloxStream stream({seed, Purpose::kMinibatch, 3, 17});
  boost::random::uniform_int_distribution<std::int64_t> pick(0,
                                                             static_cast<std::int64_t>(size - 1));
  std::vector<std::int64_t> expected(static_cast<std::size_t>(count));
  for (auto& k : expected) k = pick(boost_stream);
  std::vector<std::int64_t> got(expected.size(), -1);
  minibatch::DrawPositions(size, stream, got.data(), count);
  EXPECT_EQ(got, expected);
  EXPECT_EQ(stream.position(), boost_stream.position());
}

TEST(MinibatchDraw, IsBoostsUniformIntDistribution) {
  const std::uint64_t two32 = std::uint64_t{1} << 32;
  for (const std::uint64_t size :
       {std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{3}, std::uint64_t{7}, std::uint64_t{64},
        std::uint64_t{100}, std::uint64_t{60000}, std::uint64_t{1} << 31,
        (std::uint64_t{1} << 31) + 1, 3 * (std::uint64_t{1} << 30), two32 - 1, two32}) {
    ExpectBoostsDraws(size, 2000, 11);
  }
  PhiloxStream sizes({5, Purpose::kDataSynthesis, 0, 0});
  for (int k = 0; k < 200; ++k) {
    const std::uint64_t bits = 1 + sizes() % 32;  // sizes of every magnitude up to 2^32
    const std::uint64_t size = 1 + (std::uint64_t{sizes()} & ((std::uint64_t{1} << bits) - 1));
    ExpectBoostsDraws(size, 50, static_cast<std::uint64_t>(k));
  }
}

TEST(MinibatchDraw, RejectsWordsAsBoostDoes) {
  // 3 * 2^30 samples: buckets of one word, so the words from 3 * 2^30 on (a quarter) are
  // rejected. The check above passes only if the draws took exactly Boost's words.
  PhiloxStream stream({1, Purpose::kMinibatch, 0, 1});
  std::vector<std::int64_t> positions(4000);
  minibatch::DrawPositions(3 * (std::uint64_t{1} << 30), stream, positions.data(), 4000);
  EXPECT_GT(stream.position(), 4000 + 800u);  // about 1 333 rejections
  EXPECT_LT(stream.position(), 4000 + 1900u);
  // A shard of one sample takes no word.
  PhiloxStream one({1, Purpose::kMinibatch, 0, 1});
  minibatch::DrawPositions(1, one, positions.data(), 10);
  EXPECT_EQ(one.position(), 0u);
  EXPECT_EQ(positions[9], 0);
}

TEST(MinibatchDraw, OnTheBackendIsEveryWorkersCpuDraw) {
  // Shards of different sizes (one of a single sample), one after another in the samples.
  const std::vector<std::int64_t> sizes = {1, 5, 1000, 3, 77};
  std::vector<std::int64_t> offsets;
  std::int64_t total = 0;
  for (const std::int64_t size : sizes) {
    offsets.push_back(total);
    total += size;
  }
  const int n = static_cast<int>(sizes.size());
  const std::int64_t rows = 64;
  for (const std::int64_t t : {1, 2, 1000}) {
    const StepContext ctx{t, 0.1, 0x123456789abcdefULL};
    std::vector<std::int64_t> index(static_cast<std::size_t>(n * rows), -1);
    batched::ForEach(batched::Backend::kHost, n,
                     batched::DrawMinibatch{
                         batched::StepStreams(ctx.seed, ctx.t,
                                              static_cast<std::uint32_t>(Purpose::kMinibatch), 0),
                         offsets.data(), sizes.data(), rows, index.data()});
    for (int w = 0; w < n; ++w) {
      SCOPED_TRACE(::testing::Message() << "step " << t << ", worker " << w);
      PhiloxStream stream = ctx.Stream(Purpose::kMinibatch, static_cast<std::uint32_t>(w));
      std::vector<std::int64_t> expected(static_cast<std::size_t>(rows));
      minibatch::DrawPositions(static_cast<std::uint64_t>(sizes[static_cast<std::size_t>(w)]),
                               stream, expected.data(), rows);
      for (std::int64_t r = 0; r < rows; ++r) {
        ASSERT_EQ(index[static_cast<std::size_t>(w * rows + r)],
                  offsets[static_cast<std::size_t>(w)] + expected[static_cast<std::size_t>(r)]);
      }
    }
  }
}

}  // namespace
}  // namespace lemmalab
