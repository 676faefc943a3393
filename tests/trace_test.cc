// The step trace (optimizers/trace.h, cli/trace.h): a traced Birder step redone by hand from the
// trace's own values, tracing changes no bit of a run, and each algorithm's symbols.
#include "cli/trace.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "engine/experiment.h"
#include "optimizers/optimizer.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ReadFile;
using testing::TempDir;
using testing::UserErrorOf;

// Two workers with different minibatches on a 4-dimensional noisy quadratic, in double precision
// so that the hand computation below is the run's arithmetic, operation for operation.
constexpr const char* kBirderSpec = R"toml(
seed = 11
steps = 6
workers = 2
precision = "fp64"

[problem]
name = "quadratic"
dimension = 4
sigma = 0.5
heterogeneity = 0.3

[[optimizer]]
name = "birder"
beta = 0.9
eps = 1e-8
schedule = { lr = 0.05 }
)toml";

// The trace's values by (step, worker, symbol, coordinate).
using Key = std::tuple<std::int64_t, int, std::string, std::int64_t>;
std::map<Key, double> Values(const StepTrace& trace) {
  std::map<Key, double> values;
  for (const TraceRow& row : trace.Rows()) {
    const std::string name(trace.symbols()[static_cast<std::size_t>(row.symbol)].name);
    values[{row.step, row.worker, name, row.coordinate}] = row.value;
  }
  return values;
}

// Birder's Q (birder.txt Eq. 5, compressors/stochastic_binary.h) by hand: +1 iff
// r - 2^31 < clamp(u, -1, 1) 2^31.
double QuantizeByHand(double u, double word) {
  const double v = std::clamp(u, -1.0, 1.0);
  return word - 2147483648.0 < v * 2147483648.0 ? 1.0 : -1.0;
}

TEST(Trace, BirderStepRedoneByHandFromTheTrace) {
  const RunSpec spec = ParseSpec(kBirderSpec, "birder.toml");
  StepTrace trace({.first_step = 1, .last_step = 6});
  RunTrace(spec, trace);
  std::map<Key, double> at = Values(trace);
  const double beta = 0.9, eps = 1e-8, lr = 0.05;
  int inside = 0;  // decisions made by a word (|u| < 1), not by the clamp
  for (std::int64_t t = 1; t <= 6; ++t) {
    for (std::int64_t j = 0; j < 4; ++j) {
      double mean = 0;
      for (int i = 0; i < 2; ++i) {
        const auto get = [&](const char* symbol, std::int64_t step = -1) {
          const Key key{step < 0 ? t : step, i, symbol, j};
          if (step == 0) return 0.0;  // m_0 = b_0 = e_0 = 0 (Alg. 1 line 1)
          EXPECT_TRUE(at.contains(key)) << symbol << " t=" << t << " i=" << i << " j=" << j;
          return at[key];
        };
        const double g = get("g");
        const double m = beta * get("m", t - 1) + (1 - beta) * g;  // line 5
        EXPECT_EQ(get("m"), m);
        const double b_hat = beta * get("b_hat", t - 1) + (1 - beta) * std::abs(g);  // line 6
        EXPECT_EQ(get("b_hat"), b_hat);
        EXPECT_EQ(get("b"), b_hat);                            // line 7 without T0
        const double u = m / (b_hat + eps) + get("e", t - 1);  // line 8's input
        EXPECT_EQ(get("u"), u);
        const double word = get("r");
        // The word is word j of the worker's compression stream of step t.
        PhiloxStream stream({11, Purpose::kWorkerCompression, static_cast<std::uint32_t>(i),
                             static_cast<std::uint64_t>(t)});
        stream.Seek(static_cast<std::uint64_t>(j));
        EXPECT_EQ(word, stream());
        const double q = QuantizeByHand(u, word);
        EXPECT_EQ(get("Q(u)"), q);
        if (std::abs(u) < 1) ++inside;
        EXPECT_EQ(get("e"), u - q);  // line 9
        mean += q;
      }
      mean /= 2;
      const double e_bar_previous = t == 1 ? 0.0 : at[{t - 1, kServer, "e_bar", j}];
      EXPECT_EQ((at[{t, kServer, "mean Q(u)", j}]), mean);  // line 12
      const double input = mean + e_bar_previous;
      EXPECT_EQ((at[{t, kServer, "mean+e_bar", j}]), input);
      const double u_bar = QuantizeByHand(input, at[{t, kServer, "r", j}]);
      EXPECT_EQ((at[{t, kServer, "u_bar", j}]), u_bar);
      EXPECT_EQ((at[{t, kServer, "e_bar", j}]), input - u_bar);  // line 13
      EXPECT_EQ((at[{t, kServer, "alpha u_bar", j}]), lr * u_bar);
      if (t > 1) {
        const double x_previous = at[{t - 1, kServer, "x", j}];
        EXPECT_EQ((at[{t, kServer, "x", j}]), x_previous - lr * u_bar);  // line 16
      }
    }
  }
  // Enough decisions inside (-1, 1) that a wrong word would show (see the next test).
  EXPECT_GE(inside, 12);
}

TEST(Trace, AWrongWordIsCaughtByTheHandCheck) {
  // Negative control for the test above: the same hand check with each worker's word taken one
  // position off disagrees with the run's Q(u) at some coordinate.
  const RunSpec spec = ParseSpec(kBirderSpec, "birder.toml");
  StepTrace trace({.first_step = 1, .last_step = 6});
  RunTrace(spec, trace);
  std::map<Key, double> at = Values(trace);
  int disagreements = 0;
  for (std::int64_t t = 1; t <= 6; ++t) {
    for (int i = 0; i < 2; ++i) {
      for (std::int64_t j = 0; j < 4; ++j) {
        const double shifted = at[{t, i, "r", (j + 1) % 4}];
        if (QuantizeByHand(at[{t, i, "u", j}], shifted) != at[{t, i, "Q(u)", j}]) ++disagreements;
      }
    }
  }
  EXPECT_GT(disagreements, 0);
}

// A spec of every traced family: Birder, 1-bit Adam (2 warmup steps), dist-SPAMS, 1-bit LAMB on
// an MLP's layers, and an untraced-by-name baseline (ef-sgd).
constexpr const char* kFamiliesSpec = R"toml(
seed = 5
steps = 8
workers = 3
precision = "{precision}"
probes = ["ef-norm"]

[data]
source = "synthetic-logistic"
samples = 120
features = 6

[problem]
name = "mlp"
hidden = [5]
batch_size = 8

[schedule]
lr = 0.01

[[optimizer]]
name = "birder"

[[optimizer]]
name = "onebit-adam"
warmup_steps = 2

[[optimizer]]
name = "dist-spams"

[[optimizer]]
name = "onebit-lamb"
warmup_steps = 2

[[optimizer]]
name = "ef-sgd"
compressor = "scaled-sign"
)toml";

RunSpec FamiliesSpec(const std::string& precision) {
  std::string text = kFamiliesSpec;
  text.replace(text.find("{precision}"), 11, precision);
  return ParseSpec(text, "families.toml");
}

TEST(Trace, TracingChangesNoBitOfTheRun) {
  for (const std::string precision : {"fp32", "fp64"}) {
    TempDir dir;
    ExperimentOptions plain;
    plain.out_dir = dir / "plain";
    plain.progress = false;
    const ExperimentReport untraced = RunExperiment(FamiliesSpec(precision), plain);

    StepTrace trace({.first_step = 1, .last_step = 8});  // every step, worker, coordinate
    ExperimentOptions traced = plain;
    traced.out_dir = dir / "traced";
    traced.trace = &trace;
    const ExperimentReport with_trace = RunExperiment(FamiliesSpec(precision), traced);

    ASSERT_EQ(untraced.runs.size(), with_trace.runs.size());
    for (std::size_t k = 0; k < untraced.runs.size(); ++k) {
      const Eigen::VectorXd& a = untraced.runs[k].final_params;
      const Eigen::VectorXd& b = with_trace.runs[k].final_params;
      ASSERT_EQ(a.size(), b.size());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), sizeof(double) * a.size()), 0)
          << untraced.runs[k].record.label << " " << precision;
    }
    EXPECT_EQ(ReadFile(dir / "plain/metrics.csv"), ReadFile(dir / "traced/metrics.csv"));
    EXPECT_EQ(ReadFile(dir / "plain/params.npy"), ReadFile(dir / "traced/params.npy"));
    EXPECT_GT(trace.Rows().size(), 1000u);
  }
}

TEST(Trace, EachFamilyShowsItsPaperSymbols) {
  StepTrace trace({.first_step = 1, .last_step = 4, .coordinates = {0, 1}});
  RunTrace(FamiliesSpec("fp32"), trace);
  std::map<std::string, std::set<std::string>> symbols;  // run -> "worker:symbol"
  for (const TraceRow& row : trace.Rows()) {
    symbols[trace.runs()[static_cast<std::size_t>(row.run)]].insert(
        (row.worker == kServer ? "server:" : "worker:") +
        std::string(trace.symbols()[static_cast<std::size_t>(row.symbol)].name));
  }
  const auto has = [&](const std::string& run, std::initializer_list<const char*> expected) {
    for (const char* s : expected) EXPECT_TRUE(symbols[run].contains(s)) << run << " " << s;
  };
  has("birder", {"worker:g", "worker:m", "worker:b", "worker:u", "worker:r", "worker:Q(u)",
                 "worker:e", "server:mean Q(u)", "server:u_bar", "server:e_bar", "server:x"});
  has("onebit-adam",
      {"worker:m", "worker:m+delta", "worker:C(m+delta)", "worker:s", "worker:delta",
       "server:delta_bar", "server:m_bar", "server:v_Tw", "server:g_bar", "server:v"});
  has("dist-spams", {"worker:g+e", "worker:C(g+e)", "worker:e", "server:g_bar", "server:m",
                     "server:v", "server:v_hat", "server:theta"});
  has("onebit-lamb", {"worker:m", "worker:C(m+delta)", "worker:delta", "server:r^(l)",
                      "server:c^(l)", "server:c_avg^(l)", "server:v_Tw"});
  // The EF baselines' exchange is the error-compensated SGD of onebit-adam.txt Eq. 5.
  has("ef-sgd", {"worker:g", "worker:g+delta", "worker:C(g+delta)", "worker:delta",
                 "server:mean C(g+delta)", "server:x"});
  // Per-layer values are indexed by layer: the MLP has 4 layers (2 weights, 2 biases).
  std::set<std::int64_t> layers;
  for (const TraceRow& row : trace.Rows()) {
    if (trace.symbols()[static_cast<std::size_t>(row.symbol)].name == "c^(l)" &&
        !row.by_coordinate && trace.runs()[static_cast<std::size_t>(row.run)] == "onebit-lamb") {
      layers.insert(row.coordinate);
    }
  }
  EXPECT_EQ(layers, (std::set<std::int64_t>{0, 1, 2, 3}));
}

// Over the whole registry: every symbol a trace shows says where its algorithm computes it and
// what it is. An exchange has no generic name to fall back on: a new optimizer that names none
// would trace its compressed messages under nobody's symbols (kept out by the check below).
class EveryOptimizerTrace : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryOptimizerTrace, NamesEverySymbolBySource) {
  std::string text = kBirderSpec;
  text.replace(
      text.find("[[optimizer]]"), std::string::npos,
      fmt::format("[[optimizer]]\nname = \"{}\"\nschedule = {{ lr = 0.01 }}\n", GetParam()));
  StepTrace trace({.first_step = 1, .last_step = 3});
  RunTrace(ParseSpec(text, "every.toml"), trace);
  ASSERT_FALSE(trace.Rows().empty());
  for (const StepTrace::SymbolUse& use : StepTrace::SymbolsIn(trace.Rows())) {
    const TraceSymbol& symbol = trace.symbols()[static_cast<std::size_t>(use.symbol)];
    SCOPED_TRACE(std::string(symbol.name));
    EXPECT_FALSE(symbol.source.empty());
    EXPECT_FALSE(symbol.meaning.empty());
    EXPECT_THAT(std::string(symbol.source), Not(HasSubstr("compressed exchange")));
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryOptimizerTrace, ::testing::ValuesIn(Optimizers().names()),
                         testing::RegistryTestName);

TEST(Trace, SymbolsComeInTheOrderEachStepComputesThem) {
  // An earlier run (sgd) and an earlier phase (1-bit Adam's warmup) record g, g_bar and x first;
  // a later run's or phase's step still lists its symbols in its own order.
  std::string text = kBirderSpec;
  text.replace(text.find("[[optimizer]]"), std::string::npos,
               "[[optimizer]]\nname = \"sgd\"\nschedule = { lr = 0.05 }\n"
               "[[optimizer]]\nname = \"ef-sgd\"\nschedule = { lr = 0.05 }\n"
               "[[optimizer]]\nname = \"onebit-adam\"\nwarmup_steps = 1\n"
               "schedule = { lr = 0.05 }\n");
  StepTrace trace({.first_step = 1, .last_step = 2});
  RunTrace(ParseSpec(text, "order.toml"), trace);
  std::map<std::tuple<std::string, std::int64_t>, std::vector<std::string>> server;
  for (const TraceRow& row : trace.Rows()) {
    if (row.worker != kServer) continue;
    std::vector<std::string>& names = server[{trace.runs()[row.run], row.step}];
    const std::string name(trace.symbols()[row.symbol].name);
    if (names.empty() || names.back() != name) names.push_back(name);
  }
  EXPECT_EQ((server[{"sgd", 1}]), (std::vector<std::string>{"g_bar", "x"}));
  EXPECT_EQ((server[{"ef-sgd", 1}]), (std::vector<std::string>{"mean C(g+delta)", "mean+delta_bar",
                                                               "C(mean+delta_bar)", "x"}));
  EXPECT_EQ((server[{"onebit-adam", 1}]), (std::vector<std::string>{"g_bar", "m", "v", "x"}));
  EXPECT_EQ((server[{"onebit-adam", 2}]),
            (std::vector<std::string>{"mean m_hat", "mean+delta_bar", "m_bar", "s", "delta_bar",
                                      "m", "v_Tw", "x"}));
}

TEST(Trace, StepsAfterADivergenceAreReportedMissing) {
  std::string text = kBirderSpec;
  text.replace(text.find("[[optimizer]]"), std::string::npos,
               "[[optimizer]]\nname = \"sgd\"\nschedule = { lr = 1e4 }\n");
  const RunSpec spec = ParseSpec(text, "blowup.toml");
  StepTrace trace({.first_step = 2, .last_step = 5});
  const ExperimentReport report = RunTrace(spec, trace);
  ASSERT_LT(report.runs[0].record.steps_done, 5);
  const std::vector<std::string> gaps = TraceGaps(report, trace.selection());
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_THAT(gaps[0], HasSubstr("sgd: diverged at step"));
  EXPECT_THAT(gaps[0], HasSubstr("to 5 are not traced"));
}

TEST(Trace, SelectionIsCheckedAgainstTheRun) {
  const RunSpec spec = ParseSpec(kBirderSpec, "birder.toml");
  // Each request and the error it gets: one range syntax for every option, the accepted form
  // in the error, and indices checked against the run.
  const std::vector<std::pair<TraceRequest, std::string>> refused = {
      {{.coordinates = "0-4"}, "--coords: coordinate 4 does not exist: the run has 4 coordinates"},
      {{.workers = "2"}, "--workers: worker 2 does not exist: the run has 2 workers"},
      {{.steps = "3-2"}, "--steps: the range '3-2' ends before it starts (A-B with A <= B)"},
      {{.steps = "2:4"}, "--steps: '2:4': write a range as A-B (2-4)"},
      {{.coordinates = "0..2"}, "--coords: '0..2': write a range as A-B (0-2)"},
      {{.steps = "0-1"}, "--steps: '0-1': steps count from 1 (write A or A-B with 1 <= A <= B"},
      {{.steps = "7"}, "--steps: step 7 is past the run's last step, 6"},
      {{.coordinates = "x"}, "--coords: 'x' is not an index"},
  };
  for (const auto& [request, message] : refused) {
    EXPECT_THAT(UserErrorOf([&] { ResolveTrace(spec, request, 4); }), HasSubstr(message));
  }
  EXPECT_EQ(ResolveTrace(spec, {.steps = "2-4"}, 4).selection.last_step, 4);
  EXPECT_THAT(UserErrorOf([&] { ResolveTrace(spec, {.coordinates = "all"}, 100'000'000); }),
              HasSubstr("choose fewer with --steps, --coords or --workers"));
  const TraceOutcome defaults = ResolveTrace(spec, {}, 100);
  EXPECT_EQ(defaults.selection.coordinates, (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(defaults.selection.first_step, 1);
  EXPECT_EQ(defaults.selection.last_step, 1);
  EXPECT_EQ(ResolveTrace(spec, {.coordinates = "3,0-1,1"}, 4).selection.coordinates,
            (std::vector<std::int64_t>{0, 1, 3}));

  std::string hierarchical = kBirderSpec;
  hierarchical += "\n[communication]\nscheme = \"hierarchical\"\nnodes = 1\n";
  EXPECT_THAT(UserErrorOf([&] { ResolveTrace(ParseSpec(hierarchical, "h.toml"), {}, 4); }),
              HasSubstr("compresses at the nodes, which a trace does not show"));
}

TEST(TraceCommand, PrintsTablesAndWritesTidyCsv) {
  TempDir dir;
  testing::WriteFile(dir / "birder.toml", kBirderSpec);
  const testing::CommandResult result =
      testing::RunLemmalab({"trace", (dir / "birder.toml").string(), "--steps", "2-3", "--coords",
                            "1,3", "--workers", "1", "--out", (dir / "out").string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("birder, step 2, worker 1"));
  EXPECT_THAT(result.out, HasSubstr("birder, step 3, server and replicas"));
  EXPECT_THAT(result.out, ::testing::Not(HasSubstr("worker 0")));
  EXPECT_THAT(result.out, HasSubstr("birder.txt Alg. 1 line 9"));
  const std::string csv = ReadFile(dir / "out/trace.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "label,step,worker,symbol,coordinate,value");
  EXPECT_THAT(csv, HasSubstr("\"birder\",2,1,\"Q(u)\",3,"));
  EXPECT_THAT(csv, HasSubstr("\"birder\",3,server,\"u_bar\",1,"));
  EXPECT_THAT(csv, ::testing::Not(HasSubstr(",0,\"g\"")));
  EXPECT_THAT(ReadFile(dir / "out/symbols.csv"),
              HasSubstr("\"birder\",\"e_bar\",coordinate,\"birder.txt Alg. 1 line 13\""));
  EXPECT_FALSE(std::filesystem::exists(dir / "out/trace.csv.partial"));

  const testing::CommandResult bad =
      testing::RunLemmalab({"trace", (dir / "birder.toml").string(), "--coords", "9", "--out",
                            (dir / "unused").string()});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--coords: coordinate 9 does not exist"));
  EXPECT_FALSE(std::filesystem::exists(dir / "unused"));

  // A folder that cannot be made fails before anything runs or prints.
  const testing::CommandResult unwritable =
      testing::RunLemmalab({"trace", (dir / "birder.toml").string(), "--out", "/proc/no/such"});
  EXPECT_EQ(unwritable.exit_code, 2);
  EXPECT_THAT(unwritable.err, HasSubstr("/proc/no/such"));
  EXPECT_EQ(unwritable.out, "");
}

}  // namespace
}  // namespace lemmalab
