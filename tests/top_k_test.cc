// Top-k (spams.txt Definition 1): the hand-computed message on a tiny vector, ties to the lower
// index against a sorting reference, k = d exact, k from a fraction, index width at 256/257 and
// 65536/65537, the q of Remark 1 (attained by constant vectors), NaN ranked as +inf, and the
// option errors.
#include "compressors/top_k.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "engine/spec.h"
#include "tests/compressor_examples.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

// The contract and split tests' configurations of top-k (tests/compressor_examples.h).
const CompressorExamples kCompressorExamples(
    {
        // k = max(1, ceil(0.3 d)) = ceil(3d / 10).
        {"TopKFraction", "name = \"top-k\"\nfraction = 0.3",
         [](const CompressorShape& s, int scalar_bits) {
           return SparseBits(s.dimension, (3 * s.dimension + 9) / 10, scalar_bits);
         }},
        {"TopKCount", "name = \"top-k\"\nk = 1",
         [](const CompressorShape& s, int scalar_bits) {
           return SparseBits(s.dimension, 1, scalar_bits);
         }},
    },
    {
        {"TopKFraction", "name = \"top-k\"\nfraction = 0.3", SplitsNever},
        {"TopKCount", "name = \"top-k\"\nk = 1", SplitsNever},
    });

using testing::UserErrorOf;

PhiloxStream Stream() { return PhiloxStream({5, Purpose::kWorkerCompression, 0, 1}); }

template <typename T>
std::unique_ptr<Compressor<T>> FromToml(const std::string& toml, std::int64_t d) {
  std::shared_ptr<OptionTable> table = ParseOptionTable(toml, "compressor");
  return MakeCompressorMaker<T>(*table)(CompressorShape::Flat(d));
}

template <typename T>
Message EncodeTopK(const Vector<T>& x, std::int64_t k) {
  auto c = MakeTopK<T>(x.size(), k);
  Message m;
  PhiloxStream s = Stream();
  c->Encode(x, s, m);
  return m;
}

// The kept indices, read from the message of a d <= 256 vector (one byte each).
std::vector<int> Kept(const Message& m, std::int64_t k) {
  return std::vector<int>(m.bytes.begin(), m.bytes.begin() + k);
}

// Little-endian bytes of `v`, spelled out.
std::vector<std::uint8_t> Le(std::uint64_t v, int bytes) {
  std::vector<std::uint8_t> out;
  for (int b = 0; b < bytes; ++b) out.push_back(static_cast<std::uint8_t>(v >> (8 * b)));
  return out;
}

TEST(TopK, HandComputedMessage) {
  // |x| = 0.5, 3, 1, 3, 0.25: the two largest are the tied 3s at indices 1 and 3.
  {
    Vector<float> x(5);
    x << 0.5f, -3.0f, 1.0f, 3.0f, -0.25f;
    const std::vector<std::uint8_t> expected = {1,    3,                  // indices
                                                0x00, 0x00, 0x40, 0xC0,   // -3.0f
                                                0x00, 0x00, 0x40, 0x40};  // 3.0f
    EXPECT_EQ(EncodeTopK<float>(x, 2).bytes, expected);
  }
  {
    Vector<double> x(5);
    x << 0.5, -3.0, 1.0, 3.0, -0.25;
    const std::vector<std::uint8_t> expected = {1, 3,                           // indices
                                                0, 0, 0, 0, 0, 0, 0x08, 0xC0,   // -3.0
                                                0, 0, 0, 0, 0, 0, 0x08, 0x40};  // 3.0
    auto c = MakeTopK<double>(5, 2);
    Message m;
    PhiloxStream s = Stream();
    c->Encode(x, s, m);
    EXPECT_EQ(m.bytes, expected);
    EXPECT_EQ(s.position(), 0u) << "top-k draws nothing";
    Vector<double> y(5);
    c->Decode(m, y);
    EXPECT_EQ(y, (Vector<double>(5) << 0, -3, 0, 3, 0).finished());
  }
}

TEST(TopK, TiesGoToTheLowerIndex) {
  Vector<float> x(6);
  x << 1, -2, 2, 2, -2, 1;
  EXPECT_EQ(Kept(EncodeTopK<float>(x, 3), 3), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(Kept(EncodeTopK<float>(x, 5), 5), (std::vector<int>{0, 1, 2, 3, 4}));
  // -0 and +0 have the same magnitude.
  Vector<float> zeros(4);
  zeros << 0.0f, -0.0f, 0.0f, -0.0f;
  EXPECT_EQ(Kept(EncodeTopK<float>(zeros, 2), 2), (std::vector<int>{0, 1}));
}

TEST(TopK, EqualsAStableSortReferenceOnVectorsFullOfTies) {
  // Values from {-2, ..., 2}: most magnitudes tie, so any slip in the order shows.
  PhiloxStream s({77, Purpose::kDataSynthesis, kGlobalStream, 0});
  const std::int64_t d = 200;
  Vector<double> x(d);
  for (std::int64_t j = 0; j < d; ++j) x[j] = static_cast<double>(s() % 5) - 2.0;
  std::vector<int> order(d);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return std::abs(x[a]) > std::abs(x[b]); });
  for (const std::int64_t k : {1, 2, 39, 40, 41, 100, 199, 200}) {
    std::vector<int> expected(order.begin(), order.begin() + k);
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(Kept(EncodeTopK<double>(x, k), k), expected) << "k = " << k;
  }
}

// The kept indices by the definition: a full sort of (|x_j| descending, j ascending), NaN as
// +inf, the first k taken and put in index order.
template <typename T>
std::vector<std::uint32_t> ReferenceKept(const Vector<T>& x, std::int64_t k) {
  const auto magnitude = [&](std::uint32_t j) {
    return std::isnan(x[j]) ? std::numeric_limits<T>::infinity() : std::abs(x[j]);
  };
  std::vector<std::uint32_t> order(static_cast<std::size_t>(x.size()));
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return magnitude(a) > magnitude(b); });
  order.resize(static_cast<std::size_t>(k));
  std::sort(order.begin(), order.end());
  return order;
}

// The kept indices of a message with 4-byte indices (d > 65536).
std::vector<std::uint32_t> WideKept(const Message& m, std::int64_t k) {
  std::vector<std::uint32_t> kept(static_cast<std::size_t>(k));
  std::memcpy(kept.data(), m.bytes.data(), kept.size() * 4);
  return kept;
}

// Inputs that stress the threshold selection (compressors/top_k.cc): magnitudes spread over many
// exponents, all in one histogram bucket, all equal, a few huge values above a crowd, specials
// (NaN, infinities, denormals, signed zeros) mixed in.
template <typename T>
std::vector<std::pair<std::string, Vector<T>>> SelectionInputs(std::int64_t d) {
  PhiloxStream s({41, Purpose::kDataSynthesis, kGlobalStream, 0});
  const auto uniform = [&] { return std::ldexp(static_cast<T>(s()), -32); };
  std::vector<std::pair<std::string, Vector<T>>> inputs;
  Vector<T> x(d);
  for (auto& v : x) v = (uniform() - T(0.5)) * std::exp2(static_cast<T>(s() % 60) - 30);
  inputs.emplace_back("spread exponents", x);
  for (auto& v : x) v = T(1) + T(0.001) * uniform();  // one bucket
  inputs.emplace_back("one bucket", x);
  for (auto& v : x) v = (s() % 2 ? T(-0.75) : T(0.75));
  inputs.emplace_back("all equal magnitudes", x);
  for (auto& v : x) v = static_cast<T>(static_cast<int>(s() % 7) - 3);
  for (std::int64_t j = 0; j < d; j += 1000) x[j] = T(1e6) * (uniform() + 1);
  inputs.emplace_back("few large, many ties", x);
  const T specials[] = {std::numeric_limits<T>::quiet_NaN(),
                        std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(),
                        std::numeric_limits<T>::denorm_min(),
                        -T(0),
                        T(0),
                        std::numeric_limits<T>::max()};
  for (auto& v : x) v = s() % 8 == 0 ? specials[s() % 7] : uniform() - T(0.5);
  inputs.emplace_back("specials", x);
  return inputs;
}

template <typename T>
void ExpectDefinitionOnLargeVectors() {
  const std::int64_t d = 70'001;  // 4-byte indices
  for (const auto& [label, x] : SelectionInputs<T>(d)) {
    for (const std::int64_t k : {std::int64_t{1}, std::int64_t{7}, d / 100, d / 2, d - 1, d}) {
      EXPECT_EQ(WideKept(EncodeTopK<T>(x, k), k), ReferenceKept(x, k))
          << label << ", k = " << k << ", " << sizeof(T) * 8 << "-bit";
    }
  }
}

TEST(TopK, ThresholdSelectionKeepsTheDefinitionsSet) {
  ExpectDefinitionOnLargeVectors<float>();
  ExpectDefinitionOnLargeVectors<double>();
}

TEST(TopK, KEqualToDIsExact) {
  PhiloxStream s({3, Purpose::kDataSynthesis, kGlobalStream, 0});
  for (const std::int64_t d : {1, 9, 300}) {
    Vector<float> x(d);
    for (std::int64_t j = 0; j < d; ++j) x[j] = std::ldexp(static_cast<float>(s()), -20) - 2048;
    auto c = MakeTopK<float>(d, d);
    EXPECT_EQ(*c->q(), 0.0);
    Message m;
    PhiloxStream stream = Stream();
    c->Encode(x, stream, m);
    EXPECT_EQ(m.bits(), d * (8 * (d <= 256 ? 1 : 2) + 32));
    Vector<float> y(d);
    c->Decode(m, y);
    EXPECT_EQ(y, x) << "d = " << d;
  }
}

TEST(TopK, KFromAFraction) {
  struct Case {
    double fraction;
    std::int64_t d, k;
  };
  // 0.07 * 100 is 7.000000000000001 in double (and the double nearest 0.07 exceeds 0.07): the
  // product is taken as the integer it is within 1e-12 (relative) of, so 7 are kept, not 8;
  // a product really above an integer (3.000000001) still rounds up.
  for (const Case& c : {Case{0.07, 100, 7}, Case{0.14, 100, 14}, Case{0.3, 11, 4}, Case{0.3, 10, 3},
                        Case{0.001, 10, 1}, Case{0.5, 7, 4}, Case{1.0, 33, 33}, Case{1e-9, 1, 1},
                        Case{0.3000000001, 10, 4}}) {
    auto comp = FromToml<float>(fmt::format("name = \"top-k\"\nfraction = {}", c.fraction), c.d);
    const Vector<float> x = Vector<float>::LinSpaced(c.d, 1.0f, 2.0f);
    Message m;
    PhiloxStream s = Stream();
    comp->Encode(x, s, m);
    EXPECT_EQ(m.bits(), c.k * (8 + 32)) << "fraction " << c.fraction << ", d = " << c.d;
    EXPECT_DOUBLE_EQ(*comp->q(), std::sqrt(1.0 - static_cast<double>(c.k) / c.d));
  }
}

TEST(TopK, IndexWidthFollowsTheDimension) {
  struct Case {
    std::int64_t d;
    int index_bytes;
  };
  for (const Case& c : {Case{256, 1}, Case{257, 2}, Case{65536, 2}, Case{65537, 4}}) {
    // The last two coordinates are the largest, so the widest indices d - 2, d - 1 are sent.
    Vector<float> x = Vector<float>::Zero(c.d);
    x[c.d - 2] = -0.5f;
    x[c.d - 1] = 1.5f;
    std::vector<std::uint8_t> expected = Le(c.d - 2, c.index_bytes);
    for (const std::uint8_t b : Le(c.d - 1, c.index_bytes)) expected.push_back(b);
    for (const float v : {-0.5f, 1.5f}) {
      std::uint32_t bits;
      std::memcpy(&bits, &v, 4);
      for (const std::uint8_t b : Le(bits, 4)) expected.push_back(b);
    }
    auto comp = MakeTopK<float>(c.d, 2);
    Message m;
    PhiloxStream s = Stream();
    comp->Encode(x, s, m);
    EXPECT_EQ(m.bytes, expected) << "d = " << c.d;
    Vector<float> y(c.d);
    comp->Decode(m, y);
    EXPECT_EQ(y, x) << "d = " << c.d;
  }
  // Spelled out: d = 257 with the top coordinate at index 256 = 0x0100, low byte first.
  Vector<float> x = Vector<float>::Zero(257);
  x[256] = 1.0f;
  const Message m = EncodeTopK<float>(x, 1);
  EXPECT_EQ(m.bytes, (std::vector<std::uint8_t>{0x00, 0x01, 0x00, 0x00, 0x80, 0x3F}));
}

TEST(TopK, ErrorStaysWithinQAndConstantVectorsAttainIt) {
  PhiloxStream s({9, Purpose::kDataSynthesis, kGlobalStream, 0});
  const std::int64_t d = 50;
  for (const std::int64_t k : {1, 7, 25, 49}) {
    auto c = MakeTopK<double>(d, k);
    const double q2 = 1.0 - static_cast<double>(k) / d;
    EXPECT_DOUBLE_EQ(*c->q(), std::sqrt(q2));
    Vector<double> y(d);
    for (int trial = 0; trial < 20; ++trial) {
      Vector<double> x(d);
      for (std::int64_t j = 0; j < d; ++j) x[j] = std::ldexp(static_cast<double>(s()), -31) - 1;
      Message m;
      PhiloxStream stream = Stream();
      c->Encode(x, stream, m);
      c->Decode(m, y);
      EXPECT_LE((y - x).squaredNorm(), q2 * x.squaredNorm() * (1 + 1e-14));
      // The error is exactly the dropped coordinates.
      for (std::int64_t j = 0; j < d; ++j) ASSERT_TRUE(y[j] == 0 || y[j] == x[j]);
    }
    // Equal magnitudes: the bound holds with equality, so q cannot be smaller.
    const Vector<double> x = Vector<double>::Constant(d, -1.25);
    Message m;
    PhiloxStream stream = Stream();
    c->Encode(x, stream, m);
    c->Decode(m, y);
    // ||C(x) - x||^2 = (d - k) 1.25^2 = (1 - k/d) ||x||^2, exactly in binary.
    EXPECT_EQ((y - x).squaredNorm(), static_cast<double>(d - k) * 1.5625);
  }
}

TEST(TopK, NaNRanksAsInfinityAndIsCounted) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  Vector<float> x(6);
  x << 1e30f, 2.0f, -inf, 3.0f, 5.0f, nan;
  auto c = MakeTopK<float>(6, 1);
  Message m;
  PhiloxStream s = Stream();
  const EncodeStats stats = c->Encode(x, s, m);
  EXPECT_EQ(stats.non_finite, 2);
  EXPECT_EQ(stats.elements, 6);
  EXPECT_EQ(Kept(m, 1), std::vector<int>{2}) << "NaN ties with -inf, the lower index wins";
  auto c2 = MakeTopK<float>(6, 2);
  c2->Encode(x, s, m);
  EXPECT_EQ(Kept(m, 2), (std::vector<int>{2, 5}));
  Vector<float> y(6);
  c2->Decode(m, y);
  EXPECT_EQ(y[2], -inf);
  EXPECT_TRUE(std::isnan(y[5])) << "the receiver sees the NaN";
  EXPECT_EQ(y[0], 0.0f);
}

TEST(TopK, OptionErrorsNameTheRule) {
  const auto make = [](const std::string& options, std::int64_t d = 10) {
    return UserErrorOf([&] { FromToml<float>("name = \"top-k\"\n" + options, d); });
  };
  EXPECT_EQ(make("k = 3"), "(no error)");
  const std::string neither = make("");
  EXPECT_NE(neither.find("k (a count"), std::string::npos) << neither;
  EXPECT_NE(neither.find("fraction (a share of d"), std::string::npos) << neither;
  const std::string both = make("k = 3\nfraction = 0.5");
  EXPECT_NE(both.find("either k (a count) or fraction"), std::string::npos) << both;
  EXPECT_NE(make("k = 0").find("k must be >= 1, got 0"), std::string::npos);
  EXPECT_NE(make("k = 2.5").find("k must be an integer"), std::string::npos);
  EXPECT_NE(make("fraction = 0").find("fraction must be in (0, 1], got 0"), std::string::npos);
  EXPECT_NE(make("fraction = 1.5").find("fraction must be in (0, 1], got 1.5"), std::string::npos);
  const std::string too_many = make("k = 11");
  EXPECT_NE(too_many.find("compressor 'top-k'"), std::string::npos) << too_many;
  EXPECT_NE(too_many.find("k = 11 is larger than the dimension d = 10"), std::string::npos)
      << too_many;
  EXPECT_EQ(make("k = 10"), "(no error)");
  EXPECT_NE(make("k = 1\nkk = 2").find("kk"), std::string::npos) << "unknown keys are rejected";
}

}  // namespace
}  // namespace lemmalab
