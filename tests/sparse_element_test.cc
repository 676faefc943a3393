// The CPU side of the GPU top-k (cuda/sparse.cu): its radix selection (four 8-bit passes of
// sparse::PickDigit over magnitude keys, then the lowest-indexed keys equal to the threshold),
// run serially here, keeps exactly the CPU top-k's set on inputs full of ties, NaN, infinities
// and signed zeros, for k from 1 to d. A planted fault (ties kept from the highest index) is
// caught.
#include "compressors/sparse_element.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "compressors/sparse.h"
#include "compressors/top_k.h"
#include "tests/one_bit_cases.h"

namespace lemmalab::sparse {
namespace {

// The kept indices, ascending, as the GPU computes them (one thread here).
std::vector<std::uint32_t> RadixTopK(const std::vector<float>& x, std::int64_t k,
                                     bool ties_from_the_top = false) {
  std::uint32_t prefix = 0;
  unsigned long long need = static_cast<unsigned long long>(k);
  for (int shift = 24; shift >= 0; shift -= 8) {
    std::uint32_t histogram[256] = {};
    for (const float v : x) {
      const std::uint32_t key = MagnitudeKey(v);
      if (shift == 24 || (key >> (shift + 8)) == prefix) ++histogram[(key >> shift) & 0xffu];
    }
    prefix = (prefix << 8) | PickDigit(histogram, need);
  }
  std::vector<std::uint32_t> kept;
  unsigned long long equal_rank = 0;
  const std::size_t n = x.size();
  std::vector<bool> keep(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t j = ties_from_the_top ? n - 1 - i : i;
    const std::uint32_t key = MagnitudeKey(x[j]);
    keep[j] = key > prefix || (key == prefix && equal_rank++ < need);
  }
  for (std::size_t j = 0; j < n; ++j) {
    if (keep[j]) kept.push_back(static_cast<std::uint32_t>(j));
  }
  return kept;
}

// The CPU top-k's kept indices, read from its message (ascending indices come first).
std::vector<std::uint32_t> CpuTopK(const std::vector<float>& x, std::int64_t k) {
  const auto d = static_cast<std::int64_t>(x.size());
  PhiloxStream stream({1, Purpose::kWorkerCompression, 0, 0});
  Message message;
  MakeTopK<float>(d, k)->Encode(testing::ConstView(x), stream, message);
  const int width = IndexBytes(d);
  std::vector<std::uint32_t> kept(static_cast<std::size_t>(k));
  for (std::size_t i = 0; i < kept.size(); ++i) {
    for (int b = 0; b < width; ++b) {
      kept[i] |= std::uint32_t{message.bytes[i * static_cast<std::size_t>(width) + b]} << (8 * b);
    }
  }
  return kept;
}

std::vector<float> Tied(std::size_t n, std::uint64_t seed) {
  std::vector<float> v = testing::OneBitInputs(n, seed, 1.0f);
  for (std::size_t j = 0; j < n; j += 2) {
    if (std::isfinite(v[j])) v[j] = std::round(v[j] * 2.0f) / 2.0f;  // many equal magnitudes
  }
  return v;
}

TEST(SparseElement, RadixSelectionKeepsTheTopKSet) {
  for (const std::size_t d : {1u, 7u, 200u, 4097u, 70001u}) {
    const std::vector<float> x = Tied(d, d);
    for (const std::int64_t k :
         {std::int64_t{1}, std::int64_t{2}, static_cast<std::int64_t>(d / 3 + 1),
          static_cast<std::int64_t>(d)}) {
      if (k > static_cast<std::int64_t>(d)) continue;
      SCOPED_TRACE("d = " + std::to_string(d) + ", k = " + std::to_string(k));
      EXPECT_EQ(RadixTopK(x, k), CpuTopK(x, k));
    }
  }
}

TEST(SparseElement, TiesKeptFromTheWrongEndAreCaught) {
  // k puts the threshold at |x| = 1, which many coordinates share: only one of them is kept.
  const std::vector<float> x = Tied(4097, 3);
  std::int64_t above = 0, tied = 0;
  for (const float v : x) {
    above += MagnitudeKey(v) > MagnitudeKey(1.0f);
    tied += MagnitudeKey(v) == MagnitudeKey(1.0f);
  }
  ASSERT_GE(tied, 2);
  EXPECT_EQ(RadixTopK(x, above + 1), CpuTopK(x, above + 1));
  EXPECT_NE(RadixTopK(x, above + 1, /*ties_from_the_top=*/true), CpuTopK(x, above + 1));
}

TEST(SparseElement, MagnitudeKeysOrderMagnitudesAndRankNanAsInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(MagnitudeKey(0.0f), MagnitudeKey(-0.0f));
  EXPECT_EQ(MagnitudeKey(-2.5f), MagnitudeKey(2.5f));
  EXPECT_LT(MagnitudeKey(std::numeric_limits<float>::denorm_min()), MagnitudeKey(1e-30f));
  EXPECT_LT(MagnitudeKey(1.0f), MagnitudeKey(std::nextafter(1.0f, 2.0f)));
  EXPECT_EQ(MagnitudeKey(std::numeric_limits<float>::quiet_NaN()), MagnitudeKey(-inf));
  EXPECT_EQ(MagnitudeKey(std::numeric_limits<double>::quiet_NaN()), MagnitudeKey(-1.0 / 0.0));
}

}  // namespace
}  // namespace lemmalab::sparse
