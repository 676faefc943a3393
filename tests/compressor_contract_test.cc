// The contract every registered compressor keeps, checked for each configuration below in fp32 and
// fp64: exact message sizes on many shapes (including d = 1 and sizes not divisible by 8, 32 or
// the block size), decode consistency, determinism given the stream, the declared q on many
// random vectors (spams.txt Assumption 1), unbiasedness within a confidence bound for the
// compressors that declare it, the declared omega (unbiased ones only) and alpha as bounds on the
// mean of ||C(x) - x||^2 / ||x||^2 over fixed-seed draws, identical bytes from any stream where
// deterministic() is declared, fused error feedback equal to the unfused definition bit for bit,
// and non-finite input reported. The same checks run on the shapes of each of 4 senders
// (CompressorShape::ForSender), whose messages the aggregation point's instance (sender 0 of 1)
// must decode as the sender's own does.
//
// The configurations come from each compressor's own test file (tests/compressor_examples.h);
// the coverage test fails for a registered compressor that has none.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_01.hpp>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <set>
#include <sstream>
#include <vector>

#include "compressors/compressor.h"
#include "core/bits.h"
#include "engine/spec.h"
#include "tests/compressor_examples.h"
#include "tests/failures_of.h"
#include "tests/theory_doubles.h"

namespace lemmalab {
namespace {

using Shape = CompressorShape;
using Config = ContractExample;

// Every compressor test file's configurations (tests/compressor_examples.h).
const std::vector<Config>& Configs() { return ContractExamples(); }

// A small network's layers (weights and biases).
Shape Network() {
  return Shape{66,
               {Layer{"fc1.weight", 0, 7, 5}, Layer{"fc1.bias", 35, 7, 1},
                Layer{"fc2.weight", 42, 3, 7}, Layer{"fc2.bias", 63, 3, 1}}};
}

// Flat vectors of awkward sizes, and the network.
std::vector<Shape> Shapes() {
  std::vector<Shape> shapes;
  for (const std::int64_t d : {1, 2, 7, 8, 9, 31, 32, 33, 100, 1000, 4097}) {
    shapes.push_back(Shape::Flat(d));
  }
  shapes.push_back(Network());
  return shapes;
}

// The shapes of senders 0..3 of 4: 33 coordinates (blocks of 9, 8, 8, 8 for PermK), the network,
// and 2 coordinates (fewer than senders).
std::vector<Shape> SenderShapes() {
  std::vector<Shape> shapes;
  for (int i = 0; i < 4; ++i) shapes.push_back(Shape::Flat(33).ForSender(i, 4));
  shapes.push_back(Network().ForSender(1, 4));
  shapes.push_back(Shape::Flat(2).ForSender(3, 4));
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

std::string Describe(const Shape& shape) {
  std::ostringstream out;
  out << "d = " << shape.dimension << " (" << shape.layers.size() << " layers), sender "
      << shape.sender << " of " << shape.senders;
  return out.str();
}

template <typename T>
void RoundTrips(const Config& c, const std::vector<Shape>& shapes) {
  const CompressorMaker<T> make = Maker<T>(c);
  for (const Shape& shape : shapes) {
    SCOPED_TRACE(Describe(shape));
    const std::int64_t d = shape.dimension;
    // The aggregation point decodes every sender's messages with an instance made for the shape
    // without senders (optimizers/compressed_exchange.cc).
    auto a = make(shape), b = make(shape), receiver = make(shape.ForSender(0, 1));
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
      const Vector<T> x = RandomVector<T>(d, seed);
      Message m1, m2;
      PhiloxStream s1 = Stream(seed), s2 = Stream(seed);
      const EncodeStats stats = a->Encode(x, s1, m1);
      b->Encode(x, s2, m2);
      EXPECT_EQ(stats.elements, d);
      EXPECT_EQ(stats.non_finite, 0);
      EXPECT_TRUE(c.bits(shape, 8 * static_cast<int>(sizeof(T))).Allows(m1.bits()))
          << m1.bits() << " bits";
      EXPECT_EQ(m1.bytes, m2.bytes) << "same stream, same state, different message";
      Vector<T> y(d), received(d);
      a->Decode(m1, y);
      EXPECT_TRUE(y.allFinite());
      receiver->Decode(m1, received);
      EXPECT_EQ(received, y) << "the aggregation point's instance decodes differently";
      const Vector<T> start = RandomVector<T>(d, seed + 100);
      Vector<T> acc = start;
      a->DecodeAdd(m1, T(-0.75), acc);
      EXPECT_EQ(acc, (start + T(-0.75) * y).eval()) << "DecodeAdd differs from Decode";
    }
  }
}

template <typename T>
void KeepsDeclaredQ(const CompressorMaker<T>& make, const std::vector<Shape>& shapes = Shapes()) {
  for (const Shape& shape : shapes) {
    auto comp = make(shape);
    const std::optional<double> q = comp->q();
    if (!q) continue;
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
          << Describe(shape) << ", seed " << seed << ", q = " << *q;
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

// The shapes the expectation checks draw on: small enough for many draws.
std::vector<Shape> StatisticalShapes() {
  return {Shape::Flat(1), Shape::Flat(7), Shape::Flat(33), Network()};
}

// compressors/compressor.h's omega and alpha: E||C(x) - x||^2 <= omega ||x||^2 for an unbiased C,
// <= (1 - alpha) ||x||^2 for a contractive one. For each shape and random vector, the mean of
// ||C(x) - x||^2 / ||x||^2 over `draws` fixed-seed draws (one for a deterministic compressor) must
// not exceed the bound by more than 5 standard errors of that mean (the sample variance floored
// as in UnbiasedWhereDeclared): a bound that holds fails this with probability below 3e-7 per
// check, even where it holds with equality (random-k, PermK, lazy sending).
template <typename T>
void KeepsDeclaredOmegaAndAlpha(const CompressorMaker<T>& make,
                                const std::vector<Shape>& shapes = StatisticalShapes()) {
  const int draws = 600;
  for (const Shape& shape : shapes) {
    auto comp = make(shape);
    const std::optional<double> omega = comp->omega(), alpha = comp->alpha();
    if (omega) {
      EXPECT_TRUE(comp->unbiased())
          << "omega declared for a biased compressor, " << Describe(shape);
      EXPECT_GE(*omega, 0.0);
    }
    if (alpha) {
      EXPECT_GT(*alpha, 0.0);
      EXPECT_LE(*alpha, 1.0);
    }
    const std::pair<std::optional<double>, const char*> bounds[] = {
        {omega, "omega"}, {alpha ? std::optional(1 - *alpha) : std::nullopt, "1 - alpha"}};
    for (const auto& [bound, label] : bounds) {
      if (!bound) continue;
      for (std::uint64_t seed = 1; seed <= 6; ++seed) {
        const Vector<T> x = RandomVector<T>(shape.dimension, seed);
        const double norm2 = x.template cast<double>().squaredNorm();
        if (norm2 == 0) continue;
        const int n = comp->deterministic() ? 1 : draws;
        double sum = 0, sum_squares = 0, largest = 0;
        Vector<T> y(shape.dimension);
        Message m;
        for (int k = 0; k < n; ++k) {
          PhiloxStream s = Stream(static_cast<std::uint64_t>(k + 1));
          comp->Encode(x, s, m);
          comp->Decode(m, y);
          const double ratio = (y - x).template cast<double>().squaredNorm() / norm2;
          sum += ratio;
          sum_squares += ratio * ratio;
          largest = std::max(largest, ratio);
        }
        const double mean = sum / n;
        const double var = std::max(sum_squares / n - mean * mean, largest * largest / n);
        EXPECT_LE(mean, *bound * (1 + Tolerance<T>()) + 5 * std::sqrt(var / n) + 1e-12)
            << Describe(shape) << ", seed " << seed << ", " << label << " = " << *bound;
      }
    }
  }
}

// deterministic(): Encode ignores its stream, so streams of other seeds, steps, workers and
// purposes, or advanced ones, give the same bytes (from the same instance, after earlier encodes,
// and from a fresh one), and none of them is read.
template <typename T>
void DeterministicWhereDeclared(const CompressorMaker<T>& make,
                                const std::vector<Shape>& shapes = Shapes()) {
  for (const Shape& shape : shapes) {
    auto comp = make(shape);
    if (!comp->deterministic()) continue;
    const Vector<T> x = RandomVector<T>(shape.dimension, 2);
    PhiloxStream first = Stream(1);
    Message reference;
    comp->Encode(x, first, reference);
    EXPECT_EQ(first.position(), 0u) << Describe(shape);
    PhiloxStream others[] = {
        Stream(2), PhiloxStream({77, Purpose::kServerCompression, kServerStream, 9}), Stream(3)};
    others[2].Seek(1000);
    for (PhiloxStream& other : others) {
      const std::uint64_t start = other.position();
      Message m;
      comp->Encode(x, other, m);
      EXPECT_EQ(m.bytes, reference.bytes) << Describe(shape);
      EXPECT_EQ(other.position(), start) << Describe(shape);
    }
    Message fresh;
    PhiloxStream last = Stream(4);
    make(shape)->Encode(x, last, fresh);
    EXPECT_EQ(fresh.bytes, reference.bytes) << Describe(shape);
  }
}

template <typename T>
void FusedFeedbackEqualsDefinition(const Config& c, const std::vector<Shape>& shapes = Shapes()) {
  const CompressorMaker<T> make = Maker<T>(c);
  for (const Shape& shape : shapes) {
    SCOPED_TRACE(Describe(shape));
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
  RoundTrips<float>(GetParam(), Shapes());
  RoundTrips<double>(GetParam(), Shapes());
}
TEST_P(Contract, KeepsDeclaredQ) {
  KeepsDeclaredQ<float>(Maker<float>(GetParam()));
  KeepsDeclaredQ<double>(Maker<double>(GetParam()));
}
TEST_P(Contract, KeepsDeclaredOmegaAndAlpha) {
  KeepsDeclaredOmegaAndAlpha<float>(Maker<float>(GetParam()));
  KeepsDeclaredOmegaAndAlpha<double>(Maker<double>(GetParam()));
}
TEST_P(Contract, DeterministicWhereDeclared) {
  DeterministicWhereDeclared<float>(Maker<float>(GetParam()));
  DeterministicWhereDeclared<double>(Maker<double>(GetParam()));
}
// Every compressor, made for each of 4 senders: exact sizes, decoding by the aggregation point's
// instance, its declared constants, determinism and fused error feedback.
TEST_P(Contract, KeepsItsContractForEachOfFourSenders) {
  RoundTrips<float>(GetParam(), SenderShapes());
  RoundTrips<double>(GetParam(), SenderShapes());
  KeepsDeclaredQ<double>(Maker<double>(GetParam()), SenderShapes());
  KeepsDeclaredOmegaAndAlpha<double>(Maker<double>(GetParam()), SenderShapes());
  DeterministicWhereDeclared<float>(Maker<float>(GetParam()), SenderShapes());
  FusedFeedbackEqualsDefinition<float>(GetParam(), SenderShapes());
  FusedFeedbackEqualsDefinition<double>(GetParam(), SenderShapes());
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
// forwards to a real compressor but declares a smaller q, omega, alpha or unbiasedness, or
// determinism.
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

// `toml`'s compressor with the claims `claims(honest instance)` makes, and its own unbiasedness.
CompressorMaker<double> Claiming(
    const std::string& toml,
    std::function<Overclaiming::Claims(const Compressor<double>&)> claims) {
  const CompressorMaker<double> inner = Maker<double>({"", toml, {}});
  return [inner, claims](const Shape& s) -> std::unique_ptr<Compressor<double>> {
    std::unique_ptr<Compressor<double>> honest = inner(s);
    Overclaiming::Claims c = claims(*honest);
    c.unbiased = honest->unbiased();
    return std::make_unique<Overclaiming>(std::move(honest), c);
  };
}

using ::lemmalab::testing::FailuresOf;

// Scaled random-k keeping a quarter has omega = d/k - 1 with equality; claiming half of it is
// caught by the same check that passes the honest value.
TEST(ContractNegativeControl, AnOverclaimedOmegaIsCaught) {
  const std::string toml = "name = \"random-k\"\nfraction = 0.25";
  const auto omega_times = [&](double factor) {
    return Claiming(toml, [factor](const Compressor<double>& c) {
      return Overclaiming::Claims{.omega = *c.omega() * factor};
    });
  };
  EXPECT_EQ(FailuresOf([&] { KeepsDeclaredOmegaAndAlpha<double>(omega_times(1)); }), 0);
  EXPECT_GT(FailuresOf([&] { KeepsDeclaredOmegaAndAlpha<double>(omega_times(0.5)); }), 0);
  // And omega on a biased compressor (unscaled random-k) is refused outright.
  EXPECT_GT(FailuresOf([&] {
              KeepsDeclaredOmegaAndAlpha<double>(Claiming(
                  "name = \"random-k\"\nfraction = 0.5\nscaled = false",
                  [](const Compressor<double>&) { return Overclaiming::Claims{.omega = 10.0}; }));
            }),
            0);
}

// Unscaled random-k keeping half has alpha = k/d with equality; claiming 1.5 times it is caught.
TEST(ContractNegativeControl, AnOverclaimedAlphaIsCaught) {
  const std::string toml = "name = \"random-k\"\nfraction = 0.5\nscaled = false";
  const auto alpha_times = [&](double factor) {
    return Claiming(toml, [factor](const Compressor<double>& c) {
      return Overclaiming::Claims{.alpha = std::min(1.0, *c.alpha() * factor)};
    });
  };
  EXPECT_EQ(FailuresOf([&] { KeepsDeclaredOmegaAndAlpha<double>(alpha_times(1)); }), 0);
  EXPECT_GT(FailuresOf([&] { KeepsDeclaredOmegaAndAlpha<double>(alpha_times(1.5)); }), 0);
}

// Random-k claiming to ignore its stream is caught; top-k, which does, passes.
TEST(ContractNegativeControl, AFalseDeterminismClaimIsCaught) {
  const auto deterministic = [](const std::string& toml) {
    return Claiming(toml, [](const Compressor<double>&) {
      return Overclaiming::Claims{.deterministic = true};
    });
  };
  EXPECT_EQ(FailuresOf([&] {
              DeterministicWhereDeclared<double>(deterministic("name = \"top-k\"\nk = 1"));
            }),
            0);
  EXPECT_GT(
      FailuresOf([&] {
        DeterministicWhereDeclared<double>(deterministic("name = \"random-k\"\nfraction = 0.5"));
      }),
      0);
}

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
