// The CUDA side of batched/backend.h's ForEach: one grid-stride launch per call, instantiated for
// every functor of batched/kernels.h and batched/gradient_kernels.h. The functors hold the arithmetic; this file only spreads
// their indices over threads.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "batched/gradient_kernels.h"
#include "batched/kernels.h"

namespace lemmalab::batched::detail {

// batched/backend.cc: throws the runtime's error, naming the launch.
void CheckLaunch(cudaError_t status, const char* kernel);

namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 1 << 20;  // then each thread strides over several indices

template <typename F>
__global__ void __launch_bounds__(kThreads) ForEachKernel(std::int64_t n, F f) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    f(i);
  }
}

}  // namespace

template <typename F>
void CudaForEach(std::int64_t n, const F& f) {
  const std::int64_t needed = (n + kThreads - 1) / kThreads;
  const auto blocks = static_cast<unsigned>(needed < kMaxBlocks ? needed : kMaxBlocks);
  ForEachKernel<F><<<blocks, kThreads>>>(n, f);
  CheckLaunch(cudaGetLastError(), __PRETTY_FUNCTION__);
}

#define LEMMALAB_INSTANTIATE(F) template void CudaForEach<F>(std::int64_t, const F&);
LEMMALAB_BATCHED_FUNCTORS(LEMMALAB_INSTANTIATE, float)
LEMMALAB_BATCHED_FUNCTORS(LEMMALAB_INSTANTIATE, double)
LEMMALAB_BATCHED_UNTYPED_FUNCTORS(LEMMALAB_INSTANTIATE)
LEMMALAB_GRADIENT_FUNCTORS(LEMMALAB_INSTANTIATE, float)
LEMMALAB_GRADIENT_FUNCTORS(LEMMALAB_INSTANTIATE, double)
LEMMALAB_GRADIENT_UNTYPED_FUNCTORS(LEMMALAB_INSTANTIATE)
#undef LEMMALAB_INSTANTIATE

}  // namespace lemmalab::batched::detail
