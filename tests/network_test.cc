// The network cost model: round and step times of the alpha-beta model on hand-made traffic,
// the presets' numbers, the [network] table, and where compression pays on which link.
#include "comm/network.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "core/error.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using ::testing::HasSubstr;
using testing::UserErrorOf;

// Round numbers in artificial units: intra-node 0.25 s + bytes/100, inter-node 1 s + bytes/10.
NetworkModel ToyModel() {
  NetworkModel m;
  m.intra_name = m.inter_name = "custom";
  m.intra = {0.25, 100};
  m.inter = {1.0, 10};
  return m;
}

EndpointTraffic Intra(std::int64_t sent, std::int64_t received) {
  EndpointTraffic e;
  e.sent.intra = sent;
  e.received.intra = received;
  return e;
}

EndpointTraffic Inter(std::int64_t sent, std::int64_t received) {
  EndpointTraffic e;
  e.sent.inter = sent;
  e.received.inter = received;
  return e;
}

TEST(NetworkRound, IntraNodeTrafficPaysIntraLatencyPlusBytesOverBandwidth) {
  const NetworkModel m = ToyModel();
  EXPECT_EQ(m.RoundSeconds({"gather", {Intra(50, 0)}}), 0.75);  // 0.25 + 50/100
  EXPECT_EQ(m.RoundSeconds({"gather", {Intra(0, 50)}}), 0.75);  // receiving costs the same
}

TEST(NetworkRound, InterNodeTrafficPaysInterLatencyOnly) {
  // 1 + 30/10 = 4; the intra-node latency (0.25) is not added: that link carries nothing.
  EXPECT_EQ(ToyModel().RoundSeconds({"all-to-all", {Inter(30, 0)}}), 4.0);
}

TEST(NetworkRound, BusierDirectionSetsTheTimeOfAFullDuplexLink) {
  const NetworkModel m = ToyModel();
  // max(20, 50) = 50 bytes: 0.75, not 0.25 + 70/100 = 0.95 (sum) nor 0.25 + 20/100 (sent).
  EXPECT_EQ(m.RoundSeconds({"r", {Intra(20, 50)}}), 0.75);
  EXPECT_EQ(m.RoundSeconds({"r", {Intra(50, 20)}}), 0.75);
  EXPECT_EQ(m.RoundSeconds({"r", {Intra(50, 50)}}), 0.75);
  EXPECT_EQ(m.RoundSeconds({"r", {Inter(10, 40)}}), 5.0);  // 1 + 40/10
}

TEST(NetworkRound, BothLinkClassesOfAnEndpointRunInParallel) {
  const NetworkModel m = ToyModel();
  EndpointTraffic e = Intra(50, 0);            // 0.75 s
  e.sent.inter = 30;                           // 4 s
  EXPECT_EQ(m.RoundSeconds({"r", {e}}), 4.0);  // max, not 4.75
  EndpointTraffic f = Intra(500, 100);         // 0.25 + 5 = 5.25 s
  f.received.inter = 3;                        // 1 + 0.3 = 1.3 s
  EXPECT_EQ(m.RoundSeconds({"r", {f}}), 5.25);
}

TEST(NetworkRound, SlowestEndpointSetsTheRoundAndIdleEndpointsCostNothing) {
  const NetworkModel m = ToyModel();
  const EndpointTraffic idle;
  // Workers 0 and 1 busy, worker 2 idle, the server (last) receives over the network.
  EXPECT_EQ(m.RoundSeconds({"gather", {Intra(50, 0), Intra(10, 0), idle, Inter(0, 30)}}), 4.0);
  EXPECT_EQ(m.RoundSeconds({"gather", {idle, Intra(10, 0), idle}}), 0.35);  // 0.25 + 0.1
  // Idle endpoints pay no latency: a round in which nobody sends takes no time.
  EXPECT_EQ(m.RoundSeconds({"nothing", {idle, idle, idle}}), 0.0);
}

TEST(NetworkRound, EmptyRoundTakesNoTime) {
  EXPECT_EQ(ToyModel().RoundSeconds({"empty", {}}), 0.0);
}

TEST(NetworkStep, StepIsTheSumOfItsRounds) {
  const NetworkModel m = ToyModel();
  const std::vector<RoundTraffic> rounds = {
      {"gather", {Intra(50, 0), Intra(20, 0)}},  // 0.75
      {"broadcast", {Inter(0, 30)}},             // 4
      {"empty", {}},                             // 0
      {"all-gather", {Intra(100, 100)}},         // 1.25
  };
  EXPECT_EQ(m.StepSeconds(rounds), 6.0);
  EXPECT_EQ(m.StepSeconds(std::span<const RoundTraffic>(rounds).first(2)), 4.75);
  EXPECT_EQ(m.StepSeconds({}), 0.0);
}

TEST(NetworkRound, NegativeBytesAndTrafficOnAMissingLinkAreBugs) {
  const NetworkModel m = ToyModel();
  EXPECT_THROW(m.RoundSeconds({"r", {Intra(-1, 0)}}), InternalError);
  EXPECT_THROW(m.RoundSeconds({"r", {Inter(0, -8)}}), InternalError);
  const NetworkModel unset;  // bandwidth 0 on both classes
  EXPECT_EQ(unset.RoundSeconds({"r", {EndpointTraffic{}}}), 0.0);
  EXPECT_THROW(unset.RoundSeconds({"r", {Intra(1, 0)}}), InternalError);
}

const NetworkPreset& Preset(std::string_view name) {
  for (const NetworkPreset& p : NetworkPresets()) {
    if (p.name == name) return p;
  }
  ADD_FAILURE() << "no preset " << name;
  static const NetworkPreset none{};
  return none;
}

TEST(NetworkPresets, LinkRatesInBytesPerSecond) {
  // Bytes per second = Gbit/s * 1e9 / 8.
  EXPECT_EQ(Preset("1GbE").cost.bandwidth_bytes_per_s, 1.25e8);
  EXPECT_EQ(Preset("1GbE-tcp").cost.bandwidth_bytes_per_s, 1.08e8);  // 0.864 Gbit/s
  EXPECT_EQ(Preset("10GbE").cost.bandwidth_bytes_per_s, 1.25e9);
  EXPECT_EQ(Preset("100Gb-IB").cost.bandwidth_bytes_per_s, 1.25e10);
  EXPECT_EQ(Preset("200Gb-IB").cost.bandwidth_bytes_per_s, 2.5e10);
  EXPECT_EQ(Preset("nvlink").cost.bandwidth_bytes_per_s, 3e11);  // 300 GB/s per direction
  // 16 lanes x 16 GT/s x 128/130 / 8 bits = 31.50769... GB/s.
  EXPECT_NEAR(Preset("pcie4").cost.bandwidth_bytes_per_s, 31.5076923e9, 1e3);
}

TEST(NetworkPresets, LatenciesLinkClassesAndSources) {
  EXPECT_DOUBLE_EQ(Preset("1GbE").cost.latency_s, 50e-6);
  EXPECT_DOUBLE_EQ(Preset("10GbE").cost.latency_s, 10e-6);
  EXPECT_DOUBLE_EQ(Preset("100Gb-IB").cost.latency_s, 1e-6);
  EXPECT_DOUBLE_EQ(Preset("200Gb-IB").cost.latency_s, 1e-6);
  EXPECT_DOUBLE_EQ(Preset("nvlink").cost.latency_s, 1e-6);
  EXPECT_DOUBLE_EQ(Preset("pcie4").cost.latency_s, 2e-6);
  EXPECT_EQ(Preset("10GbE").link, LinkClass::kInterNode);
  EXPECT_EQ(Preset("200Gb-IB").link, LinkClass::kInterNode);
  EXPECT_EQ(Preset("nvlink").link, LinkClass::kIntraNode);
  EXPECT_EQ(Preset("pcie4").link, LinkClass::kIntraNode);
  std::set<std::string_view> names;
  for (const NetworkPreset& p : NetworkPresets()) {
    EXPECT_TRUE(names.insert(p.name).second) << "duplicate preset " << p.name;
    EXPECT_FALSE(p.source.empty()) << p.name;
    EXPECT_GT(p.cost.latency_s, 0) << p.name;
    EXPECT_GT(p.cost.bandwidth_bytes_per_s, 0) << p.name;
  }
  EXPECT_EQ(names.size(), 7u);
}

OptionTable NetworkTable() { return OptionTable("network", "spec.toml:12:1"); }

TEST(NetworkOptions, DefaultsAre10GbEBetweenNodesAndNVLinkInside) {
  OptionTable t = NetworkTable();
  const NetworkModel m = NetworkFromOptions(t);
  EXPECT_EQ(m.inter_name, "10GbE");
  EXPECT_EQ(m.intra_name, "nvlink");
  EXPECT_EQ(m.inter.bandwidth_bytes_per_s, 1.25e9);
  EXPECT_DOUBLE_EQ(m.inter.latency_s, 10e-6);
  EXPECT_EQ(m.intra.bandwidth_bytes_per_s, 3e11);
  EXPECT_DOUBLE_EQ(m.intra.latency_s, 1e-6);
}

TEST(NetworkOptions, PresetsServeEitherLinkClass) {
  OptionTable t = NetworkTable();
  t.Set("inter", {std::string("200Gb-IB"), "spec.toml:13:9"});
  t.Set("intra", {std::string("10GbE"), "spec.toml:14:9"});
  const NetworkModel m = NetworkFromOptions(t);
  EXPECT_EQ(m.inter_name, "200Gb-IB");
  EXPECT_EQ(m.inter.bandwidth_bytes_per_s, 2.5e10);
  EXPECT_EQ(m.intra_name, "10GbE");
  EXPECT_EQ(m.intra.bandwidth_bytes_per_s, 1.25e9);
  EXPECT_DOUBLE_EQ(m.intra.latency_s, 10e-6);
}

TEST(NetworkOptions, OverridesReplaceOnePresetValueAndMakeTheLinkCustom) {
  OptionTable t = NetworkTable();
  t.Set("inter", {std::string("100Gb-IB"), "spec.toml:13:9"});
  t.Set("inter_latency_us", {2.5, "spec.toml:14:20"});
  t.Set("intra_bandwidth_gbps", {std::int64_t{800}, "spec.toml:15:24"});  // an integer is fine
  const NetworkModel m = NetworkFromOptions(t);
  EXPECT_EQ(m.inter_name, "custom");
  EXPECT_EQ(m.inter.latency_s, 2.5e-6);
  EXPECT_EQ(m.inter.bandwidth_bytes_per_s, 1.25e10);  // the preset's
  EXPECT_EQ(m.intra_name, "custom");
  EXPECT_EQ(m.intra.bandwidth_bytes_per_s, 1e11);  // 800 Gbit/s = 100 GB/s
  EXPECT_DOUBLE_EQ(m.intra.latency_s, 1e-6);       // nvlink's
  EXPECT_NO_THROW(t.RejectUnknownKeys());
}

TEST(NetworkOptions, UnknownPresetNamesKeyValueAndKnownNames) {
  OptionTable t = NetworkTable();
  t.Set("inter", {std::string("token-ring"), "spec.toml:13:9"});
  EXPECT_EQ(UserErrorOf([&] { NetworkFromOptions(t); }),
            "spec.toml:13:9: network: inter must be one of 1GbE, 1GbE-tcp, 10GbE, 100Gb-IB, "
            "200Gb-IB, nvlink, "
            "pcie4; got 'token-ring'");
  OptionTable u = NetworkTable();
  u.Set("intra", {std::string("nvlnk"), "spec.toml:13:9"});
  EXPECT_THAT(
      UserErrorOf([&] { NetworkFromOptions(u); }),
      HasSubstr(
          "intra must be one of 1GbE, 1GbE-tcp, 10GbE, 100Gb-IB, 200Gb-IB, nvlink, pcie4; got "
          "'nvlnk' (did you mean 'nvlink'?)"));
}

TEST(NetworkOptions, NonPositiveOrNonFiniteOverridesAreRefused) {
  OptionTable t = NetworkTable();
  t.Set("inter_bandwidth_gbps", {std::int64_t{-10}, "spec.toml:13:24"});
  EXPECT_EQ(UserErrorOf([&] { NetworkFromOptions(t); }),
            "spec.toml:13:24: network: inter_bandwidth_gbps must be > 0, got -10");
  OptionTable u = NetworkTable();
  u.Set("intra_latency_us", {0.0, "spec.toml:13:20"});
  EXPECT_THAT(UserErrorOf([&] { NetworkFromOptions(u); }),
              HasSubstr("intra_latency_us must be > 0, got 0"));
  OptionTable v = NetworkTable();
  v.Set("intra_bandwidth_gbps", {HUGE_VAL, "spec.toml:13:24"});
  EXPECT_THAT(UserErrorOf([&] { NetworkFromOptions(v); }),
              HasSubstr("intra_bandwidth_gbps must be > 0, got inf"));
  OptionTable w = NetworkTable();
  w.Set("inter_latency_us", {std::string("fast"), "spec.toml:13:20"});
  EXPECT_THAT(UserErrorOf([&] { NetworkFromOptions(w); }),
              HasSubstr("inter_latency_us must be a number, got a string 'fast'"));
}

TEST(NetworkOptions, TheGettersDescribeEveryKeyAndCatchTypos) {
  OptionTable t = NetworkTable();
  NetworkFromOptions(t);
  std::vector<std::string> keys;
  for (const OptionTable::Use& use : t.uses()) keys.push_back(use.key);
  EXPECT_THAT(keys, ::testing::ElementsAre("inter", "inter_latency_us", "inter_bandwidth_gbps",
                                           "intra", "intra_latency_us", "intra_bandwidth_gbps"));
  EXPECT_EQ(t.uses()[0].description,
            "one of 1GbE, 1GbE-tcp, 10GbE, 100Gb-IB, 200Gb-IB, nvlink, pcie4; default '10GbE'");
  EXPECT_EQ(t.uses()[2].description, "a number > 0 (Gbit/s); default: the inter preset's");
  EXPECT_EQ(t.uses()[4].description, "a number > 0 (microseconds); default: the intra preset's");
  EXPECT_EQ(t.uses()[3].description,
            "one of 1GbE, 1GbE-tcp, 10GbE, 100Gb-IB, 200Gb-IB, nvlink, pcie4; default 'nvlink'");

  OptionTable typo = NetworkTable();
  typo.Set("inter_bandwith_gbps", {std::int64_t{40}, "spec.toml:13:1"});
  NetworkFromOptions(typo);
  EXPECT_THAT(
      UserErrorOf([&] { typo.RejectUnknownKeys(); }),
      HasSubstr("unknown key 'inter_bandwith_gbps' (did you mean 'inter_bandwidth_gbps'?)"));
}

// Where compression pays. A ResNet-50-sized gradient (P = 25M parameters) over n = 8 endpoints:
// a dense fp32 ring all-reduce moves 2(n-1)/n * 4P = 1.75e8 bytes per endpoint in one pass; a
// 1-bit compressed all-reduce (one_bit-adam.txt Sec. 6: all-to-all, then all-gather) moves
// (n-1)/n * P/8 = 2734375 bytes per endpoint in each of its two rounds.
constexpr std::int64_t kParameters = 25'000'000;
constexpr int kEndpoints = 8;

RoundTraffic Uniform(std::string name, std::int64_t bytes, LinkClass link) {
  EndpointTraffic e;
  if (link == LinkClass::kIntraNode) {
    e.sent.intra = e.received.intra = bytes;
  } else {
    e.sent.inter = e.received.inter = bytes;
  }
  return {std::move(name), std::vector<EndpointTraffic>(kEndpoints, e)};
}

std::vector<RoundTraffic> DenseAllReduce(LinkClass link) {
  return {Uniform("ring all-reduce", 2 * (kEndpoints - 1) * 4 * kParameters / kEndpoints, link)};
}

std::vector<RoundTraffic> OneBitAllReduce(LinkClass link) {
  const std::int64_t bytes = (kEndpoints - 1) * kParameters / 8 / kEndpoints;
  return {Uniform("all-to-all", bytes, link), Uniform("all-gather", bytes, link)};
}

NetworkModel Model(const std::string& inter, const std::string& intra) {
  OptionTable t = NetworkTable();
  t.Set("inter", {inter, ""});
  t.Set("intra", {intra, ""});
  return NetworkFromOptions(t);
}

TEST(NetworkCompression, PaysOverEthernetAndNotOverNVLink) {
  ASSERT_EQ(DenseAllReduce(LinkClass::kInterNode)[0].endpoints[0].sent.inter, 175'000'000);
  ASSERT_EQ(OneBitAllReduce(LinkClass::kInterNode)[0].endpoints[0].sent.inter, 2'734'375);
  const NetworkModel m = Model("10GbE", "nvlink");

  // 10 GbE between nodes: 1e-5 + 1.75e8/1.25e9 = 0.14001 s against 2(1e-5 + 2734375/1.25e9) =
  // 4.395e-3 s, a factor 31.9 (32 in bytes, less the latencies).
  const double dense_eth = m.StepSeconds(DenseAllReduce(LinkClass::kInterNode));
  const double one_bit_eth = m.StepSeconds(OneBitAllReduce(LinkClass::kInterNode));
  EXPECT_DOUBLE_EQ(dense_eth, 0.14001);
  EXPECT_DOUBLE_EQ(one_bit_eth, 4.395e-3);
  EXPECT_GT(dense_eth, 25 * one_bit_eth);
  EXPECT_LT(dense_eth, 32 * one_bit_eth);

  // NVLink inside a node: 1e-6 + 1.75e8/3e11 = 0.584 ms and 2(1e-6 + 2734375/3e11) = 0.020 ms,
  // both below 1 ms: there is hardly any communication time left to save.
  const double dense_nvl = m.StepSeconds(DenseAllReduce(LinkClass::kIntraNode));
  const double one_bit_nvl = m.StepSeconds(OneBitAllReduce(LinkClass::kIntraNode));
  EXPECT_NEAR(dense_nvl, 5.843333333e-4, 1e-12);
  EXPECT_NEAR(one_bit_nvl, 2.0229167e-5, 1e-12);
  EXPECT_LT(dense_nvl, 1e-3);
  EXPECT_LT(one_bit_nvl, 1e-3);

  // Birder's compression and decompression take about 15 ms per step for ResNet-50
  // (birder.txt line 245). Over 10 GbE the saved 136 ms pay for it many times; over NVLink the
  // saved 0.56 ms do not, which is why on one node SGDM is slightly faster than Birder (ibid.).
  constexpr double kCompressionSeconds = 15e-3;
  EXPECT_GT(dense_eth - one_bit_eth, kCompressionSeconds);
  EXPECT_LT(dense_nvl - one_bit_nvl, kCompressionSeconds);
}

TEST(NetworkCompression, OneBitOverEthernetBeatsDenseOverInfiniBand) {
  // birder.txt line 850: Birder's throughput on 10 Gbps Ethernet can match SGDM/Adam's on
  // 200 Gbps InfiniBand. In the model: 4.395 ms against 1e-6 + 1.75e8/2.5e10 = 7.001 ms.
  const double one_bit_eth =
      Model("10GbE", "nvlink").StepSeconds(OneBitAllReduce(LinkClass::kInterNode));
  const double dense_ib =
      Model("200Gb-IB", "nvlink").StepSeconds(DenseAllReduce(LinkClass::kInterNode));
  EXPECT_DOUBLE_EQ(dense_ib, 7.001e-3);
  EXPECT_LT(one_bit_eth, dense_ib);
  // The dense all-reduce gains from the faster link what the model says it should: 20x the
  // bandwidth, a factor (1e-5 + 0.14)/(1e-6 + 0.007) = 19.9986 in time (the latencies differ).
  const double dense_eth =
      Model("10GbE", "nvlink").StepSeconds(DenseAllReduce(LinkClass::kInterNode));
  EXPECT_NEAR(dense_eth / dense_ib, 19.9986, 1e-4);

  // onebit-adam.txt line 280: 1-bit Adam on Ethernet with 4.1 Gbps effective bandwidth reaches
  // throughput comparable to Adam on InfiniBand near 100 Gbps (both fp16). Dense fp16 over
  // 100Gb-IB: 1e-6 + 8.75e7/1.25e10 = 7.001 ms; 1-bit over 4.1 Gbit/s: 2(1e-5 + 2734375/5.125e8)
  // = 10.69 ms: comparable, within a factor 2, though the bytes differ by 32x.
  OptionTable slow = NetworkTable();
  slow.Set("inter_bandwidth_gbps", {4.1, ""});
  const NetworkModel ethernet = NetworkFromOptions(slow);
  EXPECT_DOUBLE_EQ(ethernet.inter.bandwidth_bytes_per_s, 5.125e8);
  const double one_bit_slow = ethernet.StepSeconds(OneBitAllReduce(LinkClass::kInterNode));
  EXPECT_NEAR(one_bit_slow, 0.0106907317073, 1e-12);
  std::vector<RoundTraffic> fp16 = DenseAllReduce(LinkClass::kInterNode);
  for (EndpointTraffic& e : fp16[0].endpoints) {
    e.sent.inter /= 2;
    e.received.inter /= 2;
  }
  const double dense_fp16_ib = Model("100Gb-IB", "nvlink").StepSeconds(fp16);
  EXPECT_DOUBLE_EQ(dense_fp16_ib, 7.001e-3);
  EXPECT_GT(one_bit_slow, dense_fp16_ib);
  EXPECT_LT(one_bit_slow, 2 * dense_fp16_ib);
}

}  // namespace
}  // namespace lemmalab
