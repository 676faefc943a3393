// cuBLAS as lemmalab uses it: the strided-batched matrix products of a GPU run's networks
// (batched/backend.h's BatchedProduct), in cuBLAS's own column-major terms.
//
// cuBLAS is loaded when a run first needs it (dlopen), not linked: its libraries are larger than
// every lemmalab program together, and a program that never multiplies matrices on the GPU
// (the tests, a CPU run, a logistic regression on the GPU) then starts without them.
#pragma once

#include <cstdint>
#include <string>

namespace lemmalab::cuda {

// Empty when cuBLAS can be loaded here; else why not (the libraries tried, the loader's reason).
std::string BlasUnavailable();

// cublas<S|D>gemmStridedBatched on the default stream with alpha 1 and beta 0: for b < batch,
// C_b = op(A_b) op(B_b), op(A_b) m x k and op(B_b) k x n, every matrix column-major with its
// leading dimension, item b at pointer + b * stride (stride 0: one matrix for every item).
template <typename T>
struct GemmStridedBatched {
  bool transpose_a, transpose_b;
  std::int64_t m, n, k;
  const T* a;
  std::int64_t lda, stride_a;
  const T* b;
  std::int64_t ldb, stride_b;
  T* c;
  std::int64_t ldc, stride_c;
  std::int64_t batch;
};

// Runs `call` with cuBLAS; throws a UserError when cuBLAS cannot be loaded (BlasUnavailable)
// and an InternalError naming cuBLAS's status when the call fails.
template <typename T>
void Run(const GemmStridedBatched<T>& call);

}  // namespace lemmalab::cuda
