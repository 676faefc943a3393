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

namespace lemmalab {

// "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64, Haswell kernels, 1 thread".
std::string BlasDescription();

}  // namespace lemmalab
