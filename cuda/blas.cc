#include "cuda/blas.h"

#include <cublas_v2.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <type_traits>
#include <vector>

#include "core/error.h"

namespace lemmalab::cuda {
namespace {

// The few cuBLAS entry points a run uses, found in the library the loader opened.
struct Blas {
  std::string why_unavailable;  // empty when every entry point below was found
  cublasHandle_t handle = nullptr;
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  decltype(&cublasSgemmStridedBatched_64) sgemm = nullptr;
  decltype(&cublasDgemmStridedBatched_64) dgemm = nullptr;
};

// Where cuBLAS of the toolkit this build used is looked for: the loader's own search
// (LD_LIBRARY_PATH, the ld.so cache), then the toolkit's library folders.
std::vector<std::string> Candidates() {
  const std::string name = fmt::format("libcublas.so.{}", CUBLAS_VER_MAJOR);
  return {
    name, "/usr/local/cuda/lib64/" + name,
        fmt::format("/usr/local/cuda-{}/lib64/{}", CUBLAS_VER_MAJOR, name),
#if defined(LEMMALAB_CUDA_LIBRARY_DIR)
        std::string(LEMMALAB_CUDA_LIBRARY_DIR) + "/" + name
#endif
  };
}

template <typename F>
void Find(void* library, const char* symbol, F& entry, std::string& why) {
  entry = reinterpret_cast<F>(dlsym(library, symbol));
  if (entry == nullptr && why.empty()) why = fmt::format("it has no {}", symbol);
}

Blas Load() {
  Blas blas;
  void* library = nullptr;
  std::string tried;
  for (const std::string& path : Candidates()) {
    library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) break;
    const char* reason = dlerror();
    tried += fmt::format("{}{} ({})", tried.empty() ? "" : "; ", path, reason ? reason : "?");
  }
  if (library == nullptr) {
    blas.why_unavailable = fmt::format(
        "cuBLAS {} could not be loaded: tried {}; put the folder that holds it on LD_LIBRARY_PATH",
        CUBLAS_VER_MAJOR, tried);
    return blas;
  }
  // The library stays loaded and the handle alive until the process ends: destroying them at
  // exit would race the CUDA runtime's own teardown.
  std::string why;
  Find(library, "cublasCreate_v2", blas.create, why);
  Find(library, "cublasGetStatusString", blas.status_string, why);
  Find(library, "cublasSgemmStridedBatched_64", blas.sgemm, why);
  Find(library, "cublasDgemmStridedBatched_64", blas.dgemm, why);
  if (why.empty()) {
    const cublasStatus_t status = blas.create(&blas.handle);
    if (status != CUBLAS_STATUS_SUCCESS) {
      why = fmt::format("cublasCreate failed: {}", blas.status_string(status));
    }
  }
  if (!why.empty()) blas.why_unavailable = fmt::format("cuBLAS cannot be used: {}", why);
  return blas;
}

const Blas& TheBlas() {
  static const Blas blas = Load();  // (thread-safe: a function-local static)
  return blas;
}

cublasOperation_t Operation(bool transpose) { return transpose ? CUBLAS_OP_T : CUBLAS_OP_N; }

}  // namespace

std::string BlasUnavailable() { return TheBlas().why_unavailable; }

template <typename T>
void Run(const GemmStridedBatched<T>& call) {
  const Blas& blas = TheBlas();
  if (!blas.why_unavailable.empty()) throw UserError(blas.why_unavailable);
  const T one = 1, zero = 0;
  const auto multiply = [&](auto gemm) {
    return gemm(blas.handle, Operation(call.transpose_a), Operation(call.transpose_b), call.m,
                call.n, call.k, &one, call.a, call.lda, call.stride_a, call.b, call.ldb,
                call.stride_b, &zero, call.c, call.ldc, call.stride_c, call.batch);
  };
  cublasStatus_t status;
  if constexpr (std::is_same_v<T, float>) {
    status = multiply(blas.sgemm);
  } else {
    status = multiply(blas.dgemm);
  }
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw InternalError(
        fmt::format("cublas{}gemmStridedBatched ({} x {} x {}, batch {}) failed: {}",
                    std::is_same_v<T, float> ? 'S' : 'D', call.m, call.n, call.k, call.batch,
                    blas.status_string(status)));
  }
}

template void Run(const GemmStridedBatched<float>&);
template void Run(const GemmStridedBatched<double>&);

}  // namespace lemmalab::cuda
