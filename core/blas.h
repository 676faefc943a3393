// Dense matrix products run in OpenBLAS: Eigen hands every large enough product to it
// (EIGEN_USE_BLAS, CMakeLists.txt).
//
// Kernels. OpenBLAS picks its kernels when it loads, from the CPU's vendor and model number. A
// model it does not know (a new CPU, or a virtual machine that hides the model: Debian 12's
// OpenBLAS 0.3.21 on an AVX-512 cloud Xeon) gets its generic SSE3 "Prescott" kernels, 2-3x
// slower than the CPU's own. Before main, lemmalab compares the kernels' vector extensions with
// the CPU's (AVX-512, AVX2 + FMA, AVX) and, where the CPU has wider ones, re-runs OpenBLAS's own
// run-time selection with the kernels made for them (SkylakeX, Haswell, Sandybridge). A user's
// OPENBLAS_CORETYPE is left alone. BlasDescription() says what was chosen and why.
//
// Determinism: every BLAS call runs single-threaded on the thread that makes it (core/blas.cc
// pins OpenBLAS to one thread before main), so a product's bits depend only on its operands and
// on the kernels chosen, never on how many threads the workers run on, and in-process and MPI
// runs on the same machine agree bit for bit. Two machines whose CPUs select different kernels
// may round products differently: BlasDescription() names the kernels, and every result records
// it (core/build_info.h).
#pragma once

#include <string>
#include <string_view>

#include "core/types.h"

namespace lemmalab {

// c = op(a) op(b) for row-major operands, op = transpose when asked, straight in BLAS with
// beta = 0. Eigen's `c.noalias() = a * b` zero-fills c and then accumulates into it (beta = 1):
// the same arithmetic (0 + sum = sum, bit for bit) with one more pass over c, which costs as
// much as the product itself for a minibatch's weight gradient.
template <typename T>
void Gemm(Eigen::Ref<const RowMatrix<T>> a, bool transpose_a, Eigen::Ref<const RowMatrix<T>> b,
          bool transpose_b, Eigen::Ref<RowMatrix<T>> c);

// "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64, Haswell kernels (OpenBLAS's
// choice for this CPU), 1 thread".
std::string BlasDescription();

// The widest x86-64 vector extension a CPU offers (with the OS saving its registers), or the
// widest that a set of OpenBLAS kernels uses.
enum class VectorIsa { kNone, kAvx, kAvx2, kAvx512 };  // in order: wider compares greater
std::string_view VectorIsaName(VectorIsa isa);
VectorIsa CpuVectorIsa();  // this CPU; kNone off x86-64
// The kernels OpenBLAS names `core` (openblas_get_corename(): "Prescott", "Zen", "SkylakeX", ...).
VectorIsa KernelVectorIsa(std::string_view core);
// The kernels to use instead of `core` on a CPU offering `cpu`, or "" when `core` already uses
// the CPU's widest vectors.
std::string_view BetterKernels(std::string_view core, VectorIsa cpu);

// What runs before main: unless OPENBLAS_CORETYPE is set, switches OpenBLAS to BetterKernels()
// where there are better ones, and records why for BlasDescription(). Callable again (a test
// does, after UseOpenBlasKernels).
void ChooseOpenBlasKernels();
// Re-runs OpenBLAS's run-time kernel selection as if OPENBLAS_CORETYPE were `core` (its names);
// returns the kernels OpenBLAS then names, or "" where the library cannot switch (a build
// without DYNAMIC_ARCH). Only while no product is running (it swaps the kernel table).
std::string UseOpenBlasKernels(const std::string& core);

}  // namespace lemmalab
