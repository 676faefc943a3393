// SIMD kernels of compressors/one_bit.h for float, one copy per Highway target, dispatched at
// run time; double and the unaligned ends of a range use the scalar reference kernels.
//
// A quantize pass handles 64 elements per packed 64-bit word, so a range is split into a scalar
// head up to the next multiple of 64, whole words, and a scalar tail. Within a word every vector
// of N lanes contributes N mask bits at its offset.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "compressors/one_bit.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: per-target headers must follow foreach_target.h and highway.h.
#include <hwy/highway.h>

#include "compressors/mask_bits-inl.h"
#include "core/philox-inl.h"
// clang-format on

#include <algorithm>
#include <cstring>
#include <limits>

#include "compressors/one_bit.h"

HWY_BEFORE_NAMESPACE();
namespace lemmalab::one_bit::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
namespace philox = lemmalab::HWY_NAMESPACE::philox;
using lemmalab::HWY_NAMESPACE::MaskBits;

constexpr std::int64_t kWordBits = 64;

std::int64_t WordAlignedStart(std::int64_t begin, std::int64_t end) {
  return std::min(end, (begin + kWordBits - 1) / kWordBits * kWordBits);
}

// How u is formed: x alone, x + e (a = 1, where a e = e exactly, so the multiply is skipped),
// or x + a e.
enum Feedback { kNoFeedback, kUnitFeedback, kScaledFeedback };

Feedback ModeOf(const Input<float>& in) {
  if (in.e == nullptr) return kNoFeedback;
  return in.a == 1.0f ? kUnitFeedback : kScaledFeedback;
}

// u = x + a e on lanes [j, j + Lanes(d)).
template <int kFeedback, class D>
HWY_INLINE hn::Vec<D> LoadInput(D d, const Input<float>& in, hn::Vec<D> a, std::int64_t j) {
  const hn::Vec<D> x = hn::LoadU(d, in.x + j);
  if constexpr (kFeedback == kUnitFeedback) {
    return hn::Add(x, hn::LoadU(d, in.e + j));
  } else if constexpr (kFeedback == kScaledFeedback) {
    return hn::Add(x, hn::Mul(a, hn::LoadU(d, in.e + j)));
  } else {
    return x;
  }
}

// Calls f.template operator()<mode>() for the input's feedback mode.
template <typename F>
HWY_INLINE auto WithMode(const Input<float>& in, F&& f) {
  switch (ModeOf(in)) {
    case kUnitFeedback:
      return f.template operator()<kUnitFeedback>();
    case kScaledFeedback:
      return f.template operator()<kScaledFeedback>();
    default:
      return f.template operator()<kNoFeedback>();
  }
}

// Lane l holds 1 << l.
template <class DU>
HWY_INLINE hn::Vec<DU> LaneBits(DU du) {
  return hn::Set(du, 1u) << hn::Iota(du, 0);
}

// ---------------------------------------------------------------------------------------------
// Reductions: 16 double partial sums, lane l of accumulator k holding partial k * L + l.
template <int kFeedback, bool kSquares>
double FixedOrderSumImpl(const Input<float>& in, std::int64_t begin, std::int64_t end) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;  // as many floats as dd has doubles
  constexpr std::size_t kMaxVectors = kPartials;
  const std::size_t lanes = hn::Lanes(dd);
  const std::size_t vectors = kPartials / lanes;
  const auto a = hn::Set(df, in.a);
  hn::Vec<decltype(dd)> acc[kMaxVectors];
  for (std::size_t k = 0; k < vectors; ++k) acc[k] = hn::Zero(dd);
  std::int64_t j = begin;
  for (; j + kPartials <= end; j += kPartials) {
    for (std::size_t k = 0; k < vectors; ++k) {
      const auto u = hn::PromoteTo(
          dd, LoadInput<kFeedback>(df, in, a, j + static_cast<std::int64_t>(k * lanes)));
      acc[k] = hn::Add(acc[k], kSquares ? hn::Mul(u, u) : hn::Abs(u));
    }
  }
  HWY_ALIGN double partials[kPartials];
  for (std::size_t k = 0; k < vectors; ++k) hn::Store(acc[k], dd, partials + k * lanes);
  for (; j < end; ++j) {
    const double u = static_cast<double>(in[j]);
    partials[(j - begin) % kPartials] += kSquares ? u * u : std::abs(u);
  }
  return CombinePartials(partials);
}

double SumSquaresImpl(const Input<float>& in, std::int64_t begin, std::int64_t end) {
  return WithMode(in, [&]<int kMode>() { return FixedOrderSumImpl<kMode, true>(in, begin, end); });
}

double SumAbsImpl(const Input<float>& in, std::int64_t begin, std::int64_t end) {
  return WithMode(in, [&]<int kMode>() { return FixedOrderSumImpl<kMode, false>(in, begin, end); });
}

template <int kFeedback>
double MaxAbsFiniteT(const Input<float>& in, std::int64_t begin, std::int64_t end) {
  const hn::ScalableTag<float> df;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(df));
  const auto a = hn::Set(df, in.a);
  auto largest = hn::Zero(df);
  std::int64_t j = begin;
  for (; j + lanes <= end; j += lanes) {
    const auto u = LoadInput<kFeedback>(df, in, a, j);
    largest = hn::Max(largest, hn::IfThenElseZero(hn::IsFinite(u), hn::Abs(u)));
  }
  const double body = hn::GetLane(hn::MaxOfLanes(df, largest));
  return std::max(body, reference::MaxAbsFinite(in, j, end));
}

double MaxAbsFiniteImpl(const Input<float>& in, std::int64_t begin, std::int64_t end) {
  return WithMode(in, [&]<int kMode>() { return MaxAbsFiniteT<kMode>(in, begin, end); });
}

// ---------------------------------------------------------------------------------------------
// Quantizers. kStochastic: Birder's Q (needs words); else sign. kScaled: divide u by the scale.
// Words [first, first + n) of a stream, one Random123 block at a time (the ends of a fused range).
void ScalarWords(const StreamAt& draw, std::uint64_t first, std::int64_t n, std::uint32_t* out) {
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint64_t w = first + static_cast<std::uint64_t>(i);
    out[i] = draw.Block(w / 4)[w % 4];
  }
}

// Stochastic quantization of [begin, end) by the scalar definition, with words from `draw`
// (fused) or `words`.
template <bool kFused>
Counts ReferenceStochastic(const Input<float>& in, float scale, const std::uint32_t* words,
                           const StreamAt* draw, std::int64_t range_begin, std::int64_t begin,
                           std::int64_t end, std::uint8_t* bits, float* e_out) {
  if constexpr (kFused) {
    HWY_ALIGN std::uint32_t local[kWordBits];
    Counts counts;
    for (std::int64_t j = begin; j < end; j += kWordBits) {
      const std::int64_t n = std::min(end - j, kWordBits);
      ScalarWords(*draw, draw->first + static_cast<std::uint64_t>(j - range_begin), n, local);
      counts += reference::QuantizeStochastic(in, scale, local, j, j + n, bits, e_out);
    }
    return counts;
  } else {
    return reference::QuantizeStochastic(in, scale, words + (begin - range_begin), begin, end, bits,
                                         e_out);
  }
}

// kStochastic: Birder's Q, with words from `words` or, kFused, generated per group of 64 from
// `draw`; else sign. kScaled: divide u by the scale.
template <bool kStochastic, bool kFused, int kFeedback, bool kScaled>
Counts QuantizeT(const Input<float>& in, float scale, const std::uint32_t* words,
                 const StreamAt* draw, std::int64_t begin, std::int64_t end, std::uint8_t* bits,
                 float* e_out) {
  const std::int64_t body_begin = WordAlignedStart(begin, end);
  Counts counts = kStochastic ? ReferenceStochastic<kFused>(in, scale, words, draw, begin, begin,
                                                            body_begin, bits, e_out)
                              : reference::QuantizeSign(in, scale, begin, body_begin, bits, e_out);

  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::RebindToUnsigned<decltype(df)> du;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(df));
  const auto a = hn::Set(df, in.a);
  const auto one = hn::Set(df, 1.0f), minus_one = hn::Set(df, -1.0f);
  const auto two_31 = hn::Set(df, 2147483648.0f);
  const auto centre = hn::Set(du, 0x80000000u);
  const auto plus_value = hn::Set(df, scale), minus_value = hn::Set(df, -scale);
  const auto inverse = hn::Set(df, 1.0f / scale);
  const auto infinity = hn::Set(df, std::numeric_limits<float>::infinity());
  auto out_of_domain = hn::Zero(di);
  std::int64_t infinities = 0;

#if HWY_TARGET != HWY_SCALAR
  // A group of 64 words is 16 Philox blocks: kGroups vectors of blocks.
  constexpr int kGroups = static_cast<int>(16 / hn::MaxLanes(du));
  static_assert(kGroups >= 1 && 16 % hn::MaxLanes(du) == 0, "64 words per group of lanes");
  const philox::Keys keys(draw != nullptr ? draw->key : r123::Philox4x32::key_type{},
                          draw != nullptr ? draw->counter : r123::Philox4x32::ctr_type{});
#endif
  HWY_ALIGN std::uint32_t local[kWordBits];

  std::int64_t j = body_begin;
  for (; j + kWordBits <= end; j += kWordBits) {
    std::uint64_t word = 0;
    const std::uint32_t* group_words = nullptr;
    if constexpr (kStochastic && kFused) {
#if HWY_TARGET != HWY_SCALAR
      const std::uint64_t first = draw->first + static_cast<std::uint64_t>(j - begin);
      philox::Blocks<kGroups>(du, keys, static_cast<std::uint32_t>(first / 4), local);
#endif
      group_words = local;
    } else if constexpr (kStochastic) {
      group_words = words + (j - begin);
    }
    for (std::int64_t k = 0; k < kWordBits; k += lanes) {
      const auto u = LoadInput<kFeedback>(df, in, a, j + k);
      const auto magnitude = hn::Abs(u);
      const auto finite = hn::Lt(magnitude, infinity);  // false for NaN and +-inf
      if (HWY_UNLIKELY(!hn::AllTrue(df, finite))) {
        const auto bad = hn::Not(finite);
        counts.non_finite += static_cast<std::int64_t>(hn::CountTrue(df, bad));
        infinities +=
            static_cast<std::int64_t>(hn::CountTrue(df, hn::And(bad, hn::Gt(magnitude, one))));
      }
      hn::Mask<decltype(df)> plus;
      if constexpr (kStochastic) {
        // Counts infinities too; they are taken off after the loop.
        const auto outside = hn::Gt(magnitude, one);
        out_of_domain = hn::Sub(out_of_domain, hn::VecFromMask(di, hn::RebindMask(di, outside)));
        auto v = kScaled ? hn::Mul(u, inverse) : u;
        v = hn::Min(hn::Max(v, minus_one), one);
        // r - 2^31 < v 2^31  <=>  r - 2^31 < ceil(v 2^31); v = 1 (ceil = 2^31) always draws +1.
        const auto threshold = hn::ConvertTo(di, hn::Ceil(hn::Mul(v, two_31)));
        const auto r = hn::BitCast(di, hn::Xor(hn::LoadU(du, group_words + k), centre));
        plus = hn::And(hn::Or(hn::RebindMask(df, hn::Lt(r, threshold)), hn::Ge(v, one)), finite);
      } else {
        plus = hn::Ge(u, hn::Zero(df));
      }
      word |= MaskBits(df, plus) << k;
      if (e_out != nullptr) {
        hn::StoreU(hn::Sub(u, hn::IfThenElse(plus, plus_value, minus_value)), df, e_out + j + k);
      }
    }
    std::memcpy(bits + j / 8, &word, sizeof(word));
  }
  if constexpr (kStochastic) {
    counts.out_of_domain += hn::GetLane(hn::SumOfLanes(di, out_of_domain)) - infinities;
  }

  const Counts tail =
      kStochastic ? ReferenceStochastic<kFused>(in, scale, words, draw, begin, j, end, bits, e_out)
                  : reference::QuantizeSign(in, scale, j, end, bits, e_out);
  counts += tail;
  return counts;
}

Counts QuantizeStochasticImpl(const Input<float>& in, float scale, const std::uint32_t* words,
                              std::int64_t begin, std::int64_t end, std::uint8_t* bits,
                              float* e_out) {
  return WithMode(in, [&]<int kMode>() {
    return scale != 1.0f ? QuantizeT<true, false, kMode, true>(in, scale, words, nullptr, begin,
                                                               end, bits, e_out)
                         : QuantizeT<true, false, kMode, false>(in, scale, words, nullptr, begin,
                                                                end, bits, e_out);
  });
}

Counts QuantizeStochasticFusedImpl(const Input<float>& in, float scale, const StreamAt& draw,
                                   std::int64_t begin, std::int64_t end, std::uint8_t* bits,
                                   float* e_out) {
  // The groups must start on a block: element j of a 64-aligned group needs word 4k.
  if (HWY_TARGET == HWY_SCALAR || (draw.first - static_cast<std::uint64_t>(begin)) % 4 != 0) {
    return ReferenceStochastic<true>(in, scale, nullptr, &draw, begin, begin, end, bits, e_out);
  }
  return WithMode(in, [&]<int kMode>() {
    return scale != 1.0f ? QuantizeT<true, true, kMode, true>(in, scale, nullptr, &draw, begin, end,
                                                              bits, e_out)
                         : QuantizeT<true, true, kMode, false>(in, scale, nullptr, &draw, begin,
                                                               end, bits, e_out);
  });
}

Counts QuantizeSignImpl(const Input<float>& in, float scale, std::int64_t begin, std::int64_t end,
                        std::uint8_t* bits, float* e_out) {
  return WithMode(in, [&]<int kMode>() {
    return QuantizeT<false, false, kMode, false>(in, scale, nullptr, nullptr, begin, end, bits,
                                                 e_out);
  });
}

// ---------------------------------------------------------------------------------------------
template <bool kAdd>
void ExpandT(const std::uint8_t* bits, float value, std::int64_t begin, std::int64_t end,
             float* out) {
  const std::int64_t body_begin = WordAlignedStart(begin, end);
  if constexpr (kAdd) {
    reference::ExpandAdd(bits, value, begin, body_begin, out);
  } else {
    reference::Expand(bits, value, begin, body_begin, out);
  }
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(df));
  const std::uint64_t lane_mask = lanes >= 64 ? ~0ull : (1ull << lanes) - 1;
  const auto lane_bits = LaneBits(du);
  const auto plus_value = hn::Set(df, value), minus_value = hn::Set(df, -value);
  std::int64_t j = body_begin;
  for (; j + kWordBits <= end; j += kWordBits) {
    std::uint64_t word;
    std::memcpy(&word, bits + j / 8, sizeof(word));
    for (std::int64_t k = 0; k < kWordBits; k += lanes) {
      const auto own = hn::Set(du, static_cast<std::uint32_t>((word >> k) & lane_mask));
      const auto v =
          hn::IfThenElse(hn::RebindMask(df, hn::TestBit(own, lane_bits)), plus_value, minus_value);
      if constexpr (kAdd) {
        hn::StoreU(hn::Add(hn::LoadU(df, out + j + k), v), df, out + j + k);
      } else {
        hn::StoreU(v, df, out + j + k);
      }
    }
  }
  if constexpr (kAdd) {
    reference::ExpandAdd(bits, value, j, end, out);
  } else {
    reference::Expand(bits, value, j, end, out);
  }
}

void ExpandImpl(const std::uint8_t* bits, float value, std::int64_t begin, std::int64_t end,
                float* out) {
  ExpandT<false>(bits, value, begin, end, out);
}

void ExpandAddImpl(const std::uint8_t* bits, float value, std::int64_t begin, std::int64_t end,
                   float* acc) {
  ExpandT<true>(bits, value, begin, end, acc);
}

}  // namespace lemmalab::one_bit::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace lemmalab::one_bit {

HWY_EXPORT(SumSquaresImpl);
HWY_EXPORT(SumAbsImpl);
HWY_EXPORT(MaxAbsFiniteImpl);
HWY_EXPORT(QuantizeStochasticImpl);
HWY_EXPORT(QuantizeStochasticFusedImpl);
HWY_EXPORT(QuantizeSignImpl);
HWY_EXPORT(ExpandImpl);
HWY_EXPORT(ExpandAddImpl);

template <>
double SumSquares(const Input<float>& in, std::int64_t begin, std::int64_t end) {
  return HWY_DYNAMIC_DISPATCH(SumSquaresImpl)(in, begin, end);
}
template <>
double SumAbs(const Input<float>& in, std::int64_t begin, std::int64_t end) {
  return HWY_DYNAMIC_DISPATCH(SumAbsImpl)(in, begin, end);
}
template <>
double MaxAbsFinite(const Input<float>& in, std::int64_t begin, std::int64_t end) {
  return HWY_DYNAMIC_DISPATCH(MaxAbsFiniteImpl)(in, begin, end);
}
template <>
Counts QuantizeStochastic(const Input<float>& in, float scale, const std::uint32_t* words,
                          std::int64_t begin, std::int64_t end, std::uint8_t* bits, float* e_out) {
  return HWY_DYNAMIC_DISPATCH(QuantizeStochasticImpl)(in, scale, words, begin, end, bits, e_out);
}
Counts QuantizeStochasticFused(const Input<float>& in, float scale, const StreamAt& words,
                               std::int64_t begin, std::int64_t end, std::uint8_t* bits,
                               float* e_out) {
  return HWY_DYNAMIC_DISPATCH(QuantizeStochasticFusedImpl)(in, scale, words, begin, end, bits,
                                                           e_out);
}
template <>
Counts QuantizeSign(const Input<float>& in, float scale, std::int64_t begin, std::int64_t end,
                    std::uint8_t* bits, float* e_out) {
  return HWY_DYNAMIC_DISPATCH(QuantizeSignImpl)(in, scale, begin, end, bits, e_out);
}
template <>
void Expand(const std::uint8_t* bits, float value, std::int64_t begin, std::int64_t end,
            float* out) {
  HWY_DYNAMIC_DISPATCH(ExpandImpl)(bits, value, begin, end, out);
}
template <>
void ExpandAdd(const std::uint8_t* bits, float value, std::int64_t begin, std::int64_t end,
               float* acc) {
  HWY_DYNAMIC_DISPATCH(ExpandAddImpl)(bits, value, begin, end, acc);
}

// double: the scalar definition.
template <>
double SumSquares(const Input<double>& in, std::int64_t begin, std::int64_t end) {
  return reference::SumSquares(in, begin, end);
}
template <>
double SumAbs(const Input<double>& in, std::int64_t begin, std::int64_t end) {
  return reference::SumAbs(in, begin, end);
}
template <>
double MaxAbsFinite(const Input<double>& in, std::int64_t begin, std::int64_t end) {
  return reference::MaxAbsFinite(in, begin, end);
}
template <>
Counts QuantizeStochastic(const Input<double>& in, double scale, const std::uint32_t* words,
                          std::int64_t begin, std::int64_t end, std::uint8_t* bits, double* e_out) {
  return reference::QuantizeStochastic(in, scale, words, begin, end, bits, e_out);
}
template <>
Counts QuantizeSign(const Input<double>& in, double scale, std::int64_t begin, std::int64_t end,
                    std::uint8_t* bits, double* e_out) {
  return reference::QuantizeSign(in, scale, begin, end, bits, e_out);
}
template <>
void Expand(const std::uint8_t* bits, double value, std::int64_t begin, std::int64_t end,
            double* out) {
  reference::Expand(bits, value, begin, end, out);
}
template <>
void ExpandAdd(const std::uint8_t* bits, double value, std::int64_t begin, std::int64_t end,
               double* acc) {
  reference::ExpandAdd(bits, value, begin, end, acc);
}

}  // namespace lemmalab::one_bit
#endif
