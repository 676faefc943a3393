#include "comm/transport.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "core/error.h"

namespace lemmalab {

std::shared_ptr<const Message> Share(Message&& message) {
  return std::make_shared<Message>(std::move(message));
}

Message Take(std::shared_ptr<const Message>& message) {
  LEMMALAB_CHECK(message != nullptr, "no message to take");
  Message kept;
  if (message.use_count() == 1) {
    // Every message is made non-const (by Share, or by a transport's receive), so its only
    // holder may move from it.
    kept = std::move(const_cast<Message&>(*message));
  } else {
    kept = *message;
  }
  message.reset();
  return kept;
}

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
