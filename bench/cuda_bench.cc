// The CUDA kernels (cuda/one_bit.h, cuda/sparse.h) against a device-to-device copy measured in the
// same process, and Birder's compress + decompress at ResNet-50 and BERT-Base sizes against the
// paper's A100 figures. Needs an NVIDIA GPU: without one it says why and runs nothing.
//
// Counters:
//   GB_per_s     the least traffic the operation must move (below), per second of GPU time
//   vs_copy      GB_per_s / the copy's rate at the same length: the fraction of the bandwidth a
//                kernel can reach (1.0 = as fast as cudaMemcpy device to device)
//   vs_paper     the paper's milliseconds / ours (> 1: faster than Birder's A100 hooks)
// Least traffic per element: encode reads x (4 B) and writes a bit (1/8 B); with error feedback
// it also reads and writes e (8 B); a scale's reduction could be fused into the same pass, so it
// adds nothing. Decode-add reads a bit and reads and writes acc (8 B + 1/8).
//
//   build/release/bench/cuda_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "compressors/block_sign.h"
#include "compressors/one_bit_compressor.h"
#include "compressors/scaled_sign.h"
#include "compressors/sign.h"
#include "compressors/stochastic_binary.h"
#include "core/rng.h"
#include "cuda/one_bit.h"
#include "cuda/sparse.h"

namespace lemmalab::cuda {
namespace {

constexpr std::int64_t kSizes[] = {1 << 20, 1 << 24, 100'000'000};

// Values in [-1.5, 1.5) from a Philox stream, so that clip sees some inputs outside [-1, 1].
DeviceBuffer<float> Input(std::int64_t d, std::uint64_t seed) {
  std::vector<std::uint32_t> words(static_cast<std::size_t>(d));
  PhiloxStream({seed, Purpose::kDataSynthesis, kGlobalStream, 0}).Fill(words);
  std::vector<float> host(words.size());
  for (std::size_t j = 0; j < host.size(); ++j) {
    host[j] = 3.0f * (static_cast<float>(words[j] >> 8) * 0x1p-24f) - 1.5f;
  }
  DeviceBuffer<float> device(host.size());
  device.CopyFrom(host);
  return device;
}

// The compression stream of step `step`: a run draws from a fresh stream every step, and so does
// every iteration here (one stream reused would run out of words: 2^34 per stream).
PhiloxStream StepStream(std::int64_t step) {
  return PhiloxStream({3, Purpose::kWorkerCompression, 0, static_cast<std::uint64_t>(step)});
}

// Runs `body(step)` (work queued on the default stream) once untimed, then times each iteration
// with CUDA events as the benchmark's manual time; `step` counts the calls from 0.
template <typename F>
void TimeOnDevice(benchmark::State& state, F&& body) {
  cudaEvent_t start, stop;
  LEMMALAB_CUDA_CHECK(cudaEventCreate(&start));
  LEMMALAB_CUDA_CHECK(cudaEventCreate(&stop));
  std::int64_t step = 0;
  body(step++);
  LEMMALAB_CUDA_CHECK(cudaDeviceSynchronize());
  for (auto _ : state) {
    LEMMALAB_CUDA_CHECK(cudaEventRecord(start));
    body(step++);
    LEMMALAB_CUDA_CHECK(cudaEventRecord(stop));
    LEMMALAB_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    LEMMALAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    state.SetIterationTime(ms * 1e-3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

// Seconds of one device-to-device copy of d floats: the best of 20, measured once per length.
double CopySeconds(std::int64_t d) {
  static std::map<std::int64_t, double> cache;
  if (const auto it = cache.find(d); it != cache.end()) return it->second;
  DeviceBuffer<float> from(static_cast<std::size_t>(d)), to(static_cast<std::size_t>(d));
  cudaEvent_t start, stop;
  LEMMALAB_CUDA_CHECK(cudaEventCreate(&start));
  LEMMALAB_CUDA_CHECK(cudaEventCreate(&stop));
  double best = 1e30;
  for (int pass = 0; pass < 21; ++pass) {
    LEMMALAB_CUDA_CHECK(cudaEventRecord(start));
    LEMMALAB_CUDA_CHECK(
        cudaMemcpyAsync(to.data(), from.data(), sizeof(float) * d, cudaMemcpyDeviceToDevice));
    LEMMALAB_CUDA_CHECK(cudaEventRecord(stop));
    LEMMALAB_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    LEMMALAB_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (pass > 0) best = std::min(best, ms * 1e-3);  // the first pass warms up
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return cache[d] = best;
}

void ReportBandwidth(benchmark::State& state, std::int64_t d, double bytes_per_element) {
  const double copy_rate = 8.0 * static_cast<double>(d) / CopySeconds(d);  // read + write
  const double bytes = bytes_per_element * static_cast<double>(d);
  // Per-iteration amounts: Google Benchmark multiplies them by the iterations before dividing by
  // the time of all of them (a plain kIsRate would divide one iteration's amount by that time).
  using benchmark::Counter;
  state.counters["GB_per_s"] = Counter(bytes * 1e-9, Counter::kIsIterationInvariantRate);
  state.counters["ns_per_elem"] =
      Counter(static_cast<double>(d) * 1e-9, Counter::kIsIterationInvariantRate | Counter::kInvert);
  // The copy's seconds for this traffic per second here.
  state.counters["vs_copy"] = Counter(bytes / copy_rate, Counter::kIsIterationInvariantRate);
}

void BM_Copy(benchmark::State& state) {
  const std::int64_t d = state.range(0);
  DeviceBuffer<float> from(static_cast<std::size_t>(d)), to(static_cast<std::size_t>(d));
  TimeOnDevice(state, [&](std::int64_t) {
    LEMMALAB_CUDA_CHECK(
        cudaMemcpyAsync(to.data(), from.data(), sizeof(float) * d, cudaMemcpyDeviceToDevice));
  });
  ReportBandwidth(state, d, 8.0);
}

struct Format {
  std::string label;
  OneBitFormat (*make)(std::int64_t d);
};

const std::vector<Format>& Formats() {
  static const std::vector<Format> formats = {
      {"birder-q",
       [](std::int64_t d) { return StochasticBinaryFormat(QuantizerDomain::kClip, d); }},
      {"birder-q-rescale",
       [](std::int64_t d) { return StochasticBinaryFormat(QuantizerDomain::kRescale, d); }},
      {"sign", [](std::int64_t d) { return SignFormat(d); }},
      {"scaled-sign-2048", [](std::int64_t d) { return ScaledSignFormat(d, 2048); }},
      {"block-sign-1024",
       [](std::int64_t d) { return BlockSignFormat(CompressorShape::Flat(d), 1024); }},
  };
  return formats;
}

void BM_EncodeWithFeedback(benchmark::State& state, const Format& format) {
  const std::int64_t d = state.range(0);
  OneBitCoder coder(format.make(d));
  DeviceBuffer<float> x = Input(d, 1), e = Input(d, 2);
  TimeOnDevice(state, [&](std::int64_t step) {
    PhiloxStream stream = StepStream(step);
    coder.Encode(x.data(), e.data(), 0.5f, e.data(), stream);
  });
  ReportBandwidth(state, d, 12.125);
}

void BM_DecodeAdd(benchmark::State& state, const Format& format) {
  const std::int64_t d = state.range(0);
  OneBitCoder coder(format.make(d));
  DeviceBuffer<float> x = Input(d, 1), acc = Input(d, 2);
  PhiloxStream stream = StepStream(0);
  coder.Encode(x.data(), nullptr, 1.0f, nullptr, stream);
  TimeOnDevice(state, [&](std::int64_t) { coder.DecodeAdd(coder.message(), 0.25f, acc.data()); });
  ReportBandwidth(state, d, 8.125);
}

// Top-k and random-k of 1% with error feedback. Least traffic: read x and e, write e (12 B per
// element); the message (1% of 8 B) is left out.
void BM_SparseEncodeWithFeedback(benchmark::State& state, bool top) {
  const std::int64_t d = state.range(0), k = d / 100;
  SparseCoder coder = top ? SparseCoder::TopK(d, k) : SparseCoder::RandomK(d, k, true);
  DeviceBuffer<float> x = Input(d, 1), e = Input(d, 2);
  TimeOnDevice(state, [&](std::int64_t step) {
    PhiloxStream stream = StepStream(step);
    coder.Encode(x.data(), e.data(), 0.5f, stream);
  });
  ReportBandwidth(state, d, 12.0);
}

// Birder's compress (Q with error feedback) and decompress (one decode-add) of a whole model's
// update, against the paper's per-step figures on an A100 (birder.txt line 245: about 15 ms for
// ResNet-50 and 8 ms for BERT-Base).
void BM_BirderModel(benchmark::State& state, double paper_ms) {
  const std::int64_t d = state.range(0);
  OneBitCoder coder(StochasticBinaryFormat(QuantizerDomain::kClip, d));
  DeviceBuffer<float> x = Input(d, 1), e = Input(d, 2), acc = Input(d, 3);
  TimeOnDevice(state, [&](std::int64_t step) {
    PhiloxStream stream = StepStream(step);
    coder.Encode(x.data(), e.data(), 1.0f, e.data(), stream);
    coder.DecodeAdd(coder.message(), 1.0f, acc.data());
  });
  state.counters["vs_paper"] = benchmark::Counter(  // paper seconds per our second
      paper_ms * 1e-3, benchmark::Counter::kIsIterationInvariantRate);
  ReportBandwidth(state, d, 12.125 + 8.125);
}

void Register() {
  for (const std::int64_t d : kSizes) {
    benchmark::RegisterBenchmark("copy", BM_Copy)->Arg(d)->UseManualTime();
  }
  for (const Format& format : Formats()) {
    for (const std::int64_t d : kSizes) {
      benchmark::RegisterBenchmark((format.label + "/encode+ef").c_str(), BM_EncodeWithFeedback,
                                   format)
          ->Arg(d)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark((format.label + "/decode-add").c_str(), BM_DecodeAdd, format)
          ->Arg(d)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  for (const bool top : {true, false}) {
    for (const std::int64_t d : kSizes) {
      benchmark::RegisterBenchmark(top ? "top-k-1%/encode+ef" : "random-k-1%/encode+ef",
                                   BM_SparseEncodeWithFeedback, top)
          ->Arg(d)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  benchmark::RegisterBenchmark("birder/resnet-50", BM_BirderModel, 15.0)
      ->Arg(25'557'032)  // torchvision's ResNet-50
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("birder/bert-base", BM_BirderModel, 8.0)
      ->Arg(109'482'240)  // BERT-Base, uncased
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
}

}  // namespace
}  // namespace lemmalab::cuda

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const lemmalab::cuda::Devices devices = lemmalab::cuda::QueryDevices();
  if (devices.list.empty()) {
    std::fprintf(stderr, "cuda_bench: no CUDA device (%s); nothing to measure\n",
                 devices.why_none.c_str());
    return 0;
  }
  std::fprintf(stderr, "cuda_bench: %s\n", lemmalab::cuda::Describe(devices).c_str());
  lemmalab::cuda::Register();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
