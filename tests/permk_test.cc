// PermK (compressors/permk.h): block sizes, hand-made messages decoded by any instance (the scale
// comes from the count), the documented draw rule replayed from the shared stream, the senders'
// blocks partitioning the coordinates with (1/n) sum_i C_i(x) = x exactly when n divides d (and
// not when it does not), n > d, uniform permutations, inclusion probability |B_i|/d, and
// E||C_i(x) - x||^2 = omega ||x||^2 with omega = d/|B_i| - 1 (5 sigma), n = 1 as the identity.
#include "compressors/permk.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "compressors/sparse.h"
#include "tests/compressor_examples.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

// The contract and split tests' configurations of permk (tests/compressor_examples.h).
// PermK: sender i of n keeps floor(d/n) positions, one more for the first d mod n senders, or
// one when n > d.
std::int64_t PermKBlock(const CompressorShape& s) {
  const std::int64_t d = s.dimension, n = s.senders;
  return n > d ? 1 : d / n + (s.sender < d % n ? 1 : 0);
}

const CompressorExamples kCompressorExamples(
    {
        {"PermK", R"(name = "permk")",
         [](const CompressorShape& s, int scalar_bits) {
           return SparseBits(s.dimension, PermKBlock(s), scalar_bits);
         }},
    },
    {
        {"PermK", R"(name = "permk")", SplitsNever},
    });

using Shape = CompressorShape;

PhiloxStream Stream(std::uint64_t step, std::uint32_t worker = 0) {
  return PhiloxStream({17, Purpose::kWorkerCompression, worker, step});
}

// The coordinates a message of a d <= 256 vector keeps (one index byte each, k values of T).
template <typename T>
std::vector<int> Kept(const Message& m) {
  const std::size_t k = m.bytes.size() / (1 + sizeof(T));
  return std::vector<int>(m.bytes.begin(), m.bytes.begin() + static_cast<std::ptrdiff_t>(k));
}

TEST(PermK, BlockSizes) {
  const auto sizes = [](std::int64_t d, int n) {
    std::vector<std::int64_t> s;
    for (int i = 0; i < n; ++i) s.push_back(PermKBlockSize(d, i, n));
    return s;
  };
  EXPECT_EQ(sizes(12, 4), (std::vector<std::int64_t>{3, 3, 3, 3}));
  EXPECT_EQ(sizes(13, 4), (std::vector<std::int64_t>{4, 3, 3, 3}));
  EXPECT_EQ(sizes(14, 4), (std::vector<std::int64_t>{4, 4, 3, 3}));
  EXPECT_EQ(sizes(7, 1), (std::vector<std::int64_t>{7}));
  EXPECT_EQ(sizes(3, 5), (std::vector<std::int64_t>{1, 1, 1, 1, 1}));  // n > d: one each
  for (const auto& [d, n] : std::vector<std::pair<std::int64_t, int>>{{13, 4}, {100, 7}, {5, 5}}) {
    const std::vector<std::int64_t> s = sizes(d, n);
    EXPECT_EQ(std::accumulate(s.begin(), s.end(), std::int64_t{0}), d) << "the blocks cover d";
  }
}

// Hand-made messages: the count in the message sets the scale d/k, whichever sender an instance
// was made for, so the aggregation point's instance (sender 0 of 1) decodes every sender.
TEST(PermK, DecodesAnySendersMessageFromItsCount) {
  const auto message = [](std::vector<std::uint8_t> indices, std::vector<float> values) {
    Message m;
    m.bytes = indices;
    for (const float v : values) {
      std::uint8_t b[4];
      std::memcpy(b, &v, 4);
      m.bytes.insert(m.bytes.end(), b, b + 4);
    }
    return m;
  };
  for (const Shape& shape : {Shape::Flat(4), Shape::Flat(4).ForSender(3, 4)}) {
    auto decoder = MakePermK<float>(shape);
    Vector<float> y(4);
    decoder->Decode(message({1, 3}, {1.5f, -2}), y);  // k = 2: scale 4/2
    EXPECT_EQ(y, (Vector<float>(4) << 0, 3, 0, -4).finished());
    decoder->Decode(message({2}, {0.25f}), y);  // k = 1: scale 4
    EXPECT_EQ(y, (Vector<float>(4) << 0, 0, 1, 0).finished());
    decoder->Decode(message({0, 1, 2, 3}, {1, 2, 3, 4}), y);  // k = d: scale 1
    EXPECT_EQ(y, (Vector<float>(4) << 1, 2, 3, 4).finished());
    Vector<float> acc = Vector<float>::Ones(4);
    decoder->DecodeAdd(message({0, 2}, {1, -1}), 0.5f, acc);
    EXPECT_EQ(acc, (Vector<float>(4) << 2, 1, 0, 1).finished());
  }
  auto decoder = MakePermK<float>(Shape::Flat(4));
  Vector<float> y(4);
  Message bad = message({2, 1}, {1, 1});  // not ascending
  EXPECT_THROW(decoder->Decode(bad, y), InternalError);
  bad.bytes.pop_back();  // not a whole number of entries
  EXPECT_THROW(decoder->Decode(bad, y), InternalError);
  EXPECT_THROW(decoder->Decode(Message{}, y), InternalError);  // k = 0
}

// One sender sends everything: the identity, with no draw.
TEST(PermK, OneSenderSendsEverythingAndDrawsNothing) {
  Vector<float> x(3);
  x << 1, -2, 0.5f;
  auto c = MakePermK<float>(Shape::Flat(3));
  EXPECT_TRUE(c->deterministic());
  EXPECT_EQ(c->omega(), 0.0);
  EXPECT_EQ(c->q(), 0.0);
  Message m;
  PhiloxStream s = Stream(1);
  c->Encode(x, s, m);
  EXPECT_EQ(s.position(), 0u);
  // Indices 0, 1, 2, then the three float32 values: 1 = 0x3f800000, -2 = 0xc0000000,
  // 0.5 = 0x3f000000.
  EXPECT_EQ(m.bytes,
            (std::vector<std::uint8_t>{0, 1, 2, 0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0, 0, 0, 0, 0x3f}));
  Vector<float> y(3);
  c->Decode(m, y);
  EXPECT_EQ(y, x);
}

// The draw rule of permk.h, replayed: Fisher-Yates over the shared stream, first attempts from
// its first d - 1 words and rejections after them; sender i keeps positions B_i.
TEST(PermK, FollowsTheDrawRule) {
  for (const auto& [d, n] :
       std::vector<std::pair<std::int64_t, int>>{{2, 2}, {13, 4}, {200, 3}, {300, 7}, {5, 8}}) {
    const Vector<double> x = testing::GaussianVector(d, 3);
    const std::uint64_t step = 40 + static_cast<std::uint64_t>(d);
    PhiloxStream words({17, Purpose::kSharedCompression, kGlobalStream, step});
    PhiloxStream extra = words;
    extra.Seek(static_cast<std::uint64_t>(d - 1));
    std::vector<std::int64_t> pi(static_cast<std::size_t>(d));
    std::iota(pi.begin(), pi.end(), 0);
    for (std::int64_t t = 0; t + 1 < d; ++t) {
      const std::int64_t p = d - 1 - t;
      const std::int64_t r = UniformBelow(p + 1, words(), [&] { return extra(); });
      std::swap(pi[p], pi[r]);
    }
    std::int64_t next = 0;
    for (int i = 0; i < n; ++i) {
      SCOPED_TRACE(::testing::Message() << "d = " << d << ", sender " << i << " of " << n);
      const std::int64_t size = PermKBlockSize(d, i, n);
      const std::int64_t first = n <= d ? next : i % d;
      next += size;
      std::set<std::int64_t> expected(pi.begin() + first, pi.begin() + first + size);
      auto c = MakePermK<double>(Shape::Flat(d).ForSender(i, n));
      EXPECT_EQ(c->omega(), static_cast<double>(d) / static_cast<double>(size) - 1);
      Message m;
      PhiloxStream s = Stream(step, static_cast<std::uint32_t>(i));
      c->Encode(x, s, m);
      EXPECT_EQ(s.position(), 0u) << "the given stream is not read";
      ASSERT_EQ(m.bits(), size * (8 * IndexBytes(d) + 64));
      Vector<double> y(d);
      c->Decode(m, y);
      const double scale = static_cast<double>(d) / static_cast<double>(size);
      for (std::int64_t j = 0; j < d; ++j) {
        EXPECT_EQ(y[j], expected.count(j) ? scale * x[j] : 0.0) << "j = " << j;
      }
    }
  }
}

// The senders of a step share the draw: it depends on the seed and step of the given stream,
// not on its worker or purpose; another step draws another permutation.
TEST(PermK, TheSendersOfAStepShareOneDraw) {
  const Vector<float> x = testing::GaussianVector(50, 4).cast<float>();
  auto c = MakePermK<float>(Shape::Flat(50).ForSender(1, 5));
  Message a, b, other;
  PhiloxStream s1 = Stream(9, 1);
  PhiloxStream s2 = Stream(9, 3);  // another worker's stream of the same step
  PhiloxStream s3 = Stream(10, 1);
  c->Encode(x, s1, a);
  c->Encode(x, s2, b);
  c->Encode(x, s3, other);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_NE(a.bytes, other.bytes);
  // A stream that is not a worker's (a probe's repeated draws on one input) is a draw of its own:
  // two probe streams of the same step give two permutations, and the stream is read.
  Message p1, p2;
  PhiloxStream probe1({17, Purpose::kProbe, 1, 9}), probe2({18, Purpose::kProbe, 1, 9});
  c->Encode(x, probe1, p1);
  c->Encode(x, probe2, p2);
  EXPECT_NE(p1.bytes, p2.bytes);
  EXPECT_NE(p1.bytes, a.bytes);
  EXPECT_GT(probe1.position(), 0u);
  EXPECT_FALSE(c->deterministic());
  EXPECT_TRUE(c->correlated_senders());
  EXPECT_FALSE(MakePermK<float>(Shape::Flat(50))->correlated_senders())
      << "one sender draws nothing";
}

// Encodes x for every sender of n at `step` and returns the messages.
template <typename T>
std::vector<Message> AllSenders(const Vector<T>& x, int n, std::uint64_t step) {
  std::vector<Message> messages(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    auto c = MakePermK<T>(Shape::Flat(x.size()).ForSender(i, n));
    PhiloxStream s = Stream(step, static_cast<std::uint32_t>(i));
    c->Encode(x, s, messages[static_cast<std::size_t>(i)]);
  }
  return messages;
}

// The property MARINA's PermK theory uses: with n | d the blocks partition the coordinates,
// each scaled by n, and the mean of the n decoded messages is x, bit for bit (n = 4: a scale of
// 4 and a mean over 4 are exact). With d = 13 the blocks still partition the coordinates, but
// the scales are 13/4 and 13/3, so the mean is x only in expectation.
template <typename T>
void MeanOverSendersIsExactWhenNDividesD() {
  for (const std::int64_t d : {12, 13}) {
    SCOPED_TRACE(::testing::Message() << "d = " << d);
    const Vector<T> x = testing::GaussianVector(d, 5).cast<T>();
    auto decoder = MakePermK<T>(Shape::Flat(d));  // the aggregation point's instance
    for (std::uint64_t step = 1; step <= 20; ++step) {
      const std::vector<Message> messages = AllSenders(x, 4, step);
      std::vector<int> senders_of(static_cast<std::size_t>(d), 0);
      Vector<T> mean = Vector<T>::Zero(d);
      for (const Message& m : messages) {
        for (const int j : Kept<T>(m)) ++senders_of[static_cast<std::size_t>(j)];
        decoder->DecodeAdd(m, T(1), mean);
      }
      mean /= T(4);
      EXPECT_EQ(senders_of, std::vector<int>(static_cast<std::size_t>(d), 1))
          << "every coordinate is sent by exactly one sender";
      if (d == 12) {
        EXPECT_EQ(mean, x) << "step " << step;
      } else {
        // Sender 0 (4 coordinates) scales by 13/4, the others (3 each) by 13/3.
        const std::vector<int> kept = Kept<T>(messages[0]);
        const std::set<int> first(kept.begin(), kept.end());
        for (std::int64_t j = 0; j < d; ++j) {
          const double factor = first.count(static_cast<int>(j)) ? 13.0 / 16 : 13.0 / 12;
          EXPECT_NEAR(mean[j], factor * x[j], 1e-6 * std::abs(x[j])) << "j = " << j;
        }
        EXPECT_NE(mean, x);
      }
    }
  }
}

TEST(PermK, MeanOverSendersIsExactlyXWhenNDividesD) {
  MeanOverSendersIsExactWhenNDividesD<float>();
  MeanOverSendersIsExactWhenNDividesD<double>();
}

// n > d: sender i sends position i mod d, scaled by d; with d | n every coordinate is sent by
// n/d senders and the mean is x (d = 4 of n = 8: scaled by 4, twice, over 8 senders: exactly).
TEST(PermK, MoreSendersThanCoordinates) {
  const Vector<double> x = testing::GaussianVector(4, 6);
  auto decoder = MakePermK<double>(Shape::Flat(4));
  for (std::uint64_t step = 1; step <= 10; ++step) {
    const std::vector<Message> messages = AllSenders(x, 8, step);
    std::vector<int> count(4, 0);
    Vector<double> mean = Vector<double>::Zero(4);
    for (std::size_t i = 0; i < messages.size(); ++i) {
      const std::vector<int> kept = Kept<double>(messages[i]);
      ASSERT_EQ(kept.size(), 1u);
      ++count[static_cast<std::size_t>(kept[0])];
      EXPECT_EQ(kept, Kept<double>(messages[i % 4])) << "senders i and i + d share a coordinate";
      decoder->DecodeAdd(messages[i], 1.0, mean);
    }
    EXPECT_EQ(count, (std::vector<int>{2, 2, 2, 2}));
    EXPECT_EQ((mean / 8).eval(), x);
  }
}

// d = n = 3: each sender gets one coordinate, and the three senders' coordinates are a uniform
// permutation of {0, 1, 2}: each of the 6 with probability 1/6 (5 sigma).
TEST(PermK, PermutationsAreUniform) {
  const int draws = 12000;
  const Vector<float> x = Vector<float>::Ones(3);
  std::map<std::vector<int>, int> count;
  for (int t = 0; t < draws; ++t) {
    std::vector<int> order;
    for (const Message& m : AllSenders(x, 3, static_cast<std::uint64_t>(t))) {
      order.push_back(Kept<float>(m).at(0));
    }
    ++count[order];
  }
  ASSERT_EQ(count.size(), 6u);
  const double sigma = std::sqrt(draws * (1.0 / 6) * (5.0 / 6));
  for (const auto& [order, n] : count) {
    EXPECT_NEAR(n, draws / 6.0, 5 * sigma) << order[0] << order[1] << order[2];
  }
}

// Sender 0 of 4 over d = 13 keeps |B_0| = 4 coordinates: each with probability 4/13, and
// E||C(x) - x||^2 = (13/4 - 1) ||x||^2 = omega ||x||^2 exactly (C_i is scaled random-k), checked
// within 5 standard errors of the sample mean; unbiased per coordinate likewise.
TEST(PermK, DeclaredOmegaHoldsWithEquality) {
  const std::int64_t d = 13;
  const int draws = 20000;
  const Vector<double> x = testing::GaussianVector(d, 7);
  auto c = MakePermK<double>(Shape::Flat(d).ForSender(0, 4));
  ASSERT_EQ(c->omega(), 2.25);
  EXPECT_TRUE(c->unbiased());
  std::vector<int> kept(d, 0);
  double sum = 0, sum_squares = 0;
  Vector<double> total = Vector<double>::Zero(d), y(d);
  Message m;
  for (int t = 0; t < draws; ++t) {
    PhiloxStream s = Stream(static_cast<std::uint64_t>(t));
    c->Encode(x, s, m);
    for (const int j : Kept<double>(m)) ++kept[static_cast<std::size_t>(j)];
    c->Decode(m, y);
    total += y;
    const double ratio = (y - x).squaredNorm() / x.squaredNorm();
    sum += ratio;
    sum_squares += ratio * ratio;
  }
  const double p = 4.0 / 13;
  for (std::int64_t j = 0; j < d; ++j) {
    EXPECT_NEAR(kept[j], draws * p, 5 * std::sqrt(draws * p * (1 - p))) << "j = " << j;
    // y_j = (13/4) x_j with probability 4/13, else 0: variance x_j^2 (13/4 - 1).
    EXPECT_NEAR(total[j] / draws, x[j], 5 * std::abs(x[j]) * std::sqrt(2.25 / draws));
  }
  const double mean = sum / draws;
  const double standard_error = std::sqrt((sum_squares / draws - mean * mean) / draws);
  EXPECT_NEAR(mean, *c->omega(), 5 * standard_error);
}

TEST(PermK, DimensionTooLargeForItsIndicesIsAUserError) {
  EXPECT_THROW(MakePermK<float>(Shape{(std::int64_t{1} << 32) + 1, {}}), UserError);
}

}  // namespace
}  // namespace lemmalab
