#include "comm/mpi_transport.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <utility>

#include "core/error.h"
#include "optimizers/optimizer.h"

// MPI calls are not checked for error codes: MPI_COMM_WORLD (and communicators derived from it)
// come with MPI_ERRORS_ARE_FATAL, so a failing call ends the job with MPI's own message.

namespace lemmalab {
namespace {

// MPI counts are int: one message may carry at most this many bytes; Sum goes in pieces of at
// most this many elements.
constexpr std::int64_t kMaxCount = std::numeric_limits<int>::max();

// A message travels as one MPI message whose source rank and tag say where it is from and to:
// the rank names the worker, two bits say whether the sender or the receiver is the server
// (both run on rank 0) and the rest is the envelope's tag.
constexpr int kFromServerBit = 2, kToServerBit = 1, kEndpointBits = 2;

bool MpiActive() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized != 0 && finalized == 0;
}

}  // namespace

bool LaunchedByMpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

MpiSession::MpiSession() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  LEMMALAB_CHECK(initialized == 0, "MPI is already initialised: one MpiSession per process");
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  if (provided < MPI_THREAD_FUNNELED) {
    MPI_Finalize();
    LEMMALAB_CHECK(false, "MPI provides thread level {}, below MPI_THREAD_FUNNELED ({})", provided,
                   MPI_THREAD_FUNNELED);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() {
  if (MpiActive()) MPI_Finalize();
}

void MpiSession::Abort(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  if (!MpiActive()) std::exit(code);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; this keeps [[noreturn]] true if it did
}

MpiTransport::MpiTransport(MPI_Comm communicator) : communicator_(communicator) {
  MPI_Comm_rank(communicator_, &rank_);
  MPI_Comm_size(communicator_, &size_);
  for (MPI_Comm& c : rounds_) MPI_Comm_dup(communicator_, &c);
  int* tag_ub = nullptr;
  int found = 0;
  MPI_Comm_get_attr(communicator_, MPI_TAG_UB, &tag_ub, &found);
  max_tag_ = found != 0 ? (*tag_ub >> kEndpointBits) : (32767 >> kEndpointBits);  // MPI's least
}

MpiTransport::~MpiTransport() {
  if (!MpiActive()) return;
  for (MPI_Comm& c : rounds_) MPI_Comm_free(&c);
}

int MpiTransport::RankOf(int endpoint) const { return endpoint == kServer ? 0 : endpoint; }

bool MpiTransport::Runs(int endpoint) const {
  return endpoint == rank_ || (endpoint == kServer && rank_ == 0);
}

void MpiTransport::Exchange(std::vector<Envelope>& outgoing, std::vector<Envelope>& incoming) {
  incoming.clear();
  // Checked before the first message goes out, so the rank with the bad envelope is the one to
  // fail.
  for (const Envelope& e : outgoing) {
    LEMMALAB_CHECK(Runs(e.from),
                   "MpiTransport on rank {}: an envelope from endpoint {}, which this rank "
                   "does not run",
                   rank_, e.from);
    LEMMALAB_CHECK(e.to >= kServer && e.to < size_,
                   "MpiTransport on rank {}: an envelope to endpoint {}, not a worker of {} or "
                   "the server",
                   rank_, e.to, size_);
    LEMMALAB_CHECK(e.tag >= 0 && e.tag <= max_tag_,
                   "MpiTransport on rank {}: an envelope with tag {}, outside [0, {}]", rank_,
                   e.tag, max_tag_);
    LEMMALAB_CHECK(e.message->bytes_elsewhere == 0,
                   "MpiTransport on rank {}: a message whose bytes are kept elsewhere (a GPU "
                   "run's) cannot go to another process",
                   rank_);
    LEMMALAB_CHECK(static_cast<std::int64_t>(e.message->bytes.size()) <= kMaxCount,
                   "MpiTransport on rank {}: a message of {} bytes, more than one MPI message "
                   "carries ({})",
                   rank_, e.message->bytes.size(), kMaxCount);
  }

  // The sparse exchange of Hoefler, Siebert and Lumsdaine (PPoPP 2010, "NBX"): each message is
  // sent straight from its own bytes with a synchronous send, which completes only once the
  // receiver has matched it; a rank receives whatever arrives, straight into the message it
  // delivers, and enters a non-blocking barrier when all its sends are matched; when the barrier
  // completes, every message of the round has been matched everywhere. No rank learns counts
  // beforehand, and a round costs each rank only the messages it sends and receives. A rank
  // that leaves the barrier may start the next round while another still polls this one, so
  // consecutive rounds use two communicators in turn (a round two ahead needs this one's barrier
  // left by every rank).
  const MPI_Comm comm = rounds_[round_++ % 2];
  sends_.clear();
  for (Envelope& e : outgoing) {
    const int destination = RankOf(e.to);
    if (destination == rank_) {
      incoming.push_back(std::move(e));  // between endpoints of this rank: moved, not sent
      continue;
    }
    const int tag = (e.tag << kEndpointBits) | (e.from == kServer ? kFromServerBit : 0) |
                    (e.to == kServer ? kToServerBit : 0);
    // Envelopes that share a message send it from the same bytes, which MPI allows (3.0 on).
    MPI_Issend(e.message->bytes.data(), static_cast<int>(e.message->bytes.size()), MPI_BYTE,
               destination, tag, comm, &sends_.emplace_back());
  }
  receives_.clear();
  MPI_Request barrier = MPI_REQUEST_NULL;
  for (bool in_barrier = false;;) {
    int arrived = 0;
    MPI_Message message;
    MPI_Status status;
    MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &arrived, &message, &status);
    if (arrived != 0) {
      int bytes = 0;
      MPI_Get_count(&status, MPI_BYTE, &bytes);
      Envelope& e = incoming.emplace_back();
      e.from = (status.MPI_TAG & kFromServerBit) != 0 ? kServer : status.MPI_SOURCE;
      e.to = (status.MPI_TAG & kToServerBit) != 0 ? kServer : rank_;
      e.tag = status.MPI_TAG >> kEndpointBits;
      LEMMALAB_CHECK(Runs(e.to) && RankOf(e.from) == status.MPI_SOURCE,
                     "MpiTransport on rank {}: a message from rank {} with MPI tag {}, which no "
                     "endpoint pair of the two ranks has",
                     rank_, status.MPI_SOURCE, status.MPI_TAG);
      // The message stays where it is when `incoming` grows, so the receive may complete into
      // it later.
      auto received = std::make_shared<Message>();
      received->bytes.resize(static_cast<std::size_t>(bytes));
      MPI_Imrecv(received->bytes.data(), bytes, MPI_BYTE, &message, &receives_.emplace_back());
      e.message = std::move(received);
      continue;
    }
    int done = 0;
    if (!in_barrier) {
      MPI_Testall(static_cast<int>(sends_.size()), sends_.data(), &done, MPI_STATUSES_IGNORE);
      if (done != 0) {
        MPI_Ibarrier(comm, &barrier);
        in_barrier = true;
      }
    } else {
      MPI_Test(&barrier, &done, MPI_STATUS_IGNORE);
      if (done != 0) break;
    }
  }
  MPI_Waitall(static_cast<int>(receives_.size()), receives_.data(), MPI_STATUSES_IGNORE);
  outgoing.clear();  // only now: the sends read from these messages until they completed
  SortByDestination(incoming);
}

void MpiTransport::Sum(std::span<double> values) {
  // In pieces, as MPI counts are int.
  for (std::size_t begin = 0; begin < values.size(); begin += kMaxCount) {
    const int count = static_cast<int>(std::min<std::size_t>(kMaxCount, values.size() - begin));
    MPI_Allreduce(MPI_IN_PLACE, values.data() + begin, count, MPI_DOUBLE, MPI_SUM, communicator_);
  }
}

void MpiTransport::Sum(std::span<std::int64_t> values) {
  for (std::size_t begin = 0; begin < values.size(); begin += kMaxCount) {
    const int count = static_cast<int>(std::min<std::size_t>(kMaxCount, values.size() - begin));
    MPI_Allreduce(MPI_IN_PLACE, values.data() + begin, count, MPI_INT64_T, MPI_SUM, communicator_);
  }
}

std::vector<std::string> MpiTransport::HostNames() const {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  std::vector<char> all(static_cast<std::size_t>(size_) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
                MPI_CHAR, communicator_);
  std::vector<std::string> names(size_);
  for (int r = 0; r < size_; ++r) {
    const char* entry = all.data() + static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME;
    names[r].assign(entry, strnlen(entry, MPI_MAX_PROCESSOR_NAME));
  }
  return names;
}

Topology MpiTransport::HostTopology(std::string_view spec) const {
  const std::vector<std::string> hosts = HostNames();
  std::vector<std::string> distinct;
  for (std::size_t r = 0; r < hosts.size(); ++r) {
    if (r == 0 || hosts[r] != hosts[r - 1]) distinct.push_back(hosts[r]);
  }
  const auto nodes = static_cast<int>(distinct.size());
  const auto workers = static_cast<int>(hosts.size());
  std::sort(distinct.begin(), distinct.end());
  const bool contiguous = std::adjacent_find(distinct.begin(), distinct.end()) == distinct.end();
  if (!contiguous || workers % nodes != 0) {
    throw UserError(
        fmt::format("{}: the MPI ranks are spread over {} hosts in a way that is not nodes x "
                    "workers_per_node with contiguous ranks per host; give the topology in "
                    "[communication] (nodes, workers_per_node)",
                    spec, nodes));
  }
  return {nodes, workers / nodes};
}

}  // namespace lemmalab
