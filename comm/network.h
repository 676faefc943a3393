// Network cost model: projected communication time of a step from the bytes each endpoint sends
// and receives on each link class (issue 6, item 4).
//
// The model is the alpha-beta (latency-bandwidth) model: moving b bytes over a link costs
// latency + b / bandwidth. A communication scheme reports, per round (a gather, broadcast,
// all-to-all or all-gather), what every endpoint sent and received on intra-node links (GPUs of
// one machine: NVLink, PCIe) and on inter-node links (the machines' network: Ethernet,
// InfiniBand); the model turns that into seconds, so a run can report projected communication
// time per step next to its measured compute time, and a sweep over links shows where
// compression starts to pay. This is the effect behind birder.txt Table 3 (line 830: 10 Gbps
// Ethernet against 200 Gbps InfiniBand; line 850: Birder on Ethernet matches SGDM/Adam on
// InfiniBand) and onebit-adam.txt Table 1 (line 47: allreduce dominates a step on Ethernet, much
// less on InfiniBand).
//
// What the model leaves out, on purpose: congestion inside the network (every endpoint is assumed
// to get its own link's bandwidth: a non-blocking switch), overlap of communication with compute,
// protocol efficiency (payload rates are line rates after encoding; measured rates are lower,
// e.g. 4.1 Gbps effective on 40 Gbit Ethernet in onebit-adam.txt line 47: model such a link with
// the bandwidth overrides), and the time to compress and decompress, which a run measures as
// compute.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "comm/traffic.h"
#include "core/options.h"

namespace lemmalab {

struct LinkCost {
  double latency_s = 0;
  double bandwidth_bytes_per_s = 0;
};

struct NetworkModel {
  std::string intra_name, inter_name;  // preset names, or "custom"
  LinkCost intra, inter;
  // alpha-beta model: a round takes max over endpoints and link classes with traffic of
  // latency + max(sent, received) / bandwidth (links are full duplex; an endpoint's sends to
  // several peers share its link). A step's projected time is the sum over its rounds.
  //
  // A link class on which an endpoint neither sends nor receives costs it nothing (no latency
  // either), so an idle endpoint and an empty round take 0 s. Negative byte counts, and traffic
  // on a link class whose bandwidth is not positive, are bugs of the caller (InternalError).
  double RoundSeconds(const RoundTraffic& round) const;
  double StepSeconds(std::span<const RoundTraffic> rounds) const;
};

// Reads a [network] table: `inter` (preset name, default "10GbE"), `intra` (default "nvlink"),
// and optional overrides inter_latency_us, inter_bandwidth_gbps, intra_latency_us,
// intra_bandwidth_gbps (bandwidth in Gbit/s, latency in microseconds; positive, finite).
// A link class with an override is named "custom". Any preset may serve either class (intra =
// "10GbE" models workers that talk over Ethernet even inside a machine). Unknown keys are left
// to the caller's RejectUnknownKeys, as with every component table.
NetworkModel NetworkFromOptions(OptionTable& options);

// The presets, for `lemmalab list` and docs/communication.md: name, link class it is meant for,
// cost, and a one-line source.
struct NetworkPreset {
  std::string_view name;
  LinkClass link;
  LinkCost cost;
  std::string_view source;
};
std::span<const NetworkPreset> NetworkPresets();

}  // namespace lemmalab
