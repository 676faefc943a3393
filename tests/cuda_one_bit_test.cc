// The CUDA encoder of the 1-bit formats (cuda/one_bit.h) against the CPU compressors, byte for
// byte: Birder's Q (clip and rescale), sign, scaled sign (one block and fixed chunks) and
// Block-Sign (layers and fixed blocks), with and without error feedback, on lengths that end
// inside a warp, a tile and a block, from stream positions that are not a multiple of 4, with
// NaN, infinities, signed zeros, denormals and inputs outside [-1, 1].
//
// Needs an NVIDIA GPU: on a machine without one every test is skipped, and says why.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "cuda/one_bit.h"
#include "tests/cuda_test_util.h"
#include "tests/one_bit_cases.h"

namespace lemmalab::cuda {
namespace {

using testing::OnDevice;

using testing::ConstView;
using testing::ExpectSameFloats;
using testing::kOneBitLengths;
using testing::OneBitCase;
using testing::OneBitCases;
using testing::OneBitInputs;
using testing::View;

// Two steps of error feedback on one coder (its reductions and counters must start afresh), the
// second on smaller inputs, from each of the four offsets into a Philox block, with and without
// special values.
TEST(CudaOneBit, EncodeWithFeedbackGivesTheCpuMessageErrorAndStream) {
  LEMMALAB_REQUIRE_GPU();
  for (const std::int64_t d : kOneBitLengths) {
    for (const OneBitCase& c : OneBitCases(d)) {
      for (const bool specials : {true, false}) {
        for (int offset = 0; offset < 4; ++offset) {
          SCOPED_TRACE(fmt::format("{}, d = {}, specials {}, stream offset {}", c.name, d, specials,
                                   offset));
          const auto n = static_cast<std::size_t>(d);
          // Inputs of scale 3 put many u outside Q's domain [-1, 1] (clip) and exercise rescale.
          const std::vector<float> e0 = OneBitInputs(n, 2, 0.5f, specials);
          const StreamKey key{11, Purpose::kWorkerCompression, 2, 5};
          PhiloxStream cpu_stream(key), gpu_stream(key);
          for (int k = 0; k < offset; ++k) cpu_stream(), gpu_stream();

          auto cpu = MakeOneBitCompressor<float>(c.format);
          OneBitCoder coder(c.format);
          std::vector<float> cpu_e = e0;
          DeviceBuffer<float> gpu_e = OnDevice(e0);
          for (const float sigma : {3.0f, 0.25f}) {
            const std::vector<float> x = OneBitInputs(n, 1, sigma, specials);
            Message cpu_message;
            const EncodeStats cpu_stats =
                cpu->EncodeWithFeedback(ConstView(x), 0.875f, View(cpu_e), cpu_stream, cpu_message);
            DeviceBuffer<float> gpu_x = OnDevice(x);
            coder.Encode(gpu_x.data(), gpu_e.data(), 0.875f, gpu_e.data(), gpu_stream);
            const EncodeStats gpu_stats = coder.stats();

            EXPECT_EQ(cpu_message.bytes, coder.CopyMessage().bytes) << "sigma " << sigma;
            ExpectSameFloats(cpu_e, gpu_e.ToHost(), "error feedback");
            EXPECT_EQ(cpu_stream.position(), gpu_stream.position());
            EXPECT_EQ(cpu_stats.elements, gpu_stats.elements);
            EXPECT_EQ(cpu_stats.out_of_domain, gpu_stats.out_of_domain);
            EXPECT_EQ(cpu_stats.non_finite, gpu_stats.non_finite);
          }
          EXPECT_EQ(cpu_stream(), gpu_stream());
        }
      }
    }
  }
}

TEST(CudaOneBit, EncodeWithoutFeedbackGivesTheCpuMessage) {
  LEMMALAB_REQUIRE_GPU();
  const std::int64_t d = 4096 + 17;
  for (const OneBitCase& c : OneBitCases(d)) {
    SCOPED_TRACE(c.name);
    const std::vector<float> x = OneBitInputs(static_cast<std::size_t>(d), 3, 0.6f);
    const StreamKey key{12, Purpose::kServerCompression, kServerStream, 9};
    PhiloxStream cpu_stream(key), gpu_stream(key);
    Message cpu_message;
    MakeOneBitCompressor<float>(c.format)->Encode(ConstView(x), cpu_stream, cpu_message);
    OneBitCoder coder(c.format);
    DeviceBuffer<float> gpu_x = OnDevice(x);
    coder.Encode(gpu_x.data(), nullptr, 1.0f, nullptr, gpu_stream);
    EXPECT_EQ(cpu_message.bytes, coder.CopyMessage().bytes);
    EXPECT_EQ(cpu_stream.position(), gpu_stream.position());
  }
}

TEST(CudaOneBit, DecodeAndDecodeAddGiveTheCpuFloats) {
  LEMMALAB_REQUIRE_GPU();
  for (const std::int64_t d : kOneBitLengths) {
    for (const OneBitCase& c : OneBitCases(d)) {
      SCOPED_TRACE(c.name + ", d = " + std::to_string(d));
      const std::vector<float> x = OneBitInputs(static_cast<std::size_t>(d), 4, 1.5f);
      PhiloxStream stream({13, Purpose::kWorkerCompression, 0, 1});
      auto cpu = MakeOneBitCompressor<float>(c.format);
      Message message;
      cpu->Encode(ConstView(x), stream, message);

      const std::vector<float> acc0 = OneBitInputs(static_cast<std::size_t>(d), 5, 1.0f);
      std::vector<float> cpu_out(static_cast<std::size_t>(d)), cpu_acc = acc0;
      cpu->Decode(message, View(cpu_out));
      cpu->DecodeAdd(message, 0.3f, View(cpu_acc));

      const OneBitCoder coder(c.format);
      const DeviceBuffer<std::uint32_t> gpu_message = coder.Upload(message);
      DeviceBuffer<float> gpu_out(static_cast<std::size_t>(d));
      DeviceBuffer<float> gpu_acc = OnDevice(acc0);
      coder.Decode(gpu_message.data(), gpu_out.data());
      coder.DecodeAdd(gpu_message.data(), 0.3f, gpu_acc.data());
      ExpectSameFloats(cpu_out, gpu_out.ToHost(), "Decode");
      ExpectSameFloats(cpu_acc, gpu_acc.ToHost(), "DecodeAdd");
    }
  }
}

// Birder's Q on the GPU draws +1 with probability (v + 1) / 2 (the draws are the CPU's, so this
// also guards the CPU test above against a contract both sides could break together): for
// v = 0.25 over 2^20 elements the fraction of +1 is 0.625 within 5 standard deviations.
TEST(CudaOneBit, StochasticBitsFollowTheirProbability) {
  LEMMALAB_REQUIRE_GPU();
  const std::int64_t d = 1 << 20;
  const std::vector<float> x(static_cast<std::size_t>(d), 0.25f);
  OneBitCoder coder(StochasticBinaryFormat(QuantizerDomain::kClip, d));
  DeviceBuffer<float> gpu_x = OnDevice(x);
  PhiloxStream stream({14, Purpose::kWorkerCompression, 0, 0});
  coder.Encode(gpu_x.data(), nullptr, 1.0f, nullptr, stream);
  std::int64_t plus = 0;
  for (const std::uint8_t byte : coder.CopyMessage().bytes) plus += std::popcount(byte);
  const double p = 0.625, sd = std::sqrt(p * (1 - p) / static_cast<double>(d));
  EXPECT_NEAR(static_cast<double>(plus) / static_cast<double>(d), p, 5 * sd);
}

// Host side, no GPU needed: the device message's layout holds exactly the CPU's message.
TEST(CudaOneBit, LayoutHoldsTheCpuMessage) {
  for (const std::int64_t d : kOneBitLengths) {
    for (const OneBitCase& c : OneBitCases(d)) {
      SCOPED_TRACE(c.name + ", d = " + std::to_string(d));
      const std::vector<float> x = OneBitInputs(static_cast<std::size_t>(d), 6, 1.0f);
      PhiloxStream stream({15, Purpose::kWorkerCompression, 0, 0});
      Message message;
      const auto cpu = MakeOneBitCompressor<float>(c.format);
      cpu->Encode(ConstView(x), stream, message);
      const OneBitLayout layout(c.format);
      EXPECT_EQ(layout.dimension, d);
      EXPECT_EQ(layout.message_bytes(), message.bytes.size());
      EXPECT_EQ(layout.scale_count, cpu->MessageScales(message).size());
      EXPECT_GE(4 * layout.message_words(), message.bytes.size());
      EXPECT_LT(4 * layout.message_words(), message.bytes.size() + 4);
    }
  }
}

TEST(CudaRuntime, ReportsItsDevicesOrWhyThereAreNone) {
  const Devices devices = QueryDevices();
  EXPECT_EQ(devices.list.empty(), !devices.why_none.empty());
  const std::string text = Describe(devices);
  EXPECT_EQ(text.find("CUDA runtime "), 0u) << text;
  if (devices.list.empty()) {
    EXPECT_NE(text.find("no device"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace lemmalab::cuda
