#include "core/blas.h"

#include <cblas.h>
#include <fmt/format.h>

// The linker pulls this object into every program that links lemmalab_core (core/CMakeLists.txt
// names the symbol with --undefined), so OpenBLAS is single-threaded before any product runs.
extern "C" {
extern const int lemmalab_blas_single_threaded;
const int lemmalab_blas_single_threaded = (openblas_set_num_threads(1), 1);
}

namespace lemmalab {

std::string BlasDescription() {
  return fmt::format("{}, {} kernels, {} thread", openblas_get_config(), openblas_get_corename(),
                     openblas_get_num_threads());
}

}  // namespace lemmalab
