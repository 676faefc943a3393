#include "comm/transport.h"

#include <algorithm>
#include <utility>

namespace lemmalab {

void SortByDestination(std::vector<Envelope>& envelopes) {
  std::stable_sort(envelopes.begin(), envelopes.end(), [](const Envelope& a, const Envelope& b) {
    return a.to != b.to ? a.to < b.to : a.from < b.from;
  });
}

void InProcessTransport::Exchange(std::vector<Envelope>& outgoing,
                                  std::vector<Envelope>& incoming) {
  incoming.clear();
  incoming.swap(outgoing);
  SortByDestination(incoming);
}

}  // namespace lemmalab
