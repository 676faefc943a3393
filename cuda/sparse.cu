// Kernels of cuda/sparse_kernels.h.
#include <cub/device/device_scan.cuh>

#include "compressors/random_k_element.h"
#include "compressors/sparse_element.h"
#include "cuda/sparse_kernels.h"

namespace lemmalab::cuda::sparse_kernels {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kAllLanes = 0xffffffffu;

unsigned GridFor(std::int64_t items) {
  return static_cast<unsigned>((items + kThreads - 1) / kThreads);
}

__device__ inline std::int64_t GlobalIndex() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__global__ void PrepareKernel(KernelInput<float> u, std::int64_t d, float* u_out,
                              unsigned long long* non_finite) {
  const std::int64_t j = GlobalIndex();
  bool bad = false;
  if (j < d) {
    const float v = u[j];
    bad = !isfinite(v);
    if (u_out != nullptr) u_out[j] = v;
  }
  const unsigned bad_lanes = __ballot_sync(kAllLanes, bad);
  if (threadIdx.x % 32 == 0 && bad_lanes != 0) atomicAdd(non_finite, __popc(bad_lanes));
}

// Counts, among the keys whose bits above `shift + 8` equal the selection's prefix (all keys in
// the first pass), the 8-bit digit at `shift`.
__global__ void DigitHistogramKernel(const float* values, std::int64_t d, int shift,
                                     bool first_pass, Selection* selection) {
  __shared__ unsigned counts[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) counts[b] = 0;
  __syncthreads();
  const std::uint32_t prefix = selection->prefix;
  for (std::int64_t j = GlobalIndex(); j < d;
       j += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::uint32_t key = sparse::MagnitudeKey(values[j]);
    if (first_pass || (key >> (shift + 8)) == prefix) {
      // The lanes with the same digit add once, together: most keys share their top digit.
      const unsigned digit = (key >> shift) & 0xffu;
      const unsigned peers = __match_any_sync(__activemask(), digit);
      if (threadIdx.x % 32 == static_cast<unsigned>(__ffs(peers) - 1)) {
        atomicAdd(&counts[digit], static_cast<unsigned>(__popc(peers)));
      }
    }
  }
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x) {
    if (counts[b] != 0) atomicAdd(&selection->histogram[b], counts[b]);
  }
}

__global__ void StartSelectionKernel(Selection* selection, unsigned long long k) {
  selection->prefix = 0;
  selection->need = k;
}

// Appends the digit of the need-th largest key to the prefix (one thread).
__global__ void PickDigitKernel(Selection* selection) {
  unsigned long long need = selection->need;
  const std::uint32_t digit = sparse::PickDigit(selection->histogram, need);
  selection->prefix = (selection->prefix << 8) | digit;
  selection->need = need;
}

__global__ void EqualFlagsKernel(const float* values, std::int64_t d, const Selection* selection,
                                 std::uint32_t* flags) {
  const std::int64_t j = GlobalIndex();
  if (j < d) flags[j] = sparse::MagnitudeKey(values[j]) == selection->prefix;
}

// Kept: a key above the threshold, or one of the first `need` keys equal to it (ranks holds
// each element's rank among the equal keys).
__global__ void KeptFlagsKernel(const float* values, std::int64_t d, const Selection* selection,
                                const std::uint32_t* ranks, std::uint32_t* flags) {
  const std::int64_t j = GlobalIndex();
  if (j >= d) return;
  const std::uint32_t key = sparse::MagnitudeKey(values[j]), tau = selection->prefix;
  flags[j] = key > tau || (key == tau && ranks[j] < selection->need);
}

__global__ void ScatterKernel(std::int64_t d, const std::uint32_t* flags,
                              const std::uint32_t* positions, std::uint32_t* indices) {
  const std::int64_t j = GlobalIndex();
  if (j < d && flags[j] != 0) indices[positions[j]] = static_cast<std::uint32_t>(j);
}

using WordAt = StreamWords<StreamAt>;

// Draw i's first attempt from word i; flags[i] = 1 where it was rejected.
__global__ void FirstAttemptsKernel(StreamAt words, std::int64_t d, std::int64_t k,
                                    std::uint32_t* draws, std::uint32_t* flags) {
  const std::int64_t i = GlobalIndex();
  if (i >= k) return;
  WordAt word_at{{words}, words.first};
  const std::uint32_t draw = random_k::FirstAttempt(word_at(static_cast<std::uint64_t>(i)), d, k, i);
  draws[i] = draw;
  flags[i] = random_k::IsRejected(draw, random_k::Range(d, k, i)) ? 1 : 0;
}

// One thread: the rejected draws (listed ascending, their count from the flags' prefix sums)
// replaced in order from the words after the first k.
__global__ void ReplaceRejectedKernel(StreamAt words, std::int64_t d, std::int64_t k,
                                      std::uint32_t* draws, const std::uint32_t* rejected,
                                      const std::uint32_t* flags, const std::uint32_t* positions,
                                      unsigned long long* used) {
  const std::int64_t count = std::int64_t{positions[k - 1]} + flags[k - 1];
  WordAt word_at{{words}, words.first};
  *used = random_k::ReplaceRejected(draws, rejected, count, d, k, word_at);
}

// first[t_i] = the smallest i with that value: reset, then lowered.
__global__ void FirstDrawsKernel(const std::uint32_t* draws, std::int64_t k, bool reset,
                                 std::uint32_t* first) {
  const std::int64_t i = GlobalIndex();
  if (i >= k) return;
  if (reset) {
    first[draws[i]] = 0xffffffffu;
  } else {
    atomicMin(reinterpret_cast<unsigned int*>(&first[draws[i]]), static_cast<unsigned int>(i));
  }
}

struct FirstDraw {
  const std::uint32_t* first;
  __device__ std::uint32_t operator()(std::uint32_t t) const { return first[t]; }
};

// flags[j] = 1 for the coordinate j each step of Floyd's algorithm keeps (flags zero before).
__global__ void FloydKeptFlagsKernel(const std::uint32_t* draws, const std::uint32_t* first,
                                     std::int64_t d, std::int64_t k, std::uint32_t* flags) {
  const std::int64_t i = GlobalIndex();
  if (i < k) flags[random_k::KeptAt(draws, FirstDraw{first}, d, k, i)] = 1;
}

__global__ void WriteMessageKernel(const std::uint32_t* indices, std::int64_t k,
                                   const float* values, int index_bytes, std::uint8_t* message,
                                   float* e, float scale) {
  const std::int64_t i = GlobalIndex();
  if (i >= k) return;
  const std::uint32_t j = indices[i];
  for (int b = 0; b < index_bytes; ++b) {
    message[i * index_bytes + b] = static_cast<std::uint8_t>(j >> (8 * b));
  }
  const float v = WireNaN(values[j]);
  std::uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  std::uint8_t* value = message + k * index_bytes + 4 * i;  // not 4-byte aligned in general
  for (int b = 0; b < 4; ++b) value[b] = static_cast<std::uint8_t>(bits >> (8 * b));
  if (e != nullptr) e[j] = sparse::KeptResidual(values[j], scale);
}

__global__ void ExpandKernel(const std::uint8_t* message, std::int64_t k, int index_bytes,
                             std::int64_t d, float scale, float weight, bool accumulate,
                             float* out) {
  const std::int64_t i = GlobalIndex();
  if (i >= k) return;
  std::uint32_t j = 0, bits = 0;
  for (int b = 0; b < index_bytes; ++b) j |= std::uint32_t{message[i * index_bytes + b]} << (8 * b);
  const std::uint8_t* value = message + k * index_bytes + 4 * i;
  for (int b = 0; b < 4; ++b) bits |= std::uint32_t{value[b]} << (8 * b);
  if (j >= d) return;  // a corrupt message must not write out of bounds
  float v;
  memcpy(&v, &bits, sizeof v);
  const float y = scale * v;
  if (accumulate) {
    out[j] += weight * y;
  } else {
    out[j] = y;
  }
}

}  // namespace

void Prepare(const KernelInput<float>& u, std::int64_t d, float* u_out,
             unsigned long long* non_finite, cudaStream_t stream) {
  PrepareKernel<<<GridFor(d), kThreads, 0, stream>>>(u, d, u_out, non_finite);
}

std::size_t ScanScratchBytes(std::int64_t d) {
  std::size_t bytes = 0;
  cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const std::uint32_t*>(nullptr),
                                static_cast<std::uint32_t*>(nullptr), d);
  return bytes;
}

void TopKIndices(const float* values, std::int64_t d, std::int64_t k, Selection* selection,
                 std::uint32_t* flags, std::uint32_t* ranks, void* scratch,
                 std::size_t scratch_bytes, std::uint32_t* indices, cudaStream_t stream) {
  StartSelectionKernel<<<1, 1, 0, stream>>>(selection, static_cast<unsigned long long>(k));
  // Enough blocks to fill the GPU; each loops over its share, so the shared histograms are
  // merged into the global one a few thousand times, not once per 256 elements.
  const unsigned grid = GridFor(d) < 4096u ? GridFor(d) : 4096u;
  for (int shift = 24; shift >= 0; shift -= 8) {
    cudaMemsetAsync(selection->histogram, 0, sizeof selection->histogram, stream);
    DigitHistogramKernel<<<grid, kThreads, 0, stream>>>(values, d, shift, shift == 24, selection);
    PickDigitKernel<<<1, 1, 0, stream>>>(selection);
  }
  EqualFlagsKernel<<<GridFor(d), kThreads, 0, stream>>>(values, d, selection, flags);
  cub::DeviceScan::ExclusiveSum(scratch, scratch_bytes, flags, ranks, d, stream);
  KeptFlagsKernel<<<GridFor(d), kThreads, 0, stream>>>(values, d, selection, ranks, flags);
  cub::DeviceScan::ExclusiveSum(scratch, scratch_bytes, flags, ranks, d, stream);
  ScatterKernel<<<GridFor(d), kThreads, 0, stream>>>(d, flags, ranks, indices);
}

void RandomKIndices(const StreamAt& words, std::int64_t d, std::int64_t k,
                    std::uint32_t* draws, std::uint32_t* rejected, std::uint32_t* first,
                    std::uint32_t* flags, std::uint32_t* ranks, void* scratch,
                    std::size_t scratch_bytes, std::uint32_t* indices, unsigned long long* used,
                    cudaStream_t stream) {
  // The rejected draws listed in order (flags and ranks over the k draws), then replaced.
  FirstAttemptsKernel<<<GridFor(k), kThreads, 0, stream>>>(words, d, k, draws, flags);
  cub::DeviceScan::ExclusiveSum(scratch, scratch_bytes, flags, ranks, k, stream);
  ScatterKernel<<<GridFor(k), kThreads, 0, stream>>>(k, flags, ranks, rejected);
  ReplaceRejectedKernel<<<1, 1, 0, stream>>>(words, d, k, draws, rejected, flags, ranks, used);
  // Each step's kept coordinate, flagged over the d coordinates and compacted ascending.
  FirstDrawsKernel<<<GridFor(k), kThreads, 0, stream>>>(draws, k, true, first);
  FirstDrawsKernel<<<GridFor(k), kThreads, 0, stream>>>(draws, k, false, first);
  cudaMemsetAsync(flags, 0, sizeof(std::uint32_t) * static_cast<std::size_t>(d), stream);
  FloydKeptFlagsKernel<<<GridFor(k), kThreads, 0, stream>>>(draws, first, d, k, flags);
  cub::DeviceScan::ExclusiveSum(scratch, scratch_bytes, flags, ranks, d, stream);
  ScatterKernel<<<GridFor(d), kThreads, 0, stream>>>(d, flags, ranks, indices);
}

void WriteMessage(const std::uint32_t* indices, std::int64_t k, const float* values,
                  int index_bytes, std::uint8_t* message, float* e, float scale,
                  cudaStream_t stream) {
  WriteMessageKernel<<<GridFor(k), kThreads, 0, stream>>>(indices, k, values, index_bytes, message,
                                                          e, scale);
}

void Expand(const std::uint8_t* message, std::int64_t k, int index_bytes, std::int64_t d,
            float scale, float weight, bool accumulate, float* out, cudaStream_t stream) {
  ExpandKernel<<<GridFor(k), kThreads, 0, stream>>>(message, k, index_bytes, d, scale, weight,
                                                    accumulate, out);
}

}  // namespace lemmalab::cuda::sparse_kernels
