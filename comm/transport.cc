#include "comm/transport.h"

#include <algorithm>
#include <tuple>
#include <utility>

namespace lemmalab {

void SortByDestination(std::vector<Envelope>& envelopes) {
  std::stable_sort(envelopes.begin(), envelopes.end(), [](const Envelope& a, const Envelope& b) {
    return std::tie(a.to, a.from, a.tag) < std::tie(b.to, b.from, b.tag);
  });
}

void InProcessTransport::Exchange(std::vector<Envelope>& outgoing,
                                  std::vector<Envelope>& incoming) {
  incoming.clear();
  incoming.swap(outgoing);
  SortByDestination(incoming);
}

}  // namespace lemmalab
