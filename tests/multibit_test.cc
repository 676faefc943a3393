// The SIMD kernels of compressors/multibit.h (QSGD and TernGrad, natural compression, the norm
// pass random-k's error feedback shares) against their scalar definitions, bit for bit, on every
// Highway target this CPU runs: NaN, infinities, signed zeros, float subnormals, values above the
// norm and near the float range, exact powers of two, every size mod the vector width (d = 1..100)
// and large d, with and without fused error feedback; and whole qsgd / terngrad / natural /
// random-k messages against messages assembled from the scalar definitions, for float and double.
#include "compressors/multibit.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <bit>
#include <boost/random/normal_distribution.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <vector>

#include "compressors/compressor.h"
#include "compressors/natural.h"
#include "compressors/qsgd.h"
#include "compressors/quantization.h"
#include "compressors/random_k.h"
#include "compressors/top_k.h"
#include "core/rng.h"
#include "tests/highway_targets.h"

namespace lemmalab::multibit {
namespace {

using testing::ForEachHighwayTarget;

// Normal values at scales 2^-140 .. 2^120, with (specials) every edge case the kernels branch on.
template <typename T>
std::vector<T> Values(std::size_t n, std::uint64_t seed, bool specials) {
  PhiloxStream s({seed, Purpose::kDataSynthesis, kGlobalStream, 0});
  boost::random::normal_distribution<double> normal(0.0, 1.0);
  std::vector<T> v(n);
  for (std::size_t j = 0; j < n; ++j) {
    const std::uint32_t kind = s() % 16;
    const double x = normal(s);
    if (kind < 10) {
      v[j] = static_cast<T>(x);
    } else if (kind < 12) {
      v[j] = static_cast<T>(std::ldexp(x, static_cast<int>(s() % 260) - 140));
    } else if (kind < 14) {
      // Short significands: their squares hit exact halves of the sum's grid (ties).
      v[j] = static_cast<T>(std::ldexp(static_cast<double>(s() % 8), -static_cast<int>(s() % 40)));
    } else {
      v[j] = static_cast<T>(std::round(x * 4) / 4);
    }
  }
  if (specials) {
    const T edge[] = {T(0),
                      T(-0.0),
                      std::numeric_limits<T>::quiet_NaN(),
                      -std::numeric_limits<T>::quiet_NaN(),
                      std::numeric_limits<T>::infinity(),
                      -std::numeric_limits<T>::infinity(),
                      std::numeric_limits<float>::denorm_min(),
                      -std::numeric_limits<float>::denorm_min() * 1000,
                      static_cast<T>(std::ldexp(1.0, -126)),
                      static_cast<T>(std::ldexp(1.0, 127)),
                      std::nextafter(std::ldexp(1.0f, 127), std::numeric_limits<float>::max()),
                      std::numeric_limits<float>::max(),
                      -std::numeric_limits<float>::max(),
                      T(1),
                      T(-0.75)};
    for (std::size_t i = 0; i < std::size(edge); ++i) {
      const std::size_t j = (i * 7919 + seed) % n;
      if (s() % 3 == 0) v[j] = edge[i];
    }
  }
  return v;
}

std::vector<std::uint32_t> Words(std::size_t n, std::uint64_t seed) {
  PhiloxStream s({seed, Purpose::kWorkerCompression, 0, 1});
  std::vector<std::uint32_t> w(n);
  s.Fill(w);
  // Words equal to a draw's threshold and the extremes, where < and <= differ.
  // (QSGD's threshold (t - floor(t)) 2^32 is 2^31, 2^30 or 3 2^30 for t = k / 4).
  const std::uint32_t edges[] = {0u, ~0u, 1u << 31, 1u << 30, 3u << 30, (1u << 31) - 1};
  for (std::size_t j = 0; j < n; j += 2) w[j] = edges[(j / 2) % 6];
  return w;
}

template <typename T>
void ExpectSameBits(const std::vector<T>& a, const std::vector<T>& b) {
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(T)), 0) << [&] {
    for (std::size_t j = 0; j < a.size(); ++j) {
      if (std::memcmp(&a[j], &b[j], sizeof(T)) != 0) {
        return "first difference at " + std::to_string(j) + ": " + std::to_string(a[j]) + " vs " +
               std::to_string(b[j]);
      }
    }
    return std::string();
  }();
}

std::vector<std::size_t> Sizes() {
  std::vector<std::size_t> sizes;
  for (std::size_t n = 1; n <= 100; ++n) sizes.push_back(n);
  for (const std::size_t n : {127, 128, 129, 1023, 1024, 1025, 4097, 70001}) sizes.push_back(n);
  return sizes;
}

TEST(MultibitKernels, NormsEqualTheScalarDefinitionOnEveryTarget) {
  ForEachHighwayTarget([&] {
    for (const std::size_t n : Sizes()) {
      for (const bool specials : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "n = " << n << (specials ? " with specials" : ""));
        const std::vector<float> x = Values<float>(n, n, specials);
        const std::vector<float> e = Values<float>(n, n + 1000, false);
        for (const bool feedback : {false, true}) {
          const Input<float> in{x.data(), feedback ? e.data() : nullptr, 0.75f};
          std::vector<float> u_fast(n), u_ref(n);
          const NormStats fast = Norms(in, static_cast<std::int64_t>(n), true, u_fast.data());
          const NormStats ref =
              reference::Norms(in, static_cast<std::int64_t>(n), true, u_ref.data());
          EXPECT_LE(std::abs(fast.sum_squares - ref.sum_squares),
                    kSumSlack * static_cast<double>(n) * 0x1p-53 * ref.sum_squares)
              << fast.sum_squares << " vs " << ref.sum_squares;
          EXPECT_EQ(fast.largest, ref.largest);
          EXPECT_EQ(fast.non_finite, ref.non_finite);
          ExpectSameBits(u_fast, u_ref);
          // u stored over e itself, as fused error feedback does.
          std::vector<float> e_in_place = e;
          const NormStats in_place = Norms<float>(
              {x.data(), feedback ? e_in_place.data() : nullptr, 0.75f},
              static_cast<std::int64_t>(n), true, feedback ? e_in_place.data() : nullptr);
          EXPECT_EQ(std::bit_cast<std::uint64_t>(in_place.sum_squares),
                    std::bit_cast<std::uint64_t>(fast.sum_squares));
          EXPECT_EQ(std::bit_cast<std::uint64_t>(SumSquares(u_fast.data(), n)),
                    std::bit_cast<std::uint64_t>(reference::SumSquares(u_fast.data(), n)));
          if (feedback) ExpectSameBits(e_in_place, u_ref);
          const NormStats no_sum = Norms<float>(in, static_cast<std::int64_t>(n), false, nullptr);
          EXPECT_EQ(no_sum.largest, ref.largest);
          EXPECT_EQ(no_sum.non_finite, ref.non_finite);
        }
      }
    }
  });
}

// Long sums whose running total crosses many binades, with many exact ties on its grid.
TEST(MultibitKernels, SumOfSquaresIsTheIndexOrderSumOverLongVectors) {
  ForEachHighwayTarget([&] {
    for (const std::uint64_t seed : {1, 2, 3}) {
      const std::size_t n = 1 << 18;
      std::vector<float> x = Values<float>(n, seed, false);
      if (seed == 2) {
        for (std::size_t j = 0; j < n; ++j) x[j] = std::ldexp(1.0f, -static_cast<int>(j % 30));
      }
      if (seed == 3) std::fill(x.begin(), x.end(), 1.0f);
      EXPECT_EQ(std::bit_cast<std::uint64_t>(SumSquares(x.data(), n)),
                std::bit_cast<std::uint64_t>(reference::SumSquares(x.data(), n)));
    }
  });
}

TEST(MultibitKernels, QsgdQuantizerEqualsTheScalarDefinitionOnEveryTarget) {
  ForEachHighwayTarget([&] {
    for (const int levels : {1, 2, 3, 4, 7, 8, 15, 127, 255, 32767, 65535}) {
      const int width = QsgdLevelBits(levels);
      for (const std::size_t n : {1, 5, 63, 64, 65, 100, 128, 257, 4096, 4097}) {
        for (const std::int64_t begin : {std::int64_t{0}, std::int64_t{64}}) {
          if (begin >= static_cast<std::int64_t>(n)) continue;
          SCOPED_TRACE(::testing::Message()
                       << "s = " << levels << ", n = " << n << ", begin " << begin);
          const std::vector<float> x = Values<float>(n, n + levels, true);
          const std::vector<float> e = Values<float>(n, n + 7, false);
          const std::vector<std::uint32_t> words = Words(n, n + levels);
          for (const bool feedback : {false, true}) {
            const Input<float> in{x.data(), feedback ? e.data() : nullptr, 0.5f};
            const NormStats norms =
                reference::Norms<float>(in, static_cast<std::int64_t>(n), true, nullptr);
            // The norm sent (finite, as Qsgd sends it), one below some |u_j| (out of domain), 0,
            const float sent = std::min(quantization::FloatAtLeast(std::sqrt(norms.sum_squares)),
                                        std::numeric_limits<float>::max());
            // 8 makes many t = s |u| / 8 exact quarters, where the draw sits on its threshold.
            for (const double scale : {static_cast<double>(sent), 0.5, 8.0, 0.0}) {
              const std::size_t bytes = static_cast<std::size_t>(
                  quantization::StreamBytes(static_cast<std::int64_t>(n), width + 1));
              std::vector<std::uint8_t> fast(bytes), ref(bytes);
              std::vector<float> e_fast(n, 7.0f), e_ref(n, 7.0f);
              const std::int64_t end = static_cast<std::int64_t>(n);
              const std::int64_t ood_fast =
                  QuantizeQsgd(in, words.data() + begin, begin, end, scale, levels, width,
                               fast.data(), e_fast.data());
              const std::int64_t ood_ref =
                  reference::QuantizeQsgd(in, words.data() + begin, begin, end, scale, levels,
                                          width, ref.data(), e_ref.data());
              EXPECT_EQ(ood_fast, ood_ref);
              EXPECT_EQ(fast, ref) << "scale " << scale;
              ExpectSameBits(e_fast, e_ref);
              std::vector<std::uint8_t> plain(bytes, 0xA5);  // every byte is written
              std::fill(plain.begin(), plain.begin() + begin * (width + 1) / 8, 0);
              EXPECT_EQ(QuantizeQsgd(in, words.data() + begin, begin, end, scale, levels, width,
                                     plain.data(), static_cast<float*>(nullptr)),
                        ood_ref);
              EXPECT_EQ(plain, ref);
            }
          }
        }
      }
    }
  });
}

// Words on the definition's thresholds, with norms whose a / n is inexact: a t computed any
// other way than s (a / n) would draw differently here.
TEST(MultibitKernels, QsgdDrawsOnTheThresholdEqualTheScalarDefinition) {
  ForEachHighwayTarget([&] {
    for (const int levels : {1, 3, 4, 5, 7, 100, 255, 256, 1000}) {
      const int width = QsgdLevelBits(levels);
      for (const double n : {3.0, 7.0, 10.0, static_cast<double>(1.1f)}) {
        SCOPED_TRACE(::testing::Message() << "s = " << levels << ", n = " << n);
        const std::size_t d = 4096;
        std::vector<float> x = Values<float>(d, levels, false);
        for (std::size_t j = 0; j < d; ++j) {
          x[j] = static_cast<float>(std::fmod(std::abs(static_cast<double>(x[j])), n)) *
                 (j % 2 == 0 ? 1.0f : -1.0f);
          if (j % 3 == 0) x[j] = static_cast<float>(j % 40) * (j % 4 == 0 ? 0.125f : 1.0f);
        }
        std::vector<std::uint32_t> words(d);
        for (std::size_t j = 0; j < d; ++j) {
          const double t = levels * (std::abs(static_cast<double>(x[j])) / n);
          const double threshold = std::floor((t - std::floor(t)) * 4294967296.0);
          words[j] = static_cast<std::uint32_t>(std::min(threshold, 4294967295.0)) -
                     (j % 5 == 0 && threshold > 0 ? 1u : 0u);
        }
        const std::size_t bytes = static_cast<std::size_t>(quantization::StreamBytes(d, width + 1));
        std::vector<std::uint8_t> fast(bytes), ref(bytes);
        std::vector<float> e_fast(d), e_ref(d);
        const Input<float> in{x.data()};
        EXPECT_EQ(
            QuantizeQsgd(in, words.data(), 0, d, n, levels, width, fast.data(), e_fast.data()),
            reference::QuantizeQsgd(in, words.data(), 0, d, n, levels, width, ref.data(),
                                    e_ref.data()));
        EXPECT_EQ(fast, ref);
        ExpectSameBits(e_fast, e_ref);
      }
    }
  });
}

TEST(MultibitKernels, NaturalQuantizerEqualsTheScalarDefinitionOnEveryTarget) {
  ForEachHighwayTarget([&] {
    for (const std::size_t n : Sizes()) {
      for (const std::int64_t begin : {std::int64_t{0}, std::int64_t{64}}) {
        if (begin >= static_cast<std::int64_t>(n)) continue;
        SCOPED_TRACE(::testing::Message() << "n = " << n << ", begin " << begin);
        const std::vector<float> x = Values<float>(n, 3 * n, true);
        const std::vector<float> e = Values<float>(n, 3 * n + 1, false);
        const std::vector<std::uint32_t> words = Words(n, n);
        for (const bool feedback : {false, true}) {
          const Input<float> in{x.data(), feedback ? e.data() : nullptr, 2.0f};
          std::vector<std::uint8_t> codes_fast(n), codes_ref(n), signs_fast((n + 7) / 8),
              signs_ref((n + 7) / 8);
          std::vector<float> e_fast(n, 7.0f), e_ref(n, 7.0f);
          const std::int64_t end = static_cast<std::int64_t>(n);
          const Counts fast = QuantizeNatural(in, words.data() + begin, begin, end,
                                              codes_fast.data(), signs_fast.data(), e_fast.data());
          const Counts ref =
              reference::QuantizeNatural(in, words.data() + begin, begin, end, codes_ref.data(),
                                         signs_ref.data(), e_ref.data());
          EXPECT_EQ(fast.out_of_domain, ref.out_of_domain);
          EXPECT_EQ(fast.non_finite, ref.non_finite);
          EXPECT_EQ(codes_fast, codes_ref);
          EXPECT_EQ(signs_fast, signs_ref);
          ExpectSameBits(e_fast, e_ref);
        }
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Whole messages: the compressors against the scalar definitions applied the way the original
// encoders ran them (d words from the stream, in chunks), for float and double.
template <typename T>
Message QsgdByDefinition(const std::vector<T>& x, int levels, bool two_norm, PhiloxStream& stream) {
  const auto d = static_cast<std::int64_t>(x.size());
  const int width = QsgdLevelBits(levels);
  const NormStats norms = reference::Norms<T>({x.data()}, d, two_norm, nullptr);
  const double norm =
      two_norm ? std::max(std::sqrt(norms.sum_squares), norms.largest) : norms.largest;
  const float scale = std::min(quantization::FloatAtLeast(norm), std::numeric_limits<float>::max());
  Message m;
  m.bytes.assign(sizeof(float) + static_cast<std::size_t>(quantization::StreamBytes(d, width + 1)),
                 0);
  std::memcpy(m.bytes.data(), &scale, sizeof(float));
  std::vector<std::uint32_t> words(x.size());
  stream.Fill(words);
  reference::QuantizeQsgd(Input<T>{x.data()}, words.data(), 0, d, static_cast<double>(scale),
                          levels, width, m.bytes.data() + sizeof(float), static_cast<T*>(nullptr));
  return m;
}

template <typename T>
Message NaturalByDefinition(const std::vector<T>& x, PhiloxStream& stream) {
  const std::size_t d = x.size();
  Message m;
  m.bytes.assign(d + (d + 7) / 8, 0);
  std::vector<std::uint32_t> words(d);
  stream.Fill(words);
  reference::QuantizeNatural(Input<T>{x.data()}, words.data(), 0, static_cast<std::int64_t>(d),
                             m.bytes.data(), m.bytes.data() + d, static_cast<T*>(nullptr));
  return m;
}

template <typename T>
void ExpectMessagesByDefinition() {
  std::vector<std::size_t> sizes = Sizes();
  for (const std::size_t d : {4096, 65536, 300000}) sizes.push_back(d);
  for (const std::size_t d : sizes) {
    SCOPED_TRACE(::testing::Message() << "d = " << d);
    std::vector<T> x = Values<T>(d, d, d % 3 == 0);
    // +-1 on a square d: a norm that is a float, where the scale's interval check must defer to
    // the index-order sum.
    const auto root = static_cast<std::size_t>(std::sqrt(static_cast<double>(d)));
    if (root * root == d && d % 2 == 0) {
      for (std::size_t j = 0; j < d; ++j) x[j] = j % 3 == 0 ? T(-1) : T(1);
    }
    Vector<T> xv = Eigen::Map<const Vector<T>>(x.data(), static_cast<Eigen::Index>(d));
    for (const auto& [levels, two_norm] : {std::pair{4, true}, {1, false}, {5, true}, {3, false}}) {
      auto c = MakeQsgd<T>(levels, two_norm ? QsgdNorm::kTwo : QsgdNorm::kInf,
                           static_cast<std::int64_t>(d));
      PhiloxStream s1({d, Purpose::kWorkerCompression, 0, 1}), s2 = s1;
      Message m;
      c->Encode(xv, s1, m);
      EXPECT_EQ(m.bytes, QsgdByDefinition(x, levels, two_norm, s2).bytes) << "s = " << levels;
      EXPECT_EQ(s1.position(), s2.position());
    }
    auto natural = MakeNatural<T>(static_cast<std::int64_t>(d));
    PhiloxStream s1({d, Purpose::kWorkerCompression, 0, 2}), s2 = s1;
    Message m;
    natural->Encode(xv, s1, m);
    EXPECT_EQ(m.bytes, NaturalByDefinition(x, s2).bytes);
    EXPECT_EQ(s1.position(), s2.position());
  }
}

TEST(MultibitMessages, QsgdAndNaturalEqualTheScalarDefinitionFloat) {
  ExpectMessagesByDefinition<float>();
}
TEST(MultibitMessages, QsgdAndNaturalEqualTheScalarDefinitionDouble) {
  ExpectMessagesByDefinition<double>();
}

// Fused error feedback against the default (u = x + a e, Encode, e = u - Decode) on long
// vectors, where the kernels' vector bodies do nearly all the work.
template <typename T>
void ExpectFusedFeedbackEqualsDefault(const std::string& name, Compressor<T>& fused,
                                      Compressor<T>& plain, std::size_t d) {
  SCOPED_TRACE(name);
  Vector<T> x =
      Eigen::Map<const Vector<T>>(Values<T>(d, 11, true).data(), static_cast<Eigen::Index>(d));
  std::vector<T> e0 = Values<T>(d, 12, false);
  Vector<T> e_fused = Eigen::Map<const Vector<T>>(e0.data(), static_cast<Eigen::Index>(d));
  Vector<T> e_plain = e_fused;
  for (const T a : {T(1), T(0.3)}) {
    PhiloxStream s1({3, Purpose::kWorkerCompression, 0, 1}), s2 = s1;
    Message m_fused, m_plain;
    const EncodeStats fused_stats = fused.EncodeWithFeedback(x, a, e_fused, s1, m_fused);
    const Vector<T> u = x + a * e_plain;
    const EncodeStats plain_stats = plain.Encode(u, s2, m_plain);
    e_plain = u;
    plain.DecodeAdd(m_plain, T(-1), e_plain);
    EXPECT_EQ(m_fused.bytes, m_plain.bytes);
    EXPECT_EQ(fused_stats.non_finite, plain_stats.non_finite);
    EXPECT_EQ(fused_stats.out_of_domain, plain_stats.out_of_domain);
    // Bit for bit, but any NaN equals any NaN: a sparse message carries the wire's NaN
    // (core/wire_nan.h), so the default's decoded NaN and the fused path's own may differ in
    // payload, and which one an addition of two NaNs keeps is up to the compiler.
    for (std::size_t j = 0; j < d; ++j) {
      if (std::isnan(e_fused[j]) && std::isnan(e_plain[j])) continue;
      ASSERT_EQ(std::memcmp(&e_fused[j], &e_plain[j], sizeof(T)), 0)
          << "j = " << j << ": " << e_fused[j] << " vs " << e_plain[j];
    }
    EXPECT_EQ(s1.position(), s2.position());
  }
}

template <typename T>
void ExpectFusedFeedback() {
  for (const std::size_t d : {std::size_t{1}, std::size_t{77}, std::size_t{200003}}) {
    SCOPED_TRACE(::testing::Message() << "d = " << d);
    const auto dim = static_cast<std::int64_t>(d);
    ExpectFusedFeedbackEqualsDefault<T>("qsgd", *MakeQsgd<T>(4, QsgdNorm::kTwo, dim),
                                        *MakeQsgd<T>(4, QsgdNorm::kTwo, dim), d);
    ExpectFusedFeedbackEqualsDefault<T>("terngrad", *MakeQsgd<T>(1, QsgdNorm::kInf, dim),
                                        *MakeQsgd<T>(1, QsgdNorm::kInf, dim), d);
    ExpectFusedFeedbackEqualsDefault<T>("natural", *MakeNatural<T>(dim), *MakeNatural<T>(dim), d);
    ExpectFusedFeedbackEqualsDefault<T>("random-k", *MakeRandomK<T>(dim, (dim + 99) / 100, true),
                                        *MakeRandomK<T>(dim, (dim + 99) / 100, true), d);
    ExpectFusedFeedbackEqualsDefault<T>("top-k", *MakeTopK<T>(dim, (dim + 99) / 100),
                                        *MakeTopK<T>(dim, (dim + 99) / 100), d);
  }
}

TEST(MultibitMessages, FusedFeedbackEqualsEncodeThenDecodeFloat) { ExpectFusedFeedback<float>(); }
TEST(MultibitMessages, FusedFeedbackEqualsEncodeThenDecodeDouble) { ExpectFusedFeedback<double>(); }

}  // namespace
}  // namespace lemmalab::multibit
