// Top-k (spams.txt Definition 1): keep the k coordinates of largest magnitude |x_j|, zero the
// rest. q-deviate with q^2 = 1 - k/d (spams.txt Remark 1): the d - k dropped squares are the
// smallest, so their sum is at most (d - k)/d ||x||^2. The kept values travel exactly in the
// run's precision (compressors/sparse.h), so the declared q needs no rounding slack.
//
// Options: k (a count, >= 1) or fraction (in (0, 1], k = max(1, ceil(fraction * d))), exactly
// one of them; k > d is an error naming k and d.
//
// Ties go to the lower index (docs/conventions.md §6): coordinates are ranked by |x_j|
// descending, then by j ascending, so the message is a function of x alone. A NaN ranks as
// |x| = +inf (tied with infinities, then by index), so non-finite inputs are kept and reach the
// receiver rather than hiding among the dropped coordinates; Encode counts them in
// EncodeStats.non_finite. Selection is by threshold (compressors/top_k.cc): a histogram of the
// magnitudes' leading bits finds the bucket of the k-th largest, then only that bucket is ranked;
// two passes over x and no sort, so encoding runs near memory speed.
//
// Wire format (compressors/sparse.h): the k kept indices ascending (uint8 if d <= 256, uint16 if
// d <= 65536, else uint32; little-endian), then their values in T:
//   bits = k * (8 * IndexBytes(d) + 8 * sizeof(T)).
// Deterministic (deterministic() is true): draws no words from the stream. EF21's contraction
// constant (class C(alpha)) follows from q: alpha = 1 - q^2 = k/d.
// Split: not supported, as for every sparse message (compressors/sparse.h).
#pragma once

#include "compressors/compressor.h"

namespace lemmalab {

template <typename T>
std::unique_ptr<Compressor<T>> MakeTopK(std::int64_t dimension, std::int64_t k);

template <typename T>
CompressorMaker<T> TopKFromOptions(OptionTable& options);

}  // namespace lemmalab
