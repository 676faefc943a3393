// Loading Fashion-MNIST's training set (60000 images of 28x28, gzip) with ReadIdx, next to two
// references measured in the same process:
//   decompress_fraction = (gzread of the same two files into a buffer) / (loader time): 1.0 would
//     mean validation and conversion cost nothing beyond zlib;
//   floor_fraction = (gzread + writing a fresh 60000 x 784 byte matrix) / (loader time): the
//     kernel's first touch of the 47 MB of new pages the samples keep is a cost every loader
//     pays, so 1.0 would leave nothing to gain.
//
//   build/release/bench/data_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <vector>

#include "problems/dataset.h"

namespace lemmalab {
namespace {

const std::filesystem::path kDir = "/usr/share/datasets/fashion-mnist";
const std::filesystem::path kImages = kDir / "train-images-idx3-ubyte.gz";
const std::filesystem::path kLabels = kDir / "train-labels-idx1-ubyte.gz";

// Decompresses a whole file into `buffer` in large gzread calls; returns the bytes read.
std::size_t Gunzip(const std::filesystem::path& path, std::vector<unsigned char>& buffer) {
  gzFile in = gzopen(path.string().c_str(), "rb");
  if (in == nullptr) return 0;
  gzbuffer(in, 1 << 18);
  std::size_t size = 0;
  int got;
  while ((got = gzread(in, buffer.data() + size, static_cast<unsigned>(buffer.size() - size))) >
         0) {
    size += static_cast<std::size_t>(got);
    if (size == buffer.size()) buffer.resize(2 * buffer.size());
  }
  gzclose(in);
  return size;
}

// Fills a freshly allocated byte matrix of the training set's shape: page faults and all.
void FirstTouch() {
  ByteMatrix x(60000, 784);
  x.setConstant(1);
  benchmark::DoNotOptimize(x.data());
  benchmark::ClobberMemory();
}

// The best of several runs of `body`, in seconds.
template <typename F>
double BestSeconds(F&& body) {
  double best = 1e300;
  for (int rep = 0; rep < 5; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    body();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

struct References {
  double gunzip = 0;       // both files decompressed
  double first_touch = 0;  // the byte matrix written once
};

const References& ReferenceSeconds() {
  static const References references = [] {
    std::vector<unsigned char> buffer(std::size_t{64} << 20);
    References r;
    r.gunzip = BestSeconds([&] {
      benchmark::DoNotOptimize(Gunzip(kImages, buffer) + Gunzip(kLabels, buffer));
      benchmark::ClobberMemory();
    });
    r.first_touch = BestSeconds(FirstTouch);
    return r;
  }();
  return references;
}

bool HaveData(benchmark::State& state) {
  if (std::filesystem::exists(kImages) && std::filesystem::exists(kLabels)) return true;
  state.SkipWithError("Fashion-MNIST missing: run scripts/install-deps");
  return false;
}

void BM_GunzipReference(benchmark::State& state) {
  if (!HaveData(state)) return;
  std::vector<unsigned char> buffer(std::size_t{64} << 20);
  for (auto _ : state) {
    benchmark::DoNotOptimize(Gunzip(kImages, buffer) + Gunzip(kLabels, buffer));
    benchmark::ClobberMemory();
  }
}

void BM_FirstTouchReference(benchmark::State& state) {
  for (auto _ : state) FirstTouch();
}

void BM_ReadIdxFashionMnistTrain(benchmark::State& state) {
  if (!HaveData(state)) return;
  const auto start = std::chrono::steady_clock::now();
  std::int64_t images = 0;
  for (auto _ : state) {
    const Samples samples = ReadIdx(kImages, kLabels, 10);
    images += samples.size();
    benchmark::DoNotOptimize(samples.bytes->data());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state.SetItemsProcessed(images);
  const double per_load = seconds / static_cast<double>(state.iterations());
  const References& r = ReferenceSeconds();
  state.counters["decompress_fraction"] = r.gunzip / per_load;
  state.counters["floor_fraction"] = (r.gunzip + r.first_touch) / per_load;
}

BENCHMARK(BM_GunzipReference)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FirstTouchReference)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadIdxFashionMnistTrain)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace lemmalab

BENCHMARK_MAIN();
