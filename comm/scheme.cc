#include "comm/scheme.h"

#include <fmt/format.h>

#include <array>
#include <string>
#include <vector>

#include "core/error.h"

namespace lemmalab {
namespace {

constexpr std::array<SchemeInfo, 4> kSchemes = {{
    {Scheme::kParameterServer, "parameter-server",
     "workers -> one server -> every worker (the papers' analysis)"},
    {Scheme::kAllgather, "allgather",
     "every worker sends its message to every other and runs the server phase itself"},
    {Scheme::kAllreduce, "allreduce",
     "reduce-scatter + all-gather by chunks; 1-bit Adam's compressed all-reduce with compressed "
     "messages (alias compressed-allreduce)"},
    {Scheme::kHierarchical, "hierarchical",
     "Birder's Hierarchical-1-bit-All-Reduce on nodes x workers_per_node"},
}};

// 0 = b_0 < b_1 < ... < b_k = d, cut in `pieces` equal multiples of kChunkAlign (the last is
// shorter); empty pieces are kept (the caller decides).
std::vector<std::int64_t> EvenBounds(std::int64_t dimension, int pieces) {
  const std::int64_t per_piece =
      (dimension + pieces * kChunkAlign - 1) / (pieces * kChunkAlign) * kChunkAlign;
  std::vector<std::int64_t> bounds;
  for (int c = 0; c <= pieces; ++c) bounds.push_back(std::min(dimension, c * per_piece));
  return bounds;
}

}  // namespace

std::span<const SchemeInfo> Schemes() { return kSchemes; }

std::string_view SchemeName(Scheme scheme) {
  for (const SchemeInfo& info : kSchemes) {
    if (info.scheme == scheme) return info.name;
  }
  return "?";
}

CommSpec CommFromOptions(OptionTable* options, int workers) {
  CommSpec comm;
  comm.topology = {workers, 1};
  if (options == nullptr) return comm;
  std::vector<std::string> names;
  for (const SchemeInfo& info : kSchemes) names.emplace_back(info.name);
  names.emplace_back("compressed-allreduce");
  const std::string scheme = options->GetChoice("scheme", "parameter-server", names);
  comm.scheme = scheme == "compressed-allreduce" ? Scheme::kAllreduce : Scheme::kParameterServer;
  for (const SchemeInfo& info : kSchemes) {
    if (info.name == scheme) comm.scheme = info.scheme;
  }
  const bool has_nodes = options->Has("nodes"), has_per_node = options->Has("workers_per_node");
  comm.topology_given = has_nodes || has_per_node;
  const auto nodes = static_cast<int>(options->GetInt("nodes", 1, 1, workers));
  const auto per_node = static_cast<int>(options->GetInt("workers_per_node", 1, 1, workers));
  options->Describe("nodes", "an integer >= 1; default: workers / workers_per_node, or workers");
  options->Describe("workers_per_node", "an integer >= 1; default: workers / nodes, or 1");
  if (has_nodes && has_per_node) {
    comm.topology = {nodes, per_node};
  } else if (has_nodes) {
    comm.topology = {nodes, workers / nodes};
  } else if (has_per_node) {
    comm.topology = {workers / per_node, per_node};
  }
  if (comm.topology.workers() != workers || comm.topology.nodes < 1) {
    options->Fail(has_nodes ? "nodes" : "workers_per_node",
                  fmt::format("nodes x workers_per_node must equal workers = {}; got {} x {}",
                              workers, has_nodes ? nodes : workers / per_node,
                              has_per_node ? per_node : workers / nodes));
  }
  if (comm.scheme == Scheme::kHierarchical && !comm.topology_given) {
    options->Fail("scheme",
                  "the hierarchical scheme needs the topology: give nodes or workers_per_node");
  }
  return comm;
}

ExchangeLayout LayoutFor(const CommSpec& comm, std::int64_t dimension) {
  ExchangeLayout layout;
  if (comm.scheme == Scheme::kAllreduce) {
    const std::vector<std::int64_t> even = EvenBounds(dimension, comm.topology.workers());
    layout.bounds.push_back(0);
    for (std::size_t c = 1; c < even.size(); ++c) {
      if (even[c] > layout.bounds.back()) layout.bounds.push_back(even[c]);
    }
  } else if (comm.scheme == Scheme::kHierarchical) {
    const Topology& topology = comm.topology;
    layout.hierarchical = true;
    layout.nodes = topology.nodes;
    layout.workers_per_node = topology.workers_per_node;
    layout.bounds = EvenBounds(dimension, topology.workers());
    for (std::size_t c = 1; c < layout.bounds.size(); ++c) {
      if (layout.bounds[c] == layout.bounds[c - 1]) {
        const std::int64_t chunk = layout.bounds[1];
        throw UserError(fmt::format(
            "the hierarchical scheme on {} x {} workers cuts the parameters into {} chunks of {} "
            "coordinates (d / {} rounded up to a multiple of {}); this problem's d = {} leaves "
            "chunk {} empty, and every chunk needs a coordinate (d must exceed {} x {} = {} at "
            "this chunk size; a larger d, or fewer workers, fits)",
            topology.nodes, topology.workers_per_node, topology.workers(), chunk,
            topology.workers(), kChunkAlign, dimension, c, topology.workers() - 1, chunk,
            (topology.workers() - 1) * chunk));
      }
    }
  }
  return layout;
}

int ServerOfChunk(const ExchangeLayout& layout, int chunk) {
  if (!layout.hierarchical) return chunk;
  const int r = chunk / layout.nodes, k = chunk % layout.nodes;
  return k * layout.workers_per_node + r;
}

}  // namespace lemmalab
