// What built this lemmalab: its version, the source commit and the compiler and flags. Every
// result records it (engine/results.h), so a number can be traced to the code that produced it.
#pragma once

#include <string>

namespace lemmalab {

struct BuildInfo {
  std::string version;  // "0.1.0"
  std::string commit;   // git describe of the source tree at build time ("…-dirty": uncommitted)
  // "Release, GNU 12.2.0, -O3 -DNDEBUG ..., MPI, OpenBLAS ... Haswell kernels, 1 thread": the
  // BLAS kernels are the ones this machine selected when the program started (core/blas.h).
  std::string build;
};

const BuildInfo& Build();

// The build in one line, as reports and check files record it (python/lemmalab/plots.py's
// provenance() writes the same for figures): "lemmalab 0.1.0, commit 1a2b3c, build: Release, ...".
inline std::string ProvenanceLine(const BuildInfo& build = Build()) {
  return "lemmalab " + build.version + ", commit " + build.commit + ", build: " + build.build;
}

}  // namespace lemmalab
