// Inputs and formats shared by the tests of the 1-bit family's contract between its element
// definition, the CPU compressor and the CUDA encoder (one_bit_element_test.cc,
// cuda_one_bit_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <boost/random/normal_distribution.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "compressors/block_sign.h"
#include "compressors/one_bit_compressor.h"
#include "compressors/scaled_sign.h"
#include "compressors/sign.h"
#include "compressors/stochastic_binary.h"
#include "core/rng.h"

namespace lemmalab::testing {

// Normal values of deviation sigma with, when `specials` and the vector has room, 1, -1, +-0,
// NaN, +-inf, the float after 1, the smallest denormal and 1e30 spread over it. (A NaN makes its
// block's scale, residuals and decoded values NaN, which compare as equal: the cases without
// specials are the ones that check those values.)
inline std::vector<float> OneBitInputs(std::size_t n, std::uint64_t seed, float sigma,
                                       bool specials = true) {
  PhiloxStream s({seed, Purpose::kDataSynthesis, kGlobalStream, 0});
  boost::random::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = normal(s);
  const float kSpecials[] = {1.0f,
                             -1.0f,
                             0.0f,
                             -0.0f,
                             std::numeric_limits<float>::quiet_NaN(),
                             std::numeric_limits<float>::infinity(),
                             -std::numeric_limits<float>::infinity(),
                             std::nextafter(1.0f, 2.0f),
                             std::numeric_limits<float>::denorm_min(),
                             1e30f};
  for (std::size_t k = 0; specials && k < std::size(kSpecials) && n >= 64; ++k) {
    v[(k * 7919 + 3) % n] = kSpecials[k];
  }
  return v;
}

// Equal as floats, or both NaN (a NaN's payload is not part of the contract).
inline void ExpectSameFloats(const std::vector<float>& expected, const std::vector<float>& actual,
                             const std::string& what) {
  ASSERT_EQ(expected.size(), actual.size());
  for (std::size_t j = 0; j < expected.size(); ++j) {
    if (std::isnan(expected[j]) && std::isnan(actual[j])) continue;
    std::uint32_t a, b;
    std::memcpy(&a, &expected[j], 4);
    std::memcpy(&b, &actual[j], 4);
    ASSERT_EQ(a, b) << what << ", j = " << j << ": " << expected[j] << " vs " << actual[j];
  }
}

inline Eigen::Map<const Vector<float>> ConstView(const std::vector<float>& v) {
  return {v.data(), static_cast<Eigen::Index>(v.size())};
}
inline Eigen::Map<Vector<float>> View(std::vector<float>& v) {
  return {v.data(), static_cast<Eigen::Index>(v.size())};
}

struct OneBitCase {
  std::string name;
  OneBitFormat format;
};

// Every 1-bit format, for vectors of length d: Birder's Q (clip, rescale), sign, scaled sign
// (one block, chunks of 1000) and Block-Sign (three uneven layers when d >= 2000, fixed 256),
// and Q rescaled per block of 1000 (no compressor offers it; it runs the max-abs reduction over
// many blocks).
inline std::vector<OneBitCase> OneBitCases(std::int64_t d) {
  const CompressorShape layered{
      d, d >= 2000
             ? std::vector<Layer>{{"w1", 0, 7, 13}, {"b1", 91, 1000, 1}, {"w2", 1091, d - 1091, 1}}
             : SingleLayer(d)};
  return {{"stochastic-binary clip", StochasticBinaryFormat(QuantizerDomain::kClip, d)},
          {"stochastic-binary rescale", StochasticBinaryFormat(QuantizerDomain::kRescale, d)},
          {"sign", SignFormat(d)},
          {"scaled-sign", ScaledSignFormat(d, 0)},
          {"scaled-sign chunk 1000", ScaledSignFormat(d, 1000)},
          {"block-sign layers", BlockSignFormat(layered, 0)},
          {"block-sign fixed 256", BlockSignFormat(layered, 256)},
          {"stochastic-binary rescale per 1000", [&] {
             OneBitFormat format = StochasticBinaryFormat(QuantizerDomain::kRescale, d);
             format.blocks = FixedBlocks(d, 1000);
             format.fixed_block_size = 1000;
             return format;
           }()}};
}

// Lengths that end inside a warp (32), a CUDA tile (1024 elements), a 64-bit word and a block.
inline constexpr std::int64_t kOneBitLengths[] = {1, 31, 33, 1000, 1024, 4096 + 17, 100003};

}  // namespace lemmalab::testing
