// Random-k: keep k coordinates chosen uniformly at random without replacement, zero the rest
// (rand_k of Stich, Cordonnier & Jaggi, "Sparsified SGD with memory", NeurIPS 2018: birder.txt
// ref. [27], spams.txt ref. [51]; docs/conventions.md §14).
// Each coordinate is kept with probability k/d, so
//   scaled = true  (default): C(x) = (d/k) x_S, unbiased, E||C(x) - x||^2 = (d/k - 1) ||x||^2;
//   scaled = false:           C(x) = x_S, biased, E||C(x) - x||^2 = (1 - k/d) ||x||^2.
// Neither has a deterministic q (the error depends on the draw), so q() is nullopt; the
// expectations are the literature's constants, declared as omega() = d/k - 1 (scaled: DIANA's
// and MARINA's U(omega)) and alpha() = k/d (unscaled: EF21's C(alpha)), both attained with
// equality for every x.
//
// Options: k (a count, >= 1) or fraction (in (0, 1], k = max(1, ceil(fraction * d))), exactly
// one of them, as for top-k; scaled (bool, default true).
//
// Draw rule (part of the format, so other implementations can reproduce it): Robert Floyd's
// sampling algorithm (Bentley & Floyd, "A sample of brilliance", CACM 1987): for i = 0..k-1,
// with j = d - k + i, draw t uniform in [0, j]; keep t if it is not kept yet, else keep j. This
// gives every k-subset probability 1 / C(d, k) exactly. Draw i takes its first attempt from
// word i of the stream from where Encode starts (the k words come from one vectorised Fill) and
// turns it into t by Lemire's multiply-and-reject method (compressors/sparse.h: UniformBelow),
// which is exact; a rejected attempt (probability < (j + 1) / 2^32) is replaced by the next
// unused word after those k, in the order rejections occur. The stream is left after the last
// word used: k words when nothing is rejected.
//
// Wire format (compressors/sparse.h): the k kept indices ascending, then their raw values x_j in
// T; the receiver applies the factor d/k (rounded to T) of the scaled variant, since both ends
// know k and d. So the two variants send the same bytes and the message carries x exactly:
//   bits = k * (8 * IndexBytes(d) + 8 * sizeof(T)).
// Non-finite inputs are counted over all d coordinates, kept or not.
// Split: not supported, as for every sparse message (compressors/sparse.h).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "compressors/compressor.h"
#include "compressors/sparse.h"

namespace lemmalab {

// Random-k's choice of k of the d coordinates from a stream: Floyd's algorithm over a bitmap,
// one word per step plus one per rejection of UniformBelow. The CUDA encoder (cuda/sparse.h)
// makes its choice with this class too, on the host.
class RandomKChoice {
 public:
  RandomKChoice(std::int64_t dimension, std::int64_t k);
  // The chosen coordinates, ascending, valid until the next call.
  std::span<const std::uint32_t> Choose(PhiloxStream& stream);

 private:
  std::int64_t dimension_, k_;
  std::vector<std::uint32_t> words_;   // first attempts of the k draws
  std::vector<std::uint64_t> chosen_;  // bit j: coordinate j kept
  std::vector<std::uint32_t> kept_;
};

// The factor every received value is multiplied by: d / k when scaled (unbiased), else 1.
template <typename T>
T RandomKScale(std::int64_t dimension, std::int64_t k, bool scaled) {
  return scaled ? SparseScale<T>(dimension, k) : T(1);
}

template <typename T>
std::unique_ptr<Compressor<T>> MakeRandomK(std::int64_t dimension, std::int64_t k, bool scaled);

template <typename T>
CompressorMaker<T> RandomKFromOptions(OptionTable& options);

}  // namespace lemmalab
