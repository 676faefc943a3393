// Dense matrix products run in OpenBLAS: Eigen hands every large enough product to it
// (EIGEN_USE_BLAS, CMakeLists.txt), and OpenBLAS picks its kernels for the CPU when it loads
// (AVX-512, AVX2 + FMA, ... on x86-64; the environment variable OPENBLAS_CORETYPE overrides).
//
// Determinism: every BLAS call runs single-threaded on the thread that makes it (core/blas.cc
// pins OpenBLAS to one thread before main), so a product's bits depend only on its operands and
// on the kernels chosen, never on how many threads the workers run on, and in-process and MPI
// runs on the same machine agree bit for bit. Two machines whose CPUs select different kernels
// may round products differently: BlasDescription() names the kernels, and every result records
// it (core/build_info.h).
#pragma once

#include <string>

#include "core/types.h"

namespace lemmalab {

// c = op(a) op(b) for row-major operands, op = transpose when asked, straight in BLAS with
// beta = 0. Eigen's `c.noalias() = a * b` zero-fills c and then accumulates into it (beta = 1):
// the same arithmetic (0 + sum = sum, bit for bit) with one more pass over c, which costs as
// much as the product itself for a minibatch's weight gradient.
template <typename T>
void Gemm(Eigen::Ref<const RowMatrix<T>> a, bool transpose_a, Eigen::Ref<const RowMatrix<T>> b,
          bool transpose_b, Eigen::Ref<RowMatrix<T>> c);

// "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64, Haswell kernels, 1 thread".
std::string BlasDescription();

}  // namespace lemmalab
