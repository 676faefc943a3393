// Communication schemes: how the workers' messages reach the servers and the replies come back.
//
//   parameter-server      every worker sends its message to one server, which runs the server
//                         phase and sends the reply to every worker (the papers' analysis).
//   allgather             every worker sends its message to every other worker; each runs the
//                         server phase itself (the naive all-gather of birder.txt Sec. 4).
//   allreduce             reduce-scatter + all-gather: worker i's message is split into n
//                         chunks, chunk c goes to worker c, which serves it (averages the n parts,
//                         runs the server phase on its coordinates) and sends its reply to every
//                         worker. With full-precision messages this is the dense fp32
//                         all-reduce; with 1-bit messages and a re-compressing server it is
//                         1-bit Adam's compressed all-reduce (onebit-adam.txt Sec. 6, Fig. 3),
//                         hence its other name, compressed-allreduce.
//   hierarchical          Birder's Hierarchical-1-bit-All-Reduce (birder.txt Sec. 4, Fig. 1) on
//                         nodes x workers_per_node: (i) full-precision reduce-scatter inside each
//                         node, (ii) each worker compresses its range of the node's mean,
//                         (iii) 1-bit all-to-all across nodes among the workers of one local
//                         rank, average + re-compress, 1-bit all-gather across nodes, (iv) 1-bit
//                         all-gather inside the node.
//
// The compression itself is the optimizer's (optimizers/optimizer.h); a scheme decides where the
// pieces go. Worker i sits on node i / workers_per_node; the parameter server is a node of its
// own. Chunks are cut at multiples of kChunkAlign coordinates.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "comm/traffic.h"
#include "core/options.h"
#include "optimizers/optimizer.h"

namespace lemmalab {

enum class Scheme { kParameterServer, kAllgather, kAllreduce, kHierarchical };

struct SchemeInfo {
  Scheme scheme;
  std::string_view name;
  std::string_view summary;
};
std::span<const SchemeInfo> Schemes();
std::string_view SchemeName(Scheme scheme);

struct Topology {
  int nodes = 1;
  int workers_per_node = 1;

  int workers() const { return nodes * workers_per_node; }
  // The node of a worker; the parameter server (kServer) is node `nodes`, a node of its own.
  int NodeOf(int endpoint) const {
    return endpoint == kServer ? nodes : endpoint / workers_per_node;
  }
  LinkClass Link(int from, int to) const {
    return NodeOf(from) == NodeOf(to) ? LinkClass::kIntraNode : LinkClass::kInterNode;
  }
};

struct CommSpec {
  Scheme scheme = Scheme::kParameterServer;
  Topology topology;  // default: one worker per node (every link inter-node)
  // nodes or workers_per_node appeared in the spec (or, under MPI, the ranks' hosts gave it);
  // otherwise the topology is a node per worker
  bool topology_given = false;
};

// Reads a [communication] table: scheme (default "parameter-server"; "compressed-allreduce" is
// "allreduce"), nodes and workers_per_node (nodes x workers_per_node = workers; give one or
// both; the default is `workers` nodes of one worker). Null `options`: the defaults.
CommSpec CommFromOptions(OptionTable* options, int workers);

// The layout the optimizer is built for under `comm` at this dimension (optimizers/optimizer.h).
// The flat chunked scheme drops chunks that would be empty (a small problem has fewer chunks
// than workers); the hierarchical one needs every chunk non-empty and says so otherwise.
ExchangeLayout LayoutFor(const CommSpec& comm, std::int64_t dimension);

// The worker that serves chunk c of `layout` (flat: worker c; hierarchical: chunk r N + k is
// served by node k's local rank r).
int ServerOfChunk(const ExchangeLayout& layout, int chunk);

}  // namespace lemmalab
