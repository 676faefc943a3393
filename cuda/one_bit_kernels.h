// The CUDA kernels of the 1-bit compressors (cuda/one_bit.cu), launched on plain device pointers.
// cuda/one_bit.h puts a format and its buffers around them; the arithmetic of each element and of
// each scale is compressors/one_bit_element.h's, shared with the CPU.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "compressors/kernel_input.h"
#include "compressors/one_bit_element.h"
#include "core/stream_words.h"

namespace lemmalab::cuda::one_bit_kernels {

// u_j = x_j + a e_j (u = x when e is null), rounded as on the CPU (nvcc compiles with
// --fmad=false).
using Input = KernelInput<float>;

// Blocks [ends[b - 1], ends[b]) with ends[-1] = 0, covering [0, ends[count - 1]); a device array.
struct Blocks {
  const std::int64_t* ends = nullptr;
  std::int64_t count = 0;
};

// What each block's scale needs, in one_bit_element.h's definition: max |u_j| over the finite
// u_j as float bits in max_bits[b] (kMaxAbs; max_bits must hold zeros), or the kPartials partial
// sums of u_j^2 or |u_j| in fixed order in partials[kPartials b ...] (kRms, kMeanAbs).
void Reduce(one_bit::Scale kind, const Input& u, std::int64_t d, const Blocks& blocks,
            double* partials, std::uint32_t* max_bits, cudaStream_t stream);

// scales[b] = ScaleFromReduction(kind, reduction of block b, its size).
void Scales(one_bit::Scale kind, const Blocks& blocks, const double* partials,
            const std::uint32_t* max_bits, float* scales, cudaStream_t stream);

// Packs the bit of every element (bit j of word j / 32 at position j % 32; the last word's
// unused bits are zero) with the scale of its block (1 when scales is null); e_out (may be u.e,
// or null) gets Residual(u_j, bit, scale). counts[0] += out-of-domain inputs (kStochastic),
// counts[1] += non-finite inputs.
void Quantize(one_bit::Draw draw, const Input& u, std::int64_t d, const Blocks& blocks,
              const float* scales, const StreamAt& words, std::uint32_t* bits, float* e_out,
              unsigned long long* counts, cudaStream_t stream);

// out_j = v or, with accumulate, out_j += v, for v = bit_j ? value_B : -value_B and
// value_B = scale_B (weight * scale_B when accumulating), the CPU decoder's arithmetic.
void Expand(const std::uint32_t* bits, std::int64_t d, const Blocks& blocks, const float* scales,
            float weight, bool accumulate, float* out, cudaStream_t stream);

}  // namespace lemmalab::cuda::one_bit_kernels
