// Whole experiments: bitwise determinism across thread counts, the quickstart's claims, the
// results files, probe values against independent recomputation, divergence and interruption.
#include "engine/experiment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <map>
#include <set>

#include "cli/run_table.h"
#include "comm/cluster.h"
#include "compressors/one_bit.h"
#include "compressors/stochastic_binary.h"
#include "core/error.h"
#include "optimizers/birder.h"
#include "problems/supervised.h"
#include "tests/test_util.h"
#include "theory/birder_probes.h"

namespace lemmalab {
namespace {

using ::testing::HasSubstr;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

constexpr const char* kComparisonSpec = R"toml(
seed = 7
steps = 60
workers = 8
precision = "{precision}"
eval_every = 5
probes = ["q-domain", "ef-norm", "min-b"]

[data]
source = "synthetic-logistic"
samples = 400
features = 12

[problem]
name = "logreg"
l2 = 1e-3
batch_size = 8

[schedule]
lr = 0.02

[[optimizer]]
name = "birder"

[[optimizer]]
name = "adam"

[[optimizer]]
name = "sgd"
schedule = { name = "inv-sqrt", lr = 0.5 }
)toml";

RunSpec Spec(const std::string& precision) {
  std::string text = kComparisonSpec;
  text.replace(text.find("{precision}"), 11, precision);
  return ParseSpec(text, "comparison.toml");
}

ExperimentReport RunQuietly(const RunSpec& spec, const std::filesystem::path& out,
                            int threads = 0) {
  ExperimentOptions options;
  options.out_dir = out;
  options.threads = threads;
  options.progress = false;
  return RunExperiment(spec, options);
}

TEST(Experiment, BitwiseIdenticalWithOneTwoAndEightThreads) {
  for (const std::string precision : {"fp32", "fp64"}) {
    TempDir dir;
    const RunSpec spec = Spec(precision);
    for (const int threads : {1, 2, 8}) {
      const ExperimentReport report = RunQuietly(spec, dir / std::to_string(threads), threads);
      // The workers really ran on that many threads (not capped by the environment).
      for (const RunReport& run : report.runs) ASSERT_EQ(run.threads, threads);
    }
    const std::string metrics = ReadFile(dir / "1/metrics.csv");
    const std::string params = ReadFile(dir / "1/params.npy");
    EXPECT_GT(std::count(metrics.begin(), metrics.end(), '\n'), 60 * 3 * 4);
    for (const char* threads : {"2", "8"}) {
      EXPECT_EQ(ReadFile(dir / threads / "metrics.csv"), metrics) << precision << " " << threads;
      EXPECT_EQ(ReadFile(dir / threads / "params.npy"), params) << precision << " " << threads;
    }
  }
}

TEST(Experiment, QuickstartBirderMatchesAdam) {
  // The claims of the README: on the breast-cancer table with 8 workers, Birder and Adam reach
  // >= 95% training accuracy and Birder's loss is within 2x of Adam's after the same steps.
  TempDir dir;
  const ExperimentReport report =
      RunQuietly(LoadSpec(testing::SourceDir() / "runs/quickstart.toml"), dir.path());
  ASSERT_EQ(report.runs.size(), 3u);
  const RunRecord& birder = report.runs[0].record;
  const RunRecord& adam = report.runs[1].record;
  EXPECT_EQ(birder.label, "birder");
  EXPECT_EQ(adam.label, "adam");
  EXPECT_EQ(birder.status, "completed");
  EXPECT_EQ(adam.status, "completed");
  EXPECT_GE(birder.final_accuracy, 0.95);
  EXPECT_GE(adam.final_accuracy, 0.95);
  EXPECT_LE(birder.final_loss, 2 * adam.final_loss);
  EXPECT_EQ(report.workers, 8);
  // Birder sends ceil(31 / 8) = 4 bytes per step; Adam 31 fp32 values.
  EXPECT_EQ(birder.bits_sent_per_worker, 400 * 32.0);
  EXPECT_EQ(adam.bits_sent_per_worker, 400 * 31 * 32.0);
  // The three probes ran on Birder and only on Birder.
  const std::string lines = ::testing::PrintToString(report.runs[0].probe_lines);
  EXPECT_THAT(lines, HasSubstr("q-domain"));
  EXPECT_THAT(lines, HasSubstr("ef-norm"));
  EXPECT_THAT(lines, HasSubstr("min-b"));
  EXPECT_TRUE(report.runs[1].probe_lines.empty());
  EXPECT_THAT(FormatRunTable(report), HasSubstr("birder"));
}

// Reads one value with a SQL query.
double QueryDouble(const std::filesystem::path& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db_path.string().c_str(), &db, SQLITE_OPEN_READONLY, nullptr),
            SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  EXPECT_EQ(sqlite3_step(s), SQLITE_ROW) << sql;
  const double value = sqlite3_column_double(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return value;
}

TEST(Experiment, ResultsHoldRunsMetricsProbesAndParameters) {
  TempDir dir;
  const ExperimentReport report = RunQuietly(Spec("fp32"), dir.path());
  const auto db = dir / "results.sqlite";
  EXPECT_EQ(QueryDouble(db, "SELECT COUNT(*) FROM runs WHERE status = 'completed'"), 3);
  // Evaluations at 0, 5, ..., 60; per-step metrics at 1..60.
  EXPECT_EQ(QueryDouble(db,
                        "SELECT COUNT(*) FROM metrics WHERE run_id = 1 AND "
                        "name = 'train_loss'"),
            13);
  EXPECT_EQ(QueryDouble(db, "SELECT COUNT(*) FROM metrics WHERE run_id = 2 AND name = 'lr'"), 60);
  EXPECT_EQ(QueryDouble(db,
                        "SELECT value FROM metrics WHERE run_id = 3 AND name = 'lr' "
                        "AND step = 4"),
            0.25);  // inv-sqrt: 0.5 / sqrt(4)
  EXPECT_EQ(QueryDouble(db,
                        "SELECT value FROM metrics WHERE run_id = 1 AND name = 'bits_sent' "
                        "AND step = 9"),
            16);  // d = 13 -> 2 bytes
  EXPECT_EQ(QueryDouble(db, "SELECT final_loss FROM runs WHERE run_id = 2"),
            report.runs[1].record.final_loss);
  // Probe series: 8 workers + server for q-domain, per step.
  EXPECT_EQ(QueryDouble(db, "SELECT COUNT(*) FROM probes WHERE probe = 'q-domain'"), 60 * 9);
  EXPECT_EQ(QueryDouble(db, "SELECT COUNT(*) FROM probes WHERE run_id <> 1"), 0);
  EXPECT_EQ(QueryDouble(db,
                        "SELECT COUNT(*) FROM probes WHERE probe = 'ef-norm' AND "
                        "worker = -1"),
            60);
  EXPECT_EQ(QueryDouble(db, "SELECT COUNT(*) FROM meta WHERE key = 'spec_text'"), 1);

  // metrics.csv: long format, one row per metric and probe value.
  const std::string csv = ReadFile(dir / "metrics.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "run,label,step,name,worker,value");
  EXPECT_THAT(csv, HasSubstr("\n1,birder,0,train_loss,,"));
  EXPECT_THAT(csv, HasSubstr("\n1,birder,1,ef-norm/server_sq_norm,-1,"));
  EXPECT_THAT(csv, HasSubstr("\n3,sgd,4,lr,,0.25\n"));
  const double rows = QueryDouble(db,
                                  "SELECT (SELECT COUNT(*) FROM metrics) + "
                                  "(SELECT COUNT(*) FROM probes)");
  EXPECT_EQ(static_cast<double>(std::count(csv.begin(), csv.end(), '\n')), rows + 1);

  // params.npy: read back by NumPy, equal to the final parameters of every run.
  std::string expected;
  for (const RunReport& run : report.runs) {
    for (Eigen::Index j = 0; j < run.final_params.size(); ++j) {
      expected += fmt::format("{} ", static_cast<float>(run.final_params[j]));
    }
    expected += "\n";
  }
  WriteFile(dir / "expected.txt", expected);
  const std::string script = fmt::format(
      "import numpy as np; a = np.load('{}'); e = np.loadtxt('{}', dtype=np.float32); "
      "assert a.dtype == np.float32 and a.shape == (3, 13), (a.dtype, a.shape); "
      "assert np.array_equal(a, e), (a, e)",
      (dir / "params.npy").string(), (dir / "expected.txt").string());
  EXPECT_EQ(std::system(fmt::format("/usr/bin/python3 -c \"{}\"", script).c_str()), 0);
}

TEST(Experiment, RecordsConstantsShardsTestMetricsAndTheOptimalityGap) {
  TempDir dir;
  // A held-out CSV next to the spec; the training set is the shipped breast-cancer table.
  std::string test_csv = ReadFile(testing::SourceDir() / "data/breast_cancer.csv");
  test_csv = test_csv.substr(0, test_csv.find('\n', test_csv.find('\n', 2000)) + 1);
  WriteFile(dir / "held_out.csv", test_csv);
  const std::string spec_text =
      fmt::format(R"toml(
seed = 3
steps = 20
workers = 4
precision = "fp32"
eval_every = 10
reference = true

[data]
source = "csv"
path = "{}"
test_path = "held_out.csv"
label = "target"
normalize = "standardize"

[problem]
name = "logreg"
l2 = 1e-2
batch_size = 8
shards = {{ name = "dirichlet", alpha = 0.5 }}

[[optimizer]]
name = "sgd"
schedule = {{ lr = 0.5 }}
)toml",
                  (testing::SourceDir() / "data/breast_cancer.csv").string());
  WriteFile(dir / "spec.toml", spec_text);
  const ExperimentReport report = RunQuietly(LoadSpec(dir / "spec.toml"), dir / "out");
  const auto db = dir / "out" / "results.sqlite";

  // f* by Ceres on the fp64 problem, L the problem's own bound, G observed by the run.
  const double f_star =
      QueryDouble(db, "SELECT value FROM constants WHERE name = 'f_star' AND certainty = 'bound'");
  EXPECT_GT(f_star, 0.03);
  EXPECT_LT(f_star, report.runs[0].record.final_loss);
  EXPECT_EQ(QueryDouble(db,
                        "SELECT COUNT(*) FROM constants WHERE name = 'L' AND "
                        "certainty = 'bound' AND run_id IS NULL"),
            1);
  EXPECT_EQ(QueryDouble(db, "SELECT value FROM constants WHERE name = 'G' AND run_id = 1"),
            QueryDouble(db, "SELECT MAX(value) FROM metrics WHERE name = 'max_grad_norm'"));
  // optimality_gap = train_loss - f* at every evaluation (steps 0, 10, 20).
  EXPECT_EQ(QueryDouble(db,
                        "SELECT COUNT(*) FROM metrics g JOIN metrics l USING (run_id, step) "
                        "WHERE g.name = 'optimality_gap' AND l.name = 'train_loss' AND "
                        "g.value = l.value - " +
                            fmt::format("{:.17g}", f_star)),
            3);
  // Test metrics from the held-out file, and the run's final values in the runs table.
  EXPECT_EQ(QueryDouble(db, "SELECT COUNT(*) FROM metrics WHERE name = 'test_accuracy'"), 3);
  EXPECT_EQ(QueryDouble(db, "SELECT final_test_accuracy FROM runs"),
            QueryDouble(db,
                        "SELECT value FROM metrics WHERE name = 'test_accuracy' AND "
                        "step = 20"));
  // Shards: every training sample once, two labels per worker, as the report says.
  EXPECT_EQ(QueryDouble(db, "SELECT SUM(count) FROM shards"), 569);
  EXPECT_EQ(QueryDouble(db, "SELECT COUNT(DISTINCT worker) FROM shards"), 4);
  EXPECT_EQ(QueryDouble(db, "SELECT SUM(count) FROM shards WHERE label = 1"), 357);
  ASSERT_EQ(report.shards.size(), 4u);
  const std::string text = FormatRunTable(report);
  EXPECT_THAT(text, HasSubstr("Dirichlet(0.5) shards"));
  EXPECT_THAT(text, HasSubstr("f_star"));
  EXPECT_THAT(text, HasSubstr("test acc."));
  EXPECT_THAT(text, HasSubstr("label histogram per worker"));
}

// The probes report what they claim: replay Birder through the cluster and recompute.
TEST(Experiment, ProbeSeriesEqualIndependentRecomputation) {
  struct Sink final : ProbeSink {
    std::map<std::pair<std::string, int>, double> values;
    void Record(std::string_view series, int worker, double value) override {
      values[{std::string(series), worker}] = value;
    }
  };
  const Dataset data = MakeSyntheticLogistic(120, 6, 3.0, 1);
  SupervisedOptions logreg;
  logreg.batch_size = 4;
  const auto problem = MakeSupervisedProblem<double>(MakeLogisticModel<double>(6, true), data,
                                                     IidShards(120, 4, 1), logreg);
  const CompressorMaker<double> q = [](const CompressorShape& shape) {
    return MakeStochasticBinary<double>(QuantizerDomain::kClip, shape.dimension);
  };
  auto birder = MakeBirder<double>(BirderOptions{}, Symmetric(q), {problem->dimension(), 4});
  Cluster<double> cluster(*problem, *birder);
  ProbeContext context{problem->dimension(), 4};
  // The options a run of this Birder resolves: its quantizer is Birder's at both sides.
  context.hyperparameters.Set("compressor.name", "stochastic-binary");
  auto ef = MakeErrorNormProbe<double>(context);
  auto domain = MakeQuantizerDomainProbe<double>(context);
  auto min_b = MakeMinDenominatorProbe<double>(context);
  Eigen::VectorXd x = problem->InitialPoint();
  std::vector<Eigen::VectorXd> e_previous(4, Eigen::VectorXd::Zero(problem->dimension()));
  Eigen::VectorXd e_bar_previous = Eigen::VectorXd::Zero(problem->dimension());
  for (std::int64_t t = 1; t <= 20; ++t) {
    Eigen::VectorXd mean_u = Eigen::VectorXd::Zero(problem->dimension());
    cluster.Step({t, 0.05, 3}, x);
    Sink sink;
    const ProbeStep<double> step{t, 0.05, x, cluster.gradients(), *problem};
    ef->Observe(step, *birder, sink);
    domain->Observe(step, *birder, sink);
    min_b->Observe(step, *birder, sink);
    for (int i = 0; i < 4; ++i) {
      const Eigen::VectorXd& e = *birder->Observe(Quantity::kWorkerError, i);
      // ||e||^2 in the fixed order a GPU run reproduces (the scalar reference of it).
      EXPECT_EQ((sink.values[{"worker_sq_norm", i}]),
                one_bit::reference::SumSquares(one_bit::Input<double>{e.data()}, 0, e.size()));
      EXPECT_NEAR((sink.values[{"worker_sq_norm", i}]), e.squaredNorm(), 1e-15 * e.squaredNorm());
      const Eigen::VectorXd& b = *birder->Observe(Quantity::kRawDenominator, i);
      EXPECT_EQ((sink.values[{"min_b", i}]), b.minCoeff());
      EXPECT_EQ((sink.values[{"min_denominator", i}]), (b.array() + 1e-8).minCoeff());
      EXPECT_EQ((sink.values[{"at_constant", i}]), static_cast<double>((b.array() == 0).count()));
      // Q's input was m / (b + eps) + e_{t-1}.
      const Eigen::VectorXd input =
          birder->Observe(Quantity::kMomentum, i)
              ->cwiseQuotient(*birder->Observe(Quantity::kDenominator, i)) +
          e_previous[static_cast<std::size_t>(i)];
      const auto outside = (input.array().abs() > 1.0).count();
      EXPECT_EQ((sink.values[{"worker_fraction", i}]), static_cast<double>(outside) / 7.0);
      mean_u += input - e;  // u = input - e
      e_previous[static_cast<std::size_t>(i)] = e;
    }
    const Eigen::VectorXd& e_bar = *birder->Observe(Quantity::kServerError, kServer);
    EXPECT_EQ(
        (sink.values[{"server_sq_norm", kServer}]),
        one_bit::reference::SumSquares(one_bit::Input<double>{e_bar.data()}, 0, e_bar.size()));
    // The server's Q input was mean(u) + e_bar_{t-1}, and every u^(i)_j is +-1, so the mean lies
    // in [-1, 1]: it leaves the interval only through e_bar_{t-1}.
    mean_u /= 4;
    const Eigen::VectorXd server_input = mean_u + e_bar_previous;
    EXPECT_EQ((sink.values[{"server_fraction", kServer}]),
              static_cast<double>((server_input.array().abs() > 1.0).count()) / 7.0);
    e_bar_previous = e_bar;
  }
}

TEST(Experiment, NonFiniteQuantizerInputStopsTheRunAsDiverged) {
  // eps = 0 and a feature that is always 0: b = m = 0 there, so m / b is NaN at step 1 (the
  // other two coordinates have nonzero gradients: a > 0 and every label is 1). The run must say
  // so instead of quantizing NaN into a valid-looking bit.
  TempDir dir;
  WriteFile(dir / "zero.csv", "a,zero,y\n1,0,1\n2,0,1\n3,0,1\n4,0,1\n");
  const RunSpec spec = ParseSpec(R"toml(
seed = 1
steps = 10
workers = 2
[data]
source = "csv"
path = "zero.csv"
[problem]
name = "logreg"
batch_size = 0
[schedule]
lr = 0.1
[[optimizer]]
name = "birder"
eps = 0.0
)toml",
                                 dir / "spec.toml");
  const ExperimentReport report = RunQuietly(spec, dir / "out");
  EXPECT_EQ(report.runs[0].record.status,
            "diverged at step 1: 1 of 3 inputs to worker 0's compressor are NaN or infinite");
  EXPECT_EQ(report.runs[0].record.steps_done, 1);
  EXPECT_THAT(FormatRunTable(report), HasSubstr("DIVERGED"));
  EXPECT_TRUE(std::filesystem::exists(dir / "out/results.sqlite"));
}

TEST(Experiment, InterruptedRunLeavesEarlierResultsUntouchedAndNoPartialFiles) {
  TempDir dir;
  const RunSpec spec = Spec("fp32");
  RunQuietly(spec, dir.path());
  const std::string before = ReadFile(dir / "metrics.csv");
  std::atomic<bool> stop{true};
  ExperimentOptions options;
  options.out_dir = dir.path();
  options.progress = false;
  options.stop = &stop;
  EXPECT_THROW(RunExperiment(spec, options), Interrupted);
  EXPECT_EQ(ReadFile(dir / "metrics.csv"), before);
  std::set<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    files.insert(entry.path().filename().string());
  }
  EXPECT_EQ(files, (std::set<std::string>{".results", "metrics.csv", "params.npy", "results.sqlite",
                                          "runs.csv"}));
  // The interrupted run's staging folder is gone; the published set stays.
  std::set<std::string> store;
  for (const auto& entry : std::filesystem::directory_iterator(dir / ".results")) {
    store.insert(entry.path().filename().string());
  }
  EXPECT_EQ(store, (std::set<std::string>{"current", "gen-0"}));
}

TEST(Experiment, ResultsThatCannotBeReplacedAreRefusedBeforeRunning) {
  TempDir dir;
  std::filesystem::create_directories(dir / "metrics.csv");
  EXPECT_THAT(testing::UserErrorOf([&] { RunQuietly(Spec("fp32"), dir.path()); }),
              HasSubstr("metrics.csv was not written by lemmalab"));
  EXPECT_FALSE(std::filesystem::exists(dir / "results.sqlite"));
  EXPECT_FALSE(std::filesystem::exists(dir / "results.sqlite.partial"));
}

TEST(Experiment, ProbeThatAppliesToNoOptimizerIsRefused) {
  TempDir dir;
  RunSpec spec = ParseSpec(R"toml(
seed = 1
steps = 2
probes = ["min-b"]
[data]
source = "synthetic-logistic"
[problem]
name = "logreg"
[schedule]
lr = 0.1
[[optimizer]]
name = "adam"
)toml",
                           dir / "s.toml");
  EXPECT_THAT(testing::UserErrorOf([&] { RunQuietly(spec, dir / "out"); }),
              HasSubstr("probe 'min-b' applies to none of the optimizers (adam)"));
  EXPECT_FALSE(std::filesystem::exists(dir / "out"));
}

}  // namespace
}  // namespace lemmalab
