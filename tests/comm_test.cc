// Communication schemes: the bytes each one moves, checked against the papers' volume formulas
// (birder.txt Sec. 4, onebit-adam.txt Sec. 6), reductions between schemes that must agree bit
// for bit, and the errors a scheme gives for what it cannot run.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "comm/cluster.h"
#include "comm/scheme.h"
#include "comm/transport.h"
#include "core/error.h"
#include "engine/spec.h"
#include "problems/problem.h"

namespace lemmalab {
namespace {

using ::testing::HasSubstr;

constexpr std::uint64_t kSeed = 2026;

// A noisy quadratic of dimension d over `workers` workers, an optimizer from TOML text, and the
// scheme from a [communication] table's text, with the optimizer built for the scheme's layout;
// the workers run on `threads` threads (0: the cluster chooses, one for these sizes).
template <typename T = float>
struct Scenario {
  Scenario(std::int64_t d, int workers, const std::string& optimizer, const std::string& comm_text,
           int threads = 0, Transport* transport = nullptr) {
    auto problem_table = ParseOptionTable(
        fmt::format("name = \"quadratic\"\ndimension = {}\nsigma = 0.5\nrotate = false", d),
        "[problem]");
    problem = MakeProblem<T>(*problem_table, {workers, kSeed, nullptr});
    auto comm_table = ParseOptionTable(comm_text, "[communication]");
    comm = CommFromOptions(comm_table.get(), workers);
    comm_table->RejectUnknownKeys();
    auto options = ParseOptionTable(optimizer, "optimizer");
    options->GetString("name", "");
    algorithm = MakeOptimizer<T>(
        *options, {d, workers, problem->Layers(), LayoutFor(comm, problem->dimension())});
    cluster = std::make_unique<Cluster<T>>(*problem, *algorithm, comm, threads, transport);
    x = problem->InitialPoint();
  }

  const StepResult& Step(std::int64_t t, double lr = 0.01) {
    return cluster->Step({t, lr, kSeed}, x);
  }
  // Runs steps 1..T; returns the bytes every endpoint sent, summed over the steps.
  EndpointTraffic Run(std::int64_t steps, std::vector<EndpointTraffic>* per_worker = nullptr) {
    EndpointTraffic total;
    if (per_worker) per_worker->assign(static_cast<std::size_t>(problem->num_workers()), {});
    for (std::int64_t t = 1; t <= steps; ++t) {
      const StepResult& r = Step(t);
      for (std::size_t w = 0; w < r.traffic.workers.size(); ++w) {
        total += r.traffic.workers[w];
        if (per_worker) (*per_worker)[w] += r.traffic.workers[w];
      }
      total += r.traffic.server;
    }
    return total;
  }

  std::unique_ptr<Problem<T>> problem;
  CommSpec comm;
  std::unique_ptr<DistributedOptimizer<T>> algorithm;
  std::unique_ptr<Cluster<T>> cluster;
  Vector<T> x;
};

// Birder sends 1 bit per coordinate and no scale: d / 8 bytes, P = 32 d bits of fp32 payload.
TEST(SchemeVolume, HierarchicalInterNodeVolumeIsTwoNMinusOneTimesPOver32) {
  for (const auto& [nodes, per_node] : {std::pair{2, 4}, {4, 2}, {3, 2}, {2, 1}}) {
    const int gpus = nodes * per_node;
    const std::int64_t d = kChunkAlign * gpus * 3;
    Scenario s(d, gpus, "name = \"birder\"",
               fmt::format("scheme = \"hierarchical\"\nnodes = {}\nworkers_per_node = {}", nodes,
                           per_node));
    std::vector<EndpointTraffic> per_worker;
    const EndpointTraffic total = s.Run(1, &per_worker);
    const std::int64_t p_over_32 = d / 8;  // P/32 bits = d bits = d/8 bytes
    EXPECT_EQ(total.sent.inter, 2 * (nodes - 1) * p_over_32) << nodes << " x " << per_node;
    EXPECT_EQ(total.received.inter, total.sent.inter);
    for (const EndpointTraffic& w : per_worker) {
      // (i) (m-1)P/m in fp32, (iv) (m-1)P/(32m) in 1 bit; (iii) 2(n-1)P/(32mn) across nodes.
      EXPECT_EQ(w.sent.intra,
                (per_node - 1) * 4 * d / per_node + (per_node - 1) * d / 8 / per_node);
      EXPECT_EQ(w.sent.inter, 2 * (nodes - 1) * d / 8 / (per_node * nodes));
    }
  }
}

TEST(SchemeVolume, NaiveAllgatherInterNodeVolumeIsMSquaredNTimesNMinusOneTimesPOver32) {
  for (const auto& [nodes, per_node] : {std::pair{2, 4}, {4, 2}}) {
    const int gpus = nodes * per_node;
    const std::int64_t d = kChunkAlign * gpus * 3;
    Scenario s(
        d, gpus, "name = \"birder\"",
        fmt::format("scheme = \"allgather\"\nnodes = {}\nworkers_per_node = {}", nodes, per_node));
    const EndpointTraffic total = s.Run(1);
    const std::int64_t p_over_32 = d / 8;
    EXPECT_EQ(total.sent.inter, per_node * per_node * nodes * (nodes - 1) * p_over_32);
    EXPECT_EQ(total.sent.intra, gpus * (per_node - 1) * p_over_32);
    Scenario h(d, gpus, "name = \"birder\"",
               fmt::format("scheme = \"hierarchical\"\nnodes = {}\nworkers_per_node = {}", nodes,
                           per_node));
    // Birder's Sec. 4 comparison: m^2 n / 2 times less across nodes.
    EXPECT_EQ(total.sent.inter, h.Run(1).sent.inter * per_node * per_node * nodes / 2);
  }
}

TEST(SchemeVolume, ParameterServerCountsEveryMessageAtBothEnds) {
  const std::int64_t d = 1000;
  Scenario s(d, 3, "name = \"birder\"", "");
  const StepResult& r = s.Step(1);
  for (int w = 0; w < 3; ++w) {
    EXPECT_EQ(r.traffic.sent(w), (d + 7) / 8);
    EXPECT_EQ(r.traffic.received(w), (d + 7) / 8);
    EXPECT_EQ(r.traffic.workers[static_cast<std::size_t>(w)].sent.intra, 0);  // own node each
  }
  EXPECT_EQ(r.traffic.server.received.inter, 3 * ((d + 7) / 8));
  EXPECT_EQ(r.traffic.server.sent.inter, 3 * ((d + 7) / 8));
  ASSERT_EQ(r.traffic.rounds.size(), 2u);
  EXPECT_EQ(r.traffic.rounds[0].name, "gather");
}

TEST(SchemeVolume, DenseAllreduceMovesTwoNMinusOneOverNOfTheVector) {
  const int n = 4;
  const std::int64_t d = kChunkAlign * n * 5;
  Scenario s(d, n, "name = \"adam\"", "scheme = \"allreduce\"");
  std::vector<EndpointTraffic> per_worker;
  s.Run(2, &per_worker);
  for (const EndpointTraffic& w : per_worker) {
    EXPECT_EQ(w.sent.total(), 2 * 2 * (n - 1) * 4 * d / n);  // two steps
    EXPECT_EQ(w.received.total(), w.sent.total());
  }
}

// onebit-adam.txt Sec. 6: with warmup fraction w, fp16 warmup messages against 1-bit ones after,
// the volume falls to w + (1 - w)/16 of fp16 all-reduce. Counted exactly, a compressed step also
// carries one fp32 scale per chunk message: 2(n-1)(4 + d/(8n)) bytes per worker against
// 2(n-1) 2d/n for fp16, i.e. (1 + 32n/d)/16 of it.
TEST(SchemeVolume, OneBitAdamEndToEndReductionFollowsTheWarmupFraction) {
  const int n = 4;
  const std::int64_t d = kChunkAlign * n * 64;
  const std::int64_t steps = 20;
  for (const std::int64_t warmup : {0, 4, 10, 20}) {
    Scenario s(d, n,
               fmt::format("name = \"onebit-adam\"\nwarmup_steps = {}\nwarmup_compressor = "
                           "{{ name = \"fp16\" }}",
                           warmup),
               "scheme = \"compressed-allreduce\"");
    std::vector<EndpointTraffic> per_worker;
    s.Run(steps, &per_worker);
    const std::int64_t fp16_step = 2 * (n - 1) * 2 * d / n;
    const std::int64_t one_bit_step = 2 * (n - 1) * (4 + d / (8 * n));
    for (const EndpointTraffic& w : per_worker) {
      EXPECT_EQ(w.sent.total(), warmup * fp16_step + (steps - warmup) * one_bit_step);
    }
    const double ratio =
        static_cast<double>(per_worker[0].sent.total()) / static_cast<double>(steps * fp16_step);
    const double w = static_cast<double>(warmup) / steps;
    EXPECT_NEAR(ratio, w + (1 - w) / 16 * (1 + 32.0 * n / static_cast<double>(d)), 1e-15);
    EXPECT_NEAR(1 / ratio, 1 / (w + (1 - w) / 16), warmup == 0 ? 0.13 : 0.02) << "w = " << w;
  }
}

// With full-precision messages every flat scheme adds the same numbers in the same order for
// every coordinate: parameter server, all-gather and all-reduce agree bit for bit.
TEST(SchemeEquivalence, FullPrecisionOptimizersAgreeAcrossFlatSchemes) {
  for (const char* optimizer : {"name = \"adam\"", "name = \"sgdm\"", "name = \"softsign-sgd\"",
                                "name = \"dist-spams\"\ncompressor = { name = \"identity\" }"}) {
    Scenario ps(1000, 3, optimizer, "");
    Scenario gather(1000, 3, optimizer, "scheme = \"allgather\"");
    Scenario reduce(1000, 3, optimizer, "scheme = \"allreduce\"");
    ASSERT_EQ(reduce.cluster->layout().chunks(), 3);
    ps.Run(6);
    gather.Run(6);
    reduce.Run(6);
    EXPECT_EQ(ps.x, gather.x) << optimizer;
    EXPECT_EQ(ps.x, reduce.x) << optimizer;
    EXPECT_NE(ps.x, ps.problem->InitialPoint()) << optimizer;
  }
}

// With the identity compressor the chunk servers' re-compression is exact, so the compressed
// all-reduce reduces to the parameter server, bit for bit.
TEST(SchemeEquivalence, IdentityCompressedAllreduceEqualsParameterServer) {
  const std::string one_bit =
      "name = \"onebit-adam\"\nwarmup_steps = 2\ncompressor = { name = \"identity\" }";
  Scenario ps(700, 4, one_bit, "");
  Scenario reduce(700, 4, one_bit, "scheme = \"compressed-allreduce\"");
  ps.Run(6);
  reduce.Run(6);
  EXPECT_EQ(ps.x, reduce.x);
}

// Hierarchical on nodes x 1: the node's mean is the worker's own vector, compressed with the same
// stream and error, cut into the same chunks: it is the compressed all-reduce, bit for bit.
TEST(SchemeEquivalence, HierarchicalWithOneWorkerPerNodeIsTheCompressedAllreduce) {
  for (const char* optimizer : {"name = \"birder\"", "name = \"onebit-adam\"\nwarmup_steps = 3"}) {
    Scenario flat(1000, 4, optimizer, "scheme = \"allreduce\"");
    Scenario hier(1000, 4, optimizer, "scheme = \"hierarchical\"\nnodes = 4");
    const EndpointTraffic a = flat.Run(8), b = hier.Run(8);
    EXPECT_EQ(flat.x, hier.x) << optimizer;
    EXPECT_EQ(a.sent.total(), b.sent.total()) << optimizer;
    EXPECT_EQ(b.sent.intra, 0) << optimizer;
  }
}

// onebit-adam.txt Sec. 6: rank c re-compresses chunk c with its own server error and scale
// (docs/conventions.md §5). After the first compressed step the replicas' m is the decoded
// reply, and e_bar = u - reply with u the chunk's mean (the server error starts at 0), so
// |m_j| = ||u_c|| / sqrt(d_c) on every coordinate of chunk c.
TEST(CompressedAllreduce, EachChunkServerRecompressesWithItsOwnScale) {
  Scenario<double> s(256, 2, "name = \"onebit-adam\"\nwarmup_steps = 1", "scheme = \"allreduce\"");
  ASSERT_EQ(s.cluster->layout().bounds, (std::vector<std::int64_t>{0, 128, 256}));
  s.Run(2);
  const Vector<double>& m = *s.algorithm->Observe(Quantity::kMomentum, kServer);
  const Vector<double>& e = *s.algorithm->Observe(Quantity::kServerError, kServer);
  std::vector<double> scales;
  for (const auto& [begin, end] : {std::pair{0, 128}, {128, 256}}) {
    const Vector<double> u = m.segment(begin, end - begin) + e.segment(begin, end - begin);
    const double scale = u.norm() / std::sqrt(end - begin);
    // Every coordinate of the chunk carries the chunk's one scale, sent as fp32.
    for (Eigen::Index j = begin; j < end; ++j) EXPECT_EQ(std::abs(m[j]), std::abs(m[begin]));
    EXPECT_NEAR(std::abs(m[begin]), scale, 1e-7 * scale);
    scales.push_back(scale);
  }
  EXPECT_GT(std::abs(scales[0] - scales[1]), 1e-6 * scales[0]);  // two scales, not one
}

// The [communication] tables of the four schemes (the parameter server is the default).
const std::vector<std::string> kEveryScheme = {
    "", "scheme = \"allgather\"", "scheme = \"allreduce\"", "scheme = \"hierarchical\"\nnodes = 2"};

// Every registered optimizer, with its defaults, under every scheme: it runs (deterministically,
// to finite parameters) or is refused by name; the all-gather, which runs the server phase on
// the same messages in the same order on every worker, equals the parameter server bit for bit.
TEST(SchemeContract, EveryOptimizerRunsOrIsRefusedUnderEveryScheme) {
  for (const OptimizerInfo& info : Optimizers().entries()) {
    const std::string optimizer = fmt::format("name = \"{}\"", info.name);
    std::vector<Vector<float>> results;
    for (const std::string& scheme : kEveryScheme) {
      std::vector<Vector<float>> twice;
      for (int repeat = 0; repeat < 2; ++repeat) {
        try {
          Scenario s(1000, 4, optimizer, scheme);
          s.Run(6);
          twice.push_back(s.x);
        } catch (const UserError& e) {
          EXPECT_THAT(e.what(), HasSubstr("cannot run under")) << info.name << " " << scheme;
          EXPECT_NE(scheme, "") << info.name << ": the parameter server runs everything";
          EXPECT_NE(scheme, kEveryScheme[1]) << info.name << ": the all-gather runs everything";
        }
      }
      if (twice.empty()) continue;
      ASSERT_EQ(twice.size(), 2u);
      EXPECT_EQ(twice[0], twice[1]) << info.name << " " << scheme;
      EXPECT_TRUE(twice[0].allFinite()) << info.name << " " << scheme;
      results.push_back(twice[0]);
    }
    ASSERT_GE(results.size(), 2u) << info.name;
    EXPECT_EQ(results[0], results[1]) << info.name << ": all-gather differs from the server";
  }
}

// A step's workers run on OpenMP threads, each on its own state and streams, so every optimizer
// gives the same bits on one thread as on three (4 workers: one thread takes two of them), under
// every scheme it runs under. Under ThreadSanitizer (scripts/sanitize) this is the test that
// catches a worker phase writing state another worker's thread reads.
TEST(SchemeContract, EveryOptimizerGivesTheSameBitsOnOneAndOnThreeThreads) {
  for (const OptimizerInfo& info : Optimizers().entries()) {
    const std::string optimizer = fmt::format("name = \"{}\"", info.name);
    for (const std::string& scheme : kEveryScheme) {
      std::vector<Vector<float>> x;
      for (const int threads : {1, 3}) {
        try {
          Scenario s(1000, 4, optimizer, scheme, threads);
          s.Run(6);
          EXPECT_EQ(s.cluster->largest_team(), threads) << info.name << " " << scheme;
          x.push_back(s.x);
        } catch (const UserError&) {
          // Refused under this scheme, on any number of threads (the test above says why).
        }
      }
      if (x.empty()) continue;
      ASSERT_EQ(x.size(), 2u) << info.name << " " << scheme;
      EXPECT_EQ(x[0], x[1]) << info.name << " " << scheme;
    }
  }
}

// The in-process transport, checking each round: the envelopes one endpoint sends with one tag
// carry one message (a broadcast's reply, a worker's message in the all-gather), however many
// endpoints they go to. A copy per destination made an all-gather of n workers hold n^2
// messages: 256 workers of 20 001 fp32 coordinates took 11 GB and 27 s for 3 steps of Adam.
class SharingCheck final : public Transport {
 public:
  explicit SharingCheck(int workers) : inner_(workers) {}
  std::string_view name() const override { return "sharing check"; }
  int workers() const override { return inner_.workers(); }
  bool Runs(int endpoint) const override { return inner_.Runs(endpoint); }
  bool reports() const override { return true; }
  void Exchange(std::vector<Envelope>& outgoing, std::vector<Envelope>& incoming) override {
    std::map<std::pair<int, int>, std::set<const Message*>> messages;  // per (from, tag)
    for (const Envelope& e : outgoing) messages[{e.from, e.tag}].insert(e.message.get());
    for (const auto& [sender, distinct] : messages) {
      if (distinct.size() > 1) {
        copies.push_back(fmt::format("round {}: {} messages from endpoint {} with tag {}", round_,
                                     distinct.size(), sender.first, sender.second));
      }
    }
    ++round_;
    inner_.Exchange(outgoing, incoming);
  }
  void Sum(std::span<double> /*values*/) override {}
  void Sum(std::span<std::int64_t> /*values*/) override {}

  std::vector<std::string> copies;  // what was sent as copies of one message

 private:
  InProcessTransport inner_;
  int round_ = 0;
};

TEST(SchemeContract, EveryMessageIsOneObjectHoweverManyEndpointsItGoesTo) {
  for (const OptimizerInfo& info : Optimizers().entries()) {
    for (const std::string& scheme : kEveryScheme) {
      SharingCheck transport(4);
      try {
        Scenario s(1000, 4, fmt::format("name = \"{}\"", info.name), scheme, 1, &transport);
        s.Run(3);
      } catch (const UserError&) {
        continue;  // refused under this scheme (EveryOptimizerRunsOrIsRefusedUnderEveryScheme)
      }
      EXPECT_THAT(transport.copies, ::testing::IsEmpty()) << info.name << " " << scheme;
    }
  }
}

TEST(SchemeErrors, OptimizersAndCompressorsThatCannotBeCutAreRefused) {
  const auto message = [](const std::string& optimizer, const std::string& comm) {
    try {
      Scenario s(1000, 4, optimizer, comm);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message("name = \"spams\"", "scheme = \"allreduce\""),
              HasSubstr("cannot run under scheme 'allreduce': its server phase needs the whole"));
  EXPECT_THAT(message("name = \"local-sgd\"", "scheme = \"hierarchical\"\nnodes = 2"),
              HasSubstr("cannot run under scheme 'hierarchical'"));
  EXPECT_THAT(message("name = \"signsgd\"", "scheme = \"hierarchical\"\nnodes = 2"),
              HasSubstr("cannot run under scheme 'hierarchical'"));
  EXPECT_THAT(message("name = \"birder\"\ncompressor = { name = \"top-k\", k = 10 }",
                      "scheme = \"allreduce\""),
              HasSubstr("compressor 'top-k' cannot run under a chunked scheme"));
  EXPECT_EQ(message("name = \"spams\"", "scheme = \"allgather\""), "no error");
}

TEST(SchemeErrors, TopologyMustMatchTheWorkers) {
  const auto message = [](const std::string& text, int workers) {
    try {
      auto table = ParseOptionTable(text, "[communication]");
      CommFromOptions(table.get(), workers);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message("nodes = 3", 8),
              HasSubstr("nodes x workers_per_node must equal workers = 8; got 3 x 2"));
  EXPECT_THAT(message("nodes = 2\nworkers_per_node = 3", 8), HasSubstr("got 2 x 3"));
  EXPECT_THAT(message("scheme = \"hierarchical\"", 8),
              HasSubstr("the hierarchical scheme needs the topology"));
  EXPECT_THAT(message("scheme = \"ring\"", 8), HasSubstr("scheme"));
  EXPECT_EQ(message("workers_per_node = 4", 8), "no error");
  auto table = ParseOptionTable("scheme = \"hierarchical\"\nnodes = 2", "[communication]");
  const CommSpec comm = CommFromOptions(table.get(), 8);
  EXPECT_EQ(comm.topology.workers_per_node, 4);
  EXPECT_THAT(
      [&] {
        try {
          LayoutFor(comm, 400);
        } catch (const UserError& e) {
          return std::string(e.what());
        }
        return std::string("no error");
      }(),
      HasSubstr("into 8 chunks of 64 coordinates (d / 8 rounded up to a multiple of 64); this "
                "problem's d = 400 leaves chunk 8 empty, and every chunk needs a coordinate (d "
                "must exceed 7 x 64 = 448 at this chunk size"));
  // At d = 300 on 2 x 2 workers the chunks are 128 wide, so d must exceed 384, not 192 (the
  // message once said 192).
  auto small = ParseOptionTable("scheme = \"hierarchical\"\nnodes = 2", "[communication]");
  EXPECT_THAT(
      [&] {
        try {
          LayoutFor(CommFromOptions(small.get(), 4), 300);
        } catch (const UserError& e) {
          return std::string(e.what());
        }
        return std::string("no error");
      }(),
      HasSubstr("d = 300 leaves chunk 4 empty, and every chunk needs a coordinate (d must exceed "
                "3 x 128 = 384"));
  EXPECT_EQ(LayoutFor(CommFromOptions(small.get(), 4), 200).bounds,
            (std::vector<std::int64_t>{0, 64, 128, 192, 200}));
  // The flat all-reduce serves fewer chunks instead.
  auto flat = ParseOptionTable("scheme = \"allreduce\"", "[communication]");
  EXPECT_EQ(LayoutFor(CommFromOptions(flat.get(), 8), 100).bounds,
            (std::vector<std::int64_t>{0, 64, 100}));
}

}  // namespace
}  // namespace lemmalab
