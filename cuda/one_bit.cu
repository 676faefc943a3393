// Kernels of cuda/one_bit_kernels.h. Every decision and every rounding of an element is made by
// compressors/one_bit_element.h's functions, which the CPU's kernels use too; what differs is
// only how the work is spread over threads:
//   - Quantize: a thread block takes a tile of 1024 elements. For Birder's Q it first generates
//     the tile's Philox words into shared memory (257 blocks of 4 words, each computed once),
//     then every warp quantizes 32 consecutive elements per round, reads coalesced and assembles
//     its 32 bits with one ballot: one store per 32-bit word of the message, no atomics.
//   - the norms of kRms and kMeanAbs replay the CPU's fixed order (16 partial sums per block,
//     each added in index order), one thread per partial: bit-identical, and slow for a single
//     huge block since each partial is a serial chain.
//   - max |u| is order-free: a warp reduction and one atomicMax per warp on the float's bits.
#include "cuda/one_bit_kernels.h"

namespace lemmalab::cuda::one_bit_kernels {
namespace {

using one_bit::kPartials;

constexpr int kThreads = 256;
constexpr int kPerThread = 4;
constexpr int kTile = kThreads * kPerThread;  // elements per thread block
constexpr int kTileBlocks = kTile / 4 + 1;    // Philox blocks covering a tile's words
constexpr unsigned kAllLanes = 0xffffffffu;

// The block holding element j: the first b with ends[b] > j.
__device__ inline std::int64_t BlockOf(const Blocks& blocks, std::int64_t j) {
  std::int64_t lo = 0, hi = blocks.count - 1;
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (blocks.ends[mid] > j) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// The block of element j, where the warp's lanes hold consecutive elements from `first` (lane
// 0's): one binary search per warp, shared by a shuffle, then a step over each block end between
// `first` and j (none unless a block ends among the warp's 32 elements). A binary search per
// element is 17 dependent loads for 100 000 blocks, which made the scaled formats' kernels
// latency-bound. Every lane of the warp calls it; j >= d gets a block that is not used.
__device__ inline std::int64_t WarpBlockOf(const Blocks& blocks, std::int64_t first,
                                           std::int64_t j, std::int64_t d) {
  std::int64_t b = 0;
  if (threadIdx.x % 32 == 0) b = BlockOf(blocks, first < d ? first : d - 1);
  b = __shfl_sync(kAllLanes, b, 0);
  if (j < d) {
    while (blocks.ends[b] <= j) ++b;
  }
  return b;
}

__device__ inline std::int64_t BlockBegin(const Blocks& blocks, std::int64_t b) {
  return b == 0 ? 0 : blocks.ends[b - 1];
}

unsigned GridFor(std::int64_t items, int per_block) {
  return static_cast<unsigned>((items + per_block - 1) / per_block);
}

template <bool kSquares>
__global__ void PartialSumsKernel(Input u, Blocks blocks, double* partials) {
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t b = t / kPartials;
  if (b >= blocks.count) return;
  const std::int64_t hi = blocks.ends[b];
  double sum = 0;
  for (std::int64_t j = BlockBegin(blocks, b) + t % kPartials; j < hi; j += kPartials) {
    const double v = static_cast<double>(u[j]);
    sum += kSquares ? v * v : fabs(v);
  }
  partials[t] = sum;
}

__global__ void MaxAbsKernel(Input u, std::int64_t d, Blocks blocks, std::uint32_t* max_bits) {
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool inside = j < d;
  float largest = 0.0f;
  const std::int64_t b = WarpBlockOf(blocks, j - threadIdx.x % 32, j, d);
  if (inside) {
    const float v = u[j];
    if (one_bit::IsFinite(v)) largest = fabsf(v);
  }
  // Non-negative floats order as their bit patterns do.
  const std::uint32_t bits = __float_as_uint(largest);
  const std::int64_t first = __shfl_sync(kAllLanes, b, 0);
  if (__all_sync(kAllLanes, !inside || b == first)) {
    const std::uint32_t warp_max = __reduce_max_sync(kAllLanes, bits);
    if (threadIdx.x % 32 == 0 && inside) atomicMax(&max_bits[first], warp_max);
  } else if (inside) {
    atomicMax(&max_bits[b], bits);
  }
}

__global__ void ScalesKernel(one_bit::Scale kind, Blocks blocks, const double* partials,
                             const std::uint32_t* max_bits, float* scales) {
  const std::int64_t b = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= blocks.count) return;
  double reduction = 0;
  if (kind == one_bit::Scale::kMaxAbs) {
    reduction = static_cast<double>(__uint_as_float(max_bits[b]));
  } else if (kind != one_bit::Scale::kNone) {
    reduction = one_bit::CombinePartials(partials + kPartials * b);
  }
  const auto size = static_cast<double>(blocks.ends[b] - BlockBegin(blocks, b));
  scales[b] = one_bit::ScaleFromReduction(kind, reduction, size);
}

template <one_bit::Draw kDraw>
__global__ void __launch_bounds__(kThreads)
    QuantizeKernel(Input u, std::int64_t d, Blocks blocks, const float* scales, StreamAt words,
                   std::uint32_t* bits, float* e_out, unsigned long long* counts) {
  const std::int64_t tile = static_cast<std::int64_t>(blockIdx.x) * kTile;
  // The thread's inputs are loaded first, all at once, so that their latency overlaps the
  // Philox words' computation and each other (one load after another left the kernel stalled
  // on memory at a quarter of the bandwidth).
  float values[kPerThread];  // (in registers: both loops over it are unrolled)
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const std::int64_t j = tile + threadIdx.x + k * kThreads;
    values[k] = j < d ? u[j] : 0.0f;
  }
  // Element tile + i draws word first + tile + i = tile_words[offset + i].
  __shared__ std::uint32_t tile_words[4 * kTileBlocks];
  unsigned offset = 0;
  if constexpr (kDraw == one_bit::Draw::kStochastic) {
    const std::uint64_t first_word = words.first + static_cast<std::uint64_t>(tile);
    offset = static_cast<unsigned>(first_word % 4);
    const std::uint64_t first_block = first_word / 4;
    for (int t = threadIdx.x; t < kTileBlocks; t += kThreads) {
      const r123::Philox4x32::ctr_type r = words.Block(first_block + t);
      for (int k = 0; k < 4; ++k) tile_words[4 * t + k] = r[k];
    }
    __syncthreads();
  }
  const unsigned lane = threadIdx.x % 32;
  unsigned out_of_domain = 0, non_finite = 0;  // the warp's, kept by lane 0
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int i = static_cast<int>(threadIdx.x) + k * kThreads;
    const std::int64_t j = tile + i;
    const std::int64_t b = scales == nullptr ? 0 : WarpBlockOf(blocks, j - lane, j, d);
    bool plus = false, outside = false, bad = false;
    if (j < d) {
      const float v = values[k];
      const float s = scales == nullptr ? 1.0f : scales[b];
      if constexpr (kDraw == one_bit::Draw::kStochastic) {
        plus = one_bit::StochasticBit(v, 1.0f / s, tile_words[offset + i]);
        outside = one_bit::OutOfDomain(v);
      } else {
        plus = one_bit::SignBit(v);
      }
      bad = !one_bit::IsFinite(v);
      if (e_out != nullptr) e_out[j] = one_bit::Residual(v, plus, s);
    }
    const unsigned word = __ballot_sync(kAllLanes, plus);
    const unsigned outside_lanes = __ballot_sync(kAllLanes, outside);
    const unsigned bad_lanes = __ballot_sync(kAllLanes, bad);
    if (lane == 0 && j < d) {  // lane 0 holds the warp's first element, j % 32 == 0
      bits[j / 32] = word;
      out_of_domain += __popc(outside_lanes);
      non_finite += __popc(bad_lanes);
    }
  }
  if (lane == 0 && out_of_domain > 0) atomicAdd(&counts[0], out_of_domain);
  if (lane == 0 && non_finite > 0) atomicAdd(&counts[1], non_finite);
}

__global__ void ExpandKernel(const std::uint32_t* bits, std::int64_t d, Blocks blocks,
                             const float* scales, float weight, bool accumulate, float* out) {
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t b = scales == nullptr ? 0 : WarpBlockOf(blocks, j - threadIdx.x % 32, j, d);
  if (j >= d) return;
  const float s = scales == nullptr ? 1.0f : scales[b];
  const float value = accumulate ? weight * s : s;
  const bool plus = (bits[j / 32] >> (j % 32)) & 1u;
  if (accumulate) {
    out[j] += plus ? value : -value;
  } else {
    out[j] = plus ? value : -value;
  }
}

}  // namespace

void Reduce(one_bit::Scale kind, const Input& u, std::int64_t d, const Blocks& blocks,
            double* partials, std::uint32_t* max_bits, cudaStream_t stream) {
  switch (kind) {
    case one_bit::Scale::kNone:
      return;
    case one_bit::Scale::kMaxAbs:
      MaxAbsKernel<<<GridFor(d, kThreads), kThreads, 0, stream>>>(u, d, blocks, max_bits);
      return;
    case one_bit::Scale::kRms:
      PartialSumsKernel<true><<<GridFor(kPartials * blocks.count, kThreads), kThreads, 0, stream>>>(
          u, blocks, partials);
      return;
    case one_bit::Scale::kMeanAbs:
      PartialSumsKernel<false>
          <<<GridFor(kPartials * blocks.count, kThreads), kThreads, 0, stream>>>(u, blocks,
                                                                                 partials);
      return;
  }
}

void Scales(one_bit::Scale kind, const Blocks& blocks, const double* partials,
            const std::uint32_t* max_bits, float* scales, cudaStream_t stream) {
  ScalesKernel<<<GridFor(blocks.count, kThreads), kThreads, 0, stream>>>(kind, blocks, partials,
                                                                         max_bits, scales);
}

void Quantize(one_bit::Draw draw, const Input& u, std::int64_t d, const Blocks& blocks,
              const float* scales, const StreamAt& words, std::uint32_t* bits, float* e_out,
              unsigned long long* counts, cudaStream_t stream) {
  const unsigned grid = GridFor(d, kTile);
  if (draw == one_bit::Draw::kStochastic) {
    QuantizeKernel<one_bit::Draw::kStochastic>
        <<<grid, kThreads, 0, stream>>>(u, d, blocks, scales, words, bits, e_out, counts);
  } else {
    QuantizeKernel<one_bit::Draw::kSign>
        <<<grid, kThreads, 0, stream>>>(u, d, blocks, scales, words, bits, e_out, counts);
  }
}

void Expand(const std::uint32_t* bits, std::int64_t d, const Blocks& blocks, const float* scales,
            float weight, bool accumulate, float* out, cudaStream_t stream) {
  ExpandKernel<<<GridFor(d, kThreads), kThreads, 0, stream>>>(bits, d, blocks, scales, weight,
                                                              accumulate, out);
}

}  // namespace lemmalab::cuda::one_bit_kernels
