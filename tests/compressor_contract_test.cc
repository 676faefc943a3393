// The contract every registered compressor keeps, checked for each configuration below in fp32 and
// fp64: exact message sizes on many shapes (including d = 1 and sizes not divisible by 8, 32 or
// the block size), decode consistency, determinism given the stream, the declared q on many
// random vectors (spams.txt Assumption 1), unbiasedness within a confidence bound for the
// compressors that declare it, fused error feedback equal to the unfused definition bit for bit,
// and non-finite input reported.
//
// Adding a compressor adds a line to Configs(); the test fails for a registered compressor that
// has none.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_01.hpp>
#include <cmath>
#include <functional>
#include <set>

#include "cli/spec.h"
#include "compressors/compressor.h"
#include "core/bits.h"
#include "tests/failures_of.h"
#include "tests/theory_doubles.h"

namespace lemmalab {
namespace {

using Shape = CompressorShape;

struct Config {
  std::string label;  // test name suffix
  std::string toml;   // the component table
  // The message size in bits for a shape, with scalars of `scalar_bits` (32 or 64).
  std::function<std::int64_t(const Shape&, int scalar_bits)> bits;
};

// gtest prints a parameter in test names and failures: the label, not the bytes.
void PrintTo(const Config& c, std::ostream* os) { *os << c.label; }

std::int64_t SignBits(std::int64_t d) { return 8 * PackedBytes(d); }
std::int64_t Chunks(std::int64_t d, std::int64_t size) { return (d + size - 1) / size; }
// PowerSGD: (rows + cols) r' scalars per matrix layer, r' = min(rank, rows, cols); vector
// layers (a flat shape is one) raw.
std::int64_t PowerSgdBits(const Shape& s, std::int64_t rank, int scalar_bits) {
  std::int64_t scalars = 0;
  for (const Layer& l : s.layers) {
    const bool matrix = l.rows > 1 && l.cols > 1;
    scalars += matrix ? (l.rows + l.cols) * std::min({rank, l.rows, l.cols}) : l.size();
  }
  return scalar_bits * scalars;
}
// A float32 scale and d fields of `width` bits in a packed bit-stream.
std::int64_t ScaleAndFields(std::int64_t d, std::int64_t width) {
  return 32 + 8 * Chunks(d * width, 8);
}
// k indices of the narrowest unsigned type holding d - 1, then k values of the run's precision.
std::int64_t SparseBits(std::int64_t d, std::int64_t k, int scalar_bits) {
  const std::int64_t index_bits = d <= 256 ? 8 : d <= 65536 ? 16 : 32;
  return k * (index_bits + scalar_bits);
}

std::vector<Config> Configs() {
  return {
      {"Identity", R"(name = "identity")",
       [](const Shape& s, int scalar_bits) { return scalar_bits * s.dimension; }},
      {"Sign", R"(name = "sign")", [](const Shape& s, int) { return SignBits(s.dimension); }},
      {"ScaledSign", R"(name = "scaled-sign")",
       [](const Shape& s, int) { return SignBits(s.dimension) + 32; }},
      {"ScaledSignChunks", "name = \"scaled-sign\"\nchunk = 5",
       [](const Shape& s, int) { return SignBits(s.dimension) + 32 * Chunks(s.dimension, 5); }},
      {"BlockSignLayers", R"(name = "block-sign")",
       [](const Shape& s, int) {
         return SignBits(s.dimension) + 32 * static_cast<std::int64_t>(s.layers.size());
       }},
      {"BlockSignFixed", "name = \"block-sign\"\nblocks = \"fixed\"\nblock_size = 6",
       [](const Shape& s, int) { return SignBits(s.dimension) + 32 * Chunks(s.dimension, 6); }},
      {"StochasticBinaryClip", R"(name = "stochastic-binary")",
       [](const Shape& s, int) { return SignBits(s.dimension); }},
      {"StochasticBinaryRescale", "name = \"stochastic-binary\"\ndomain = \"rescale\"",
       [](const Shape& s, int) { return SignBits(s.dimension) + 32; }},
      {"PowerSgdRank1", "name = \"powersgd\"\nrank = 1",
       [](const Shape& s, int scalar_bits) { return PowerSgdBits(s, 1, scalar_bits); }},
      {"PowerSgdRank3", "name = \"powersgd\"\nrank = 3",
       [](const Shape& s, int scalar_bits) { return PowerSgdBits(s, 3, scalar_bits); }},
      // QSGD: levels s take ceil(log2(s + 1)) bits, plus a sign bit.
      {"QsgdTwoNorm", R"(name = "qsgd")",  // s = 4: 3 + 1 bits
       [](const Shape& s, int) { return ScaleAndFields(s.dimension, 4); }},
      {"QsgdInfNorm", "name = \"qsgd\"\nnorm = \"inf\"\nlevels = 1",
       [](const Shape& s, int) { return ScaleAndFields(s.dimension, 2); }},
      {"QsgdManyLevels", "name = \"qsgd\"\nlevels = 255",
       [](const Shape& s, int) { return ScaleAndFields(s.dimension, 9); }},
      {"QsgdFiveLevels", "name = \"qsgd\"\nlevels = 5\nnorm = \"inf\"",
       [](const Shape& s, int) { return ScaleAndFields(s.dimension, 4); }},
      {"TernGrad", R"(name = "terngrad")",
       [](const Shape& s, int) { return ScaleAndFields(s.dimension, 2); }},
      // Natural compression: one exponent byte per element, then the packed sign bits.
      {"Natural", R"(name = "natural")",
       [](const Shape& s, int) { return 8 * s.dimension + SignBits(s.dimension); }},
      {"Fp16", R"(name = "fp16")", [](const Shape& s, int) { return 16 * s.dimension; }},
      {"Bf16", R"(name = "bf16")", [](const Shape& s, int) { return 16 * s.dimension; }},
      // k = max(1, ceil(0.3 d)) = ceil(3d / 10).
      {"TopKFraction", "name = \"top-k\"\nfraction = 0.3",
       [](const Shape& s, int scalar_bits) {
         return SparseBits(s.dimension, (3 * s.dimension + 9) / 10, scalar_bits);
       }},
      {"TopKCount", "name = \"top-k\"\nk = 1",
       [](const Shape& s, int scalar_bits) { return SparseBits(s.dimension, 1, scalar_bits); }},
      {"RandomKScaled", "name = \"random-k\"\nfraction = 0.25",
       [](const Shape& s, int scalar_bits) {
         return SparseBits(s.dimension, Chunks(s.dimension, 4), scalar_bits);
       }},
      {"RandomKUnscaled", "name = \"random-k\"\nfraction = 0.5\nscaled = false",
       [](const Shape& s, int scalar_bits) {
         return SparseBits(s.dimension, Chunks(s.dimension, 2), scalar_bits);
       }},
  };
}

// Flat vectors of awkward sizes, and a small network's layers (weights and biases).
std::vector<Shape> Shapes() {
  std::vector<Shape> shapes;
  for (const std::int64_t d : {1, 2, 7, 8, 9, 31, 32, 33, 100, 1000, 4097}) {
    shapes.push_back(Shape::Flat(d));
  }
  shapes.push_back(Shape{66,
                         {Layer{"fc1.weight", 0, 7, 5}, Layer{"fc1.bias", 35, 7, 1},
                          Layer{"fc2.weight", 42, 3, 7}, Layer{"fc2.bias", 63, 3, 1}}});
  return shapes;
}

template <typename T>
CompressorMaker<T> Maker(const Config& c) {
  std::shared_ptr<OptionTable> table = ParseOptionTable(c.toml, "compressor");
  return MakeCompressorMaker<T>(*table);
}

PhiloxStream Stream(std::uint64_t step) {
  return PhiloxStream({2024, Purpose::kWorkerCompression, 1, step});
}

// Random vectors of several kinds: Gaussian, Gaussian with zeros, heavy-tailed, constant,
// one-hot, and tiny values.
template <typename T>
Vector<T> RandomVector(std::int64_t d, std::uint64_t seed) {
  PhiloxStream s({seed, Purpose::kDataSynthesis, kGlobalStream, 0});
  boost::random::normal_distribution<double> normal;
  boost::random::uniform_01<double> uniform;
  Vector<T> x(d);
  const int kind = static_cast<int>(seed % 6);
  for (std::int64_t j = 0; j < d; ++j) {
    double v = normal(s);
    if (kind == 1 && uniform(s) < 0.3) v = 0;
    if (kind == 2) v = v * std::exp(3 * normal(s));
    if (kind == 3) v = 0.7;
    if (kind == 4) v = j == d / 2 ? -3.0 : 0.0;
    if (kind == 5) v *= 1e-6;
    x[j] = static_cast<T>(v);
  }
  return x;
}

template <typename T>
double Tolerance() {
  return std::is_same_v<T, float> ? 1e-5 : 1e-12;
}

class Contract : public ::testing::TestWithParam<Config> {};

template <typename T>
void RoundTrips(const Config& c) {
  const CompressorMaker<T> make = Maker<T>(c);
  for (const Shape& shape : Shapes()) {
    SCOPED_TRACE(::testing::Message() << "d = " << shape.dimension);
    const std::int64_t d = shape.dimension;
    auto a = make(shape), b = make(shape);
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
      const Vector<T> x = RandomVector<T>(d, seed);
      Message m1, m2;
      PhiloxStream s1 = Stream(seed), s2 = Stream(seed);
      const EncodeStats stats = a->Encode(x, s1, m1);
      b->Encode(x, s2, m2);
      EXPECT_EQ(stats.elements, d);
      EXPECT_EQ(stats.non_finite, 0);
      EXPECT_EQ(m1.bits(), c.bits(shape, 8 * static_cast<int>(sizeof(T))));
      EXPECT_EQ(m1.bytes, m2.bytes) << "same stream, same state, different message";
      Vector<T> y(d);
      a->Decode(m1, y);
      EXPECT_TRUE(y.allFinite());
      const Vector<T> start = RandomVector<T>(d, seed + 100);
      Vector<T> acc = start;
      a->DecodeAdd(m1, T(-0.75), acc);
      EXPECT_EQ(acc, (start + T(-0.75) * y).eval()) << "DecodeAdd differs from Decode";
    }
  }
}

template <typename T>
void KeepsDeclaredQ(const CompressorMaker<T>& make) {
  for (const Shape& shape : Shapes()) {
    auto comp = make(shape);
    const std::optional<double> q = comp->q();
    if (!q) return;
    ASSERT_GE(*q, 0.0);
    ASSERT_LT(*q, 1.0);
    for (std::uint64_t seed = 1; seed <= 30; ++seed) {
      const Vector<T> x = RandomVector<T>(shape.dimension, seed);
      Message m;
      PhiloxStream s = Stream(seed);
      comp->Encode(x, s, m);
      Vector<T> y(shape.dimension);
      comp->Decode(m, y);
      const double err = (y - x).template cast<double>().norm();
      const double norm = x.template cast<double>().norm();
      EXPECT_LE(err, *q * norm * (1 + Tolerance<T>()) + 1e-30)
          << "d = " << shape.dimension << ", seed " << seed << ", q = " << *q;
    }
  }
}

template <typename T>
void UnbiasedWhereDeclared(const CompressorMaker<T>& make) {
  const Shape shape = Shape::Flat(33);
  auto comp = make(shape);
  if (!comp->unbiased()) return;
  const Vector<T> x = RandomVector<T>(33, 7);
  const int draws = 4000;
  Eigen::VectorXd sum = Eigen::VectorXd::Zero(33), sq = Eigen::VectorXd::Zero(33);
  Eigen::VectorXd largest = Eigen::VectorXd::Zero(33);
  Vector<T> y(33);
  Message m;
  for (int k = 0; k < draws; ++k) {
    PhiloxStream s = Stream(static_cast<std::uint64_t>(k + 1));
    comp->Encode(x, s, m);
    comp->Decode(m, y);
    const Eigen::VectorXd yd = y.template cast<double>();
    sum += yd;
    sq += yd.cwiseAbs2();
    largest = largest.cwiseMax(yd.cwiseAbs());
  }
  for (int j = 0; j < 33; ++j) {
    const double mean = sum[j] / draws;
    // The sample variance, floored at that of an outcome seen once in `draws` (a rare outcome
    // never drawn leaves the sample variance at 0 although the true one is not).
    const double var = std::max(sq[j] / draws - mean * mean, largest[j] * largest[j] / draws);
    // 5 standard errors of the mean: fails with probability < 1e-6 per coordinate if unbiased.
    EXPECT_NEAR(mean, static_cast<double>(x[j]),
                5 * std::sqrt(var / draws) + Tolerance<T>() * std::abs(x[j]) + 1e-30)
        << "j = " << j;
  }
}

template <typename T>
void FusedFeedbackEqualsDefinition(const Config& c) {
  const CompressorMaker<T> make = Maker<T>(c);
  for (const Shape& shape : Shapes()) {
    SCOPED_TRACE(::testing::Message() << "d = " << shape.dimension);
    const std::int64_t d = shape.dimension;
    auto fused = make(shape), plain = make(shape);
    Vector<T> e = RandomVector<T>(d, 11) * T(0.1), e_ref = e;
    for (std::uint64_t t = 1; t <= 3; ++t) {
      const Vector<T> x = RandomVector<T>(d, t);
      const T a = t == 2 ? T(0.5) : T(1);
      Message m_fused, m_ref;
      PhiloxStream s1 = Stream(t), s2 = Stream(t);
      fused->EncodeWithFeedback(x, a, e, s1, m_fused);
      const Vector<T> u = x + a * e_ref;
      plain->Encode(u, s2, m_ref);
      Vector<T> decoded(d);
      plain->Decode(m_ref, decoded);
      e_ref = u - decoded;
      ASSERT_EQ(m_fused.bytes, m_ref.bytes) << "step " << t;
      ASSERT_EQ(e, e_ref) << "step " << t;
    }
  }
}

template <typename T>
void ReportsNonFiniteInput(const Config& c) {
  const Shape shape = Shape::Flat(40);
  for (const T bad : {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity()}) {
    auto comp = Maker<T>(c)(shape);
    Vector<T> x = RandomVector<T>(40, 3);
    x[17] = bad;
    Message m;
    PhiloxStream s = Stream(1);
    EXPECT_GE(comp->Encode(x, s, m).non_finite, 1) << "input " << bad;
  }
}

// Compressor::draws_word_per_element: element j is decided by word j of the stream from where
// Encode starts. Where the input is constant every element faces the same decision, so starting
// the stream one word later must shift those decoded elements by one; and Encode uses exactly d
// words. (The last element, larger, sets the norms and scales so that the decisions are random.)
// Returns whether that holds (the trace names the word behind each element on this promise).
template <typename T>
bool DrawsWordPerElement(const CompressorMaker<T>& make) {
  const Shape shape = Shape::Flat(37);
  Vector<T> x = Vector<T>::Constant(37, T(0.3));
  x[36] = T(1);
  auto comp = make(shape);
  Message m0, m1;
  PhiloxStream s0 = Stream(5), s1 = Stream(5);
  s1.Seek(1);
  comp->Encode(x, s0, m0);
  comp->Encode(x, s1, m1);
  Vector<T> y0(37), y1(37);
  comp->Decode(m0, y0);
  comp->Decode(m1, y1);
  // Both outcomes occur among the constant elements, so a shift would show.
  EXPECT_NE(y0.head(36).minCoeff(), y0.head(36).maxCoeff());
  return s0.position() == 37 && y1.head(35) == y0.segment(1, 35);
}

TEST_P(Contract, DrawsTheWordItDeclaresPerElement) {
  for (const bool fp64 : {false, true}) {
    auto f32 = Maker<float>(GetParam())(Shape::Flat(37));
    if (!f32->draws_word_per_element()) return;
    EXPECT_TRUE(fp64 ? DrawsWordPerElement<double>(Maker<double>(GetParam()))
                     : DrawsWordPerElement<float>(Maker<float>(GetParam())))
        << (fp64 ? "fp64" : "fp32");
  }
}

TEST_P(Contract, RoundTripsWithExactSizes) {
  RoundTrips<float>(GetParam());
  RoundTrips<double>(GetParam());
}
TEST_P(Contract, KeepsDeclaredQ) {
  KeepsDeclaredQ<float>(Maker<float>(GetParam()));
  KeepsDeclaredQ<double>(Maker<double>(GetParam()));
}
TEST_P(Contract, UnbiasedWhereDeclared) {
  UnbiasedWhereDeclared<float>(Maker<float>(GetParam()));
  UnbiasedWhereDeclared<double>(Maker<double>(GetParam()));
}
TEST_P(Contract, FusedFeedbackEqualsDefinition) {
  FusedFeedbackEqualsDefinition<float>(GetParam());
  FusedFeedbackEqualsDefinition<double>(GetParam());
}
TEST_P(Contract, ReportsNonFiniteInput) {
  ReportsNonFiniteInput<float>(GetParam());
  ReportsNonFiniteInput<double>(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Compressors, Contract, ::testing::ValuesIn(Configs()),
                         [](const auto& param) { return param.param.label; });

// Negative controls: a compressor that claims more than it delivers is caught. `Overclaiming`
// forwards to a real compressor but declares a smaller q or unbiasedness.
using testing::Overclaiming;

// Top-k keeping 30%, declaring q^2 = 1 - `declared_fraction` (honest: 0.3).
void TopKDeclaring(double declared_fraction) {
  const CompressorMaker<double> inner = Maker<double>({"", "name = \"top-k\"\nfraction = 0.3", {}});
  KeepsDeclaredQ<double>([&](const Shape& s) -> std::unique_ptr<Compressor<double>> {
    return std::make_unique<Overclaiming>(inner(s), std::sqrt(1 - declared_fraction), false);
  });
}

// Birder's Q with clipping declared unbiased on the test's vectors, which leave [-1, 1]; and,
// as the honest counterpart, with the rescale policy.
void BinaryQClaimingUnbiased(const std::string& domain) {
  const CompressorMaker<double> inner =
      Maker<double>({"", "name = \"stochastic-binary\"\ndomain = \"" + domain + "\"", {}});
  UnbiasedWhereDeclared<double>([&](const Shape& s) -> std::unique_ptr<Compressor<double>> {
    return std::make_unique<Overclaiming>(inner(s), std::nullopt, true);
  });
}

using ::lemmalab::testing::FailuresOf;

TEST(ContractNegativeControl, AnOverclaimedQIsCaught) {
  EXPECT_EQ(FailuresOf([] { TopKDeclaring(0.3); }), 0);
  EXPECT_GT(FailuresOf([] { TopKDeclaring(0.35); }), 0);
}

TEST(ContractNegativeControl, AFalseUnbiasednessClaimIsCaught) {
  EXPECT_EQ(FailuresOf([] { BinaryQClaimingUnbiased("rescale"); }), 0);
  EXPECT_GT(FailuresOf([] { BinaryQClaimingUnbiased("clip"); }), 0);
}

TEST(ContractNegativeControl, ADifferentDrawOrderIsCaught) {
  // Scaled random-k draws its k indices with Floyd's algorithm, not a word per element.
  const CompressorMaker<double> random_k =
      Maker<double>({"", "name = \"random-k\"\nfraction = 0.5\nscaled = true", {}});
  EXPECT_FALSE(random_k(Shape::Flat(37))->draws_word_per_element());
  EXPECT_FALSE(DrawsWordPerElement<double>(random_k));
  // And the honest declarations hold.
  EXPECT_TRUE(DrawsWordPerElement<double>(Maker<double>({"", "name = \"stochastic-binary\"", {}})));
}

TEST(ContractCoverage, EveryRegisteredCompressorHasAConfiguration) {
  std::set<std::string> covered;
  for (const Config& c : Configs())
    covered.insert(ParseOptionTable(c.toml, "c")->RequireString("name"));
  for (const std::string& name : Compressors().names()) {
    EXPECT_TRUE(covered.count(name)) << "no contract configuration for '" << name << "'";
  }
}

}  // namespace
}  // namespace lemmalab
