// The SIMD kernels of compressors/one_bit.h against their scalar definitions, bit for bit, on
// every Highway target this CPU runs: unaligned ranges, inputs outside [-1, 1], exact +-1, signed
// zeros, NaN and infinities, with and without fused error feedback.
#include "compressors/one_bit.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <boost/random/normal_distribution.hpp>
#include <cstring>
#include <limits>
#include <vector>

#include "core/rng.h"
#include "tests/highway_targets.h"

namespace lemmalab::one_bit {
namespace {

using testing::ForEachHighwayTarget;

std::vector<float> Values(std::size_t n, std::uint64_t seed, bool specials) {
  PhiloxStream s({seed, Purpose::kDataSynthesis, kGlobalStream, 0});
  boost::random::normal_distribution<float> normal(0.0f, 0.8f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(s);
  if (specials && n > 20) {
    v[1] = 1.0f;
    v[2] = -1.0f;
    v[3] = 0.0f;
    v[4] = -0.0f;
    v[5] = std::numeric_limits<float>::quiet_NaN();
    v[6] = std::numeric_limits<float>::infinity();
    v[7] = -std::numeric_limits<float>::infinity();
    v[8] = std::nextafter(1.0f, 2.0f);
    v[9] = std::numeric_limits<float>::denorm_min();
    v[n - 1] = 1e30f;
  }
  return v;
}

std::vector<std::uint32_t> Words(std::size_t n) {
  PhiloxStream s({5, Purpose::kWorkerCompression, 0, 1});
  std::vector<std::uint32_t> w(n);
  s.Fill(w);
  return w;
}

// Both float vectors equal as bit patterns (NaN payloads included).
void ExpectSameBits(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t j = 0; j < a.size(); ++j) {
    std::uint32_t x, y;
    std::memcpy(&x, &a[j], 4);
    std::memcpy(&y, &b[j], 4);
    ASSERT_EQ(x, y) << "j = " << j << ": " << a[j] << " vs " << b[j];
  }
}

struct Range {
  std::int64_t begin, end;
};
const Range kRanges[] = {{0, 1},    {0, 64},    {0, 300}, {3, 67},  {61, 250},
                         {64, 128}, {130, 131}, {5, 5},   {7, 1000}};

TEST(OneBitKernels, QuantizersEqualTheScalarDefinitionOnEveryTarget) {
  const std::size_t n = 1000;
  const std::vector<float> x = Values(n, 1, true), e0 = Values(n, 2, true);
  const std::vector<std::uint32_t> words = Words(n);
  ForEachHighwayTarget([&] {
    for (const Range r : kRanges) {
      for (const bool feedback : {false, true}) {
        for (const float a : {1.0f, 0.5f}) {
          for (const float scale : {1.0f, 2.5f}) {
            SCOPED_TRACE(::testing::Message() << "[" << r.begin << ", " << r.end << ") ef "
                                              << feedback << " a " << a << " scale " << scale);
            Input<float> in{x.data(), feedback ? e0.data() : nullptr, a};
            std::vector<std::uint8_t> bits_fast(n / 8 + 1, 0), bits_ref(n / 8 + 1, 0);
            std::vector<float> e_fast = e0, e_ref = e0;
            // Stochastic, writing the new error over the old one (as EF does).
            Input<float> in_fast = in, in_ref = in;
            if (feedback) {
              in_fast.e = e_fast.data();
              in_ref.e = e_ref.data();
            }
            const Counts c_fast =
                QuantizeStochastic(in_fast, scale, words.data() + r.begin, r.begin, r.end,
                                   bits_fast.data(), e_fast.data());
            const Counts c_ref =
                reference::QuantizeStochastic(in_ref, scale, words.data() + r.begin, r.begin, r.end,
                                              bits_ref.data(), e_ref.data());
            EXPECT_EQ(bits_fast, bits_ref);
            ExpectSameBits(e_fast, e_ref);
            EXPECT_EQ(c_fast.out_of_domain, c_ref.out_of_domain);
            EXPECT_EQ(c_fast.non_finite, c_ref.non_finite);

            std::fill(bits_fast.begin(), bits_fast.end(), 0);
            std::fill(bits_ref.begin(), bits_ref.end(), 0);
            e_fast = e0;
            e_ref = e0;
            const Counts s_fast =
                QuantizeSign(in_fast, scale, r.begin, r.end, bits_fast.data(), e_fast.data());
            const Counts s_ref = reference::QuantizeSign(in_ref, scale, r.begin, r.end,
                                                         bits_ref.data(), e_ref.data());
            EXPECT_EQ(bits_fast, bits_ref);
            ExpectSameBits(e_fast, e_ref);
            EXPECT_EQ(s_fast.non_finite, s_ref.non_finite);
          }
        }
      }
    }
  });
}

// The fused quantizer generates its own words: the same bits as the scalar definition fed with
// those words from the stream, for block-aligned and misaligned starting words.
TEST(OneBitKernels, FusedQuantizerEqualsTheScalarDefinitionOnEveryTarget) {
  const std::size_t n = 1000;
  const std::vector<float> x = Values(n, 7, true), e0 = Values(n, 8, true);
  const StreamKey key{77, Purpose::kWorkerCompression, 3, 9};
  ForEachHighwayTarget([&] {
    for (const Range r : kRanges) {
      for (const std::uint64_t first : {0, 4, 1, 130}) {
        for (const bool feedback : {false, true}) {
          SCOPED_TRACE(::testing::Message() << "[" << r.begin << ", " << r.end << ") first "
                                            << first << " ef " << feedback);
          PhiloxStream stream(key);
          stream.Seek(first);
          std::vector<std::uint32_t> words(static_cast<std::size_t>(r.end - r.begin));
          stream.Fill(words);
          std::vector<float> e_fast = e0, e_ref = e0;
          const Input<float> in_fast{x.data(), feedback ? e_fast.data() : nullptr, 0.5f};
          const Input<float> in_ref{x.data(), feedback ? e_ref.data() : nullptr, 0.5f};
          std::vector<std::uint8_t> bits_fast(n / 8 + 1, 0), bits_ref(n / 8 + 1, 0);
          const StreamAt draw = stream.At(first);
          const Counts c_fast = QuantizeStochasticFused(in_fast, 1.0f, draw, r.begin, r.end,
                                                        bits_fast.data(), e_fast.data());
          const Counts c_ref = reference::QuantizeStochastic(in_ref, 1.0f, words.data(), r.begin,
                                                             r.end, bits_ref.data(), e_ref.data());
          EXPECT_EQ(bits_fast, bits_ref);
          ExpectSameBits(e_fast, e_ref);
          EXPECT_EQ(c_fast.out_of_domain, c_ref.out_of_domain);
          EXPECT_EQ(c_fast.non_finite, c_ref.non_finite);
        }
      }
    }
  });
}

TEST(OneBitKernels, ReductionsEqualTheScalarDefinitionOnEveryTarget) {
  const std::size_t n = 1000;
  const std::vector<float> x = Values(n, 3, false), e = Values(n, 4, false);
  std::vector<float> with_specials = Values(n, 5, true);
  ForEachHighwayTarget([&] {
    for (const Range r : kRanges) {
      for (const bool feedback : {false, true}) {
        const Input<float> in{x.data(), feedback ? e.data() : nullptr, 0.75f};
        // Bitwise equality of doubles: the summation order is part of the definition.
        EXPECT_EQ(SumSquares(in, r.begin, r.end), reference::SumSquares(in, r.begin, r.end));
        EXPECT_EQ(SumAbs(in, r.begin, r.end), reference::SumAbs(in, r.begin, r.end));
        EXPECT_EQ(MaxAbsFinite(in, r.begin, r.end), reference::MaxAbsFinite(in, r.begin, r.end));
      }
      const Input<float> special{with_specials.data()};
      EXPECT_EQ(MaxAbsFinite(special, r.begin, r.end),
                reference::MaxAbsFinite(special, r.begin, r.end));
    }
  });
  // The fixed order, by hand, where it differs from summing left to right: 2^53 followed by 16
  // ones. Left to right every 1 is lost (2^53 + 1 rounds to 2^53). In the fixed order element 16
  // joins partial 0 (lost there too), partials 1..15 hold 1 each, and the pairwise tree gives
  // [2^53, 2, 2, 2, 2, 2, 2, 2] -> [2^53 + 2, 4, 4, 4] -> [2^53 + 6, 8] -> 2^53 + 14.
  std::vector<float> v(17, 1.0f);
  v[0] = 9007199254740992.0f;  // 2^53
  ForEachHighwayTarget([&] { EXPECT_EQ(SumAbs(Input<float>{v.data()}, 0, 17), 0x1p53 + 14); });
  EXPECT_EQ(reference::SumAbs(Input<float>{v.data()}, 0, 17), 0x1p53 + 14);
}

TEST(OneBitKernels, ExpandEqualsTheScalarDefinitionOnEveryTarget) {
  const std::size_t n = 1000;
  std::vector<std::uint8_t> bits(n / 8 + 1);
  const std::vector<std::uint32_t> words = Words(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<std::uint8_t>(words[i]);
  const std::vector<float> start = Values(n, 6, false);
  ForEachHighwayTarget([&] {
    for (const Range r : kRanges) {
      std::vector<float> fast = start, ref = start;
      Expand(bits.data(), 0.3f, r.begin, r.end, fast.data());
      reference::Expand(bits.data(), 0.3f, r.begin, r.end, ref.data());
      ExpectSameBits(fast, ref);
      fast = start;
      ref = start;
      ExpandAdd(bits.data(), -1.7f, r.begin, r.end, fast.data());
      reference::ExpandAdd(bits.data(), -1.7f, r.begin, r.end, ref.data());
      ExpectSameBits(fast, ref);
    }
  });
}

// The draw rule of birder Eq. 5 at its edges: v = -1 never sends +1, v = 1 always does, and
// P(+1) = (v + 1) / 2 is exact when v 2^31 is an integer.
TEST(OneBitKernels, DrawRuleEdges) {
  for (const std::uint32_t r : {0u, 1u, 0x7fffffffu, 0x80000000u, 0xfffffffeu, 0xffffffffu}) {
    EXPECT_FALSE(DrawPlusOne(-1.0f, r));
    EXPECT_TRUE(DrawPlusOne(1.0f, r));
    EXPECT_TRUE(DrawPlusOne(1.0, r));
  }
  // v = 0: +1 iff r < 2^31, exactly half of all words.
  EXPECT_TRUE(DrawPlusOne(0.0f, 0x7fffffffu));
  EXPECT_FALSE(DrawPlusOne(0.0f, 0x80000000u));
  // v = 0.5: +1 iff r < 3 * 2^30.
  EXPECT_TRUE(DrawPlusOne(0.5f, 0xbfffffffu));
  EXPECT_FALSE(DrawPlusOne(0.5f, 0xc0000000u));
}

}  // namespace
}  // namespace lemmalab::one_bit
