#include "core/blas.h"

#include <cblas.h>
#include <fmt/format.h>

#include <type_traits>

#include "core/error.h"

// The linker pulls this object into every program that links lemmalab_core (core/CMakeLists.txt
// names the symbol with --undefined), so OpenBLAS is single-threaded before any product runs.
extern "C" {
extern const int lemmalab_blas_single_threaded;
const int lemmalab_blas_single_threaded = (openblas_set_num_threads(1), 1);
}

namespace lemmalab {

template <typename T>
void Gemm(Eigen::Ref<const RowMatrix<T>> a, bool transpose_a, Eigen::Ref<const RowMatrix<T>> b,
          bool transpose_b, Eigen::Ref<RowMatrix<T>> c) {
  const auto m = static_cast<int>(c.rows()), n = static_cast<int>(c.cols());
  const auto k = static_cast<int>(transpose_a ? a.rows() : a.cols());
  LEMMALAB_CHECK((transpose_a ? a.cols() : a.rows()) == m &&
                     (transpose_b ? b.cols() : b.rows()) == k &&
                     (transpose_b ? b.rows() : b.cols()) == n,
                 "Gemm of {}x{}{} by {}x{}{} into {}x{}", a.rows(), a.cols(),
                 transpose_a ? "^T" : "", b.rows(), b.cols(), transpose_b ? "^T" : "", m, n);
  const CBLAS_TRANSPOSE ta = transpose_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = transpose_b ? CblasTrans : CblasNoTrans;
  const auto lda = static_cast<int>(a.outerStride()), ldb = static_cast<int>(b.outerStride());
  const auto ldc = static_cast<int>(c.outerStride());
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(),
                ldc);
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, a.data(), lda, b.data(), ldb, 0.0, c.data(),
                ldc);
  }
}

template void Gemm(Eigen::Ref<const RowMatrix<float>>, bool, Eigen::Ref<const RowMatrix<float>>,
                   bool, Eigen::Ref<RowMatrix<float>>);
template void Gemm(Eigen::Ref<const RowMatrix<double>>, bool, Eigen::Ref<const RowMatrix<double>>,
                   bool, Eigen::Ref<RowMatrix<double>>);

std::string BlasDescription() {
  return fmt::format("{}, {} kernels, {} thread", openblas_get_config(), openblas_get_corename(),
                     openblas_get_num_threads());
}

}  // namespace lemmalab
