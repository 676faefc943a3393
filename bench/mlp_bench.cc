// MLP forward + backward throughput (samples per second) on one thread, against the GEMM ceiling
// measured in the same process: `gemm_ceiling` is the time the pass's multiply-adds would take at
// the rate large matrix products reach on one thread (bench/gemm_ceiling.h), over the pass's
// time. 1.0 would mean the activations, the softmax and the small products cost nothing and the
// batch's products run as fast as large ones.//
//   build/release/bench/mlp_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <boost/random/uniform_01.hpp>
#include <chrono>

#include "bench/gemm_ceiling.h"
#include "problems/supervised.h"

namespace lemmalab {
namespace {

RowMatrix<float> Pixels(Eigen::Index rows, Eigen::Index cols, std::uint64_t seed) {
  PhiloxStream s({seed, Purpose::kDataSynthesis, kGlobalStream, 0});
  boost::random::uniform_01<float> u;
  RowMatrix<float> a(rows, cols);
  for (auto& v : a.reshaped()) v = u(s);
  return a;
}

void BM_MlpForwardBackward(benchmark::State& state) {
  const Eigen::Index batch = state.range(0), in = state.range(1), hidden = state.range(2);
  const auto model = MakeMlpModel<float>(in, {hidden}, 10, Activation::kRelu);
  const RowMatrix<float> a = Pixels(batch, in, 4);
  Eigen::VectorXi y(batch);
  for (Eigen::Index k = 0; k < batch; ++k) y[k] = static_cast<int>(k % 10);
  const Vector<float> x = model->InitialPoint(1);
  Vector<float> g(model->dimension());
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    benchmark::DoNotOptimize(model->Sum(a, y, x, g.data(), nullptr));
    benchmark::ClobberMemory();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state.SetItemsProcessed(state.iterations() * batch);
  const double flops = MlpPassFlops(static_cast<double>(batch),
                                    {static_cast<double>(in), static_cast<double>(hidden), 10});
  state.counters["gemm_ceiling"] =
      flops * static_cast<double>(state.iterations()) / PeakGemmFlops(1) / seconds;
}

// MNIST-size 784-256-10 and CIFAR-size 3072-512-10, batches 64 and 256.
BENCHMARK(BM_MlpForwardBackward)
    ->ArgNames({"batch", "in", "hidden"})
    ->Args({64, 784, 256})
    ->Args({256, 784, 256})
    ->Args({64, 3072, 512})
    ->Args({256, 3072, 512})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace lemmalab

BENCHMARK_MAIN();
