#include "comm/network.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "core/error.h"

namespace lemmalab {
namespace {

// Unit conversions of the [network] table (and of the presets, so both round the same way):
// Gbit/s to bytes/s, microseconds to seconds. Dividing by exact powers keeps 10 Gbit/s at
// exactly 1.25e9 bytes/s.
constexpr double BytesPerSecond(double gbit_per_s) { return gbit_per_s * 1e9 / 8; }
constexpr double Seconds(double microseconds) { return microseconds / 1e6; }

// Latencies are one-way small-message latencies of the whole path (adapter, switch, software),
// given to one significant digit: they are orders of magnitude, not measurements of a machine.
// They matter only for small messages; at gradient sizes the bandwidth term dominates.
// Bandwidths are the payload line rates after encoding, per direction.
constexpr std::array<NetworkPreset, 7> kPresets = {{
    // 1-bit Adam's TCP experiments: "10Gbits or 1Gbits TCP/IP network" (onebit-adam-icml
    // line 1116), with its largest speedup at 1 Gbit/s (line 1179). Latency: the kernel TCP
    // stack and a 1 GbE NIC's interrupt moderation put one way at tens of microseconds; 50 us is
    // the order of magnitude.
    {"1GbE",
     LinkClass::kInterNode,
     {Seconds(50), BytesPerSecond(1)},
     "1 Gbit/s Ethernet, TCP (1-bit Adam's slowest network, onebit-adam-icml App. 10)"},
    // 1GbE as an MPI job gets it: the bandwidth fitted to comm_bench's rounds (every scheme,
    // d = 1M-64M floats, 2 nodes) over links shaped to 1 Gbit/s (bench/run_netns_bench.sh on a
    // 2-core VM, 2026-11-29: 0.864 Gbit/s, within 11% of 18 of the 20 measured rounds'
    // times; docs/communication.md). TCP/IP headers and MPI's framing take the rest. The sizes
    // measured do not resolve the latency (a 1M-float 1-bit round is 1 ms of bandwidth): 1GbE's.
    {"1GbE-tcp",
     LinkClass::kInterNode,
     {Seconds(50), BytesPerSecond(0.864)},
     "1 Gbit/s Ethernet as measured under MPI: 0.864 Gbit/s of payload (bench/run_netns_bench.sh)"},
    // Birder's testbed: "nodes interconnected via 10Gbps Ethernet" (birder.txt line 221).
    // Latency: the kernel TCP/IP stack dominates on 10 GbE; AMD's Onload guide (UG1586,
    // "Throughput with Onload") reports netperf TCP_RR with the kernel stack at under a third of
    // Onload's ~481k round trips/s even on a low-latency NIC, i.e. above ~6 us per round trip;
    // 10 us one way is the order of magnitude through a switch and a commodity NIC.
    {"10GbE",
     LinkClass::kInterNode,
     {Seconds(10), BytesPerSecond(10)},
     "10 Gbit/s Ethernet, TCP (Birder's testbed, birder.txt Sec. 5.1)"},
    // EDR: 4 lanes x 25.78125 Gb/s with 64b/66b encoding = 100 Gb/s of data (ConnectX-5 user
    // manual, "InfiniBand EDR"); onebit-adam.txt line 47 measured close to that peak. Latency:
    // the ConnectX-5 product brief gives sub-600 ns for the adapter; with a switch hop and the
    // MPI/NCCL software, about 1 us one way.
    {"100Gb-IB",
     LinkClass::kInterNode,
     {Seconds(1), BytesPerSecond(100)},
     "100 Gbit/s EDR InfiniBand, RDMA (onebit-adam.txt Sec. 3.1)"},
    // HDR: 4 lanes x 50 Gb/s = 200 Gb/s (birder.txt App. D, line 821). Latency as EDR: the
    // ConnectX-6 adapter is also specified below 600 ns; the path adds the same switch hop and
    // software, so 1 us to one significant digit.
    {"200Gb-IB",
     LinkClass::kInterNode,
     {Seconds(1), BytesPerSecond(200)},
     "200 Gbit/s HDR InfiniBand, RDMA (birder.txt App. D)"},
    // A100 NVLink 3: 12 links x 25 GB/s per direction = 300 GB/s per direction per GPU (600 GB/s
    // both ways together); Birder's nodes are 8 x A100 (birder.txt line 221). Latency: NCCL's
    // own cost model (src/graph/tuning.cc, hwLat) charges an NVLink hop 0.47-0.52 us for small
    // (LL) messages and 3.4 us per chunk for large ones; 1 us is the order of magnitude.
    {"nvlink",
     LinkClass::kIntraNode,
     {Seconds(1), 300e9},
     "NVLink 3 (A100), 300 GB/s per direction per GPU"},
    // PCIe 4.0 x16: 16 lanes x 16 GT/s with 128b/130b encoding = 31.5 GB/s per direction, before
    // packet (TLP) overhead. Latency: NCCL's cost model charges a PCIe hop about twice an NVLink
    // hop (1.0 against 0.47 us for small messages), hence 2 us.
    {"pcie4",
     LinkClass::kIntraNode,
     {Seconds(2), 16 * 16e9 * 128 / 130 / 8},
     "PCIe 4.0 x16 between GPUs of one node, 31.5 GB/s per direction"},
}};

const std::vector<std::string>& PresetNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const NetworkPreset& p : kPresets) out.emplace_back(p.name);
    return out;
  }();
  return names;
}

LinkCost PresetCost(std::string_view name) {
  const auto it = std::find_if(kPresets.begin(), kPresets.end(),
                               [&](const NetworkPreset& p) { return p.name == name; });
  LEMMALAB_CHECK(it != kPresets.end(), "no network preset '{}' (GetChoice admitted it)", name);
  return it->cost;
}

// One link class: the preset named by the key `prefix` ("inter" or "intra"), then the optional
// overrides <prefix>_latency_us and <prefix>_bandwidth_gbps. An overridden value replaces the
// preset's and the link is then "custom"; a value not overridden keeps the preset's exactly.
void ReadLink(OptionTable& options, const std::string& prefix, std::string_view fallback,
              std::string& name, LinkCost& cost) {
  name = options.GetChoice(prefix, fallback, PresetNames());
  cost = PresetCost(name);
  const std::string latency_key = prefix + "_latency_us";
  const std::string bandwidth_key = prefix + "_bandwidth_gbps";
  if (options.Has(latency_key)) {
    cost.latency_s = Seconds(options.GetDouble(latency_key, 0, Interval::Positive()));
    name = "custom";
  }
  if (options.Has(bandwidth_key)) {
    cost.bandwidth_bytes_per_s =
        BytesPerSecond(options.GetDouble(bandwidth_key, 0, Interval::Positive()));
    name = "custom";
  }
  // The default depends on the preset chosen, so the getters' "default 0" is replaced.
  options.Describe(latency_key,
                   fmt::format("a number > 0 (microseconds); default: the {} preset's", prefix));
  options.Describe(bandwidth_key,
                   fmt::format("a number > 0 (Gbit/s); default: the {} preset's", prefix));
}

}  // namespace

double NetworkModel::RoundSeconds(const RoundTraffic& round) const {
  double seconds = 0;
  const auto link = [&](std::int64_t sent, std::int64_t received, const LinkCost& cost,
                        std::string_view which, std::size_t endpoint) {
    LEMMALAB_CHECK(sent >= 0 && received >= 0,
                   "round '{}': endpoint {} has negative {} traffic (sent {}, received {})",
                   round.name, endpoint, which, sent, received);
    if (sent == 0 && received == 0) return;  // an unused link costs nothing, not even latency
    LEMMALAB_CHECK(cost.bandwidth_bytes_per_s > 0,
                   "round '{}': {} traffic on a link with bandwidth {} bytes/s", round.name, which,
                   cost.bandwidth_bytes_per_s);
    // Full duplex: sending and receiving overlap, so the busier direction sets the time.
    const double bytes = static_cast<double>(std::max(sent, received));
    seconds = std::max(seconds, cost.latency_s + bytes / cost.bandwidth_bytes_per_s);
  };
  for (std::size_t i = 0; i < round.endpoints.size(); ++i) {
    const EndpointTraffic& e = round.endpoints[i];
    link(e.sent.intra, e.received.intra, intra, "intra-node", i);
    link(e.sent.inter, e.received.inter, inter, "inter-node", i);
  }
  return seconds;
}

double NetworkModel::StepSeconds(std::span<const RoundTraffic> rounds) const {
  // Rounds are sequential: each waits for the data of the one before (gather, then broadcast).
  double seconds = 0;
  for (const RoundTraffic& round : rounds) seconds += RoundSeconds(round);
  return seconds;
}

NetworkModel NetworkFromOptions(OptionTable& options) {
  NetworkModel model;
  ReadLink(options, "inter", "10GbE", model.inter_name, model.inter);
  ReadLink(options, "intra", "nvlink", model.intra_name, model.intra);
  return model;
}

std::span<const NetworkPreset> NetworkPresets() { return kPresets; }

}  // namespace lemmalab
