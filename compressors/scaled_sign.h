// Scaled sign, 1-bit Adam's compressor (onebit-adam.txt Sec. 4.3, Alg. 1 line 7):
//   C(x) = (||x|| / ||sign(x)||) sign(x)
// per chunk of the vector, with zero sent as +1 so ||sign(x_c)|| = sqrt(d_c) (docs/conventions.md
// §5). Option `chunk` (elements per scale; 0, the default, means one scale for the
// whole vector, as the worker's C in the algorithm box). Wire format: one float32 scale per
// chunk, then the packed sign bits: 8 ceil(d/8) + 32 * chunks bits. Deterministic (draws
// nothing) and biased, with no q < 1 and so no alpha in general (x = e_1 gives
// ||C(x) - x||^2 = (2 - 2/sqrt(d)) ||x||^2).
// Split (the chunked compressed allreduce: a worker's whole-vector message cut into the servers'
// chunks): part k is the scale of every chunk its range overlaps, repeated in each part, then the
// bits of its range (compressors/one_bit_compressor.h). Always exact with one scale (chunk = 0);
// with chunk = n only when each range starts at a multiple of n or lies inside one chunk, since
// an instance for the range restarts its chunks at the range's start; false otherwise.
#pragma once

#include "compressors/compressor.h"

namespace lemmalab {

// The wire format (compressors/one_bit_compressor.h), for the CPU and CUDA encoders alike.
struct OneBitFormat;
OneBitFormat ScaledSignFormat(std::int64_t dimension, std::int64_t chunk = 0);

template <typename T>
std::unique_ptr<Compressor<T>> MakeScaledSign(std::int64_t dimension, std::int64_t chunk = 0);

template <typename T>
CompressorMaker<T> ScaledSignFromOptions(OptionTable& options);

}  // namespace lemmalab
