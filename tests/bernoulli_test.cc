// Bernoulli (lazy) sending (compressors/bernoulli.h): hand-computed messages (flag, raw values),
// the one-word draw rule replayed, the sending rate p, E||C(x) - x||^2 = (1/p - 1)||x||^2 scaled
// (omega, unbiased) and (1 - p)||x||^2 unscaled (alpha = p), each within 5 standard errors,
// corrupt messages and option errors.
#include "compressors/bernoulli.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "engine/spec.h"
#include "tests/compressor_examples.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

// The contract and split tests' configurations of bernoulli (tests/compressor_examples.h).
const CompressorExamples kCompressorExamples(
    {
        // Lazy sending: the 1-byte flag, followed by the d raw values when sent.
        {"BernoulliScaled", R"(name = "bernoulli")",
         [](const CompressorShape& s, int scalar_bits) -> MessageSizes {
           return {8, 8 + scalar_bits * s.dimension};
         }},
        {"BernoulliUnscaled", "name = \"bernoulli\"\np = 0.25\nscaled = false",
         [](const CompressorShape& s, int scalar_bits) -> MessageSizes {
           return {8, 8 + scalar_bits * s.dimension};
         }},
    },
    {
        // Seeds 1 to 3 with p = 1/2 give sent and unsent messages both.
        {"BernoulliScaled", R"(name = "bernoulli")", SplitsAlways},
        {"BernoulliUnscaled", "name = \"bernoulli\"\np = 0.5\nscaled = false", SplitsAlways},
    });

PhiloxStream Stream(std::uint64_t step) {
  return PhiloxStream({23, Purpose::kWorkerCompression, 1, step});
}

TEST(Bernoulli, HandComputedMessages) {
  Vector<float> x(3);
  x << 1, -2, 0.5f;
  // Sent: the flag 1, then 1 = 0x3f800000, -2 = 0xc0000000, 0.5 = 0x3f000000 little-endian.
  const std::vector<std::uint8_t> sent = {1, 0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0, 0, 0, 0, 0x3f};
  auto always = MakeBernoulli<float>(3, 1.0, true);
  Message m;
  PhiloxStream s = Stream(1);
  always->Encode(x, s, m);
  EXPECT_EQ(m.bytes, sent);
  EXPECT_EQ(s.position(), 1u) << "one word decides";

  // p = 1/2 sends iff the word is below 2^31 (exactly probability 1/2); find a step of each kind.
  auto half = MakeBernoulli<float>(3, 0.5, true);
  auto unscaled = MakeBernoulli<float>(3, 0.5, false);
  int seen_sent = 0, seen_unsent = 0;
  for (std::uint64_t step = 1; step <= 8; ++step) {
    PhiloxStream words = Stream(step);
    const bool expected = words() < 0x80000000u;
    PhiloxStream stream = Stream(step);
    half->Encode(x, stream, m);
    Vector<float> y(3), z(3);
    half->Decode(m, y);
    unscaled->Decode(m, z);
    if (expected) {
      ++seen_sent;
      EXPECT_EQ(m.bytes, sent) << "the variants send the same bytes";
      EXPECT_EQ(y, (2 * x).eval()) << "the receiver applies 1/p";
      EXPECT_EQ(z, x);
    } else {
      ++seen_unsent;
      EXPECT_EQ(m.bytes, std::vector<std::uint8_t>{0}) << "an unsent message is one byte";
      EXPECT_EQ(y, Vector<float>::Zero(3));
      Vector<float> acc = x;
      half->DecodeAdd(m, 3.0f, acc);
      EXPECT_EQ(acc, x);
    }
  }
  EXPECT_GT(seen_sent, 0);
  EXPECT_GT(seen_unsent, 0);
}

TEST(Bernoulli, CorruptMessagesAreInternalErrors) {
  auto c = MakeBernoulli<double>(4, 0.5, true);
  Vector<double> y(4);
  EXPECT_THROW(c->Decode(Message{}, y), InternalError);
  EXPECT_THROW(c->Decode(Message{{2}}, y), InternalError);        // no such flag
  EXPECT_THROW(c->Decode(Message{{1, 0, 0}}, y), InternalError);  // sent, too short
  EXPECT_THROW(c->Decode(Message{std::vector<std::uint8_t>(33, 0)}, y), InternalError);
}

// Sending rate p, and the declared constants: ||C(x) - x||^2 / ||x||^2 is (1/p - 1)^2 when sent
// and 1 when not (scaled), 0 or 1 (unscaled), so its mean is 1/p - 1 = omega, resp. 1 - p =
// 1 - alpha, each checked within 5 standard errors; the scaled variant is unbiased.
TEST(Bernoulli, RateAndDeclaredConstants) {
  const int draws = 20000;
  const double p = 0.3;
  const Vector<double> x = testing::GaussianVector(10, 2);
  for (const bool scaled : {true, false}) {
    SCOPED_TRACE(scaled ? "scaled" : "unscaled");
    auto c = MakeBernoulli<double>(10, p, scaled);
    EXPECT_EQ(c->unbiased(), scaled);
    const double declared = scaled ? *c->omega() : 1 - *c->alpha();
    EXPECT_DOUBLE_EQ(declared, scaled ? 1 / p - 1 : 1 - p);
    EXPECT_EQ(c->omega().has_value(), scaled);
    EXPECT_EQ(c->alpha().has_value(), !scaled);
    int sent = 0;
    double sum = 0, sum_squares = 0;
    Vector<double> total = Vector<double>::Zero(10), y(10);
    Message m;
    for (int t = 0; t < draws; ++t) {
      PhiloxStream s = Stream(static_cast<std::uint64_t>(t));
      c->Encode(x, s, m);
      sent += m.bytes.size() > 1;
      c->Decode(m, y);
      total += y;
      const double ratio = (y - x).squaredNorm() / x.squaredNorm();
      sum += ratio;
      sum_squares += ratio * ratio;
    }
    EXPECT_NEAR(sent, draws * p, 5 * std::sqrt(draws * p * (1 - p)));
    const double mean = sum / draws;
    EXPECT_NEAR(mean, declared, 5 * std::sqrt((sum_squares / draws - mean * mean) / draws));
    if (scaled) {
      // total_j / draws estimates x_j with standard error |x_j| sqrt((1/p - 1) / draws).
      for (int j = 0; j < 10; ++j) {
        EXPECT_NEAR(total[j] / draws, x[j], 5 * std::abs(x[j]) * std::sqrt((1 / p - 1) / draws));
      }
    }
  }
}

TEST(Bernoulli, NonFiniteInputIsCountedSentOrNot) {
  Vector<float> x = Vector<float>::Ones(6);
  x[2] = std::numeric_limits<float>::quiet_NaN();
  for (std::uint64_t step = 1; step <= 4; ++step) {
    auto c = MakeBernoulli<float>(6, 0.5, true);
    Message m;
    PhiloxStream s = Stream(step);
    EXPECT_EQ(c->Encode(x, s, m).non_finite, 1);
  }
}

TEST(Bernoulli, OptionErrors) {
  const auto make = [](const std::string& toml) {
    std::shared_ptr<OptionTable> table = ParseOptionTable(toml, "compressor");
    MakeCompressorMaker<float>(*table);
  };
  EXPECT_EQ(testing::UserErrorOf([&] { make("name = \"bernoulli\""); }), "(no error)");
  EXPECT_NE(testing::UserErrorOf([&] { make("name = \"bernoulli\"\np = 0"); }).find("p"),
            std::string::npos);
  EXPECT_NE(testing::UserErrorOf([&] { make("name = \"bernoulli\"\np = 1.5"); }), "(no error)");
  EXPECT_NE(testing::UserErrorOf([&] { make("name = \"bernoulli\"\nk = 2"); }), "(no error)");
}

}  // namespace
}  // namespace lemmalab
