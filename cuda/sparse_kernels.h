// The CUDA kernels of the sparse compressors (cuda/sparse.cu), launched on plain device pointers;
// cuda/sparse.h puts top-k and random-k around them. Keys and residuals are
// compressors/sparse_element.h's, shared with the CPU.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "compressors/kernel_input.h"
#include "core/stream_words.h"

namespace lemmalab::cuda::sparse_kernels {

// u into u_out (may be u.e; null when u.e is), rounded as on the CPU; adds the number of
// non-finite u_j to *non_finite.
void Prepare(const KernelInput<float>& u, std::int64_t d, float* u_out,
             unsigned long long* non_finite, cudaStream_t stream);

// The state of a top-k selection in device memory.
struct Selection {
  std::uint32_t prefix = 0;     // the threshold key's leading bits found so far
  unsigned long long need = 0;  // how many keys equal to the prefix are still to keep
  std::uint32_t histogram[256] = {};
};

// Bytes of scratch TopKIndices and RandomKIndices need for d elements (their prefix sums; besides
// their other buffers).
std::size_t ScanScratchBytes(std::int64_t d);

// The kept set of top-k, ascending, into indices[0, k): the first k coordinates in the order
// (key descending, index ascending), key = MagnitudeKey. The threshold key is found by radix
// selection, 8 bits per pass over the values (integer counts, so the same on every run), and
// the kept set compacted with two prefix sums (CUB). flags and ranks hold d words each.
void TopKIndices(const float* values, std::int64_t d, std::int64_t k, Selection* selection,
                 std::uint32_t* flags, std::uint32_t* ranks, void* scratch,
                 std::size_t scratch_bytes, std::uint32_t* indices, cudaStream_t stream);

// Random-k's kept set, ascending, into indices[0, k): the set the CPU's RandomKChoice draws from
// the same words, drawn all at once (compressors/random_k_element.h); *used = the number of
// words the choice took, where the CPU leaves its stream. draws and rejected hold k words each,
// first, flags and ranks d.
// Word p of the choice is word words.first + p of its stream.
void RandomKIndices(const StreamAt& words, std::int64_t d, std::int64_t k, std::uint32_t* draws,
                    std::uint32_t* rejected, std::uint32_t* first, std::uint32_t* flags,
                    std::uint32_t* ranks, void* scratch, std::size_t scratch_bytes,
                    std::uint32_t* indices, unsigned long long* used, cudaStream_t stream);

// The sparse wire format (compressors/sparse.h) for indices[0, k) ascending: the indices in
// index_bytes each, little-endian, then values[index] as float32. When e is set (it holds u and
// values == e), e[index] = KeptResidual(u, scale) at each kept index.
void WriteMessage(const std::uint32_t* indices, std::int64_t k, const float* values,
                  int index_bytes, std::uint8_t* message, float* e, float scale,
                  cudaStream_t stream);

// out[index] = scale v (out must hold zeros), or with accumulate out[index] += weight (scale v),
// for each (index, v) of a message: the CPU decoder's arithmetic. Indices >= d are skipped.
void Expand(const std::uint8_t* message, std::int64_t k, int index_bytes, std::int64_t d,
            float scale, float weight, bool accumulate, float* out, cudaStream_t stream);

}  // namespace lemmalab::cuda::sparse_kernels
