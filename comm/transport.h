// The transport under a communication scheme: moves messages between endpoints.
//
// Endpoints are the workers 0..n-1 and, in the parameter-server scheme, the server (kServer).
// A process runs some of them: all of them in one process (InProcessTransport), or one worker per
// rank with the server on rank 0 (MpiTransport, comm/mpi_transport.h). A scheme (comm/scheme.h)
// is written once against this interface, as a sequence of rounds; in each round every process
// hands over the messages its endpoints send and gets back the messages addressed to its
// endpoints, in a fixed order, so the arithmetic that follows is the same on every backend.
//
// The transport moves bytes and does no accounting: the scheme counts the traffic of every
// message from its size (comm/scheme.h), the same way on every backend. What a transport adds to
// move a message (MPI's envelope: source, tag, the barrier that ends a round) is framing, not
// counted.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "compressors/compressor.h"

namespace lemmalab {

// One message of a round. A message sent to several endpoints (a reply broadcast to the
// workers, a worker's message in an allgather) is one Message that their envelopes share, not a
// copy per destination: in one process an allgather of n workers would otherwise hold n^2 copies.
struct Envelope {
  int from = 0;  // a worker index, or kServer (optimizers/optimizer.h)
  int to = 0;
  int tag = 0;  // tells apart several messages from one endpoint to another in a round
  std::shared_ptr<const Message> message;
};

// `message` as a message envelopes can share (moved, not copied).
std::shared_ptr<const Message> Share(Message&& message);
// A shared message, to keep: moved out where `message` is its only holder, else copied;
// `message` is left empty.
Message Take(std::shared_ptr<const Message>& message);

class Transport {
 public:
  virtual ~Transport() = default;

  virtual std::string_view name() const = 0;
  // The number of workers n of the run.
  virtual int workers() const = 0;
  // Whether this process runs endpoint `endpoint` (a worker, or kServer).
  virtual bool Runs(int endpoint) const = 0;
  // Whether this process reports the run (writes results): the only process in-process, rank 0
  // on MPI.
  virtual bool reports() const = 0;

  // One round, collective over all processes (each calls it once per round, in the same order).
  // `outgoing` holds the messages the endpoints this process runs send in this round; its
  // messages may be moved from. On return `incoming` holds every message of the round addressed
  // to an endpoint this process runs, sorted by (to, from, tag) with kServer first.
  virtual void Exchange(std::vector<Envelope>& outgoing, std::vector<Envelope>& incoming) = 0;

  // Report data, not traffic: element-wise sums over processes, delivered to every process.
  // Each process contributes its own endpoints' entries and zeros elsewhere, so the sum is exact.
  virtual void Sum(std::span<double> values) = 0;
  virtual void Sum(std::span<std::int64_t> values) = 0;
};

// Sorts envelopes by (to, from, tag), with kServer (-1) first: the order Exchange delivers in.
void SortByDestination(std::vector<Envelope>& envelopes);

// All endpoints in this process; Exchange hands every outgoing message back as incoming.
class InProcessTransport final : public Transport {
 public:
  explicit InProcessTransport(int workers) : workers_(workers) {}

  std::string_view name() const override { return "in-process"; }
  int workers() const override { return workers_; }
  bool Runs(int /*endpoint*/) const override { return true; }
  bool reports() const override { return true; }
  void Exchange(std::vector<Envelope>& outgoing, std::vector<Envelope>& incoming) override;
  void Sum(std::span<double> /*values*/) override {}
  void Sum(std::span<std::int64_t> /*values*/) override {}

 private:
  int workers_;
};

}  // namespace lemmalab
