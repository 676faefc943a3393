// Random-k's draw rule (compressors/random_k.h: Floyd's algorithm with Lemire's bounded draws) in
// a form that draws all k at once, for the GPU (batched/kernels.h, cuda/sparse.cu). The CPU's
// RandomKChoice runs the rule step after step; this form gives the same kept set by construction,
// in three passes:
//
//   1. Every draw's first attempt, from word i of the stream (FirstAttempt): its value t_i, or
//      kRejected when Lemire's method rejects the word.
//   2. The rejected draws, in order of i, take the words after the first k, one after another
//      (ReplaceRejected): the only serial pass, over the rejections alone (probability
//      < (d - k + i + 1) / 2^32 each).
//   3. Step i of Floyd's algorithm keeps t_i unless an earlier step kept t_i already, and then
//      keeps j_i = d - k + i (KeptAt). An earlier step kept t_i exactly when an earlier draw equals
//      t_i (a coordinate below d - k is only ever kept as some draw), or when t_i = j_p of an
//      earlier step p (t_i >= d - k) that itself kept its j_p, i.e. whose own t_p was kept before
//      it: a chain to ever earlier steps, which ends after one link but with probability about k/d.
//
// nvcc compiles this header for the device: C++17, no standard containers.
#pragma once

#include <cstdint>

#include "compressors/sparse_element.h"
#include "core/host_device.h"
#include "core/stream_words.h"

namespace lemmalab::random_k {

// A draw whose first attempt was rejected. No draw takes this value but the last one when
// d = 2^32, whose range 2^32 rejects nothing (IsRejected).
inline constexpr std::uint32_t kRejected = 0xffffffffu;

// Draw i's range: t_i is uniform below j_i + 1, j_i = d - k + i.
LEMMALAB_HOST_DEVICE inline std::uint64_t Range(std::int64_t d, std::int64_t k, std::int64_t i) {
  return static_cast<std::uint64_t>(d - k + i) + 1;
}

LEMMALAB_HOST_DEVICE inline bool IsRejected(std::uint32_t draw, std::uint64_t range) {
  return draw == kRejected && range != (std::uint64_t{1} << 32);
}

// Draw i's value from its first attempt `word`, or kRejected.
LEMMALAB_HOST_DEVICE inline std::uint32_t FirstAttempt(std::uint32_t word, std::int64_t d,
                                                       std::int64_t k, std::int64_t i) {
  const std::uint64_t range = Range(d, k, i), product = std::uint64_t{word} * range;
  return sparse::LemireRejects(product, range) ? kRejected
                                               : static_cast<std::uint32_t>(product >> 32);
}

// Gives the `count` rejected draws listed in `rejected` (ascending) their values from the words
// after the first k, in order, as the serial rule takes them; word_at(p) is word p of the stream
// from where the choice starts (a StreamWords, core/stream_words.h). Returns how many words the
// choice used in all.
template <typename WordAt>
LEMMALAB_HOST_DEVICE std::uint64_t ReplaceRejected(std::uint32_t* draws,
                                                   const std::uint32_t* rejected,
                                                   std::int64_t count, std::int64_t d,
                                                   std::int64_t k, WordAt& word_at) {
  std::uint64_t next = static_cast<std::uint64_t>(k);
  for (std::int64_t r = 0; r < count; ++r) {
    const std::uint32_t i = rejected[r];
    const std::uint64_t range = Range(d, k, i);
    std::uint64_t product;
    do {
      product = std::uint64_t{word_at(next++)} * range;
    } while (sparse::LemireRejects(product, range));
    draws[i] = static_cast<std::uint32_t>(product >> 32);
  }
  return next;
}

// The coordinate step i keeps, from every draw's value and first_draw(t), the smallest p with
// t_p = t (for every t that is some draw's value).
template <typename FirstDraw>
LEMMALAB_HOST_DEVICE std::uint32_t KeptAt(const std::uint32_t* draws, const FirstDraw& first_draw,
                                          std::int64_t d, std::int64_t k, std::int64_t i) {
  const std::int64_t low = d - k;  // j_0: a draw at or above it is some step's j
  std::int64_t step = i;           // is t_step kept before step `step`?
  for (;;) {
    const std::uint32_t t = draws[step];
    if (first_draw(t) < step) return static_cast<std::uint32_t>(low + i);  // yes: keep j_i
    // No: keep t_i. (t - low > step cannot happen, as t_step <= j_step; the test keeps a
    // corrupt draw from sending the walk out of the row.)
    if (t < low || t - low >= step) return draws[i];
    step = t - low;  // t = j_step of an earlier step: kept there if its own t was kept before
  }
}

}  // namespace lemmalab::random_k
