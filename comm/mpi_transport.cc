#include "comm/mpi_transport.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <utility>

#include "core/error.h"
#include "optimizers/optimizer.h"

// MPI calls are not checked for error codes: MPI_COMM_WORLD (and communicators derived from it)
// come with MPI_ERRORS_ARE_FATAL, so a failing call ends the job with MPI's own message.

namespace lemmalab {
namespace {

// What precedes each message in the packed buffer of a round: framing, not traffic.
struct Header {
  std::int32_t from;
  std::int32_t to;
  std::int32_t tag;
  std::int32_t unused = 0;
  std::int64_t size;
};
static_assert(sizeof(Header) == 24);

// MPI counts and displacements are int: a round may send at most this many bytes (framing
// included) from one rank and receive at most this many at one rank; Sum goes in pieces of at
// most this many elements.
constexpr std::int64_t kMaxCount = std::numeric_limits<int>::max();

bool MpiActive() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized != 0 && finalized == 0;
}

// Prefix sums of `counts` into `offsets`; checks that the total fits MPI's int displacements.
void Offsets(const std::vector<int>& counts, std::vector<int>& offsets, const char* what) {
  std::int64_t total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    offsets[r] = static_cast<int>(total);
    total += counts[r];
    LEMMALAB_CHECK(total <= kMaxCount,
                   "MpiTransport: a round {} more than {} bytes (with framing) at one rank, the "
                   "most one MPI_Alltoallv can carry",
                   what, kMaxCount);
  }
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
  send_counts_.resize(size_);
  send_offsets_.resize(size_);
  receive_counts_.resize(size_);
  receive_offsets_.resize(size_);
}

int MpiTransport::RankOf(int endpoint) const { return endpoint == kServer ? 0 : endpoint; }

bool MpiTransport::Runs(int endpoint) const {
  return endpoint == rank_ || (endpoint == kServer && rank_ == 0);
}

void MpiTransport::Exchange(std::vector<Envelope>& outgoing, std::vector<Envelope>& incoming) {
  incoming.clear();
  // Checked before the first collective, so the rank with the bad envelope is the one to fail.
  for (const Envelope& e : outgoing) {
    LEMMALAB_CHECK(Runs(e.from),
                   "MpiTransport on rank {}: an envelope from endpoint {}, which this rank "
                   "does not run",
                   rank_, e.from);
    LEMMALAB_CHECK(e.to >= kServer && e.to < size_,
                   "MpiTransport on rank {}: an envelope to endpoint {}, not a worker of {} or "
                   "the server",
                   rank_, e.to, size_);
  }

  // Messages between endpoints of this rank are moved; the rest are packed by destination rank,
  // each rank's part in the order of `outgoing` (so messages with the same (from, to) keep it).
  std::fill(send_counts_.begin(), send_counts_.end(), 0);
  for (const Envelope& e : outgoing) {
    const int destination = RankOf(e.to);
    if (destination == rank_) continue;
    const std::int64_t bytes = send_counts_[destination] +
                               static_cast<std::int64_t>(sizeof(Header)) +
                               static_cast<std::int64_t>(e.message.bytes.size());
    LEMMALAB_CHECK(bytes <= kMaxCount,
                   "MpiTransport: a round sends more than {} bytes from rank {} to rank {}",
                   kMaxCount, rank_, destination);
    send_counts_[destination] = static_cast<int>(bytes);
  }
  Offsets(send_counts_, send_offsets_, "sends");
  // At least one byte, so that no rank hands MPI a null buffer.
  send_buffer_.resize(std::max<std::size_t>(
      1, static_cast<std::size_t>(send_offsets_.back()) + send_counts_.back()));
  send_cursor_ = send_offsets_;
  for (Envelope& e : outgoing) {
    const int destination = RankOf(e.to);
    if (destination == rank_) {
      incoming.push_back(std::move(e));
      continue;
    }
    const Header header{e.from, e.to, e.tag, 0, static_cast<std::int64_t>(e.message.bytes.size())};
    std::uint8_t* at = send_buffer_.data() + send_cursor_[destination];
    std::memcpy(at, &header, sizeof(Header));
    if (header.size > 0) std::memcpy(at + sizeof(Header), e.message.bytes.data(), header.size);
    send_cursor_[destination] += static_cast<int>(sizeof(Header) + header.size);
  }
  outgoing.clear();

  MPI_Alltoall(send_counts_.data(), 1, MPI_INT, receive_counts_.data(), 1, MPI_INT, communicator_);
  Offsets(receive_counts_, receive_offsets_, "receives");
  receive_buffer_.resize(std::max<std::size_t>(
      1, static_cast<std::size_t>(receive_offsets_.back()) + receive_counts_.back()));
  MPI_Alltoallv(send_buffer_.data(), send_counts_.data(), send_offsets_.data(), MPI_BYTE,
                receive_buffer_.data(), receive_counts_.data(), receive_offsets_.data(), MPI_BYTE,
                communicator_);

  for (int source = 0; source < size_; ++source) {
    const std::uint8_t* at = receive_buffer_.data() + receive_offsets_[source];
    const std::uint8_t* const end = at + receive_counts_[source];
    while (at < end) {
      Header header;
      LEMMALAB_CHECK(end - at >= static_cast<std::ptrdiff_t>(sizeof(Header)),
                     "MpiTransport: a truncated header from rank {}", source);
      std::memcpy(&header, at, sizeof(Header));
      at += sizeof(Header);
      LEMMALAB_CHECK(header.size >= 0 && header.size <= end - at && Runs(header.to) &&
                         RankOf(header.from) == source,
                     "MpiTransport on rank {}: a corrupt envelope from rank {} (from {}, to {}, "
                     "{} bytes)",
                     rank_, source, header.from, header.to, header.size);
      Envelope& e = incoming.emplace_back();
      e.from = header.from;
      e.to = header.to;
      e.tag = header.tag;
      e.message.bytes.assign(at, at + header.size);
      at += header.size;
    }
  }
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

}  // namespace lemmalab
