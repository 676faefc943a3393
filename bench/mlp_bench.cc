// MLP forward + backward throughput (samples per second) on one thread, next to the matrix
// products it cannot avoid, measured in the same process: for a batch of B samples through
// in-hidden-classes, the first layer's forward product (B x in) * (in x hidden) and its weight
// gradient (hidden x B) * (B x in) dominate. The counter `gemm_fraction` is (time of those two
// products alone) / (time of the whole forward + backward pass): 1.0 would mean the activation,
// softmax and the small second layer cost nothing.
//
//   build/release/bench/mlp_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <boost/random/uniform_01.hpp>
#include <chrono>

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

// Seconds per call of the two first-layer products, the best of several repetitions.
double GemmSeconds(Eigen::Index batch, Eigen::Index in, Eigen::Index hidden) {
  const RowMatrix<float> a = Pixels(batch, in, 1), w = Pixels(hidden, in, 2);
  const RowMatrix<float> dz = Pixels(batch, hidden, 3);
  RowMatrix<float> z(batch, hidden), dw(hidden, in);
  double best = 1e300;
  for (int rep = 0; rep < 20; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    z.noalias() = a * w.transpose();
    dw.noalias() = dz.transpose() * a;
    benchmark::DoNotOptimize(z.data());
    benchmark::DoNotOptimize(dw.data());
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
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
  state.counters["gemm_fraction"] =
      GemmSeconds(batch, in, hidden) * static_cast<double>(state.iterations()) / seconds;
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
