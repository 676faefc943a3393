// The vectorised Philox (core/philox_blocks.cc) against Random123, on every SIMD target Highway
// compiled and this CPU supports: same bits for any start position, length and key.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <vector>

#include "core/rng.h"
#include "tests/highway_targets.h"

namespace lemmalab {
namespace {

using testing::ForEachHighwayTarget;

std::vector<std::uint32_t> ScalarWords(PhiloxStream stream, std::size_t n) {
  std::vector<std::uint32_t> out(n);
  for (auto& w : out) w = stream();  // one Random123 block at a time
  return out;
}

TEST(PhiloxSimd, BlocksMatchRandom123OnEveryTarget) {
  using C = r123::Philox4x32;
  const C::key_type key = {{0xa4093822u, 0x299f31d0u}};
  const C::ctr_type counter = {{0xfffffff0u - 100, 0x85a308d3u, 0x13198a2eu, 0x03707344u}};
  constexpr std::uint64_t kBlocks = 67;  // not a multiple of any lane count
  ForEachHighwayTarget([&] {
    std::vector<std::uint32_t> out(4 * kBlocks);
    PhiloxBlocks(key, counter, kBlocks, out.data());
    C::ctr_type c = counter;
    for (std::uint64_t b = 0; b < kBlocks; ++b, ++c[0]) {
      const C::ctr_type expected = C()(c, key);
      for (int k = 0; k < 4; ++k) ASSERT_EQ(out[4 * b + k], expected[k]) << "block " << b;
    }
  });
}

TEST(PhiloxSimd, FillEqualsDrawingOneWordAtATime) {
  const StreamKey key{0x0123456789abcdefull, Purpose::kWorkerCompression, 3, 41};
  ForEachHighwayTarget([&] {
    for (const std::uint64_t start : {0, 1, 2, 3, 4, 5, 37}) {
      for (const std::size_t n : {0, 1, 3, 4, 5, 31, 32, 33, 1000, 4099}) {
        PhiloxStream fast(key), slow(key);
        fast.Seek(start);
        slow.Seek(start);
        std::vector<std::uint32_t> words(n);
        fast.Fill(words);
        ASSERT_EQ(words, ScalarWords(slow, n)) << "start " << start << ", n " << n;
        // The stream continues after the filled words.
        EXPECT_EQ(fast.position(), start + n);
        for (std::size_t i = 0; i < n; ++i) slow();
        EXPECT_EQ(fast(), slow());
      }
    }
  });
}

TEST(PhiloxSimd, ConsecutiveFillsContinueTheStream) {
  const StreamKey key{9, Purpose::kServerCompression, kServerStream, 2};
  PhiloxStream a(key);
  std::vector<std::uint32_t> all(103), first(6), second(97);
  a.Fill(first);
  a.Fill(second);
  first.insert(first.end(), second.begin(), second.end());
  EXPECT_EQ(first, ScalarWords(PhiloxStream(key), all.size()));
}

}  // namespace
}  // namespace lemmalab
