// Checks of MpiTransport and MpiSession, run under mpirun (tests/mpi/CMakeLists.txt).
//
//   lemmalab_mpi_tests          the checks; every rank runs them, rank 0 prints the tally, and
//                               the exit code is non-zero on every rank when any check failed
//   lemmalab_mpi_tests fail     rank 1 throws a UserError in round 3 while the other ranks wait
//                               in that round's Exchange; main prints "rank 1: planted failure"
//                               and calls MpiSession::Abort(2), as the CLI will
//   lemmalab_mpi_tests crash    the same, but the exception escapes main (std::terminate)
//   lemmalab_mpi_tests hang     negative control of the failure tests: rank 1 prints the
//                               message and sleeps instead of aborting
//
// A plain program rather than GoogleTest: every rank must take part in every collective, and
// one tally at the end (an MPI_Allreduce of the failure counts) gives one verdict for the job.
#include "comm/mpi_transport.h"

#include <fmt/format.h>
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "comm/transport.h"
#include "core/error.h"
#include "optimizers/optimizer.h"

namespace lemmalab {
namespace {

int rank = 0;
int checks = 0;
int failures = 0;

#define CHECK(condition, ...)                                                                      \
  do {                                                                                             \
    ++checks;                                                                                      \
    if (!(condition)) {                                                                            \
      ++failures;                                                                                  \
      fmt::print(stderr, "rank {}: {}:{}: failed: {}: {}\n", rank, __FILE__, __LINE__, #condition, \
                 fmt::format(__VA_ARGS__));                                                        \
    }                                                                                              \
  } while (false)

std::string Describe(const std::vector<Envelope>& envelopes) {
  std::string text;
  for (const Envelope& e : envelopes) {
    text += fmt::format("({}->{}, {} bytes) ", e.from, e.to, e.message->bytes.size());
  }
  return text;
}

bool Same(const std::vector<Envelope>& a, const std::vector<Envelope>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (a[k].from != b[k].from || a[k].to != b[k].to ||
        a[k].message->bytes != b[k].message->bytes) {
      return false;
    }
  }
  return true;
}

Envelope Make(int from, int to, std::vector<std::uint8_t> bytes) {
  return Envelope{from, to, 0, Share(Message{std::move(bytes)})};
}

void CheckEndpoints(const MpiTransport& transport, int size) {
  CHECK(transport.name() == "mpi", "name {}", transport.name());
  CHECK(transport.workers() == size, "workers {} on {} ranks", transport.workers(), size);
  CHECK(transport.rank() == rank, "rank {}", transport.rank());
  CHECK(transport.reports() == (rank == 0), "reports {}", transport.reports());
  CHECK(transport.Runs(kServer) == (rank == 0), "Runs(kServer) {}", transport.Runs(kServer));
  for (int worker = 0; worker < size; ++worker) {
    CHECK(transport.Runs(worker) == (worker == rank), "Runs({})", worker);
  }
  CHECK(!transport.Runs(size), "Runs({}), past the last worker", size);
}

// A round written out by hand: worker i sends {i, 100 + i} to worker i + 1 (mod n), {i, 150 + i}
// to itself and i bytes of value i to the server; the server sends {200 + j} to every worker j.
void CheckHandRound(MpiTransport& transport, int size) {
  const auto byte = [](int v) { return static_cast<std::uint8_t>(v); };
  std::vector<Envelope> outgoing;
  outgoing.push_back(Make(rank, (rank + 1) % size, {byte(rank), byte(100 + rank)}));
  outgoing.push_back(Make(rank, rank, {byte(rank), byte(150 + rank)}));
  outgoing.push_back(Make(rank, kServer, std::vector<std::uint8_t>(rank, rank)));
  if (rank == 0) {
    for (int j = size - 1; j >= 0; --j) outgoing.push_back(Make(kServer, j, {byte(200 + j)}));
  }
  // Messages between endpoints of this rank must be moved, not copied through MPI buffers: the
  // envelope delivered with the same (from, to) must hold the very same buffer.
  struct Local {
    int from, to;
    const std::uint8_t* data;
  };
  std::vector<Local> local;
  for (const Envelope& e : outgoing) {
    if (transport.Runs(e.to) && !e.message->bytes.empty()) {
      local.push_back({e.from, e.to, e.message->bytes.data()});
    }
  }
  std::vector<Envelope> incoming(3, Make(7, 7, {1, 2, 3}));  // stale contents, to be replaced
  transport.Exchange(outgoing, incoming);

  std::vector<Envelope> expected;
  if (rank == 0) {
    for (int i = 0; i < size; ++i) {
      expected.push_back(Make(i, kServer, std::vector<std::uint8_t>(i, i)));
    }
  }
  const int left = (rank + size - 1) % size;
  expected.push_back(Make(kServer, rank, {byte(200 + rank)}));
  Envelope from_left = Make(left, rank, {byte(left), byte(100 + left)});
  Envelope from_self = Make(rank, rank, {byte(rank), byte(150 + rank)});
  if (left > rank) std::swap(from_left, from_self);  // rank 0: from itself, then from n - 1
  expected.push_back(std::move(from_left));
  expected.push_back(std::move(from_self));
  CHECK(Same(incoming, expected), "got {}, expected {}", Describe(incoming), Describe(expected));
  CHECK(outgoing.empty(), "outgoing left with {} envelopes", outgoing.size());
  CHECK(local.size() == (rank == 0 ? 2u : 1u), "{} local messages", local.size());
  for (const Local& l : local) {
    bool moved = false;
    for (const Envelope& e : incoming) {
      moved = moved || (e.from == l.from && e.to == l.to && e.message->bytes.data() == l.data);
    }
    CHECK(moved, "the message {} -> {} (both on rank {}) was copied, not moved", l.from, l.to,
          rank);
  }

  // Negative control of the comparison: one changed byte must be seen.
  std::vector<Envelope> changed = expected;
  Message last = *changed.back().message;  // (the copied envelopes share their messages)
  last.bytes.back() ^= 1;
  changed.back().message = Share(std::move(last));
  CHECK(!Same(incoming, changed), "Same() misses a changed byte");
}

// All envelopes of a random round (the union over ranks), the same on every rank. Covers 0-byte
// messages, messages to and from the server, an endpoint sending to itself and several messages
// from one endpoint to one destination; shuffled, so that no rank sends in sorted order.
std::vector<Envelope> RandomRound(int size, int round) {
  std::mt19937_64 rng(0x5eed0000u + static_cast<std::uint64_t>(round));  // fully specified
  const auto below = [&](std::uint64_t n) { return static_cast<int>(rng() % n); };
  const auto endpoint = [&] { return below(size + 1) - 1; };  // kServer or a worker
  std::vector<Envelope> all;
  const auto add = [&](int from, int to, int bytes) {
    Envelope& e = all.emplace_back();
    e.from = from;
    e.to = to;
    Message message;
    message.bytes.resize(bytes);
    for (std::uint8_t& b : message.bytes) b = static_cast<std::uint8_t>(rng());
    e.message = Share(std::move(message));
  };
  const auto random_size = [&] {
    switch (below(4)) {
      case 0:
        return 0;
      case 1:
        return 1 + below(16);
      case 2:
        return 1 + below(300);
      default:
        return 1 + below(5000);
    }
  };
  for (int from = kServer; from < size; ++from) {
    for (int k = below(4); k > 0; --k) add(from, endpoint(), random_size());
  }
  const int w = round % size;
  add(w, w, random_size());                                           // a worker to itself
  add((w + 1) % size, kServer, 0);                                    // nothing, to the server
  add(kServer, kServer, random_size());                               // the server to itself
  for (int k = 0; k < 3; ++k) add(w, (w + 2) % size, random_size());  // several, same pair
  for (std::size_t k = all.size(); k > 1; --k) std::swap(all[k - 1], all[rng() % k]);
  return all;
}

// Every rank sends its endpoints' part of `all` and must get what InProcessTransport delivers
// from all of it, restricted to its endpoints.
void CheckAgainstInProcess(MpiTransport& transport, const std::vector<Envelope>& all,
                           std::string_view what) {
  std::vector<Envelope> outgoing;
  for (const Envelope& e : all) {
    if (transport.Runs(e.from)) outgoing.push_back(e);
  }
  std::vector<Envelope> union_copy = all;
  std::vector<Envelope> delivered;
  InProcessTransport(transport.workers()).Exchange(union_copy, delivered);
  std::vector<Envelope> expected;
  for (Envelope& e : delivered) {
    if (transport.Runs(e.to)) expected.push_back(std::move(e));
  }
  std::vector<Envelope> incoming;
  transport.Exchange(outgoing, incoming);
  CHECK(Same(incoming, expected), "{}: got {}, expected {}", what, Describe(incoming),
        Describe(expected));
}

void CheckRounds(MpiTransport& transport, int size) {
  for (int round = 0; round < 40; ++round) {
    CheckAgainstInProcess(transport, RandomRound(size, round), fmt::format("round {}", round));
  }
  CheckAgainstInProcess(transport, {}, "an empty round");
  std::vector<Envelope> big;
  for (int j = 0; j < size; ++j) {
    big.push_back(Make(kServer, j, std::vector<std::uint8_t>(1 << 20, 11 + j)));
    big.push_back(Make(j, kServer, std::vector<std::uint8_t>((1 << 20) + j, 50 + j)));
  }
  CheckAgainstInProcess(transport, big, "1 MiB messages");
}

// Rounds never mix: a rank that leaves a round at once sends the next round's messages while the
// others may still be polling this one (rank 0 enters each empty round last, then sends to all).
void CheckRoundsDoNotMix(MpiTransport& transport, int size) {
  for (int repeat = 0; repeat < 30; ++repeat) {
    std::vector<Envelope> outgoing, incoming;
    if (rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    transport.Exchange(outgoing, incoming);
    CHECK(incoming.empty(), "repeat {}: an empty round delivered {}", repeat, Describe(incoming));
    if (rank == 0) {
      for (int j = 1; j < size; ++j) outgoing.push_back(Make(0, j, {std::uint8_t(repeat)}));
    }
    transport.Exchange(outgoing, incoming);
    const std::size_t expected = rank == 0 ? 0 : 1;
    CHECK(incoming.size() == expected &&
              (rank == 0 ||
               incoming[0].message->bytes == std::vector<std::uint8_t>{std::uint8_t(repeat)}),
          "repeat {}: the next round delivered {}", repeat, Describe(incoming));
  }
}

// A bad envelope fails on the rank that made it, before any collective (so here, where every
// rank makes one, no rank waits), and the transport still works afterwards.
void CheckBadEnvelopes(MpiTransport& transport, int size) {
  const auto throws = [&](Envelope e) {
    std::vector<Envelope> outgoing, incoming;
    outgoing.push_back(std::move(e));
    try {
      transport.Exchange(outgoing, incoming);
    } catch (const InternalError&) {
      return true;
    }
    return false;
  };
  CHECK(throws(Make((rank + 1) % size, rank, {1})), "from an endpoint of another rank");
  CHECK(throws(Make(rank, size, {1})), "to worker {} of {}", size, size);
  CHECK(throws(Make(rank, kServer - 1, {1})), "to endpoint {}", kServer - 1);
  if (rank != 0) CHECK(throws(Make(kServer, 0, {1})), "from the server on rank {}", rank);
  Envelope tagged = Make(rank, (rank + 1) % size, {1});
  tagged.tag = -1;
  CHECK(throws(tagged), "tag -1");
  tagged.tag = std::numeric_limits<int>::max();
  CHECK(throws(tagged), "a tag the MPI tag has no room for");
}

void CheckSums(MpiTransport& transport, int size) {
  // Entry j belongs to rank j % size; the others contribute zeros, so the sum is exact.
  const auto value = [](int j) {
    switch (j % 4) {
      case 0:
        return 0.1 * (j + 1);
      case 1:
        return -1.7e308 / (j + 1);
      case 2:
        return 4.9e-324 * (j + 1);  // subnormal
      default:
        return -1.0 / 3.0 * j;
    }
  };
  const int length = 4 * size + 3;
  std::vector<double> doubles(length, 0.0);
  for (int j = 0; j < length; ++j) {
    if (j % size == rank) doubles[j] = value(j);
  }
  transport.Sum(doubles);
  for (int j = 0; j < length; ++j) {
    const double v = value(j);
    CHECK(std::memcmp(&doubles[j], &v, sizeof v) == 0, "doubles[{}] = {:a}, expected {:a}", j,
          doubles[j], v);
  }

  // int64 beyond 2^53 (where a double would round), owned entries, and one entry every rank adds
  // rank + 1 to, which must come to n(n+1)/2 (a Sum that did nothing would leave rank + 1).
  const auto integer = [](int j) -> std::int64_t {
    switch (j % 3) {
      case 0:
        return std::numeric_limits<std::int64_t>::min() + j;
      case 1:
        return std::numeric_limits<std::int64_t>::max() - j;
      default:
        return (std::int64_t{1} << 53) + 1 + j;
    }
  };
  std::vector<std::int64_t> integers(length + 1, 0);
  for (int j = 0; j < length; ++j) {
    if (j % size == rank) integers[j] = integer(j);
  }
  integers[length] = rank + 1;
  transport.Sum(integers);
  for (int j = 0; j < length; ++j) {
    CHECK(integers[j] == integer(j), "integers[{}] = {}, expected {}", j, integers[j], integer(j));
  }
  CHECK(integers[length] == std::int64_t{size} * (size + 1) / 2, "sum of rank + 1: {}",
        integers[length]);

  transport.Sum(std::span<double>());  // nothing to sum: must not fail or desynchronise
  transport.Sum(std::span<std::int64_t>());
}

void CheckHostNames(const MpiTransport& transport, int size) {
  const std::vector<std::string> names = transport.HostNames();
  CHECK(static_cast<int>(names.size()) == size, "{} host names on {} ranks", names.size(), size);
  char own[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(own, &length);
  if (static_cast<int>(names.size()) == size) {
    CHECK(names[rank] == std::string(own, length), "names[{}] = '{}', this host is '{}'", rank,
          names[rank], std::string(own, length));
  }
  std::string joined;
  for (const std::string& name : names) {
    CHECK(!name.empty(), "an empty host name");
    joined += name + '\n';
  }
  // The same list on every rank.
  const std::uint64_t hash = std::hash<std::string>()(joined);
  std::uint64_t low = 0, high = 0;
  MPI_Allreduce(&hash, &low, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&hash, &high, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  CHECK(low == high, "ranks disagree on the host names ({} here)", joined);
}

void CheckLaunchedByMpirun() {
  CHECK(LaunchedByMpirun(), "not seen as launched by mpirun");
  std::optional<std::string> saved[2];
  const char* const names[2] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK"};
  for (int k = 0; k < 2; ++k) {
    if (const char* v = std::getenv(names[k])) saved[k] = v;
    unsetenv(names[k]);
  }
  CHECK(!LaunchedByMpirun(), "seen as launched by mpirun without its variables");
  setenv("PMIX_RANK", "0", 1);
  CHECK(LaunchedByMpirun(), "PMIX_RANK alone not seen");
  unsetenv("PMIX_RANK");
  for (int k = 0; k < 2; ++k) {
    if (saved[k]) setenv(names[k], saved[k]->c_str(), 1);
  }
}

int RunChecks(const MpiSession& session) {
  const int size = session.size();
  CHECK(size >= 2, "run under mpirun with at least 2 ranks, not {}", size);
  MpiTransport transport;
  CheckEndpoints(transport, size);
  CheckLaunchedByMpirun();
  CheckHandRound(transport, size);
  if (size >= 2) CheckBadEnvelopes(transport, size);
  CheckRounds(transport, size);
  CheckRoundsDoNotMix(transport, size);
  CheckSums(transport, size);
  CheckHostNames(transport, size);

  int all_checks = 0, all_failures = 0;
  MPI_Allreduce(&checks, &all_checks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    fmt::print("{} ranks: {} checks, {} failed\n", size, all_checks, all_failures);
  }
  return all_failures == 0 ? 0 : 1;
}

// Rounds in which every worker sends to the next; rank 1 fails in round 3, while the other
// ranks are in that round's Exchange.
void RunUntilRank1Fails(bool hang) {
  MpiTransport transport;
  for (int round = 0;; ++round) {
    if (rank == 1 && round == 3) {
      if (!hang) throw UserError("planted failure");
      fmt::print(stderr, "rank 1: planted failure\n");
      std::this_thread::sleep_for(std::chrono::hours(1));
    }
    std::vector<Envelope> outgoing, incoming;
    outgoing.push_back(Make(rank, (rank + 1) % transport.workers(), {1, 2, 3}));
    transport.Exchange(outgoing, incoming);
  }
}

}  // namespace
}  // namespace lemmalab

int main(int argc, char** argv) {
  using namespace lemmalab;
  const std::string_view mode = argc > 1 ? argv[1] : "";
  MpiSession session;
  rank = session.rank();
  if (mode.empty()) return RunChecks(session);
  if (mode == "crash") RunUntilRank1Fails(false);  // the exception escapes main
  try {
    if (mode == "fail" || mode == "hang") RunUntilRank1Fails(mode == "hang");
    throw UserError(fmt::format("unknown mode '{}' (fail, crash, hang)", mode));
  } catch (const std::exception& e) {
    fmt::print(stderr, "rank {}: {}\n", rank, e.what());
    MpiSession::Abort(2);
  }
}
