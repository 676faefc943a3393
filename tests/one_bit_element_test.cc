// The CPU side of the CUDA equality contract (docs/gpu.md): every 1-bit format's message, error
// feedback and stream position, as the CPU compressor computes them (SIMD kernels, fused Philox),
// equal the element-wise definition of compressors/one_bit_element.h evaluated one element at a
// time with element j drawing word position + j: exactly what the CUDA kernels compute, in
// parallel. A CPU change that left the definition would break the GPU's equality; this test
// catches it on machines without a GPU. Planted faults show it would.
#include "compressors/one_bit_element.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/one_bit_cases.h"

namespace lemmalab::one_bit {
namespace {

using testing::ConstView;
using testing::ExpectSameFloats;
using testing::kOneBitLengths;
using testing::OneBitCase;
using testing::OneBitCases;
using testing::OneBitInputs;
using testing::View;

struct Encoded {
  std::vector<std::uint8_t> bytes;
  std::vector<float> e;
};

// Deliberate departures from the definition, to show the comparison catches them.
enum class Fault { kNone, kResidualSign, kWordOffset };

// The definition, one element at a time: u = x + a e, each block's scale from its reduction
// (norms in the fixed order of kPartials partial sums), then each element's bit and residual.
Encoded ByDefinition(const OneBitFormat& format, const std::vector<float>& x,
                     const std::vector<float>& e, float a, PhiloxStream& stream,
                     Fault fault = Fault::kNone) {
  const std::size_t d = x.size();
  std::vector<float> u(d);
  for (std::size_t j = 0; j < d; ++j) u[j] = x[j] + a * e[j];
  std::vector<std::uint32_t> words(d + 1);
  if (format.draw == Draw::kStochastic) {
    stream.Fill(words);  // element j: word position + j
    stream.Seek(stream.position() - 1);
  }
  const std::size_t shift = fault == Fault::kWordOffset ? 1 : 0;

  const bool sends_scales = format.scale != Scale::kNone;
  Encoded out;
  out.bytes.assign((sends_scales ? 4 * format.blocks.size() : 0) + (d + 7) / 8, 0);
  out.e.resize(d);
  std::uint8_t* bits = out.bytes.data() + (sends_scales ? 4 * format.blocks.size() : 0);
  for (std::size_t b = 0; b < format.blocks.size(); ++b) {
    const auto [lo, hi] = format.blocks[b];
    double reduction = 0, partials[kPartials] = {};
    for (std::int64_t j = lo; j < hi; ++j) {
      const double v = static_cast<double>(u[static_cast<std::size_t>(j)]);
      if (format.scale == Scale::kMaxAbs && IsFinite(v))
        reduction = std::max(reduction, std::abs(v));
      partials[(j - lo) % kPartials] += format.scale == Scale::kRms ? v * v : std::abs(v);
    }
    if (format.scale == Scale::kRms || format.scale == Scale::kMeanAbs) {
      reduction = CombinePartials(partials);
    }
    const float s = ScaleFromReduction(format.scale, reduction, static_cast<double>(hi - lo));
    if (sends_scales) std::memcpy(out.bytes.data() + 4 * b, &s, 4);
    for (std::int64_t j = lo; j < hi; ++j) {
      const auto i = static_cast<std::size_t>(j);
      const bool plus = format.draw == Draw::kStochastic
                            ? StochasticBit(u[i], 1.0f / s, words[i + shift])
                            : SignBit(u[i]);
      if (plus) bits[i / 8] |= static_cast<std::uint8_t>(1u << (i % 8));
      out.e[i] = Residual(u[i], fault == Fault::kResidualSign ? !plus : plus, s);
    }
  }
  return out;
}

TEST(OneBitElement, CpuCompressorsEqualTheElementDefinition) {
  for (const std::int64_t d : kOneBitLengths) {
    for (const OneBitCase& c : OneBitCases(d)) {
      for (const bool specials : {true, false}) {
        for (int offset = 0; offset < 4; ++offset) {  // into a Philox block
          SCOPED_TRACE(c.name + ", d = " + std::to_string(d) + (specials ? ", specials" : "") +
                       ", offset " + std::to_string(offset));
          const auto n = static_cast<std::size_t>(d);
          const std::vector<float> x = OneBitInputs(n, 1, 3.0f, specials);
          const std::vector<float> e0 = OneBitInputs(n, 2, 0.5f, specials);
          const StreamKey key{11, Purpose::kWorkerCompression, 2, 5};
          PhiloxStream cpu_stream(key), defined_stream(key);
          for (int k = 0; k < offset; ++k) cpu_stream(), defined_stream();

          std::vector<float> e = e0;
          Message message;
          MakeOneBitCompressor<float>(c.format)->EncodeWithFeedback(ConstView(x), 0.875f, View(e),
                                                                    cpu_stream, message);
          const Encoded defined = ByDefinition(c.format, x, e0, 0.875f, defined_stream);
          EXPECT_EQ(message.bytes, defined.bytes);
          ExpectSameFloats(defined.e, e, "error feedback");
          EXPECT_EQ(cpu_stream.position(), defined_stream.position());
        }
      }
    }
  }
}

// Negative controls: a residual with the wrong sign, and draw words off by one (a tile's offset
// into the stream, say), are caught.
TEST(OneBitElement, PlantedFaultsAreCaught) {
  const std::int64_t d = 4096 + 17;
  const std::vector<float> x = OneBitInputs(static_cast<std::size_t>(d), 1, 3.0f);
  const std::vector<float> e0 = OneBitInputs(static_cast<std::size_t>(d), 2, 0.5f);
  const auto encode = [&](const OneBitFormat& format, Fault fault) {
    PhiloxStream cpu_stream({11, Purpose::kWorkerCompression, 2, 5}), defined_stream = cpu_stream;
    std::vector<float> e = e0;
    Message message;
    MakeOneBitCompressor<float>(format)->EncodeWithFeedback(ConstView(x), 0.875f, View(e),
                                                            cpu_stream, message);
    const Encoded defined = ByDefinition(format, x, e0, 0.875f, defined_stream, fault);
    return std::make_pair(message.bytes == defined.bytes, e == defined.e);
  };
  const OneBitFormat sign = SignFormat(d);
  EXPECT_FALSE(encode(sign, Fault::kResidualSign).second);
  const OneBitFormat q = StochasticBinaryFormat(QuantizerDomain::kClip, d);
  ASSERT_TRUE(encode(q, Fault::kNone).first);
  EXPECT_FALSE(encode(q, Fault::kWordOffset).first);
}

}  // namespace
}  // namespace lemmalab::one_bit
