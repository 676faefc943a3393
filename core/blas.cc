#include "core/blas.h"

#include <cblas.h>
#include <fmt/format.h>
#include <strings.h>

#include <cstdlib>
#include <type_traits>
#include <utility>

#include "core/error.h"

// OpenBLAS's run-time kernel selection (driver/others/dynamic.c), exported by builds with
// DYNAMIC_ARCH: _init picks a kernel table (from OPENBLAS_CORETYPE if set, else from the CPU)
// unless one is picked; _quit forgets the pick. Weak: a build without them cannot switch.
extern "C" {
void gotoblas_dynamic_init(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));
}

namespace lemmalab {
namespace {

// Why the kernels are the ones they are, for BlasDescription().
std::string& KernelReason() {
  static std::string reason = "OpenBLAS's choice for this CPU";
  return reason;
}

// Each extension's name, and the OpenBLAS kernels made for it.
struct IsaInfo {
  std::string_view name, kernels;
};
constexpr IsaInfo kIsas[] = {
    {"no AVX", ""}, {"AVX", "Sandybridge"}, {"AVX2 + FMA", "Haswell"}, {"AVX-512", "SkylakeX"}};
const IsaInfo& Info(VectorIsa isa) { return kIsas[static_cast<int>(isa)]; }

}  // namespace

std::string_view VectorIsaName(VectorIsa isa) { return Info(isa).name; }

VectorIsa CpuVectorIsa() {
#if defined(__x86_64__) && defined(__GNUC__)
  // libgcc's detection also checks that the OS saves the registers (XGETBV), as OpenBLAS does.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512cd")) {
    return VectorIsa::kAvx512;  // what OpenBLAS's SkylakeX kernels use
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return VectorIsa::kAvx2;
  if (__builtin_cpu_supports("avx")) return VectorIsa::kAvx;
#endif
  return VectorIsa::kNone;
}

VectorIsa KernelVectorIsa(std::string_view core) {
  // OpenBLAS's x86-64 kernel sets by the widest extension their GEMM kernels use; the rest
  // (Prescott, Core2, Penryn, Dunnington, Nehalem, Atom, Opteron, Barcelona, Nano, ...) use SSE.
  static constexpr std::pair<std::string_view, VectorIsa> kKernels[] = {
      {"SkylakeX", VectorIsa::kAvx512},
      {"Cooperlake", VectorIsa::kAvx512},
      {"SapphireRapids", VectorIsa::kAvx512},
      {"Haswell", VectorIsa::kAvx2},
      {"Zen", VectorIsa::kAvx2},
      {"Excavator", VectorIsa::kAvx2},
      {"Sandybridge", VectorIsa::kAvx},
      {"Bulldozer", VectorIsa::kAvx},
      {"Piledriver", VectorIsa::kAvx},
      {"Steamroller", VectorIsa::kAvx},
  };
  for (const auto& [name, isa] : kKernels) {
    if (name.size() == core.size() && strncasecmp(name.data(), core.data(), name.size()) == 0) {
      return isa;
    }
  }
  return VectorIsa::kNone;
}

std::string_view BetterKernels(std::string_view core, VectorIsa cpu) {
  return KernelVectorIsa(core) >= cpu ? "" : Info(cpu).kernels;
}

std::string UseOpenBlasKernels(const std::string& core) {
  if (gotoblas_dynamic_init == nullptr || gotoblas_dynamic_quit == nullptr) return "";
  // The selection reads the variable; it is restored at once, so that programs this one starts
  // do not take lemmalab's choice for their user's.
  const char* const before = std::getenv("OPENBLAS_CORETYPE");
  const std::string saved = before != nullptr ? before : "";
  setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  if (before != nullptr) {
    setenv("OPENBLAS_CORETYPE", saved.c_str(), 1);
  } else {
    unsetenv("OPENBLAS_CORETYPE");
  }
  return openblas_get_corename();
}

void ChooseOpenBlasKernels() {
  if (const char* user = std::getenv("OPENBLAS_CORETYPE")) {
    KernelReason() = fmt::format("OPENBLAS_CORETYPE={}, the user's choice", user);
    return;
  }
  const std::string own = openblas_get_corename();
  const VectorIsa cpu = CpuVectorIsa();
  const std::string_view better = BetterKernels(own, cpu);
  if (better.empty()) {
    KernelReason() = "OpenBLAS's choice for this CPU";
    return;
  }
  const std::string chosen = UseOpenBlasKernels(std::string(better));
  KernelReason() =
      chosen.empty()
          ? fmt::format(
                "OpenBLAS's choice; the CPU has {}, but this OpenBLAS cannot switch kernels",
                VectorIsaName(cpu))
          : fmt::format("chosen by lemmalab: OpenBLAS picked {} kernels ({}) for a CPU with {}",
                        own, VectorIsaName(KernelVectorIsa(own)), VectorIsaName(cpu));
}

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
  return fmt::format("{}, {} kernels ({}), {} thread", openblas_get_config(),
                     openblas_get_corename(), KernelReason(), openblas_get_num_threads());
}

}  // namespace lemmalab

// The linker pulls this object into every program that links lemmalab_core (core/CMakeLists.txt
// names the symbol with --undefined), so OpenBLAS runs the CPU's kernels on one thread before any
// product runs.
extern "C" {
extern const int lemmalab_blas_single_threaded;
const int lemmalab_blas_single_threaded =
    (lemmalab::ChooseOpenBlasKernels(), openblas_set_num_threads(1), 1);
}
