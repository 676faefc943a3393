// The GEMM ceiling the training benchmarks compare against: the rate this machine's matrix
// products reach on large matrices (the same library call the models make, core/blas.h), measured
// in the benchmark's own process so that the ratio survives a noisy shared machine.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/parallel.h"
#include "core/types.h"

namespace lemmalab {

// Flop/s of fp32 matrix products when `threads` threads each multiply their own 512 x 512
// matrices at once (as the workers' products run, one call per thread); the best of 10 rounds.
inline double PeakGemmFlops(int threads) {
  const Eigen::Index n = 512;
  std::vector<RowMatrix<float>> a(static_cast<std::size_t>(threads),
                                  RowMatrix<float>::Random(n, n));
  std::vector<RowMatrix<float>> c = a;
  double best = 1e300;
  for (int round = 0; round < 10; ++round) {
    const auto start = std::chrono::steady_clock::now();
    ParallelFor(threads, threads, [&](int i) {
      c[static_cast<std::size_t>(i)].noalias() =
          a[static_cast<std::size_t>(i)] * a[static_cast<std::size_t>(i)].transpose();
      benchmark::DoNotOptimize(c[static_cast<std::size_t>(i)].data());
    });
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return 2.0 * static_cast<double>(n * n * n) * threads / best;
}

// The multiply-adds of an MLP's forward and backward pass over `batch` samples: per layer the
// forward product and the weight gradient, and the input gradient of every layer but the first
// (problems/models.cc), counted as 2 flops each.
inline double MlpPassFlops(double batch, const std::vector<double>& widths) {
  double flops = 0;
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    flops += 2 * batch * widths[l] * widths[l + 1] * (l == 0 ? 2 : 3);
  }
  return flops;
}

}  // namespace lemmalab
