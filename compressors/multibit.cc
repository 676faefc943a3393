// SIMD kernels of compressors/multibit.h for float, one copy per Highway target, dispatched at
// run time; double, the scalar target and the ends of a range use the scalar definitions
// (multibit_reference.cc).
//
// Bit-identity with the definitions:
// - QSGD's level is floor(t) plus the draw r < (t - floor(t)) 2^32 for t = s (a / n) in double.
//   With at most kFloatLevels levels it is computed in float lanes from an approximation t' with
//   a proven error bound, and the definition's double arithmetic is redone for the (rare) lanes
//   whose decision that bound does not settle (QuantizeQsgdFloatT); with more levels, in double
//   lanes with the definition's operations in its order (QuantizeQsgdT). No fused multiply-add:
//   the project builds with -ffp-contract=off and the code uses Mul and Add. The decoded value
//   n l / s of error feedback is the definition's, from a table or the same double operations;
// - natural compression is decided on the float's bits: for |u| = (1 + M 2^-23) 2^(E - 127) the
//   definition's code is E plus the draw r < M 2^9, capped at 254 (see QuantizeNaturalT);
// - QSGD's scale depends on the sum of squares a plain loop adds in index order. Norms adds in
//   its own order (qsgd.cc checks whether the difference can matter), and SumSquaresImpl gets the
//   plain loop's value without its dependency chain: while the running sum s stays in one binade
//   [2^k, 2^(k+1)), every double there is a multiple of g = 2^(k-52), so s + t rounds to
//   s + g round(t / g) (round to nearest; at a tie to the even significand, which TieCorrection
//   works out from parities), and a block's sum is s + g times an exact integer sum. When the
//   result leaves the binade the block is added by the plain loop instead.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "compressors/multibit.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: per-target headers must follow foreach_target.h and highway.h.
#include <hwy/highway.h>

#include "compressors/mask_bits-inl.h"
// clang-format on

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "compressors/multibit.h"
#include "compressors/quantization.h"

HWY_BEFORE_NAMESPACE();
namespace lemmalab::multibit::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using lemmalab::HWY_NAMESPACE::MaskBits;

constexpr std::int64_t kGroup = 64;    // elements per group: 64 sign bits, F words of F-bit fields
constexpr std::int64_t kBlock = 1024;  // elements per block of the sum of squares
constexpr double kTwo53 = 9007199254740992.0;

// u = x + a e on lanes [j, j + Lanes(d)).
template <bool kFeedback, class D>
HWY_INLINE hn::Vec<D> LoadInput(D d, const Input<float>& in, hn::Vec<D> a, std::int64_t j) {
  const hn::Vec<D> x = hn::LoadU(d, in.x + j);
  if constexpr (kFeedback) {
    return hn::Add(x, hn::Mul(a, hn::LoadU(d, in.e + j)));
  } else {
    return x;
  }
}

template <typename F>
HWY_INLINE auto WithFeedback(const Input<float>& in, F&& f) {
  return in.e != nullptr ? f.template operator()<true>() : f.template operator()<false>();
}

// The plain loop's sum + u_j^2 over the finite u_j of [begin, end).
HWY_NOINLINE double SequentialSum(const float* u, std::int64_t begin, std::int64_t end,
                                  double sum) {
  for (std::int64_t j = begin; j < end; ++j) {
    const auto v = static_cast<double>(u[j]);
    if (std::isfinite(v)) sum += v * v;
  }
  return sum;
}

// ---------------------------------------------------------------------------------------------
template <bool kFeedback>
NormStats NormsT(const Input<float>& in, std::int64_t n, bool sum_squares, float* u_out) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;  // as many floats as dd has doubles
  const hn::RebindToSigned<decltype(df)> di;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(dd));
  const auto a = hn::Set(df, in.a);
  const auto infinity = hn::Set(df, std::numeric_limits<float>::infinity());
  auto largest = hn::Zero(df);
  auto non_finite = hn::Zero(di);  // minus the count per lane
  auto sum0 = hn::Zero(dd), sum1 = hn::Zero(dd);
  std::int64_t j = 0;
  for (; j + 2 * lanes <= n; j += 2 * lanes) {
    const auto u0 = LoadInput<kFeedback>(df, in, a, j);
    const auto u1 = LoadInput<kFeedback>(df, in, a, j + lanes);
    if (u_out != nullptr) {
      hn::StoreU(u0, df, u_out + j);
      hn::StoreU(u1, df, u_out + j + lanes);
    }
    const auto finite0 = hn::Lt(hn::Abs(u0), infinity);  // false for NaN and +-inf
    const auto finite1 = hn::Lt(hn::Abs(u1), infinity);
    non_finite = hn::Add(non_finite, hn::VecFromMask(di, hn::RebindMask(di, hn::Not(finite0))));
    non_finite = hn::Add(non_finite, hn::VecFromMask(di, hn::RebindMask(di, hn::Not(finite1))));
    largest = hn::Max(largest, hn::IfThenElseZero(finite0, hn::Abs(u0)));
    largest = hn::Max(largest, hn::IfThenElseZero(finite1, hn::Abs(u1)));
    if (sum_squares) {
      const auto v0 = hn::PromoteTo(dd, hn::IfThenElseZero(finite0, u0));
      const auto v1 = hn::PromoteTo(dd, hn::IfThenElseZero(finite1, u1));
      sum0 = hn::Add(sum0, hn::Mul(v0, v0));
      sum1 = hn::Add(sum1, hn::Mul(v1, v1));
    }
  }
  NormStats stats;
  stats.largest = hn::GetLane(hn::MaxOfLanes(df, largest));
  stats.non_finite = -hn::GetLane(hn::SumOfLanes(di, non_finite));
  stats.sum_squares = sum_squares ? hn::GetLane(hn::SumOfLanes(dd, hn::Add(sum0, sum1))) : 0.0;
  // The last elements by the definition.
  Input<float> tail = in;
  tail.x += j;
  if (tail.e != nullptr) tail.e += j;
  const NormStats rest =
      reference::Norms(tail, n - j, sum_squares, u_out == nullptr ? nullptr : u_out + j);
  stats.largest = std::max(stats.largest, rest.largest);
  stats.non_finite += rest.non_finite;
  stats.sum_squares += rest.sum_squares;
  return stats;
}

NormStats NormsImpl(const Input<float>& in, std::int64_t n, bool sum_squares, float* u_out) {
  if (HWY_TARGET == HWY_SCALAR) return reference::Norms(in, n, sum_squares, u_out);
  return WithFeedback(
      in, [&]<bool kFeedback>() { return NormsT<kFeedback>(in, n, sum_squares, u_out); });
}

// Bit i of the result: the XOR of bits 0..i of x.
HWY_INLINE std::uint64_t PrefixXor(std::uint64_t x) {
  for (int shift = 1; shift < 64; shift *= 2) x ^= x << shift;
  return x;
}

// The integer the running sum's significand grows by over a block, in units of g: the sum of
// the terms' nearest integers q_j, plus 1 for every tie (q_j + 1/2) that rounds up because the
// significand before it plus q_j is odd. A tie leaves the significand even, so the parity at a
// tie is that of the q_j since the previous tie (or since the block's start, with the starting
// parity `odd`): prefix XORs of the parity bits, read at the ties.
HWY_INLINE std::int64_t TieCorrection(const std::uint64_t* parities, const std::uint64_t* ties,
                                      std::int64_t words, bool odd) {
  std::int64_t ups = 0;
  std::uint64_t carry = odd ? 1 : 0;
  for (std::int64_t w = 0; w < words; ++w) {
    const std::uint64_t x = PrefixXor(parities[w] ^ carry);
    std::uint64_t previous = 0;
    for (std::uint64_t t = ties[w]; t != 0; t &= t - 1) {
      const std::uint64_t bit = (x >> std::countr_zero(t)) & 1;
      ups += static_cast<std::int64_t>(bit ^ previous);
      previous = bit;
    }
    carry = (x >> 63) ^ (ties[w] != 0 ? previous : 0);
  }
  return ups;
}

// ---------------------------------------------------------------------------------------------
double SumSquaresImpl(const float* u, std::int64_t n) {
  if (HWY_TARGET == HWY_SCALAR) return reference::SumSquares(u, n);
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;  // as many floats as dd has doubles
  const hn::RebindToUnsigned<decltype(dd)> du64;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(dd));
  const auto infinity = hn::Set(dd, std::numeric_limits<double>::infinity());
  const auto half = hn::Set(dd, 0.5);
  const auto one = hn::Set(dd, 1.0);
  const auto two_52 = hn::Set(dd, kTwo53 / 2);
  const auto low_bit = hn::Set(du64, 1);
  double sum = 0;
  std::uint64_t parities[kBlock / kGroup], ties[kBlock / kGroup];
  const std::int64_t body_end = n / kGroup * kGroup;
  for (std::int64_t b = 0; b < body_end; b += kBlock) {
    const std::int64_t b_end = std::min(body_end, b + kBlock);
    // The binade of the running sum, where the exact scaling by 1/g is safe.
    if (sum >= 0x1p-900 && sum < 0x1p900) {
      int exponent = 0;
      std::frexp(sum, &exponent);  // sum in [2^(exponent-1), 2^exponent)
      const auto inverse_g = hn::Set(dd, std::ldexp(1.0, 53 - exponent));
      auto total = hn::Zero(dd);
      for (std::int64_t j = b; j < b_end; j += kGroup) {
        std::uint64_t parity = 0, tie = 0;
        for (std::int64_t k = 0; k < kGroup; k += lanes) {
          const auto v = hn::PromoteTo(dd, hn::LoadU(df, u + j + k));
          auto t = hn::Mul(v, v);  // exact, and infinite only for infinite u
          t = hn::IfThenElseZero(hn::Lt(t, infinity), t);
          const auto y = hn::Mul(t, inverse_g);  // exact (or below 2^-1022, far from a tie)
          const auto whole = hn::Floor(y);
          const auto fraction = hn::Sub(y, whole);
          // Nearest integer, the lower one at a tie.
          const auto q = hn::Add(whole, hn::IfThenElseZero(hn::Gt(fraction, half), one));
          total = hn::Add(total, q);
          // q's low bit, exact for q < 2^52 (a larger q leaves the binade anyway).
          const auto odd = hn::TestBit(hn::BitCast(du64, hn::Add(q, two_52)), low_bit);
          parity |= MaskBits(du64, odd) << k;
          tie |= MaskBits(dd, hn::Eq(fraction, half)) << k;
        }
        parities[(j - b) / kGroup] = parity;
        ties[(j - b) / kGroup] = tie;
      }
      // Integers below 2^53 add exactly; a sum that would not is >= 2^53 after rounding too.
      const double start = std::ldexp(sum, 53 - exponent);  // the significand, in [2^52, 2^53)
      const bool odd = (static_cast<std::uint64_t>(start) & 1) != 0;
      const double scaled =
          start + hn::GetLane(hn::SumOfLanes(dd, total)) +
          static_cast<double>(TieCorrection(parities, ties, (b_end - b) / kGroup, odd));
      if (scaled < kTwo53) {
        sum = std::ldexp(scaled, exponent - 53);
        continue;
      }
    }
    sum = SequentialSum(u, b, b_end, sum);
  }
  return SequentialSum(u, body_end, n, sum);
}

// ---------------------------------------------------------------------------------------------
// 64 fields of kWidth bits (a power of two) into kWidth little-endian 64-bit words.
template <int kWidth>
HWY_INLINE void PackFields(const std::int32_t* fields, std::uint8_t* out) {
  constexpr int kPerWord = 64 / kWidth;
  for (int w = 0; w < kWidth; ++w) {
    std::uint64_t word = 0;
    for (int i = 0; i < kPerWord; ++i) {
      word |= std::uint64_t{static_cast<std::uint32_t>(fields[w * kPerWord + i])} << (kWidth * i);
    }
    std::memcpy(out + 8 * w, &word, sizeof(word));
  }
}

// The fields of one group (64 elements) into the stream.
template <int kPacked>
HWY_INLINE void WriteGroup(const std::int32_t* group, int field_bits, std::uint8_t* out) {
  if constexpr (kPacked != 0) {
    PackFields<kPacked>(group, out);
  } else {
    quantization::BitWriter writer(out);
    for (std::int64_t k = 0; k < kGroup; ++k) {
      writer.Put(static_cast<std::uint32_t>(group[k]), field_bits);
    }
  }
}

// kPacked: the field width (2, 4, 8 or 16), or 0 for any width through a BitWriter.
template <bool kFeedback, bool kError, int kPacked>
std::int64_t QuantizeQsgdT(const Input<float>& in, const std::uint32_t* words, std::int64_t begin,
                           std::int64_t end, double n, int levels, int width, std::uint8_t* fields,
                           float* e_out) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::RebindToUnsigned<decltype(df)> du;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(dd));
  const int field_bits = width + 1;
  const auto a = hn::Set(df, in.a);
  const auto norm = hn::Set(dd, n);
  const auto s = hn::Set(dd, static_cast<double>(levels));
  const auto one = hn::Set(dd, 1.0);
  const auto two_32 = hn::Set(dd, 4294967296.0);
  const auto two_31 = hn::Set(dd, 2147483648.0);
  const auto infinity = hn::Set(dd, std::numeric_limits<double>::infinity());
  const auto centre = hn::Set(du, 0x80000000u);
  const auto zero_i = hn::Zero(di);
  const auto inverse = hn::Set(dd, 1.0 / n);  // infinite for n = 0, where every lane is outside
  const double e2 = 2 * 5.001 * 0x1p-53 * static_cast<double>(levels);
  const auto margin = hn::Set(dd, e2);
  const auto one_minus_margin = hn::Set(dd, 1.0 - e2);
  const auto word_margin = hn::Set(dd, e2 * 4294967296.0);
  std::int64_t out_of_domain = 0;
  HWY_ALIGN std::int32_t group[kGroup];

  std::int64_t j = begin;
  for (; j + kGroup <= end; j += kGroup) {
    for (std::int64_t k = 0; k < kGroup; k += lanes) {
      const auto u = LoadInput<kFeedback>(df, in, a, j + k);
      const auto magnitude = hn::PromoteTo(dd, hn::Abs(u));
      const auto quantized = hn::And(hn::Lt(magnitude, infinity), hn::Gt(magnitude, hn::Zero(dd)));
      const auto outside = hn::And(quantized, hn::Gt(magnitude, norm));
      out_of_domain += static_cast<std::int64_t>(hn::CountTrue(dd, outside));
      // double(word) exactly: (word - 2^31) as a signed integer, plus 2^31.
      const auto word =
          hn::Add(hn::PromoteTo(
                      dd, hn::BitCast(di, hn::Xor(hn::LoadU(du, words + (j + k - begin)), centre))),
                  two_31);
      // t' = s (a (1/n)) is within E = 5.001 2^-53 s of the definition's t = s (a / n) (three
      // roundings apart in a / n <= 1, two in the products). Where neither floor(t) nor the
      // draw can change within that distance, t' decides as t does; elsewhere (rarely) the
      // vector is recomputed with the definition's division. Margins are 2E, for the rounding
      // of the checks themselves.
      auto t = hn::Mul(s, hn::Mul(magnitude, inverse));
      auto r = hn::Floor(t);
      const auto fraction = hn::Sub(t, r);
      auto threshold = hn::Mul(fraction, two_32);
      const auto unsure = hn::AndNot(
          outside,
          hn::And(quantized,
                  hn::Or(hn::Or(hn::Le(fraction, margin), hn::Ge(fraction, one_minus_margin)),
                         hn::Le(hn::Abs(hn::Sub(word, threshold)), word_margin))));
      if (HWY_UNLIKELY(!hn::AllFalse(dd, unsure))) {
        t = hn::Mul(s, hn::Div(magnitude, norm));
        r = hn::Floor(t);
        threshold = hn::Mul(hn::Sub(t, r), two_32);
      }
      const auto draw = hn::Lt(word, threshold);
      auto level = hn::Add(r, hn::IfThenElseZero(draw, one));
      level = hn::IfThenElseZero(quantized, hn::IfThenElse(outside, s, level));
      const auto level_i = hn::DemoteTo(di, level);
      // 1 where u is negative and its level positive.
      const auto negative = hn::IfThenElseZero(
          hn::Ne(level_i, zero_i), hn::BitCast(di, hn::ShiftRight<31>(hn::BitCast(du, u))));
      hn::Store(hn::Or(level_i, hn::ShiftLeftSame(negative, width)), di, group + k);
      if constexpr (kError) {
        const auto value = hn::DemoteTo(df, hn::Div(hn::Mul(norm, level), s));
        const auto sent =
            hn::Or(hn::BitCast(du, value), hn::ShiftLeft<31>(hn::BitCast(du, negative)));
        hn::StoreU(hn::Sub(u, hn::BitCast(df, sent)), df, e_out + j + k);
      }
    }
    WriteGroup<kPacked>(group, field_bits, fields + j * field_bits / 8);
  }
  return out_of_domain +
         reference::QuantizeQsgd(in, words + (j - begin), j, end, n, levels, width, fields, e_out);
}

// Levels up to kFloatLevels in float lanes, twice as many per vector as QuantizeQsgdT. t' =
// s (a fl(1/n)) in float is within E = 4 2^-24 t' of the definition's t = s (a / n) (three
// float roundings and two double ones; when a fl(1/n) falls below float's normal range, t and t'
// are both far below 1 and only the constant margin below matters). With margins 2.5E on the
// fraction (from either integer) and 2.5E 2^32 + 1024 on the draw (the word as a float is within
// 192 of it; 2.5 rather than 2 covers the rounding of the checks), t' decides exactly as t where
// it is sure; the rare unsure lanes are recomputed by the definition in double. The decoded
// value n l / s comes from `values`, the definition's value of every level.
constexpr int kFloatLevels = 255;

template <bool kFeedback, bool kError, int kPacked>
std::int64_t QuantizeQsgdFloatT(const Input<float>& in, const std::uint32_t* words,
                                std::int64_t begin, std::int64_t end, double n, int levels,
                                int width, std::uint8_t* fields, float* e_out,
                                const float* values) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::RebindToUnsigned<decltype(df)> du;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(df));
  const int field_bits = width + 1;
  const auto a = hn::Set(df, in.a);
  const auto norm = hn::Set(df, static_cast<float>(n));  // n is a float
  const auto inverse = hn::Set(df, static_cast<float>(1.0 / n));
  const auto s = hn::Set(df, static_cast<float>(levels));
  const auto s_i = hn::Set(di, levels);
  const auto two_32 = hn::Set(df, 4294967296.0f);
  const auto two_31 = hn::Set(df, 2147483648.0f);
  const auto infinity = hn::Set(df, std::numeric_limits<float>::infinity());
  const auto centre = hn::Set(du, 0x80000000u);
  const auto zero_i = hn::Zero(di);
  const auto one_i = hn::Set(di, 1);
  const auto one = hn::Set(df, 1.0f);
  const auto margin_factor = hn::Set(df, 10 * 0x1p-24f);  // 2.5E / t'
  const auto word_factor = hn::Set(df, 2560.0f);          // 2.5E 2^32 / t'
  const auto word_constant = hn::Set(df, 1024.0f);
  const auto s_d = static_cast<double>(levels);
  auto out_of_domain = hn::Zero(di);  // minus the count per lane
  HWY_ALIGN std::int32_t group[kGroup];
  HWY_ALIGN float lane_u[hn::MaxLanes(df)];
  const bool small_table = levels < lanes;
  // Fields of 2 or 4 bits are packed a vector at a time.
  constexpr bool kVectorPack = (kPacked == 2 || kPacked == 4) && HWY_TARGET != HWY_SCALAR;
  const hn::Repartition<std::uint64_t, decltype(df)> d64;
  const hn::Rebind<std::uint8_t, decltype(d64)> d8_pairs;
  const hn::Rebind<std::uint32_t, decltype(d64)> d32_pairs;
  const hn::Repartition<std::uint64_t, decltype(d32_pairs)> d64_quads;
  const hn::Rebind<std::uint8_t, decltype(d64_quads)> d8_quads;
  const auto pair_mask = hn::Set(d64, (std::uint64_t{1} << (2 * kPacked)) - 1);
  const auto byte_mask = hn::Set(d64_quads, 0xFF);
  const auto table = hn::LoadU(df, values);  // values has kFloatLevels + 1 >= lanes entries

  std::int64_t j = begin;
  for (; j + kGroup <= end; j += kGroup) {
    for (std::int64_t k = 0; k < kGroup; k += lanes) {
      const auto u = LoadInput<kFeedback>(df, in, a, j + k);
      const auto magnitude = hn::Abs(u);
      const auto quantized = hn::And(hn::Lt(magnitude, infinity), hn::Gt(magnitude, hn::Zero(df)));
      const auto outside = hn::And(quantized, hn::Gt(magnitude, norm));
      out_of_domain = hn::Add(out_of_domain, hn::VecFromMask(di, hn::RebindMask(di, outside)));
      const std::uint32_t* group_words = words + (j + k - begin);
      const auto word_bits = hn::BitCast(di, hn::Xor(hn::LoadU(du, group_words), centre));
      const auto word = hn::Add(hn::ConvertTo(df, word_bits), two_31);
      const auto t = hn::Mul(s, hn::Mul(magnitude, inverse));
      const auto r = hn::Floor(t);
      const auto fraction = hn::Sub(t, r);
      const auto threshold = hn::Mul(fraction, two_32);
      const auto margin = hn::Mul(t, margin_factor);
      const auto word_margin = hn::Add(hn::Mul(t, word_factor), word_constant);
      const auto unsure = hn::AndNot(
          outside,
          hn::And(quantized,
                  hn::Or(hn::Or(hn::Le(fraction, margin), hn::Le(hn::Sub(one, fraction), margin)),
                         hn::Le(hn::Abs(hn::Sub(word, threshold)), word_margin))));
      auto level = hn::Add(hn::ConvertTo(di, r),
                           hn::IfThenElseZero(hn::RebindMask(di, hn::Lt(word, threshold)), one_i));
      level = hn::IfThenElse(hn::RebindMask(di, outside), s_i, level);
      level = hn::IfThenElseZero(hn::RebindMask(di, quantized), level);
      if (HWY_UNLIKELY(!hn::AllFalse(df, unsure))) {
        hn::Store(u, df, lane_u);
        hn::Store(level, di, group + k);
        for (std::uint64_t bits = MaskBits(df, unsure); bits != 0; bits &= bits - 1) {
          const int l = std::countr_zero(bits);
          const double t_exact = s_d * (std::abs(static_cast<double>(lane_u[l])) / n);
          const double r_exact = std::floor(t_exact);
          group[k + l] = static_cast<std::int32_t>(r_exact) +
                         quantization::DrawBelow(t_exact - r_exact, group_words[l]);
        }
        level = hn::Load(di, group + k);
      }
      // 1 where u is negative and its level positive.
      const auto negative = hn::IfThenElseZero(
          hn::Ne(level, zero_i), hn::BitCast(di, hn::ShiftRight<31>(hn::BitCast(du, u))));
      const auto field = hn::Or(level, hn::ShiftLeftSame(negative, width));
      if constexpr (kVectorPack) {
        // Lane pairs hold f_2m | f_2m+1 << 32: moving the upper field next to the lower one
        // leaves 2F bits per 64-bit lane, in order; for F = 2 once more, then one byte per lane.
        const auto pairs = hn::BitCast(d64, field);
        const auto joined = hn::And(hn::Or(pairs, hn::ShiftRight<32 - kPacked>(pairs)), pair_mask);
        std::uint8_t* out = fields + (j + k) * kPacked / 8;
        if constexpr (kPacked == 2) {
          const auto quads = hn::BitCast(d64_quads, hn::TruncateTo(d32_pairs, joined));
          const auto bytes = hn::And(hn::Or(quads, hn::ShiftRight<28>(quads)), byte_mask);
          hn::StoreU(hn::TruncateTo(d8_quads, bytes), d8_quads, out);
        } else {
          hn::StoreU(hn::TruncateTo(d8_pairs, joined), d8_pairs, out);
        }
      } else {
        hn::Store(field, di, group + k);
      }
      if constexpr (kError) {
        // A table of at most one vector is a permutation, much faster than a gather.
        const auto value = small_table ? hn::TableLookupLanes(table, hn::IndicesFromVec(df, level))
                                       : hn::GatherIndex(df, values, level);
        const auto sent =
            hn::Or(hn::BitCast(du, value), hn::ShiftLeft<31>(hn::BitCast(du, negative)));
        hn::StoreU(hn::Sub(u, hn::BitCast(df, sent)), df, e_out + j + k);
      }
    }
    if constexpr (!kVectorPack) WriteGroup<kPacked>(group, field_bits, fields + j * field_bits / 8);
  }
  return reference::QuantizeQsgd(in, words + (j - begin), j, end, n, levels, width, fields, e_out) -
         hn::GetLane(hn::SumOfLanes(di, out_of_domain));
}

std::int64_t QuantizeQsgdImpl(const Input<float>& in, const std::uint32_t* words,
                              std::int64_t begin, std::int64_t end, double n, int levels, int width,
                              std::uint8_t* fields, float* e_out) {
  if (HWY_TARGET == HWY_SCALAR) {
    return reference::QuantizeQsgd(in, words, begin, end, n, levels, width, fields, e_out);
  }
  // Float lanes need fl(1/n) finite (n >= 2^-126 or so), and few levels for rare unsure lanes.
  const bool float_lanes =
      levels <= kFloatLevels && 1.0 / n < static_cast<double>(std::numeric_limits<float>::max());
  HWY_ALIGN float values[kFloatLevels + 1] = {};
  if (float_lanes && e_out != nullptr) {
    for (int level = 0; level <= levels; ++level) {
      values[level] =
          static_cast<float>(n * static_cast<double>(level) / static_cast<double>(levels));
    }
  }
  return WithFeedback(in, [&]<bool kFeedback>() {
    const auto run = [&]<bool kError, int kPacked>() {
      return float_lanes ? QuantizeQsgdFloatT<kFeedback, kError, kPacked>(
                               in, words, begin, end, n, levels, width, fields, e_out, values)
                         : QuantizeQsgdT<kFeedback, kError, kPacked>(in, words, begin, end, n,
                                                                     levels, width, fields, e_out);
    };
    const auto packed = [&]<bool kError>() {
      switch (width + 1) {
        case 2:
          return run.template operator()<kError, 2>();
        case 4:
          return run.template operator()<kError, 4>();
        case 8:
          return run.template operator()<kError, 8>();
        case 16:
          return run.template operator()<kError, 16>();
        default:
          return run.template operator()<kError, 0>();
      }
    };
    return e_out != nullptr ? packed.template operator()<true>()
                            : packed.template operator()<false>();
  });
}

// ---------------------------------------------------------------------------------------------
// For finite u with biased exponent E and mantissa M, |u| = (1 + M 2^-23) 2^(E - 127) (E >= 1)
// or M 2^-149 (E = 0). The definition's cases then read:
//   E = 0:       code 1 iff r < (|u| / 2^-126) 2^32 = M 2^9, else 0 (out of domain if M > 0);
//   1..253:      frexp gives 2m - 1 = M 2^-23 and code E - 1 + 1 + [r < M 2^9] = E + [r < M 2^9];
//   E = 254:     2^127 (M = 0: the draw r < 0 fails) or above it (M > 0: out of domain), 254.
// So code = min(E + [r < M 2^9], 254), compared as unsigned 32-bit integers, exactly.
template <bool kFeedback, bool kError>
Counts QuantizeNaturalT(const Input<float>& in, const std::uint32_t* words, std::int64_t begin,
                        std::int64_t end, std::uint8_t* codes, std::uint8_t* signs, float* e_out) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::Rebind<std::uint8_t, decltype(di)> d8;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(df));
  const auto a = hn::Set(df, in.a);
  const auto centre = hn::Set(du, 0x80000000u);
  const auto mantissa_mask = hn::Set(du, 0x7FFFFFu);
  const auto exponent_mask = hn::Set(di, 0xFF);
  const auto top = hn::Set(di, 254);
  const auto infinite = hn::Set(di, 255);
  const auto one = hn::Set(di, 1);
  const auto zero = hn::Zero(di);
  auto out_of_domain = hn::Zero(di);  // minus the counts per lane
  auto non_finite = hn::Zero(di);

  std::int64_t j = begin;
  for (; j + kGroup <= end; j += kGroup) {
    std::uint64_t sign_word = 0;
    for (std::int64_t k = 0; k < kGroup; k += lanes) {
      const auto u = LoadInput<kFeedback>(df, in, a, j + k);
      const auto bits = hn::BitCast(du, u);
      const auto exponent = hn::And(hn::BitCast(di, hn::ShiftRight<23>(bits)), exponent_mask);
      const auto mantissa = hn::And(bits, mantissa_mask);
      const auto word = hn::BitCast(di, hn::Xor(hn::LoadU(du, words + (j + k - begin)), centre));
      const auto bound = hn::BitCast(di, hn::Xor(hn::ShiftLeft<9>(mantissa), centre));
      const auto finite = hn::Ne(exponent, infinite);
      const auto code = hn::IfThenElseZero(
          finite, hn::Min(hn::Add(exponent, hn::IfThenElseZero(hn::Lt(word, bound), one)), top));
      const auto fraction = hn::Ne(hn::BitCast(di, mantissa), zero);
      const auto outside = hn::And(fraction, hn::Or(hn::Eq(exponent, zero), hn::Eq(exponent, top)));
      out_of_domain = hn::Add(out_of_domain, hn::VecFromMask(di, outside));
      non_finite = hn::Add(non_finite, hn::VecFromMask(di, hn::Not(finite)));
      const auto negative = hn::And(hn::Lt(hn::BitCast(di, bits), zero), hn::Ne(code, zero));
      sign_word |= MaskBits(di, negative) << k;
      hn::StoreU(hn::DemoteTo(d8, code), d8, codes + j + k);
      if constexpr (kError) {
        const auto sent = hn::Or(hn::ShiftLeft<23>(hn::BitCast(du, code)),
                                 hn::IfThenElseZero(hn::RebindMask(du, negative), centre));
        hn::StoreU(hn::Sub(u, hn::BitCast(df, sent)), df, e_out + j + k);
      }
    }
    std::memcpy(signs + j / 8, &sign_word, sizeof(sign_word));
  }
  Counts counts = reference::QuantizeNatural(in, words + (j - begin), j, end, codes, signs, e_out);
  counts.out_of_domain -= hn::GetLane(hn::SumOfLanes(di, out_of_domain));
  counts.non_finite -= hn::GetLane(hn::SumOfLanes(di, non_finite));
  return counts;
}

Counts QuantizeNaturalImpl(const Input<float>& in, const std::uint32_t* words, std::int64_t begin,
                           std::int64_t end, std::uint8_t* codes, std::uint8_t* signs,
                           float* e_out) {
  if (HWY_TARGET == HWY_SCALAR) {
    return reference::QuantizeNatural(in, words, begin, end, codes, signs, e_out);
  }
  return WithFeedback(in, [&]<bool kFeedback>() {
    return e_out != nullptr
               ? QuantizeNaturalT<kFeedback, true>(in, words, begin, end, codes, signs, e_out)
               : QuantizeNaturalT<kFeedback, false>(in, words, begin, end, codes, signs, e_out);
  });
}

}  // namespace lemmalab::multibit::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace lemmalab::multibit {

HWY_EXPORT(NormsImpl);
HWY_EXPORT(SumSquaresImpl);
HWY_EXPORT(QuantizeQsgdImpl);
HWY_EXPORT(QuantizeNaturalImpl);

template <>
NormStats Norms(const Input<float>& in, std::int64_t n, bool sum_squares, float* u_out) {
  return HWY_DYNAMIC_DISPATCH(NormsImpl)(in, n, sum_squares, u_out);
}
template <>
double SumSquares(const float* u, std::int64_t n) {
  return HWY_DYNAMIC_DISPATCH(SumSquaresImpl)(u, n);
}
template <>
std::int64_t QuantizeQsgd(const Input<float>& in, const std::uint32_t* words, std::int64_t begin,
                          std::int64_t end, double n, int levels, int width, std::uint8_t* fields,
                          float* e_out) {
  return HWY_DYNAMIC_DISPATCH(QuantizeQsgdImpl)(in, words, begin, end, n, levels, width, fields,
                                                e_out);
}
template <>
Counts QuantizeNatural(const Input<float>& in, const std::uint32_t* words, std::int64_t begin,
                       std::int64_t end, std::uint8_t* codes, std::uint8_t* signs, float* e_out) {
  return HWY_DYNAMIC_DISPATCH(QuantizeNaturalImpl)(in, words, begin, end, codes, signs, e_out);
}

// double: the scalar definitions.
template <>
NormStats Norms(const Input<double>& in, std::int64_t n, bool sum_squares, double* u_out) {
  return reference::Norms(in, n, sum_squares, u_out);
}
template <>
double SumSquares(const double* u, std::int64_t n) {
  return reference::SumSquares(u, n);
}
template <>
std::int64_t QuantizeQsgd(const Input<double>& in, const std::uint32_t* words, std::int64_t begin,
                          std::int64_t end, double n, int levels, int width, std::uint8_t* fields,
                          double* e_out) {
  return reference::QuantizeQsgd(in, words, begin, end, n, levels, width, fields, e_out);
}
template <>
Counts QuantizeNatural(const Input<double>& in, const std::uint32_t* words, std::int64_t begin,
                       std::int64_t end, std::uint8_t* codes, std::uint8_t* signs, double* e_out) {
  return reference::QuantizeNatural(in, words, begin, end, codes, signs, e_out);
}

}  // namespace lemmalab::multibit
#endif
