// What crossed which link: bytes per endpoint and link class, per communication round.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lemmalab {

enum class LinkClass { kIntraNode, kInterNode };

struct LinkBytes {
  std::int64_t intra = 0, inter = 0;  // bytes by link class
  std::int64_t total() const { return intra + inter; }
  LinkBytes& operator+=(const LinkBytes& o) {
    intra += o.intra;
    inter += o.inter;
    return *this;
  }
};

struct EndpointTraffic {
  LinkBytes sent, received;
  EndpointTraffic& operator+=(const EndpointTraffic& o) {
    sent += o.sent;
    received += o.received;
    return *this;
  }
};

// One communication round of a scheme (a gather, broadcast, all-to-all or all-gather): what
// each endpoint sent and received in it. endpoints[i] is worker i; a scheme with a parameter
// server appends the server as the last endpoint.
struct RoundTraffic {
  std::string name;
  std::vector<EndpointTraffic> endpoints;
};

}  // namespace lemmalab
