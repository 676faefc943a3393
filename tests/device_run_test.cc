// Runs with device = "cuda": the whole GPU path of a run (spec, preparation, the cluster driving
// the batched optimizers, metrics, evaluation, results) on the host backend that emulates the GPU
// bit for bit, against the same spec on the CPU; and the refusals of what a GPU run cannot do,
// before the data load, with exit code 2.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "batched/backend.h"
#include "batched/device_optimizer.h"
#include "batched/optimizers.h"
#include "comm/cluster.h"
#include "engine/experiment.h"
#include "engine/results_reader.h"
#include "engine/spec.h"
#include "problems/quadratic.h"
#include "tests/cuda_test_util.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using ::testing::HasSubstr;
using testing::ReadFile;
using testing::TempDir;
using testing::UserErrorOf;
using testing::WriteFile;

// Every optimizer with a batched form, 1-bit Adam and 1-bit LAMB through their warmup and after,
// 0/1 Adam through its variance updates and its local steps (gradients at the workers' own x),
// EF21 with its default top-k and Birder with top-k and random-k, on a data problem with
// minibatches and on both schemes a GPU run takes, with the probes that read the optimizers' state
// (error feedback, Birder's denominators, Q's domain, LAMB's ratios).
constexpr const char* kSpec = R"toml(
seed = 11
steps = 40
workers = 5
eval_every = 4
probes = ["q-domain", "ef-norm", "min-b", "lamb-ratios", "q-deviate", "q-unbiased", "birder-z", "spams-vhat"]
{device}

[data]
source = "synthetic-logistic"
samples = 300
features = 21

[problem]
name = "logreg"
l2 = 1e-3
batch_size = 8

[communication]
scheme = "{scheme}"

[schedule]
lr = 0.05

[[optimizer]]
name = "birder"

[[optimizer]]
name = "birder"
label = "birder-scaled-sign"
compressor = { name = "scaled-sign", chunk = 8 }
t0 = 10

[[optimizer]]
name = "onebit-adam"
warmup_steps = 12

[[optimizer]]
name = "dist-spams"

[[optimizer]]
name = "onebit-lamb"
warmup_steps = 12

[[optimizer]]
name = "lamb"

[[optimizer]]
name = "zero-one-adam"
var_freeze_step = 16
var_update_scaler = 2
local_step_scaler = 1
local_step_clipper = 4

[[optimizer]]
name = "ef21"

[[optimizer]]
name = "birder"
label = "birder-sparse"
compressor = { name = "top-k", fraction = 0.2 }
server_compressor = { name = "random-k", k = 11, scaled = false }

[[optimizer]]
name = "ef21-sgdm"
compressor = "scaled-sign"

[[optimizer]]
name = "adam"

[[optimizer]]
name = "sgd"
)toml";

std::string SpecText(const std::string& device, const std::string& scheme) {
  std::string text = kSpec;
  text.replace(text.find("{device}"), 8, device);
  text.replace(text.find("{scheme}"), 8, scheme);
  return text;
}

ExperimentReport RunOn(batched::Backend backend, const RunSpec& spec,
                       const std::filesystem::path& out) {
  ExperimentOptions options;
  options.out_dir = out;
  options.progress = false;
  options.checkpoints = true;  // as lemmalab run: the spec's checkpoint_every is honoured
  options.device_backend = backend;
  options.device_gradients = false;  // the CPU's gradients: the optimizers' emulation is exact
  return RunExperiment(spec, options);
}

ExperimentReport RunEmulated(const RunSpec& spec, const std::filesystem::path& out) {
  return RunOn(batched::Backend::kHost, spec, out);
}

// Every probe value the results hold, one line each, in order.
std::string ProbeRows(const std::filesystem::path& out) {
  std::string rows;
  ResultsReader(out / "results.sqlite")
      .ForEachRow(
          "SELECT run_id, step, probe, series, worker, value FROM probes "
          "ORDER BY run_id, step, probe, series, worker",
          [&](sqlite3_stmt* row) {
            for (int c = 0; c < 6; ++c) rows += ResultsReader::Text(row, c) + " ";
            rows += "\n";
          });
  return rows;
}

// A value of the results' meta table.
std::string MetaValue(const std::filesystem::path& out, const std::string& key) {
  std::string value;
  ResultsReader(out / "results.sqlite")
      .ForEachRow(fmt::format("SELECT value FROM meta WHERE key = '{}'", key).c_str(),
                  [&](sqlite3_stmt* row) { value = ResultsReader::Text(row, 0); });
  return value;
}

// The GPU path on the host emulation (every machine) and on the GPU (where there is one).
class DeviceRunOn : public ::testing::TestWithParam<batched::Backend> {};

TEST_P(DeviceRunOn, WritesTheCpuRunsMetricsAndParametersBitForBit) {
  const batched::Backend backend = GetParam();
  if (backend == batched::Backend::kCuda) LEMMALAB_REQUIRE_GPU();
  // Both schemes in fp32, and the parameter server in fp64 (the double instantiations).
  for (const auto& [scheme, precision] :
       {std::pair<std::string, std::string>{"parameter-server", ""},
        {"allgather", ""},
        {"parameter-server", "precision = \"fp64\"\n"}}) {
    SCOPED_TRACE(scheme + " " + precision);
    TempDir dir;
    const ExperimentReport cpu =
        RunOn(backend, ParseSpec(SpecText(precision, scheme), "cpu.toml"), dir / "cpu");
    const ExperimentReport gpu =
        RunOn(backend, ParseSpec(SpecText(precision + "device = \"cuda\"", scheme), "gpu.toml"),
              dir / "gpu");
    ASSERT_EQ(gpu.runs.size(), cpu.runs.size());
    for (std::size_t r = 0; r < cpu.runs.size(); ++r) {
      EXPECT_EQ(gpu.runs[r].record.status, "completed");
      EXPECT_EQ(gpu.runs[r].record.bits_sent_per_worker, cpu.runs[r].record.bits_sent_per_worker);
    }
    // Losses, gradient norms, bits and bytes of every step, the evaluations, every probe value
    // and x at the end.
    for (std::size_t r = 0; r < cpu.runs.size(); ++r) {
      EXPECT_EQ(gpu.runs[r].probe_lines, cpu.runs[r].probe_lines) << cpu.runs[r].record.label;
    }
    const std::string probes = ProbeRows(dir / "cpu");
    EXPECT_GT(std::count(probes.begin(), probes.end(), '\n'), 40 * 3 * 5);
    EXPECT_NE(probes.find("lamb-ratios"), std::string::npos);
    EXPECT_EQ(ProbeRows(dir / "gpu"), probes);
    const std::string metrics = ReadFile(dir / "cpu/metrics.csv");
    EXPECT_GT(std::count(metrics.begin(), metrics.end(), '\n'), 40 * 5 * 10);
    EXPECT_EQ(ReadFile(dir / "gpu/metrics.csv"), metrics);
    EXPECT_EQ(ReadFile(dir / "gpu/params.npy"), ReadFile(dir / "cpu/params.npy"));
    // The results say where the run computed.
    EXPECT_EQ(MetaValue(dir / "cpu", "device"), "cpu");
    const std::string device = MetaValue(dir / "gpu", "device");
    if (backend == batched::Backend::kHost) {
      EXPECT_EQ(device, "cuda (emulated on the host)");
    } else {
      EXPECT_THAT(device, ::testing::StartsWith("cuda: CUDA runtime"));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, DeviceRunOn,
                         ::testing::Values(batched::Backend::kHost, batched::Backend::kCuda),
                         [](const ::testing::TestParamInfo<batched::Backend>& test) {
                           return std::string(batched::BackendName(test.param));
                         });

// A GPU run stopped (as by SIGINT) and resumed from its checkpoint ends as the uninterrupted run:
// the device state went out through the host copies and came back.
TEST(DeviceRun, ResumesFromItsCheckpointBitForBit) {
  TempDir dir;
  const RunSpec spec = ParseSpec(
      SpecText("device = \"cuda\"\ncheckpoint_every = 10", "parameter-server"), "gpu.toml");
  const ExperimentReport whole = RunEmulated(spec, dir / "whole");
  // In Birder with scaled sign after its T0; in 1-bit Adam's and 1-bit LAMB's warmup
  // (checkpointed at 10, resumed across the end of warmup at 12); in 0/1 Adam's local steps
  // (checkpointed at 20, between syncs).
  for (const auto& [run, step] :
       {std::pair{1, 34}, std::pair{2, 15}, std::pair{4, 15}, std::pair{6, 22}}) {
    SCOPED_TRACE(fmt::format("stopped after step {} of run {}", step, run));
    const std::filesystem::path out = dir / fmt::format("stop-{}-{}", run, step);
    std::atomic<bool> stop{false};
    ExperimentOptions options;
    options.out_dir = out;
    options.progress = false;
    options.checkpoints = true;
    options.device_backend = batched::Backend::kHost;
    options.device_gradients = false;
    options.stop = &stop;
    int current = 0;
    std::int64_t previous = 0;
    options.on_step = [&](std::int64_t t, double) {
      if (t < previous) ++current;  // the next run started
      previous = t;
      if (current == run && t == step) stop = true;
    };
    EXPECT_THROW(RunExperiment(spec, options), Interrupted);
    options.stop = nullptr;
    options.on_step = {};
    options.resume = true;
    const ExperimentReport resumed = RunExperiment(spec, options);
    EXPECT_EQ(ReadFile(out / "metrics.csv"), ReadFile(dir / "whole/metrics.csv"));
    EXPECT_EQ(ReadFile(out / "params.npy"), ReadFile(dir / "whole/params.npy"));
    EXPECT_EQ(ProbeRows(out), ProbeRows(dir / "whole"));
    ASSERT_EQ(resumed.runs.size(), whole.runs.size());
    for (std::size_t k = 0; k < whole.runs.size(); ++k) {
      EXPECT_EQ(resumed.runs[k].probe_lines, whole.runs[k].probe_lines);
    }
  }
}

// A spec whose data would fail to load (the file does not exist): what is refused before the
// data load is refused for its own reason. `head` goes before [data]; `optimizer` is the
// [[optimizer]] table's body.
std::string NeverLoaded(const std::string& head, const std::string& optimizer) {
  return fmt::format(R"toml(seed = 1
steps = 3
workers = 2
{}
[data]
source = "csv"
path = "/nonexistent/never-loaded.csv"
[problem]
name = "logreg"
[schedule]
lr = 0.1
[[optimizer]]
{}
)toml",
                     head, optimizer);
}

// What a GPU run cannot do yet is refused before the data load, at the key that asks for it.
TEST(DeviceRun, RefusesWhatDoesNotRunOnTheGpuYetByName) {
  const auto error_of = [](const std::string& head,
                           const std::string& optimizer = "name = \"birder\"") {
    TempDir dir;
    return UserErrorOf([&] {
      RunEmulated(ParseSpec(NeverLoaded("device = \"cuda\"\n" + head, optimizer), "gpu.toml"),
                  dir / "out");
    });
  };
  EXPECT_THAT(error_of("[communication]\nscheme = \"allreduce\""),
              HasSubstr("scheme = \"allreduce\" does not run on the GPU yet"));
  EXPECT_THAT(error_of("", "name = \"marina\""),
              HasSubstr("optimizer 'marina' has no batched (GPU) form yet"));
  EXPECT_THAT(
      error_of("", "name = \"birder\"\nserver_compressor = { name = \"qsgd\", levels = 4 }"),
      HasSubstr("the server compressor 'qsgd' has no batched (GPU) form yet"));
}

// The GPU memory the runs would take is measured before they are prepared (every buffer of the
// optimizers, gradients and samples built on the measuring backend) and a run that does not fit
// is refused with the sizes, before any of it is allocated.
TEST(DeviceRun, RefusesWhatDoesNotFitInTheGpusMemoryWithTheSizes) {
  TempDir dir;
  const RunSpec spec = ParseSpec(SpecText("device = \"cuda\"", "parameter-server"), "gpu.toml");
  ExperimentOptions options;
  options.out_dir = dir / "out";
  options.progress = false;
  options.device_backend = batched::Backend::kHost;
  options.device_memory = MemoryLimit::Given(64 * 1024, "a test's GPU");
  const std::string error = UserErrorOf([&] { RunExperiment(spec, options); });
  EXPECT_THAT(error, HasSubstr("gpu.toml: the estimated GPU memory"));
  EXPECT_THAT(error, HasSubstr("more than a test's GPU 64.0 KiB allows"));
  // 300 samples x 21 features in fp32 and their int labels, (300 x 21 + 300) x 4 bytes, and the
  // 5 shards' offsets and sizes, 2 x 5 x 8 bytes: 26 480 bytes.
  EXPECT_THAT(error, HasSubstr("the training samples 25.9 KiB"));
  EXPECT_THAT(error, HasSubstr("run 'birder-sparse'"));
  EXPECT_THAT(error, HasSubstr("5 workers x d = 22"));
  EXPECT_FALSE(std::filesystem::exists(dir / "out/metrics.csv"));
  // The same spec within a larger GPU runs.
  options.device_memory = MemoryLimit::Given(64 << 20, "a test's GPU");
  options.out_dir = dir / "fits";
  EXPECT_EQ(RunExperiment(spec, options).runs.size(), 12u);
}

// The measuring backend counts exactly what a batched optimizer allocates: SGD's mean (d), plus
// the adapter's gradients (n x d) and x (d).
// The host's part of a GPU run is estimated apart from the GPU's: 256 workers of an MLP with
// d = 402 946 hold over 1 GiB of Birder's worker state on the GPU, not on the host, so the host
// estimate lets the run through a 1 GiB host limit and the GPU's refuses it. The host holds the
// state only as copies for probes, and the gradients of a problem the CPU computes.
TEST(DeviceRun, EstimatesTheHostsMemoryApartFromTheGpus) {
  TempDir dir;
  const auto refusal = [&](const std::string& top, int workers, const std::string& problem) {
    const std::string text = top +
                             fmt::format(R"toml(
device = "cuda"
seed = 1
steps = 3
workers = {}
)toml",
                                         workers) +
                             problem + R"toml(
[[optimizer]]
name = "birder"
schedule = { lr = 0.01 }
)toml";
    WriteFile(dir / "gpu.toml", text);
    const RunSpec spec = ParseSpec(text, (dir / "gpu.toml").string());
    ExperimentOptions options;
    options.out_dir = dir / "out";
    options.progress = false;
    options.shares_process = true;  // the data are estimated, not this test program's memory
    options.device_backend = batched::Backend::kHost;
    options.max_memory = MemoryLimit::Given(1 << 30, "a test's host");
    options.device_memory = MemoryLimit::Given(64 * 1024, "a test's GPU");
    return UserErrorOf([&] { RunExperiment(spec, options); });
  };
  const std::string mlp =
      "[data]\nsource = \"synthetic-logistic\"\nsamples = 512\nfeatures = 784\n"
      "[problem]\nname = \"mlp\"\nhidden = [512]\n";
  std::string error = refusal("", 256, mlp);
  EXPECT_THAT(error, HasSubstr("the estimated GPU memory"));
  EXPECT_THAT(error, HasSubstr("256 workers x d = 402946"));
  // Probes read the state through host copies: those are the host's.
  error = refusal("probes = [\"ef-norm\"]", 256, mlp);
  EXPECT_THAT(error, HasSubstr("the estimated memory"));
  EXPECT_THAT(error, HasSubstr("more than a test's host 1.00 GiB allows"));
  EXPECT_THAT(error,
              HasSubstr("the host copies of the GPU state that probes and checkpoints read"));
  // Rosenbrock's gradients are computed on the CPU and copied to the GPU: 256 workers x 3
  // vectors (the gradient, its copy for the upload, the worker's own x) x 10^6 floats, 2.86 GiB.
  error = refusal("", 256, "[problem]\nname = \"rosenbrock\"\ndimension = 1000000\n");
  EXPECT_THAT(error, HasSubstr("the estimated memory"));
  EXPECT_THAT(error,
              HasSubstr("every worker's gradient, computed on the CPU for the GPU 2.86 GiB"));
}

// Probes' squared norms of a GPU run are reduced on the device (DeviceOptimizer's SquaredNorm,
// which finds the buffer that holds the quantity without copying it), to the bits the CPU
// optimizer's vectors give in the same fixed order: every batched optimizer, every quantity, every
// worker and the server, through warmups and freezes.
TEST(DeviceRun, ReducesTheProbesSquaredNormsOnTheDeviceToTheCpusBits) {
  constexpr int kWorkers = 3;
  constexpr std::int64_t kDimension = 37;
  QuadraticOptions q;
  q.spectrum.dimension = kDimension;
  q.noise.sigma = 0.1;
  const auto problem = MakeQuadratic<double>(BuildQuadraticModel(q, kWorkers, 5));
  const std::map<std::string_view, std::string> extra = {
      {"onebit-adam", "warmup_steps = 3"},
      {"onebit-lamb", "warmup_steps = 3"},
      {"zero-one-adam", "var_freeze_step = 3\nlocal_step_clipper = 2"}};
  constexpr Quantity kLast = Quantity::kShift;
  int compared = 0;
  for (const std::string_view name : batched::BatchedOptimizerNames()) {
    SCOPED_TRACE(name);
    const auto it = extra.find(name);
    const std::string text =
        fmt::format("name = \"{}\"\n{}", name, it == extra.end() ? "" : it->second);
    const OptimizerContext context{kDimension, kWorkers};
    auto cpu = MakeOptimizer<double>(*ParseOptionTable(text, "optimizer"), context);
    auto gpu = batched::MakeDeviceOptimizer<double>(*ParseOptionTable(text, "optimizer"), context,
                                                    batched::Backend::kHost);
    Cluster<double> cpu_cluster(*problem, *cpu), gpu_cluster(*problem, *gpu);
    Eigen::VectorXd x_cpu = problem->InitialPoint(), x_gpu = x_cpu;
    for (std::int64_t t = 1; t <= 6; ++t) {
      cpu_cluster.Step({t, 0.05, 9}, x_cpu);
      gpu_cluster.Step({t, 0.05, 9}, x_gpu);
      ASSERT_EQ(x_cpu, x_gpu) << "step " << t;
      for (int k = 0; k <= static_cast<int>(kLast); ++k) {
        const auto quantity = static_cast<Quantity>(k);
        for (int worker = kServer; worker < kWorkers; ++worker) {
          const std::optional<double> expected = cpu->observable().SquaredNorm(quantity, worker);
          const std::optional<double> got = gpu->observable().SquaredNorm(quantity, worker);
          ASSERT_EQ(got.has_value(), expected.has_value())
              << "step " << t << ", quantity " << k << ", worker " << worker;
          if (!expected) continue;
          EXPECT_EQ(*got, *expected) << "step " << t << ", quantity " << k << ", worker " << worker;
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 500);
}

TEST(DeviceRun, MeasuresTheBytesItWouldAllocate) {
  OptionTable table("optimizer 'sgd'", "");
  table.Set("name", {std::string("sgd"), ""});
  const batched::DeviceBytes tally;
  batched::MakeDeviceOptimizer<float>(table, OptimizerContext{1000, 7}, batched::Backend::kMeasure);
  EXPECT_EQ(tally.bytes(), (1000 + 7 * 1000 + 1000) * 4.0);
}

// On this machine's GPU backend: refused with exit code 2, naming the build or the missing device,
// before the data load (the data file does not exist), and leaving no results folder behind;
// from the spec, from --set, and misspelt.
TEST(DeviceRun, WithoutAGpuIsRefusedWithExitCode2) {
  // What is tested is the refusal of a machine without a device; on one with a device there is
  // nothing to refuse.
  if (testing::MissingDevice().empty()) GTEST_SKIP() << "this machine has a CUDA device";
  TempDir dir;
  const std::filesystem::path spec = dir / "gpu.toml";
  WriteFile(spec, NeverLoaded("", "name = \"birder\""));
  const std::string expected = batched::HaveCudaBackend()
                                   ? "device = \"cuda\": no CUDA device: "
                                   : "device = \"cuda\": this lemmalab was built without CUDA";
  for (const std::string how : {"--set=device=cuda", "--set=device=\"cuda\""}) {
    const testing::CommandResult result =
        testing::RunLemmalab({"run", spec.string(), how, "--out", (dir / "out").string()});
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_THAT(result.err, HasSubstr(expected));
    EXPECT_FALSE(std::filesystem::exists(dir / "out"));
  }
  // A sweep over the device checks every point before it runs one.
  const std::filesystem::path sweep = dir / "sweep.toml";
  WriteFile(sweep, R"toml(seed = 1
steps = 3
workers = 2
[problem]
name = "quadratic"
dimension = 8
[schedule]
lr = 0.01
[[optimizer]]
name = "birder"
[sweep]
device = ["cpu", "cuda"]
)toml");
  const testing::CommandResult swept =
      testing::RunLemmalab({"sweep", sweep.string(), "--out", (dir / "swept").string()});
  EXPECT_EQ(swept.exit_code, 2) << swept.err;
  EXPECT_THAT(swept.err, HasSubstr("point 2 of 2 (device=cuda)"));
  EXPECT_THAT(swept.err, HasSubstr(expected));
  EXPECT_FALSE(std::filesystem::exists(dir / "swept"));
  const testing::CommandResult misspelt = testing::RunLemmalab(
      {"run", spec.string(), "--set", "device=gpu", "--out", (dir / "out").string()});
  EXPECT_EQ(misspelt.exit_code, 2);
  EXPECT_THAT(misspelt.err, HasSubstr("device"));
  EXPECT_THAT(misspelt.err, HasSubstr("cuda"));
}

}  // namespace
}  // namespace lemmalab
