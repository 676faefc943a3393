// Keyed Philox streams: the cipher is Random123's Philox4x32-10, and every key field matters.
#include "core/rng.h"

#include <gtest/gtest.h>

#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <set>
#include <vector>

namespace lemmalab {
namespace {

std::vector<std::uint32_t> Draw(PhiloxStream stream, int n) {
  std::vector<std::uint32_t> out;
  for (int i = 0; i < n; ++i) out.push_back(stream());
  return out;
}

// Known-answer vectors of Philox4x32-10 (Random123's kat_vectors; Salmon et al., SC'11).
TEST(Philox, MatchesPublishedKnownAnswers) {
  using C = r123::Philox4x32;
  struct Case {
    C::ctr_type counter;
    C::key_type key;
    C::ctr_type expected;
  };
  const Case cases[] = {
      {{{0, 0, 0, 0}}, {{0, 0}}, {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
      {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
       {{0xffffffff, 0xffffffff}},
       {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
      {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
       {{0xa4093822, 0x299f31d0}},
       {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
  };
  for (const Case& c : cases) EXPECT_EQ(C()(c.counter, c.key), c.expected);
}

TEST(PhiloxStream, WordLayoutIsCounterBlockStepWorkerPurpose) {
  const StreamKey key{0x0123456789abcdefull, Purpose::kMinibatch, 5, 77};
  PhiloxStream stream(key);
  using C = r123::Philox4x32;
  const C::key_type k = {{0x89abcdefu, 0x01234567u}};
  for (std::uint32_t block = 0; block < 3; ++block) {
    const C::ctr_type expected =
        C()({{block, 77u, 5u, static_cast<std::uint32_t>(Purpose::kMinibatch)}}, k);
    for (int w = 0; w < 4; ++w) EXPECT_EQ(stream(), expected[w]) << "block " << block;
  }
}

TEST(PhiloxStream, EveryKeyFieldSelectsADifferentStream) {
  const StreamKey base{7, Purpose::kWorkerCompression, 3, 10};
  std::set<std::vector<std::uint32_t>> seen;
  for (StreamKey key : {base, StreamKey{8, base.purpose, base.worker, base.step},
                        StreamKey{base.seed, Purpose::kMinibatch, base.worker, base.step},
                        StreamKey{base.seed, base.purpose, 4, base.step},
                        StreamKey{base.seed, base.purpose, base.worker, 11}}) {
    seen.insert(Draw(PhiloxStream(key), 8));
  }
  EXPECT_EQ(seen.size(), 5u);
  // The same key always gives the same words.
  EXPECT_EQ(Draw(PhiloxStream(base), 8), Draw(PhiloxStream(base), 8));
}

TEST(PhiloxStream, SeekAndPositionAgreeWithSequentialDraws) {
  const StreamKey key{42, Purpose::kDataSynthesis, kGlobalStream, 0};
  const std::vector<std::uint32_t> words = Draw(PhiloxStream(key), 20);
  for (std::uint64_t start : {0u, 1u, 3u, 4u, 5u, 13u}) {
    PhiloxStream stream(key);
    stream.Seek(start);
    EXPECT_EQ(stream.position(), start);
    for (std::uint64_t i = start; i < 20; ++i) EXPECT_EQ(stream(), words[i]) << "word " << i;
    EXPECT_EQ(stream.position(), 20u);
  }
  EXPECT_EQ(PhiloxStream(key).position(), 0u);
}

TEST(PhiloxStream, DrivesBoostDistributionsReproducibly) {
  const StreamKey key{1, Purpose::kMinibatch, 0, 1};
  PhiloxStream a(key), b(key);
  boost::random::normal_distribution<double> normal;
  boost::random::uniform_int_distribution<int> pick(0, 9);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(normal(a), normal(b));
    EXPECT_EQ(pick(a), pick(b));
  }
}

}  // namespace
}  // namespace lemmalab
