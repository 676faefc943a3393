// Block-Sign (spams.txt Definition 2, Remark 1): for blocks B_1..B_M of sizes d_i,
//   C(x) = [sign(x_B1) ||x_B1||_1 / d_1, ..., sign(x_BM) ||x_BM||_1 / d_M],
// q-deviate with q^2 = 1 - min_i 1/d_i (by Cauchy-Schwarz; zero is sent as +1, which leaves
// <sign(x_B), x_B> = ||x_B||_1 and so the bound unchanged). The declared q adds 2^-23 for the
// float32 rounding of the scales on the wire; EF21's alpha = 1 - q^2 follows from it.
// Deterministic: draws nothing.
// Options: blocks = "layers" (default: the problem's layers, as SPAMS uses for networks) or
// "fixed" with block_size = n (the last block shorter). Wire format: one float32 scale per block,
// then the packed sign bits.
// Split (chunked collectives; compressors/one_bit_compressor.h): part k is the scale of every
// block its range overlaps, repeated in each part, then the bits of its range. With blocks =
// "layers" always exact, even through a layer: Restrict makes the cut layer's piece a flat block
// of its own, which receives the whole layer's scale. With "fixed" blocks of n only when each
// range starts at a multiple of n or lies inside one block (an instance for the range restarts
// its blocks at its start); false otherwise.
#pragma once

#include "compressors/compressor.h"

namespace lemmalab {

// The wire format (compressors/one_bit_compressor.h), for the CPU and CUDA encoders alike.
struct OneBitFormat;
OneBitFormat BlockSignFormat(const CompressorShape& shape, std::int64_t block_size = 0);

template <typename T>
std::unique_ptr<Compressor<T>> MakeBlockSign(const CompressorShape& shape,
                                             std::int64_t block_size = 0);  // 0: layers

template <typename T>
CompressorMaker<T> BlockSignFromOptions(OptionTable& options);

}  // namespace lemmalab
