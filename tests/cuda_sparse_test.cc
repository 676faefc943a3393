// The CUDA encoder of top-k and random-k (cuda/sparse.h) against the CPU compressors, byte for
// byte: 1-, 2- and 4-byte indices, k = 1, k = d and in between, inputs full of ties (where the
// lower index must win), NaN and infinities (ranked as +inf), with and without error feedback.
//
// Needs an NVIDIA GPU: on a machine without one every test is skipped, and says why.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "compressors/random_k.h"
#include "compressors/top_k.h"
#include "cuda/sparse.h"
#include "tests/cuda_test_util.h"
#include "tests/one_bit_cases.h"

namespace lemmalab::cuda {
namespace {

using testing::ConstView;
using testing::ExpectSameFloats;
using testing::OneBitInputs;
using testing::View;

using testing::OnDevice;

// Normal values with specials, every third one rounded to a multiple of 1/4 so that many
// magnitudes tie across the threshold.
std::vector<float> TiedInputs(std::int64_t d, std::uint64_t seed) {
  std::vector<float> v = OneBitInputs(static_cast<std::size_t>(d), seed, 1.0f);
  for (std::size_t j = 0; j < v.size(); j += 3) {
    if (std::isfinite(v[j])) v[j] = std::round(v[j] * 4.0f) / 4.0f;
  }
  return v;
}

struct Shape {
  std::int64_t d, k;
};
const Shape kShapes[] = {{1, 1},       {200, 1},   {200, 200},    {200, 37},
                         {65536, 655}, {70001, 1}, {70001, 7000}, {300007, 3001}};

struct Kind {
  std::string name;
  std::unique_ptr<Compressor<float>> (*cpu)(std::int64_t d, std::int64_t k);
  SparseCoder (*gpu)(std::int64_t d, std::int64_t k);
};

const Kind kKinds[] = {
    {"top-k", [](std::int64_t d, std::int64_t k) { return MakeTopK<float>(d, k); },
     [](std::int64_t d, std::int64_t k) { return SparseCoder::TopK(d, k); }},
    {"random-k", [](std::int64_t d, std::int64_t k) { return MakeRandomK<float>(d, k, false); },
     [](std::int64_t d, std::int64_t k) { return SparseCoder::RandomK(d, k, false); }},
    {"random-k scaled",
     [](std::int64_t d, std::int64_t k) { return MakeRandomK<float>(d, k, true); },
     [](std::int64_t d, std::int64_t k) { return SparseCoder::RandomK(d, k, true); }},
};

TEST(CudaSparse, EncodeGivesTheCpuMessageErrorAndStream) {
  LEMMALAB_REQUIRE_GPU();
  for (const Kind& kind : kKinds) {
    for (const Shape& shape : kShapes) {
      // (Random-k's choice from a stream at its start, and from one in the middle of a block.)
      for (const auto& [feedback, skip] :
           {std::pair{false, 0}, std::pair{true, 0}, std::pair{true, 3}}) {
        SCOPED_TRACE(kind.name + ", d = " + std::to_string(shape.d) +
                     ", k = " + std::to_string(shape.k) + (feedback ? ", with feedback" : "") +
                     ", stream at word " + std::to_string(skip));
        const std::vector<float> x = TiedInputs(shape.d, 1);
        const std::vector<float> e0 = TiedInputs(shape.d, 2);
        const StreamKey key{21, Purpose::kWorkerCompression, 1, 3};
        PhiloxStream cpu_stream(key), gpu_stream(key);
        cpu_stream.Seek(skip);
        gpu_stream.Seek(skip);

        auto cpu = kind.cpu(shape.d, shape.k);
        std::vector<float> cpu_e = e0;
        Message cpu_message;
        const EncodeStats cpu_stats =
            feedback
                ? cpu->EncodeWithFeedback(ConstView(x), 0.5f, View(cpu_e), cpu_stream, cpu_message)
                : cpu->Encode(ConstView(x), cpu_stream, cpu_message);

        SparseCoder gpu = kind.gpu(shape.d, shape.k);
        DeviceBuffer<float> gpu_x = OnDevice(x), gpu_e = OnDevice(e0);
        gpu.Encode(gpu_x.data(), feedback ? gpu_e.data() : nullptr, 0.5f, gpu_stream);

        EXPECT_EQ(cpu_message.bytes, gpu.CopyMessage().bytes);
        ExpectSameFloats(cpu_e, gpu_e.ToHost(), "error feedback");
        EXPECT_EQ(cpu_stream.position(), gpu_stream.position());
        EXPECT_EQ(cpu_stats.non_finite, gpu.stats().non_finite);
      }
    }
  }
}

TEST(CudaSparse, DecodeAndDecodeAddGiveTheCpuFloats) {
  LEMMALAB_REQUIRE_GPU();
  for (const Kind& kind : kKinds) {
    for (const Shape& shape : kShapes) {
      SCOPED_TRACE(kind.name + ", d = " + std::to_string(shape.d));
      const std::vector<float> x = TiedInputs(shape.d, 3);
      PhiloxStream stream({22, Purpose::kWorkerCompression, 0, 0});
      auto cpu = kind.cpu(shape.d, shape.k);
      Message message;
      cpu->Encode(ConstView(x), stream, message);
      const std::vector<float> acc0 = TiedInputs(shape.d, 4);
      std::vector<float> cpu_out(static_cast<std::size_t>(shape.d)), cpu_acc = acc0;
      cpu->Decode(message, View(cpu_out));
      cpu->DecodeAdd(message, 0.3f, View(cpu_acc));

      const SparseCoder gpu = kind.gpu(shape.d, shape.k);
      const DeviceBuffer<std::uint8_t> gpu_message = gpu.Upload(message);
      DeviceBuffer<float> gpu_out(static_cast<std::size_t>(shape.d)), gpu_acc = OnDevice(acc0);
      gpu.Decode(gpu_message.data(), gpu_out.data());
      gpu.DecodeAdd(gpu_message.data(), 0.3f, gpu_acc.data());
      ExpectSameFloats(cpu_out, gpu_out.ToHost(), "Decode");
      ExpectSameFloats(cpu_acc, gpu_acc.ToHost(), "DecodeAdd");
    }
  }
}

}  // namespace
}  // namespace lemmalab::cuda
