// Random-k: Lemire's bounded integers on hand-picked words, the documented draw rule (Floyd's
// algorithm) replayed from the stream, inclusion probability k/d and uniform subsets (5-sigma
// binomial bounds), unbiasedness of the scaled variant, E||C(x) - x||^2 = (1 - k/d)||x||^2
// unscaled and (d/k - 1)||x||^2 scaled (5 sigma of the exact sampling variance), exact sizes,
// ascending distinct indices, determinism, and the shared option errors.
#include "compressors/random_k.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "batched/backend.h"
#include "batched/kernels.h"
#include "compressors/random_k_element.h"
#include "compressors/sparse.h"
#include "engine/spec.h"
#include "tests/compressor_examples.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

// The contract and split tests' configurations of random-k (tests/compressor_examples.h).
const CompressorExamples kCompressorExamples(
    {
        {"RandomKScaled", "name = \"random-k\"\nfraction = 0.25",
         [](const CompressorShape& s, int scalar_bits) {
           return SparseBits(s.dimension, Chunks(s.dimension, 4), scalar_bits);
         }},
        {"RandomKUnscaled", "name = \"random-k\"\nfraction = 0.5\nscaled = false",
         [](const CompressorShape& s, int scalar_bits) {
           return SparseBits(s.dimension, Chunks(s.dimension, 2), scalar_bits);
         }},
    },
    {
        {"RandomKScaled", "name = \"random-k\"\nfraction = 0.25", SplitsNever},
        {"RandomKUnscaled", "name = \"random-k\"\nfraction = 0.5\nscaled = false", SplitsNever},
    });

using testing::UserErrorOf;

PhiloxStream Stream(std::uint64_t step) {
  return PhiloxStream({31, Purpose::kWorkerCompression, 2, step});
}

// The kept indices of a message of a d <= 256 vector (one byte each).
std::vector<int> Kept(const Message& m, std::int64_t k) {
  return std::vector<int>(m.bytes.begin(), m.bytes.begin() + k);
}

Vector<double> TestVector(std::int64_t d) {
  PhiloxStream s({8, Purpose::kDataSynthesis, kGlobalStream, 0});
  Vector<double> x(d);
  for (std::int64_t j = 0; j < d; ++j) x[j] = std::ldexp(static_cast<double>(s()), -30) - 2;
  return x;
}

TEST(RandomK, UniformBelowIsLemiresMultiplyAndReject) {
  int calls = 0;
  const auto next = [&] {
    ++calls;
    return std::uint32_t{0x80000000u};
  };
  // range 3: 2^32 mod 3 = 1, so only word 0 (low half 0) is rejected; 2^31 * 3 = 1.5 * 2^32.
  EXPECT_EQ(UniformBelow(3, 0u, next), 1u);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(UniformBelow(3, 0xFFFFFFFFu, next), 2u);
  EXPECT_EQ(UniformBelow(3, 0x55555555u, next), 0u);  // 3 * 0x55555555 = 2^32 - 1
  EXPECT_EQ(UniformBelow(3, 0x55555556u, next), 1u);  // low half 2 >= 1: accepted
  EXPECT_EQ(calls, 1);
  // range 1 never rejects, even word 0; range 2^32 returns the word itself.
  EXPECT_EQ(UniformBelow(1, 0u, next), 0u);
  EXPECT_EQ(UniformBelow(std::uint64_t{1} << 32, 0u, next), 0u);
  EXPECT_EQ(UniformBelow(std::uint64_t{1} << 32, 0xDEADBEEFu, next), 0xDEADBEEFu);
  EXPECT_EQ(calls, 1);
  // range 2^31 + 1: 2^32 mod range = 2^31 - 1 (about half the words are rejected). Word 1 has
  // low half 2^31 + 1 and is accepted; word 0 is rejected and replaced by 2^31, whose product
  // 2^62 + 2^31 has low half 2^31 >= 2^31 - 1 and high half 2^30.
  const std::uint64_t r = (std::uint64_t{1} << 31) + 1;
  EXPECT_EQ(UniformBelow(r, 1u, next), 0u);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(UniformBelow(r, 0u, next), 1u << 30);
  EXPECT_EQ(calls, 2);
  // Low half 2^31 - 1, exactly the threshold: kept, since only lower halves are rejected.
  EXPECT_EQ(UniformBelow(r, 0xFFFFFFFFu, next), 1u << 31);
  EXPECT_EQ(calls, 2);
}

TEST(RandomK, FollowsTheDrawRule) {
  for (const auto& [d, k] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {1, 1}, {10, 3}, {33, 33}, {200, 17}, {1000, 999}}) {
    const Vector<double> x = TestVector(d);
    auto c = MakeRandomK<double>(d, k, false);
    Message m;
    PhiloxStream s = Stream(d);
    c->Encode(x, s, m);

    // Floyd's algorithm, replayed: draw i's first attempt is word i, rejections come after.
    PhiloxStream words = Stream(d), extra = Stream(d);
    extra.Seek(static_cast<std::uint64_t>(k));
    std::set<std::int64_t> chosen;
    for (std::int64_t i = 0; i < k; ++i) {
      const std::int64_t j = d - k + i;
      const std::int64_t t = UniformBelow(j + 1, words(), [&] { return extra(); });
      chosen.insert(chosen.count(t) ? j : t);
    }
    EXPECT_EQ(s.position(), extra.position()) << "the stream is left after the last word used";
    ASSERT_EQ(m.bits(), k * (8 * (d <= 256 ? 1 : 2) + 64));
    Vector<double> y(d);
    c->Decode(m, y);
    for (std::int64_t j = 0; j < d; ++j) {
      EXPECT_EQ(y[j], chosen.count(j) ? x[j] : 0.0) << "d = " << d << ", j = " << j;
    }
  }
}

// The all-at-once form of the draw rule (compressors/random_k_element.h), as the GPU runs it:
// first attempts, then the rejected draws replaced in order, then each step's kept coordinate
// from the first draw of each value. Returns the kept set and the words used.
std::pair<std::set<std::int64_t>, std::uint64_t> DrawsAtOnce(std::int64_t d, std::int64_t k,
                                                             std::vector<std::uint32_t> draws,
                                                             PhiloxStream stream) {
  std::vector<std::uint32_t> rejected;
  for (std::int64_t i = 0; i < k; ++i) {
    if (random_k::IsRejected(draws[static_cast<std::size_t>(i)], random_k::Range(d, k, i))) {
      rejected.push_back(static_cast<std::uint32_t>(i));
    }
  }
  auto word_at = [&](std::uint64_t p) {
    stream.Seek(p);
    return stream();
  };
  const std::uint64_t used = random_k::ReplaceRejected(
      draws.data(), rejected.data(), static_cast<std::int64_t>(rejected.size()), d, k, word_at);
  std::map<std::uint32_t, std::uint32_t> first;  // value -> its first draw
  for (std::int64_t i = k - 1; i >= 0; --i) first[draws[static_cast<std::size_t>(i)]] = i;
  const auto first_draw = [&](std::uint32_t t) { return first.at(t); };
  std::set<std::int64_t> kept;
  for (std::int64_t i = 0; i < k; ++i)
    kept.insert(random_k::KeptAt(draws.data(), first_draw, d, k, i));
  return {kept, used};
}

// The all-at-once form keeps the serial rule's set and uses its words, over collisions (k close
// to d), chains of steps keeping their j (k/d large), k = 1 and k = d, and d = 3 * 2^30, where a
// quarter of the first attempts and of their replacements are rejected.
TEST(RandomK, DrawsAtOnceKeepTheSerialRulesChoice) {
  for (const auto& [d, k] :
       std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 1},
                                                          {2, 1},
                                                          {20, 15},
                                                          {64, 64},
                                                          {1000, 999},
                                                          {1000, 300},
                                                          {5000, 1},
                                                          {std::int64_t{3} << 30, 3000}}) {
    RandomKChoice serial(d, k);
    for (std::uint64_t step = 1; step <= (d > 100000 ? 2 : 30); ++step) {
      SCOPED_TRACE(fmt::format("d = {}, k = {}, step {}", d, k, step));
      PhiloxStream stream = Stream(step);
      std::vector<std::uint32_t> words(static_cast<std::size_t>(k)), draws(words.size());
      PhiloxStream(Stream(step)).Fill(words);
      std::int64_t rejections = 0;
      for (std::int64_t i = 0; i < k; ++i) {
        draws[static_cast<std::size_t>(i)] =
            random_k::FirstAttempt(words[static_cast<std::size_t>(i)], d, k, i);
        rejections +=
            random_k::IsRejected(draws[static_cast<std::size_t>(i)], random_k::Range(d, k, i));
      }
      if (d > 100000) {
        EXPECT_GT(rejections, k / 5);
      }
      const auto [kept, used] = DrawsAtOnce(d, k, draws, Stream(step));
      const std::span<const std::uint32_t> expected = serial.Choose(stream);
      EXPECT_EQ(kept, std::set<std::int64_t>(expected.begin(), expected.end()));
      EXPECT_EQ(used, stream.position());
    }
  }
}

// The GPU's passes (batched/kernels.h) on the host backend: two rows' first attempts from their
// own streams, their rejections listed per chunk of draws and replaced in order, then kept as the
// serial rule keeps them (d = 3 * 2^30: many rejections, k over several chunks).
TEST(RandomK, BatchedPassesListAndReplaceTheRejectionsInOrder) {
  using batched::Backend;
  constexpr std::int64_t kRows = 2, d = std::int64_t{3} << 30, k = 2500;
  constexpr std::int64_t blocks = (k + 3) / 4,
                         chunks = (k + batched::kDrawChunk - 1) / batched::kDrawChunk;
  const batched::RowStreams streams{31, 0, static_cast<std::uint32_t>(Purpose::kWorkerCompression),
                                    9, 2};
  batched::Buffer<std::uint32_t> draws(Backend::kHost, kRows * k),
      rejected(Backend::kHost, kRows * k);
  batched::Buffer<unsigned long long> counts(Backend::kHost, kRows * chunks),
      totals(Backend::kHost, kRows);
  batched::ForEach(
      Backend::kHost, kRows * blocks,
      batched::FloydFirstAttempts{streams, d, k, blocks, chunks, draws.data(), counts.data()});
  batched::ForEach(Backend::kHost, kRows, batched::ChunkOffsets{chunks, counts.data()});
  batched::ForEach(Backend::kHost, kRows * chunks,
                   batched::ListRejected{draws.data(), d, k, chunks, counts.data(), rejected.data(),
                                         totals.data()});
  const std::vector<unsigned long long> rejections = totals.ToHost();
  batched::ForEach(
      Backend::kHost, kRows,
      batched::ReplaceRejected{streams, d, k, draws.data(), rejected.data(), totals.data()});
  RandomKChoice serial(d, k);
  for (std::int64_t row = 0; row < kRows; ++row) {
    SCOPED_TRACE(fmt::format("row {}", row));
    EXPECT_GT(rejections[static_cast<std::size_t>(row)], static_cast<unsigned long long>(k / 5));
    const std::vector<std::uint32_t> mine = draws.ToHost(static_cast<std::size_t>(row * k), k);
    PhiloxStream stream({31, Purpose::kWorkerCompression, static_cast<std::uint32_t>(2 + row), 9});
    // The replaced draws are final: the all-at-once resolution of them gives the serial set.
    std::map<std::uint32_t, std::uint32_t> first;
    for (std::int64_t i = k - 1; i >= 0; --i) first[mine[static_cast<std::size_t>(i)]] = i;
    std::set<std::int64_t> kept;
    for (std::int64_t i = 0; i < k; ++i) {
      kept.insert(random_k::KeptAt(
          mine.data(), [&](std::uint32_t t) { return first.at(t); }, d, k, i));
    }
    const std::span<const std::uint32_t> expected = serial.Choose(stream);
    EXPECT_EQ(kept, std::set<std::int64_t>(expected.begin(), expected.end()));
  }
}

TEST(RandomK, IndicesAreDistinctAscendingAndSizesExact) {
  for (const std::int64_t d : {1, 2, 7, 64, 65, 255, 256}) {
    for (const std::int64_t k : {std::int64_t{1}, (d + 1) / 2, d}) {
      auto c = MakeRandomK<float>(d, k, true);
      const Vector<float> x = TestVector(d).cast<float>();
      for (std::uint64_t step = 1; step <= 20; ++step) {
        Message m;
        PhiloxStream s = Stream(step);
        c->Encode(x, s, m);
        ASSERT_EQ(m.bits(), k * (8 + 32));
        const std::vector<int> kept = Kept(m, k);
        for (std::int64_t i = 0; i < k; ++i) {
          ASSERT_LT(kept[i], d);
          if (i > 0) {
            ASSERT_LT(kept[i - 1], kept[i]) << "d = " << d << ", k = " << k;
          }
        }
      }
    }
  }
}

TEST(RandomK, EveryIndexWithProbabilityKOverDAndEverySubsetAlike) {
  const int draws = 20000;
  {
    const std::int64_t d = 10, k = 3;
    auto c = MakeRandomK<float>(d, k, false);
    const Vector<float> x = Vector<float>::Ones(d);
    std::vector<int> count(d, 0);
    Message m;
    for (int n = 0; n < draws; ++n) {
      PhiloxStream s = Stream(static_cast<std::uint64_t>(n));
      c->Encode(x, s, m);
      for (const int j : Kept(m, k)) ++count[j];
    }
    const double p = static_cast<double>(k) / d;
    const double sigma = std::sqrt(draws * p * (1 - p));
    for (std::int64_t j = 0; j < d; ++j) {
      EXPECT_NEAR(count[j], draws * p, 5 * sigma) << "j = " << j;
    }
  }
  {
    // d = 5, k = 2: each of the C(5, 2) = 10 subsets with probability 1/10.
    auto c = MakeRandomK<float>(5, 2, false);
    const Vector<float> x = Vector<float>::Ones(5);
    std::map<std::vector<int>, int> count;
    Message m;
    for (int n = 0; n < draws; ++n) {
      PhiloxStream s = Stream(static_cast<std::uint64_t>(n));
      c->Encode(x, s, m);
      ++count[Kept(m, 2)];
    }
    ASSERT_EQ(count.size(), 10u);
    const double sigma = std::sqrt(draws * 0.1 * 0.9);
    for (const auto& [subset, n] : count) {
      EXPECT_NEAR(n, draws * 0.1, 5 * sigma) << subset[0] << ", " << subset[1];
    }
  }
}

TEST(RandomK, ScaledIsUnbiased) {
  const std::int64_t d = 20, k = 5;
  const int draws = 20000;
  auto c = MakeRandomK<double>(d, k, true);
  EXPECT_TRUE(c->unbiased());
  EXPECT_FALSE(c->q().has_value());
  const Vector<double> x = TestVector(d);
  Vector<double> sum = Vector<double>::Zero(d), y(d);
  Message m;
  for (int n = 0; n < draws; ++n) {
    PhiloxStream s = Stream(static_cast<std::uint64_t>(n));
    c->Encode(x, s, m);
    c->Decode(m, y);
    sum += y;
  }
  // y_j = (d/k) x_j with probability k/d, else 0: variance x_j^2 (d/k - 1).
  const double ratio = static_cast<double>(d) / k;
  for (std::int64_t j = 0; j < d; ++j) {
    const double sigma = std::abs(x[j]) * std::sqrt((ratio - 1) / draws);
    EXPECT_NEAR(sum[j] / draws, x[j], 5 * sigma) << "j = " << j;
  }
}

// E and Var of ||C(x) - x||^2 = c0 + c1 * sum_{j kept} x_j^2, the kept set a uniform k-subset:
// a sample without replacement of the a_j = x_j^2, whose sum has mean k mean(a) and variance
// k var(a) (d - k) / (d - 1) (var with divisor d).
struct ErrorMoments {
  double mean, variance;
};
ErrorMoments SquaredErrorMoments(const Vector<double>& x, std::int64_t k, double c0, double c1) {
  const double d = static_cast<double>(x.size());
  const Eigen::ArrayXd a = x.array().square();
  const double mean_a = a.mean();
  const double var_a = (a - mean_a).square().mean();
  return {c0 + c1 * k * mean_a, c1 * c1 * k * var_a * (d - k) / (d - 1)};
}

TEST(RandomK, SquaredErrorMatchesDomainFormula) {
  const std::int64_t d = 30, k = 6;
  const int draws = 20000;
  const Vector<double> x = TestVector(d);
  const double norm2 = x.squaredNorm();
  for (const bool scaled : {false, true}) {
    auto c = MakeRandomK<double>(d, k, scaled);
    EXPECT_EQ(c->unbiased(), scaled);
    double sum = 0;
    Vector<double> y(d);
    Message m;
    for (int n = 0; n < draws; ++n) {
      PhiloxStream s = Stream(static_cast<std::uint64_t>(n));
      c->Encode(x, s, m);
      c->Decode(m, y);
      sum += (y - x).squaredNorm();
    }
    // Unscaled: ||x||^2 - sum_kept; scaled: ||x||^2 + ((d/k - 1)^2 - 1) sum_kept.
    const double ratio = static_cast<double>(d) / k;
    const ErrorMoments e = scaled ? SquaredErrorMoments(x, k, norm2, (ratio - 1) * (ratio - 1) - 1)
                                  : SquaredErrorMoments(x, k, norm2, -1);
    const double expected = scaled ? (ratio - 1) * norm2 : (1 - 1.0 / ratio) * norm2;
    EXPECT_NEAR(e.mean, expected, 1e-12 * norm2)
        << "the moments agree with docs/conventions.md §14";
    EXPECT_NEAR(sum / draws, expected, 5 * std::sqrt(e.variance / draws)) << "scaled " << scaled;
  }
}

TEST(RandomK, DeterministicAndTheVariantsSendTheSameBytes) {
  const std::int64_t d = 100, k = 10;
  const Vector<float> x = TestVector(d).cast<float>();
  auto scaled = MakeRandomK<float>(d, k, true), plain = MakeRandomK<float>(d, k, false);
  Message a, b, c;
  PhiloxStream s1 = Stream(4), s2 = Stream(4), s3 = Stream(5);
  scaled->Encode(x, s1, a);
  plain->Encode(x, s2, b);
  plain->Encode(x, s3, c);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_NE(b.bytes, c.bytes) << "another step, another subset";
  Vector<float> ya(d), yb(d);
  scaled->Decode(a, ya);
  plain->Decode(b, yb);
  EXPECT_EQ(ya, (yb * 10.0f).eval()) << "the receiver applies d/k";
}

TEST(RandomK, KEqualToDIsExactEvenScaled) {
  const Vector<double> x = TestVector(40);
  auto c = MakeRandomK<double>(40, 40, true);
  Message m;
  PhiloxStream s = Stream(1);
  c->Encode(x, s, m);
  Vector<double> y(40);
  c->Decode(m, y);
  EXPECT_EQ(y, x);
}

TEST(RandomK, NonFiniteInputIsCountedWhereverItIs) {
  Vector<float> x = Vector<float>::Ones(50);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[40] = -std::numeric_limits<float>::infinity();
  auto c = MakeRandomK<float>(50, 1, true);
  Message m;
  PhiloxStream s = Stream(1);
  EXPECT_EQ(c->Encode(x, s, m).non_finite, 2);
}

TEST(RandomK, OptionErrors) {
  const auto make = [](const std::string& options, std::int64_t d = 10) {
    return UserErrorOf([&] {
      std::shared_ptr<OptionTable> table =
          ParseOptionTable("name = \"random-k\"\n" + options, "compressor");
      MakeCompressorMaker<double> (*table)(CompressorShape::Flat(d));
    });
  };
  EXPECT_EQ(make("fraction = 0.5\nscaled = false"), "(no error)");
  EXPECT_NE(make("k = 2\nfraction = 0.5").find("not both"), std::string::npos);
  EXPECT_NE(make("scaled = true").find("needs k"), std::string::npos);
  EXPECT_NE(make("k = 2\nscaled = 1").find("scaled must be true or false"), std::string::npos);
  const std::string too_many = make("k = 12", 5);
  EXPECT_NE(too_many.find("compressor 'random-k'"), std::string::npos) << too_many;
  EXPECT_NE(too_many.find("k = 12 is larger than the dimension d = 5"), std::string::npos)
      << too_many;
}

}  // namespace
}  // namespace lemmalab
