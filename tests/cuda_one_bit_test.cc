// The CUDA encoder of the 1-bit formats (cuda/one_bit.h) against the CPU compressors, byte for
// byte: Birder's Q (clip and rescale), sign, scaled sign (one block and fixed chunks) and
// Block-Sign (layers and fixed blocks), with and without error feedback, on lengths that end
// inside a warp, a tile and a block, from stream positions that are not a multiple of 4, with
// NaN, infinities, signed zeros, denormals and inputs outside [-1, 1].
//
// Needs an NVIDIA GPU: on a machine without one every test is skipped, and says why.
#include <gtest/gtest.h>

#include <boost/random/normal_distribution.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "compressors/block_sign.h"
#include "compressors/one_bit_compressor.h"
#include "compressors/scaled_sign.h"
#include "compressors/sign.h"
#include "compressors/stochastic_binary.h"
#include "core/rng.h"
#include "cuda/one_bit.h"

namespace lemmalab::cuda {
namespace {

#define LEMMALAB_REQUIRE_GPU()                                \
  do {                                                        \
    const Devices devices = QueryDevices();                   \
    if (devices.list.empty()) {                               \
      GTEST_SKIP() << "no CUDA device: " << devices.why_none; \
    }                                                         \
  } while (false)

std::vector<float> Values(std::size_t n, std::uint64_t seed, float sigma) {
  PhiloxStream s({seed, Purpose::kDataSynthesis, kGlobalStream, 0});
  boost::random::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = normal(s);
  const float specials[] = {1.0f,
                            -1.0f,
                            0.0f,
                            -0.0f,
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::nextafter(1.0f, 2.0f),
                            std::numeric_limits<float>::denorm_min(),
                            1e30f};
  // Spread over the vector (and so over warps, tiles and blocks), when there is room.
  for (std::size_t k = 0; k < std::size(specials) && n >= 64; ++k) {
    v[(k * 7919 + 3) % n] = specials[k];
  }
  return v;
}

// Equal as floats, or both NaN (a NaN's payload is not part of the contract).
void ExpectSameFloats(const std::vector<float>& cpu, const std::vector<float>& gpu,
                      const std::string& what) {
  ASSERT_EQ(cpu.size(), gpu.size());
  for (std::size_t j = 0; j < cpu.size(); ++j) {
    if (std::isnan(cpu[j]) && std::isnan(gpu[j])) continue;
    std::uint32_t a, b;
    std::memcpy(&a, &cpu[j], 4);
    std::memcpy(&b, &gpu[j], 4);
    ASSERT_EQ(a, b) << what << ", j = " << j << ": CPU " << cpu[j] << ", GPU " << gpu[j];
  }
}

Eigen::Map<const Vector<float>> Const(const std::vector<float>& v) {
  return {v.data(), static_cast<Eigen::Index>(v.size())};
}
Eigen::Map<Vector<float>> Mutable(std::vector<float>& v) {
  return {v.data(), static_cast<Eigen::Index>(v.size())};
}

template <typename T>
DeviceBuffer<T> OnDevice(const std::vector<T>& host) {
  DeviceBuffer<T> device(host.size());
  device.CopyFrom(host);
  return device;
}

struct Case {
  std::string name;
  OneBitFormat format;
};

std::vector<Case> Cases(std::int64_t d) {
  const CompressorShape layered{
      d, d >= 2000
             ? std::vector<Layer>{{"w1", 0, 7, 13}, {"b1", 91, 1000, 1}, {"w2", 1091, d - 1091, 1}}
             : SingleLayer(d)};
  return {{"stochastic-binary clip", StochasticBinaryFormat(QuantizerDomain::kClip, d)},
          {"stochastic-binary rescale", StochasticBinaryFormat(QuantizerDomain::kRescale, d)},
          {"sign", SignFormat(d)},
          {"scaled-sign", ScaledSignFormat(d, 0)},
          {"scaled-sign chunk 1000", ScaledSignFormat(d, 1000)},
          {"block-sign layers", BlockSignFormat(layered, 0)},
          {"block-sign fixed 256", BlockSignFormat(layered, 256)}};
}

const std::int64_t kLengths[] = {1, 31, 33, 1000, 1024, 4096 + 17, 100003};

TEST(CudaOneBit, EncodeWithFeedbackGivesTheCpuMessageErrorAndStream) {
  LEMMALAB_REQUIRE_GPU();
  for (const std::int64_t d : kLengths) {
    for (const Case& c : Cases(d)) {
      SCOPED_TRACE(c.name + ", d = " + std::to_string(d));
      // Inputs of scale 3 put many u outside Q's domain [-1, 1] (clip) and exercise rescale.
      const std::vector<float> x = Values(static_cast<std::size_t>(d), 1, 3.0f);
      const std::vector<float> e0 = Values(static_cast<std::size_t>(d), 2, 0.5f);
      const float a = 0.875f;
      const StreamKey key{11, Purpose::kWorkerCompression, 2, 5};
      PhiloxStream cpu_stream(key), gpu_stream(key);
      for (int k = 0; k < 3; ++k) cpu_stream(), gpu_stream();  // start mid-block

      auto cpu = MakeOneBitCompressor<float>(c.format);
      std::vector<float> cpu_e = e0;
      Message cpu_message;
      const EncodeStats cpu_stats =
          cpu->EncodeWithFeedback(Const(x), a, Mutable(cpu_e), cpu_stream, cpu_message);

      OneBitCoder coder(c.format);
      DeviceBuffer<float> gpu_x = OnDevice(x), gpu_e = OnDevice(e0);
      coder.Encode(gpu_x.data(), gpu_e.data(), a, gpu_e.data(), gpu_stream);
      const Message gpu_message = coder.CopyMessage();
      const EncodeStats gpu_stats = coder.stats();

      EXPECT_EQ(cpu_message.bytes, gpu_message.bytes);
      ExpectSameFloats(cpu_e, gpu_e.ToHost(), "error feedback");
      EXPECT_EQ(cpu_stream.position(), gpu_stream.position());
      EXPECT_EQ(cpu_stream(), gpu_stream());
      EXPECT_EQ(cpu_stats.elements, gpu_stats.elements);
      EXPECT_EQ(cpu_stats.out_of_domain, gpu_stats.out_of_domain);
      EXPECT_EQ(cpu_stats.non_finite, gpu_stats.non_finite);
    }
  }
}

TEST(CudaOneBit, EncodeWithoutFeedbackGivesTheCpuMessage) {
  LEMMALAB_REQUIRE_GPU();
  const std::int64_t d = 4096 + 17;
  for (const Case& c : Cases(d)) {
    SCOPED_TRACE(c.name);
    const std::vector<float> x = Values(static_cast<std::size_t>(d), 3, 0.6f);
    const StreamKey key{12, Purpose::kServerCompression, kServerStream, 9};
    PhiloxStream cpu_stream(key), gpu_stream(key);
    Message cpu_message;
    MakeOneBitCompressor<float>(c.format)->Encode(Const(x), cpu_stream, cpu_message);
    OneBitCoder coder(c.format);
    DeviceBuffer<float> gpu_x = OnDevice(x);
    coder.Encode(gpu_x.data(), nullptr, 1.0f, nullptr, gpu_stream);
    EXPECT_EQ(cpu_message.bytes, coder.CopyMessage().bytes);
    EXPECT_EQ(cpu_stream.position(), gpu_stream.position());
  }
}

TEST(CudaOneBit, DecodeAndDecodeAddGiveTheCpuFloats) {
  LEMMALAB_REQUIRE_GPU();
  for (const std::int64_t d : kLengths) {
    for (const Case& c : Cases(d)) {
      SCOPED_TRACE(c.name + ", d = " + std::to_string(d));
      const std::vector<float> x = Values(static_cast<std::size_t>(d), 4, 1.5f);
      PhiloxStream stream({13, Purpose::kWorkerCompression, 0, 1});
      auto cpu = MakeOneBitCompressor<float>(c.format);
      Message message;
      cpu->Encode(Const(x), stream, message);

      const std::vector<float> acc0 = Values(static_cast<std::size_t>(d), 5, 1.0f);
      std::vector<float> cpu_out(static_cast<std::size_t>(d)), cpu_acc = acc0;
      cpu->Decode(message, Mutable(cpu_out));
      cpu->DecodeAdd(message, 0.3f, Mutable(cpu_acc));

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
