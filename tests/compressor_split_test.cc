// Compressor::Split and CompressorShape::Restrict, for the chunked collectives (1-bit Adam's
// compressed allreduce, onebit-adam.txt Sec. 6 and docs/conventions.md §5; Birder's hierarchical
// all-reduce, birder.txt Sec. 4).
//
// For every registered compressor, in several configurations, fp32 and fp64: a message of the
// whole vector is split at 64-aligned bounds (one chunk; 2, 3 and 8 even chunks; uneven ones; cuts
// through a layer and on a layer boundary), each part is decoded by a fresh instance of the same
// configuration made for shape.Restrict(lo, hi), and the result must equal the segment of the
// whole decode bit for bit (Decode and DecodeAdd). Whether Split succeeds is part of the
// expectation: each configuration states for which bounds its format splits, and the coverage
// test pins the set of compressors that split, so a regression that stops one splitting fails.
// Negative controls plant wrong parts and show the comparison catches them.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_01.hpp>
#include <cmath>
#include <cstring>
#include <functional>
#include <set>
#include <sstream>

#include "compressors/compressor.h"
#include "core/error.h"
#include "engine/spec.h"
#include "tests/compressor_examples.h"
#include "tests/failures_of.h"

namespace lemmalab {
namespace {

using Shape = CompressorShape;
using Bounds = ChunkBounds;
using Config = SplitExample;

// Every compressor test file's configurations (tests/compressor_examples.h).
const std::vector<Config>& Configs() { return SplitExamples(); }

// A small network: w1 [0, 640), b1 [640, 656), w2 [656, 1106), b2 [1106, 1116).
Shape Network() {
  return Shape{1116,
               {Layer{"w1", 0, 16, 40}, Layer{"b1", 640, 16, 1}, Layer{"w2", 656, 10, 45},
                Layer{"b2", 1106, 10, 1}}};
}

std::vector<Shape> Shapes() {
  return {Shape::Flat(64), Shape::Flat(1000), Shape::Flat(4096 + 13), Shape{200, {}}, Network()};
}

// n chunks of equal 64-aligned length (the last shorter), as a collective over n ranks cuts.
Bounds EvenBounds(std::int64_t d, std::int64_t n) {
  const std::int64_t chunk = (d + n * kChunkAlign - 1) / (n * kChunkAlign) * kChunkAlign;
  Bounds bounds;
  for (std::int64_t b = 0; b < d; b += chunk) bounds.push_back(b);
  bounds.push_back(d);
  return bounds;
}

std::vector<Bounds> BoundsFor(const Shape& shape) {
  const std::int64_t d = shape.dimension;
  std::vector<Bounds> all = {{0, d}};
  for (const std::int64_t n : {2, 3, 8}) all.push_back(EvenBounds(d, n));
  if (d > 128) all.push_back({0, 64, 128, d});  // uneven: short chunks, a long last one
  if (d > 320) all.push_back({0, 320, d});      // a multiple of 5 and 64, not of 6 or 128
  if (d == Network().dimension) {
    all.push_back({0, 640, d});        // on the w1 / b1 boundary
    all.push_back({0, 704, 1088, d});  // two cuts through w2
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

template <typename T>
CompressorMaker<T> Maker(const std::string& toml) {
  std::shared_ptr<OptionTable> table = ParseOptionTable(toml, "compressor");
  return MakeCompressorMaker<T>(*table);
}

// Gaussian, Gaussian with zeros (sent as +1 by the 1-bit formats), or heavy-tailed values.
template <typename T>
Vector<T> RandomVector(std::int64_t d, std::uint64_t seed) {
  PhiloxStream s({seed, Purpose::kDataSynthesis, kGlobalStream, 0});
  boost::random::normal_distribution<double> normal;
  boost::random::uniform_01<double> uniform;
  Vector<T> x(d);
  for (std::int64_t j = 0; j < d; ++j) {
    double v = normal(s);
    if (seed % 3 == 1 && uniform(s) < 0.3) v = 0;
    if (seed % 3 == 2) v *= std::exp(3 * normal(s));
    x[j] = static_cast<T>(v);
  }
  return x;
}

std::string Describe(const Bounds& bounds) {
  std::ostringstream s;
  s << "bounds";
  for (const std::int64_t b : bounds) s << ' ' << b;
  return s.str();
}

// Whether a and b hold the same bits (so +0 and -0 differ, and NaN equals itself).
template <typename T>
::testing::AssertionResult SameBits(const T* a, const T* b, std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j) {
    if (std::memcmp(a + j, b + j, sizeof(T)) != 0) {
      return ::testing::AssertionFailure() << "element " << j << ": " << a[j] << " vs " << b[j];
    }
  }
  return ::testing::AssertionSuccess();
}

// Checks that parts[k] decodes, by make(shape.Restrict(bounds[k], bounds[k + 1])), to that
// segment of whole->Decode(message), and likewise with DecodeAdd.
template <typename T>
void ExpectPartsDecodeLikeWhole(const CompressorMaker<T>& make, const Shape& shape,
                                Compressor<T>& whole, const Message& message, const Bounds& bounds,
                                const std::vector<Message>& parts) {
  const std::int64_t d = shape.dimension;
  ASSERT_EQ(parts.size() + 1, bounds.size());
  Vector<T> decoded(d);
  whole.Decode(message, decoded);
  const T weight = T(-0.625);
  const Vector<T> start = RandomVector<T>(d, 99);
  Vector<T> accumulated = start;
  whole.DecodeAdd(message, weight, accumulated);
  for (std::size_t k = 0; k + 1 < bounds.size(); ++k) {
    const std::int64_t lo = bounds[k], n = bounds[k + 1] - lo;
    SCOPED_TRACE(::testing::Message() << "part " << k << " = [" << lo << ", " << lo + n << ")");
    std::unique_ptr<Compressor<T>> piece = make(shape.Restrict(lo, lo + n));
    Vector<T> y(n);
    piece->Decode(parts[k], y);
    EXPECT_TRUE(SameBits(y.data(), decoded.data() + lo, n)) << "Decode";
    Vector<T> acc = start.segment(lo, n);
    piece->DecodeAdd(parts[k], weight, acc);
    EXPECT_TRUE(SameBits(acc.data(), accumulated.data() + lo, n)) << "DecodeAdd";
  }
}

template <typename T>
void SplitsExactly(const Config& c) {
  const CompressorMaker<T> make = Maker<T>(c.toml);
  for (const Shape& shape : Shapes()) {
    for (const Bounds& bounds : BoundsFor(shape)) {
      for (std::uint64_t seed = 1; seed <= 3; ++seed) {
        SCOPED_TRACE(::testing::Message()
                     << "d = " << shape.dimension << " with " << shape.layers.size() << " layers, "
                     << Describe(bounds) << ", seed " << seed);
        std::unique_ptr<Compressor<T>> whole = make(shape);
        const Vector<T> x = RandomVector<T>(shape.dimension, seed);
        PhiloxStream stream({2024, Purpose::kWorkerCompression, 1, seed});
        Message message;
        whole->Encode(x, stream, message);
        std::vector<Message> parts;
        const bool split = whole->Split(message, bounds, parts);
        ASSERT_EQ(split, c.splits(bounds));
        if (!split) continue;
        // One chunk is the whole message: every part repeats exactly the shared bytes of the
        // blocks it overlaps, nothing more.
        if (bounds.size() == 2) {
          EXPECT_EQ(parts.at(0).bytes, message.bytes);
        }
        ExpectPartsDecodeLikeWhole(make, shape, *whole, message, bounds, parts);
      }
    }
  }
}

class Split : public ::testing::TestWithParam<Config> {};

TEST_P(Split, PartsDecodeToTheSegmentsBitForBit) {
  SplitsExactly<float>(GetParam());
  SplitsExactly<double>(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Compressors, Split, ::testing::ValuesIn(Configs()),
                         [](const auto& param) { return param.param.label; });

// Every registered compressor has a split configuration, and on a cut through a layer the
// compressors whose messages split are exactly those whose configurations say they do.
TEST(SplitCoverage, EveryCompressorSplitsExactlyAsItsConfigurationsDeclare) {
  std::set<std::string> configured, split, declared;
  const Shape shape = Network();
  const Bounds bounds = EvenBounds(shape.dimension, 2);  // {0, 576, 1116}: through w1
  for (const Config& c : Configs()) {
    const std::string name = ParseOptionTable(c.toml, "c")->RequireString("name");
    configured.insert(name);
    if (c.splits(bounds)) declared.insert(name);
    std::unique_ptr<Compressor<float>> comp = Maker<float>(c.toml)(shape);
    Message message;
    PhiloxStream stream({1, Purpose::kWorkerCompression, 1, 1});
    comp->Encode(RandomVector<float>(shape.dimension, 4), stream, message);
    std::vector<Message> parts;
    if (comp->Split(message, bounds, parts)) split.insert(name);
  }
  EXPECT_EQ(split, declared);
  // Both kinds are present: the comparison is not vacuous.
  EXPECT_FALSE(split.empty());
  EXPECT_LT(split.size(), configured.size());
  for (const std::string& name : Compressors().names()) {
    EXPECT_TRUE(configured.count(name)) << "no split configuration for '" << name << "'";
  }
}

// Bounds that break the contract are an internal error (the collective computed them wrongly).
TEST(SplitBounds, BoundsOutsideTheContractAreInternalErrors) {
  const CompressorMaker<float> make = Maker<float>(R"(name = "sign")");
  auto comp = make(Shape::Flat(1000));
  Message message;
  PhiloxStream stream({1, Purpose::kWorkerCompression, 1, 1});
  comp->Encode(RandomVector<float>(1000, 1), stream, message);
  std::vector<Message> parts;
  EXPECT_TRUE(comp->Split(message, Bounds{0, 512, 1000}, parts));
  for (const Bounds& bad : {Bounds{0, 500, 1000}, Bounds{0, 512, 999}, Bounds{64, 1000},
                            Bounds{0, 512, 512, 1000}, Bounds{0}, Bounds{}}) {
    EXPECT_THROW(comp->Split(message, bad, parts), InternalError) << Describe(bad);
  }
  Message truncated = message;
  truncated.bytes.pop_back();
  EXPECT_THROW(comp->Split(truncated, Bounds{0, 512, 1000}, parts), InternalError);
}

using ::lemmalab::testing::FailuresOf;

// Encodes a vector of `shape` with `toml`, splits it at `bounds`, applies `plant` to the parts,
// and returns the failures the check reports.
int FailuresWithPlantedParts(const std::string& toml, const Shape& shape, const Bounds& bounds,
                             const std::function<void(std::vector<Message>&)>& plant) {
  const CompressorMaker<double> make = Maker<double>(toml);
  std::unique_ptr<Compressor<double>> whole = make(shape);
  Message message;
  PhiloxStream stream({7, Purpose::kWorkerCompression, 1, 1});
  whole->Encode(RandomVector<double>(shape.dimension, 3), stream, message);
  std::vector<Message> parts;
  if (!whole->Split(message, bounds, parts)) return -1;
  plant(parts);
  return FailuresOf(
      [&] { ExpectPartsDecodeLikeWhole<double>(make, shape, *whole, message, bounds, parts); });
}

TEST(SplitNegativeControl, AFlippedBitIsCaught) {
  const Bounds bounds = {0, 512, 1000};
  EXPECT_EQ(FailuresWithPlantedParts(R"(name = "sign")", Shape::Flat(1000), bounds,
                                     [](std::vector<Message>&) {}),
            0);
  // Bit 3 of part 1 is element 515: Decode and DecodeAdd both differ.
  EXPECT_EQ(FailuresWithPlantedParts(R"(name = "sign")", Shape::Flat(1000), bounds,
                                     [](std::vector<Message>& p) { p[1].bytes[0] ^= 0x08; }),
            2);
}

TEST(SplitNegativeControl, TheScaleOfAnotherChunkIsCaught) {
  // Block-Sign over the network's layers, cut through w2: part 1 starts with w2's scale; putting
  // part 0's first scale (w1's) there must be caught.
  const Bounds bounds = {0, 704, 1116};
  const std::string toml = R"(name = "block-sign")";
  EXPECT_EQ(FailuresWithPlantedParts(toml, Network(), bounds, [](std::vector<Message>&) {}), 0);
  EXPECT_GT(FailuresWithPlantedParts(toml, Network(), bounds,
                                     [](std::vector<Message>& p) {
                                       std::memcpy(p[1].bytes.data(), p[0].bytes.data(), 4);
                                     }),
            0);
}

TEST(SplitNegativeControl, ReencodingTheSegmentInsteadOfSplittingIsCaught) {
  // The tempting mistake for scaled sign: a part that is the segment compressed with its own
  // scale (what the chunk's server sends after averaging, not what the worker sent) decodes to
  // different values than the worker's single-scale message.
  const std::string toml = R"(name = "scaled-sign")";
  const Shape shape = Shape::Flat(1000);
  const Bounds bounds = {0, 512, 1000};
  const Vector<double> x = RandomVector<double>(1000, 3);
  const CompressorMaker<double> make = Maker<double>(toml);
  EXPECT_GT(FailuresWithPlantedParts(
                toml, shape, bounds,
                [&](std::vector<Message>& p) {
                  for (std::size_t k = 0; k < p.size(); ++k) {
                    const std::int64_t lo = bounds[k], hi = bounds[k + 1];
                    PhiloxStream s({7, Purpose::kWorkerCompression, 1, 1});
                    make(shape.Restrict(lo, hi))->Encode(x.segment(lo, hi - lo), s, p[k]);
                  }
                }),
            0);
}

// Restrict: layers inside the range keep rows and columns, cut ones become flat, offsets are
// relative to the range's start.
void ExpectLayers(const Shape& s, std::int64_t dimension, const std::vector<Layer>& expected) {
  EXPECT_EQ(s.dimension, dimension);
  ASSERT_EQ(s.layers.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "layer " << i);
    EXPECT_EQ(s.layers[i].name, expected[i].name);
    EXPECT_EQ(s.layers[i].offset, expected[i].offset);
    EXPECT_EQ(s.layers[i].rows, expected[i].rows);
    EXPECT_EQ(s.layers[i].cols, expected[i].cols);
  }
  EXPECT_NO_THROW(s.LayerRanges());  // the pieces tile [0, dimension)
}

TEST(Restrict, KeepsWholeLayersAndFlattensCutOnes) {
  const Shape net = Network();
  // [320, 704): the second half of w1 (cut), all of b1, the first 48 elements of w2 (cut).
  ExpectLayers(net.Restrict(320, 704), 384,
               {Layer{"w1", 0, 320, 1}, Layer{"b1", 320, 16, 1}, Layer{"w2", 336, 48, 1}});
  // [640, 1116): b1, w2 and b2 whole, as they were, shifted by 640.
  ExpectLayers(net.Restrict(640, 1116), 476,
               {Layer{"b1", 0, 16, 1}, Layer{"w2", 16, 10, 45}, Layer{"b2", 466, 10, 1}});
  // [0, 640): exactly w1, kept a 16 x 40 matrix.
  ExpectLayers(net.Restrict(0, 640), 640, {Layer{"w1", 0, 16, 40}});
  // Inside one layer: a flat piece of it.
  ExpectLayers(net.Restrict(64, 128), 64, {Layer{"w1", 0, 64, 1}});
  // The whole range: the shape itself.
  ExpectLayers(net.Restrict(0, 1116), 1116, net.layers);
}

TEST(Restrict, AShapeWithoutLayersGivesOneFlatPiece) {
  ExpectLayers(Shape{200, {}}.Restrict(64, 200), 136, {Layer{"all", 0, 136, 1}});
  ExpectLayers(Shape::Flat(200).Restrict(0, 64), 64, {Layer{"all", 0, 64, 1}});
}

TEST(Restrict, RangesOutsideTheShapeAreInternalErrors) {
  const Shape net = Network();
  EXPECT_THROW(net.Restrict(64, 64), InternalError);
  EXPECT_THROW(net.Restrict(128, 64), InternalError);
  EXPECT_THROW(net.Restrict(-1, 64), InternalError);
  EXPECT_THROW(net.Restrict(0, 1117), InternalError);
}

}  // namespace
}  // namespace lemmalab
