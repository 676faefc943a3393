// The communication schemes (comm/scheme.h) on the MPI backend (comm/mpi_transport.h), one worker
// per rank, against MPI_Allreduce(MPI_SUM) of d fp32 values measured in the same run (issue 6).
//
// Run it under mpirun (bench/run_comm_bench.sh runs -np 2 and -np 4):
//
//   mpirun -np 4 --oversubscribe --mca btl_vader_single_copy_mechanism none
//          build/release/bench/comm_bench --benchmark_counters_tabular=true   (one line)
//
// For d = 1M, 4M, 16M and 64M floats, one Cluster step (comm/cluster.h) of
//   parameter-server/sgd                 fp32 gradients to rank 0's server, the mean back
//   allreduce/sgd                        the dense fp32 reduce-scatter + all-gather
//   allreduce/adam                       the same with Adam's server phase (the fp32 baseline)
//   compressed-allreduce/onebit-adam     1-bit momentum, re-compressed per chunk (warmup_steps =
//                                        0, so every step is compressed; onebit-adam.txt Sec. 6)
//   allgather/birder                     1-bit m/b to every worker (birder.txt Sec. 4, naive)
//   hierarchical/birder                  Hierarchical-1-bit-All-Reduce on 2 nodes x ranks/2
// on a problem whose gradient is a constant fill, so that a step costs the scheme, the
// optimizer's compression and its server and apply phases, not gradient work. Where the ranks
// run on several hosts (scripts/netns-cluster), every scheme's topology is the hosts' (the ranks
// of one host form a node), so that the traffic the model is given is where it went.
//
// Timing. Every rank must run the same benchmarks with the same number of iterations, or the
// collectives deadlock, so each case has a fixed iteration count and manual time: an iteration
// starts after an MPI_Barrier and lasts the longest of the ranks' times (MPI_Allreduce MAX).
// Only rank 0 reports; the other ranks' reporter discards. Counters:
//   vs_allreduce        the iteration time over MPI_Allreduce's at the same d, measured with the
//                       same iteration count right before the case (the machine is shared and
//                       noisy: the ratio is what compares across runs; on the MPI_Allreduce rows
//                       it is one measurement over the next, i.e. the noise)
//   GB/s                fp32 payload (4 d bytes) per second
//   sent_B/rank         bytes each worker sent per step, as the scheme counts them (StepResult
//                       traffic, averaged over the workers); for MPI_Allreduce the ring
//                       all-reduce's 2 (n-1)/n 4d, a model number (MPI's algorithm is its own)
//   sent_B/max_rank     the rank that sends most: under parameter-server rank 0 also runs the
//                       server, whose n replies it sends
//   inter_B/rank        the part of sent_B/rank that crosses nodes (hierarchical: the 1-bit
//                       all-to-all and all-gather; the other schemes put one worker per node)
//   mem_B/coord/rank    resident memory the case added per coordinate, averaged over the ranks
//                       (the peak while it built the optimizer and cluster and ran its steps).
//                       State a rank allocates for every worker makes it grow with the rank count.
//   exchange_s          the time a step spends in the transport's rounds, in seconds: each
//                       round timed from a barrier, so the wait for a rank still computing is
//                       not in it (the slowest rank's sum over the rounds)
//   model_s             what the network model (comm/network.h) projects for the step's rounds,
//                       with the inter-node preset named by COMM_BENCH_INTER (default "10GbE";
//                       intra-node "nvlink"): run across links shaped to that preset
//                       (scripts/netns-cluster), exchange_s is the measurement to compare
//   inter_rounds, inter_round_B   per step: the rounds with inter-node traffic, and the sum over
//                       them of the busiest endpoint's max(sent, received) inter-node bytes: the
//                       model's step time is inter_rounds x latency + inter_round_B / bandwidth
//                       when only inter-node links carry traffic (bench/fit_network.py fits them)
//   exchange_vs_allreduce  exchange_s over MPI_Allreduce's time: the collective alone, without
//                       the gradient, compression, server and apply phases that the step adds
// CPU is rank 0's CPU time, for what it is worth; Time is the manual time above.
//
// Memory. Before a case runs at d, its resident memory summed over the ranks is extrapolated
// linearly to d from its run at the largest d so far, or, below kProbe, from building it and
// stepping once at kProbe coordinates (constant overheads make both overestimate); a case that
// would need more than kMemoryFraction of the machine's MemAvailable is skipped with an error
// row ("dropped: ...") rather than run into the OOM killer. The ranks are assumed to
// share one machine, as under the script; with one rank per machine the check is conservative.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <malloc.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "comm/cluster.h"
#include "comm/mpi_transport.h"
#include "comm/network.h"
#include "comm/scheme.h"
#include "core/error.h"
#include "optimizers/optimizer.h"
#include "problems/problem.h"

namespace lemmalab {
namespace {

constexpr std::int64_t kM = 1 << 20;
const std::int64_t kSizes[] = {kM, 4 * kM, 16 * kM, 64 * kM};
constexpr std::int64_t kProbe = 4 * kM;  // the size memory is measured at before a case runs
constexpr double kMemoryFraction = 0.8;  // of MemAvailable, for all ranks together
constexpr double kLr = 1e-6;             // tiny: x barely moves, no step can overflow

int g_rank = 0;
int g_ranks = 1;

// The MPI transport, timing its rounds.
class TimedTransport final : public Transport {
 public:
  std::string_view name() const override { return mpi_.name(); }
  int workers() const override { return mpi_.workers(); }
  bool Runs(int endpoint) const override { return mpi_.Runs(endpoint); }
  bool reports() const override { return mpi_.reports(); }
  void Exchange(std::vector<Envelope>& outgoing, std::vector<Envelope>& incoming) override {
    // Every rank enters the round together, so that the time is the round's, not the wait for a
    // rank still computing its message.
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = std::chrono::steady_clock::now();
    mpi_.Exchange(outgoing, incoming);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  void Sum(std::span<double> values) override { mpi_.Sum(values); }
  void Sum(std::span<std::int64_t> values) override { mpi_.Sum(values); }

  Topology HostTopology() const { return mpi_.HostTopology("comm_bench"); }

  double seconds = 0;  // in Exchange, since the last reset

 private:
  MpiTransport mpi_;
};
TimedTransport* g_transport = nullptr;
// The nodes the ranks' hosts form (one host: one node of every rank).
Topology g_hosts;

// Fixed per d, the same on every rank (see the top of the file). Few, so that both rank counts
// run in about five minutes on a 2-core machine (each case also builds its state and runs one
// untimed step); --benchmark_repetitions=k repeats every case k times on every rank.
std::int64_t Iterations(std::int64_t d) {
  if (d <= kM) return 10;
  if (d <= 4 * kM) return 5;
  if (d <= 16 * kM) return 2;
  return 1;
}

// f = 0 with a constant stochastic gradient: +1 on even workers, -0.5 on odd ones (so the mean
// is not any one worker's vector). The fill costs a memset's worth of time.
class ConstantGradient final : public Problem<float> {
 public:
  ConstantGradient(std::int64_t d, int workers) : d_(d), workers_(workers) {}

  std::int64_t dimension() const override { return d_; }
  int num_workers() const override { return workers_; }
  Vector<float> InitialPoint() const override { return Vector<float>::Zero(d_); }
  double StochasticGradient(int worker, ConstVectorRef<float> /*x*/, PhiloxStream& /*stream*/,
                            VectorRef<float> g) const override {
    g.setConstant(worker % 2 == 0 ? 1.0f : -0.5f);
    return 0;
  }
  double Objective(ConstVectorRef<float> /*x*/, Vector<float>* gradient) const override {
    if (gradient != nullptr) gradient->setZero(d_);
    return 0;
  }
  Evaluation Evaluate(ConstVectorRef<float> /*x*/) const override { return {}; }
  std::string Describe() const override { return fmt::format("constant gradient, d = {}", d_); }

 private:
  std::int64_t d_;
  int workers_;
};

// The longest of the ranks' times for `body`, started together after a barrier.
template <typename F>
double CollectiveSeconds(F&& body) {
  MPI_Barrier(MPI_COMM_WORLD);
  const auto start = std::chrono::steady_clock::now();
  body();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return seconds;
}

// ---- memory -------------------------------------------------------------------------------

// A "Key:   N kB" line of a /proc file, in bytes; -1 when absent.
std::int64_t ProcBytes(const char* file, std::string_view key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) == 0 && line.size() > key.size() &&
        line[key.size()] == ':') {
      return std::stoll(line.substr(key.size() + 1)) * 1024;
    }
  }
  return -1;
}

// Resets the peak resident size (VmHWM) to the current one (proc(5), clear_refs "5"). Where
// that is not allowed the peak stays the process's lifetime peak, which only overestimates.
void ResetPeak() { std::ofstream("/proc/self/clear_refs") << "5"; }

// Bytes each case adds, summed over the ranks: the growth of the peak resident size from before
// `build` to after it, whatever `build` keeps alive until it returns.
template <typename F>
double ResidentGrowthAllRanks(F&& build) {
  // Free heap pages back to the system first: glibc keeps freed blocks below its (adaptive)
  // mmap threshold resident, and `build` reusing them would not show as growth.
  malloc_trim(0);
  ResetPeak();
  const std::int64_t before = ProcBytes("/proc/self/status", "VmRSS");
  build();
  const std::int64_t peak = ProcBytes("/proc/self/status", "VmHWM");
  double grown = static_cast<double>(std::max<std::int64_t>(0, peak - before));
  MPI_Allreduce(MPI_IN_PLACE, &grown, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return grown;
}

// MemAvailable as rank 0 sees it, on every rank (so every rank decides the same).
double AvailableBytes() {
  double available = static_cast<double>(ProcBytes("/proc/meminfo", "MemAvailable"));
  MPI_Bcast(&available, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return available;
}

// ---- the cases ----------------------------------------------------------------------------

struct Case {
  std::string label;       // scheme/optimizer, as printed
  std::string optimizer;   // registry name
  std::string scheme;      // [communication] scheme
  bool two_nodes = false;  // hierarchical: nodes = 2, workers_per_node = ranks / 2
};

std::vector<Case> Cases() {
  return {
      {"parameter-server/sgd", "sgd", "parameter-server"},
      {"allreduce/sgd", "sgd", "allreduce"},
      {"allreduce/adam", "adam", "allreduce"},
      {"compressed-allreduce/onebit-adam", "onebit-adam", "compressed-allreduce"},
      {"allgather/birder", "birder", "allgather"},
      {"hierarchical/birder", "birder", "hierarchical", true},
  };
}

// One case built at dimension d over every rank: problem, scheme, optimizer, cluster, x.
struct Setup {
  Setup(const Case& c, std::int64_t d) : problem(d, g_ranks) {
    OptionTable comm_table("[communication]", "comm_bench");
    comm_table.Set("scheme", {c.scheme, ""});
    if (g_hosts.nodes > 1) {  // across hosts (scripts/netns-cluster): the hosts' nodes
      comm_table.Set("nodes", {std::int64_t{g_hosts.nodes}, "hosts"});
    } else if (c.two_nodes) {  // one host: hierarchical on 2 simulated nodes
      comm_table.Set("nodes", {std::int64_t{2}, ""});
    }
    comm = CommFromOptions(&comm_table, g_ranks);
    comm_table.RejectUnknownKeys();
    OptionTable options(fmt::format("optimizer '{}'", c.optimizer), "comm_bench");
    options.Set("name", {c.optimizer, ""});
    if (c.optimizer == "onebit-adam") options.Set("warmup_steps", {std::int64_t{0}, ""});
    // Each rank holds state for its own worker only, as `lemmalab run` under mpirun does.
    optimizer = MakeOptimizer<float>(
        options, {d, g_ranks, problem.Layers(), LayoutFor(comm, problem.dimension()), {g_rank}});
    cluster = std::make_unique<Cluster<float>>(problem, *optimizer, comm, /*threads=*/1,
                                               g_transport, c.label);
    x = problem.InitialPoint();
  }

  const StepResult& Step() { return cluster->Step({++t, kLr, 2026}, x); }

  ConstantGradient problem;
  CommSpec comm;
  std::unique_ptr<DistributedOptimizer<float>> optimizer;
  std::unique_ptr<Cluster<float>> cluster;
  Vector<float> x;
  std::int64_t t = 0;
};

// Per case: the largest d it has been measured at and its resident growth there, all ranks.
std::map<std::string, std::pair<std::int64_t, double>> g_measured;

void Record(const Case& c, std::int64_t d, double grown) {
  auto& [largest, bytes] = g_measured[c.label];
  if (d >= largest) {
    largest = d;
    bytes = grown;
  }
}

// Resident bytes per coordinate of a case over all ranks: from its largest measurement when that
// is at kProbe or above, else from building it and stepping once at kProbe.
double BytesPerCoordinate(const Case& c) {
  if (const auto it = g_measured.find(c.label);
      it == g_measured.end() || it->second.first < kProbe) {
    Record(c, kProbe, ResidentGrowthAllRanks([&] {
             Setup s(c, kProbe);
             s.Step();
           }));
  }
  const auto& [largest, bytes] = g_measured.at(c.label);
  return bytes / static_cast<double>(largest);
}

// Seconds per MPI_Allreduce of d floats (after one untimed call), the mean over Iterations(d).
// Measured afresh right before each case (other work on the machine comes and goes), with its
// buffers freed before the case allocates its own.
// MPI_Allreduce(MPI_SUM) of d fp32 values, each rank sending rank + 1 everywhere; the
// constructor makes one untimed call.
struct FloatAllreduce {
  explicit FloatAllreduce(std::int64_t d)
      : send(static_cast<std::size_t>(d), static_cast<float>(g_rank + 1)), receive(send.size()) {
    (*this)();
  }
  void operator()() {
    MPI_Allreduce(send.data(), receive.data(), static_cast<int>(send.size()), MPI_FLOAT, MPI_SUM,
                  MPI_COMM_WORLD);
  }
  std::vector<float> send, receive;
};

double ReferenceSeconds(std::int64_t d) {
  FloatAllreduce call(d);
  double total = 0;
  for (std::int64_t k = 0; k < Iterations(d); ++k) total += CollectiveSeconds(call);
  return total / static_cast<double>(Iterations(d));
}

// The model the step's rounds are projected with (model_s).
const NetworkModel& Network() {
  static const NetworkModel model = [] {
    OptionTable options("[network]", "comm_bench");
    const char* inter = std::getenv("COMM_BENCH_INTER");
    options.Set("inter", {std::string(inter != nullptr ? inter : "10GbE"), "COMM_BENCH_INTER"});
    NetworkModel m = NetworkFromOptions(options);
    options.RejectUnknownKeys();
    return m;
  }();
  return model;
}

// The model's terms for the inter-node links of one step (see inter_rounds at the top), from the
// model itself: with a 1 s latency and free bandwidth its step time counts the rounds with
// inter-node traffic; with no latency and 1 byte/s it sums their busiest endpoints' bytes.
struct InterTerms {
  double rounds = 0, busiest_bytes = 0;
};
InterTerms Inter(std::span<const RoundTraffic> rounds) {
  constexpr double kFree = std::numeric_limits<double>::infinity();
  NetworkModel count, bytes;
  count.inter = {1.0, kFree};
  bytes.inter = {0.0, 1.0};
  count.intra = bytes.intra = {0.0, kFree};  // intra-node traffic costs nothing here
  return {count.StepSeconds(rounds), bytes.StepSeconds(rounds)};
}

void SetRates(benchmark::State& state, std::int64_t d, double seconds, double reference) {
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["vs_allreduce"] = seconds / iterations / reference;
  state.counters["GB/s"] = 4.0 * static_cast<double>(d) * iterations / seconds / 1e9;
}

void BM_MpiAllreduce(benchmark::State& state) {
  const std::int64_t d = state.range(0);
  const double reference = ReferenceSeconds(d);
  double seconds = 0;
  const double grown = ResidentGrowthAllRanks([&] {
    FloatAllreduce call(d);
    for (auto _ : state) {
      const double s = CollectiveSeconds(call);
      state.SetIterationTime(s);
      seconds += s;
    }
    // Every rank holds the sum of (rank + 1) over the ranks.
    LEMMALAB_CHECK(call.receive.front() == static_cast<float>(g_ranks * (g_ranks + 1) / 2),
                   "MPI_Allreduce gave {}", call.receive.front());
  });
  SetRates(state, d, seconds, reference);
  // The ring all-reduce's volume per rank: 2 (n-1) chunks of 4d/n bytes (a model number).
  const double ring = 2.0 * (g_ranks - 1) / g_ranks * 4.0 * static_cast<double>(d);
  state.counters["sent_B/rank"] = ring;
  state.counters["sent_B/max_rank"] = ring;
  state.counters["inter_B/rank"] = ring;
  state.counters["mem_B/coord/rank"] = grown / static_cast<double>(d) / g_ranks;
}

void BM_Scheme(benchmark::State& state, const Case& c) {
  const std::int64_t d = state.range(0);
  if (c.two_nodes && g_ranks % 2 != 0) {
    state.SkipWithError(
        fmt::format("dropped: 2 nodes need an even rank count, not {}", g_ranks).c_str());
    return;
  }
  const double needed = BytesPerCoordinate(c) * static_cast<double>(d);
  const double available = AvailableBytes();
  if (needed > kMemoryFraction * available) {
    state.SkipWithError(
        fmt::format("dropped: needs ~{:.1f} GB over {} ranks (from d = {}), {:.0f}% of {:.1f} GB "
                    "available",
                    needed / 1e9, g_ranks, g_measured.at(c.label).first, 100 * kMemoryFraction,
                    available / 1e9)
            .c_str());
    return;
  }
  const double reference = ReferenceSeconds(d);
  double seconds = 0, sent = 0, sent_max = 0, inter = 0, model = 0;
  InterTerms terms;
  const double grown = ResidentGrowthAllRanks([&] {
    Setup s(c, d);
    s.Step();  // untimed: first touch of the messages and transport buffers
    g_transport->seconds = 0;
    for (auto _ : state) {
      const StepResult* result = nullptr;
      const double step = CollectiveSeconds([&] { result = &s.Step(); });
      state.SetIterationTime(step);
      seconds += step;
      // The traffic is summed over the ranks, so every rank sees every worker's.
      const StepTraffic& traffic = result->traffic;
      model += Network().StepSeconds(traffic.rounds);
      terms = Inter(traffic.rounds);  // the same every step
      for (int w = 0; w < g_ranks; ++w) {
        const auto& worker = traffic.workers[static_cast<std::size_t>(w)];
        sent += static_cast<double>(worker.sent.total());
        inter += static_cast<double>(worker.sent.inter);
        // Rank 0 runs the parameter server beside worker 0 (comm/mpi_transport.h).
        const std::int64_t rank_sent =
            worker.sent.total() + (w == 0 ? traffic.server.sent.total() : 0);
        sent_max = std::max(sent_max, static_cast<double>(rank_sent));
      }
    }
  });
  const double steps = static_cast<double>(state.iterations()) * g_ranks;
  SetRates(state, d, seconds, reference);
  double exchange = g_transport->seconds;
  MPI_Allreduce(MPI_IN_PLACE, &exchange, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["exchange_vs_allreduce"] = exchange / iterations / reference;
  state.counters["exchange_s"] = exchange / iterations;
  state.counters["model_s"] = model / iterations;
  state.counters["inter_rounds"] = terms.rounds;
  state.counters["inter_round_B"] = terms.busiest_bytes;
  state.counters["sent_B/rank"] = sent / steps;
  state.counters["sent_B/max_rank"] = sent_max;
  state.counters["inter_B/rank"] = inter / steps;
  Record(c, d, grown);
  state.counters["mem_B/coord/rank"] = grown / static_cast<double>(d) / g_ranks;
}

void Register() {
  benchmark::AddCustomContext("ranks", std::to_string(g_ranks));
  benchmark::AddCustomContext(
      "memory check",
      fmt::format("{:.0f}% of MemAvailable, extrapolated from d = {} or a case's largest run",
                  100 * kMemoryFraction, kProbe));
  for (const std::int64_t d : kSizes) {
    benchmark::RegisterBenchmark("MPI_Allreduce/fp32", BM_MpiAllreduce)
        ->Arg(d)
        ->Iterations(Iterations(d))
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
    for (const Case& c : Cases()) {
      benchmark::RegisterBenchmark(c.label.c_str(), BM_Scheme, c)
          ->Arg(d)
          ->Iterations(Iterations(d))
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
}

// The other ranks' reporter: they run every benchmark but print nothing, not even the messages
// the library writes to a reporter's streams (a filter that matches nothing, a listing).
class DiscardingReporter final : public benchmark::BenchmarkReporter {
 public:
  DiscardingReporter() {
    SetOutputStream(&nowhere_);
    SetErrorStream(&nowhere_);
  }
  bool ReportContext(const Context& /*context*/) override { return true; }
  void ReportRuns(const std::vector<Run>& /*runs*/) override {}

 private:
  std::ostream nowhere_{nullptr};  // no buffer: every write fails silently
};

}  // namespace
}  // namespace lemmalab

int main(int argc, char** argv) {
  lemmalab::MpiSession session;
  lemmalab::g_rank = session.rank();
  lemmalab::g_ranks = session.size();
  // Ranks other than 0 drop --benchmark_out: only rank 0 writes results.
  std::vector<char*> args(argv, argv + argc);
  if (session.rank() != 0) {
    std::erase_if(args,
                  [](const char* a) { return std::string_view(a).starts_with("--benchmark_out"); });
  }
  int count = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) lemmalab::MpiSession::Abort(1);
  try {
    lemmalab::TimedTransport transport;
    lemmalab::g_transport = &transport;
    lemmalab::g_hosts = transport.HostTopology();
    lemmalab::Register();
    if (session.rank() == 0) {
      benchmark::RunSpecifiedBenchmarks();
    } else {
      lemmalab::DiscardingReporter discard;
      benchmark::RunSpecifiedBenchmarks(&discard);
    }
  } catch (const std::exception& e) {
    // One rank's error would leave the others waiting in a collective: end them all.
    std::fprintf(stderr, "rank %d: %s\n", session.rank(), e.what());
    lemmalab::MpiSession::Abort(2);
  }
  benchmark::Shutdown();
  return 0;
}
