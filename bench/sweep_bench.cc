// A quickstart-sized ablation (Birder on breast cancer, d = 31, 8 workers, 400 steps: 4 betas x
// 4 compressors x 3 seeds = 48 runs) run two ways in the same process, alternating:
//   sweep:      lemmalab sweep SPEC (one process, points in parallel, default recording);
//   sequential: 48 x lemmalab run POINT.toml, one after another (the same points, as a user
//               would run them without sweeps).
// Counters: ratio = sweep wall time / sequential wall time (the issue's goal: <= 0.6 on 2
// cores), and the megabytes each leaves on disk (goal for the sweep: < 5 MB). The best of
// `rounds` of each is kept, so a noisy neighbour inflates neither side.
//
//   build/release/bench/sweep_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

constexpr const char* kBetas[] = {"0.9", "0.95", "0.99", "0.999"};
constexpr const char* kCompressors[] = {"\"stochastic-binary\"", "\"sign\"", "\"scaled-sign\"",
                                        "{ name = \"top-k\", fraction = 0.25 }"};
constexpr int kSeeds[] = {1, 2, 3};

// The spec without its sweep: {seed}, {beta} and {compressor} are filled in per point.
std::string Base(const std::string& seed, const std::string& beta, const std::string& compressor) {
  return fmt::format(R"toml(seed = {}
steps = 400
workers = 8
eval_every = 10
probes = ["ef-norm"]

[data]
source = "csv"
path = "{}/data/breast_cancer.csv"
label = "target"
normalize = "standardize"

[problem]
name = "logreg"
l2 = 1e-3
batch_size = 16

[[optimizer]]
name = "birder"
beta = {}
compressor = {}
schedule = {{ name = "constant", lr = 0.01 }}
)toml",
                     seed, LEMMALAB_SOURCE_DIR, beta, compressor);
}

void Write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Runs lemmalab with `arguments`, output discarded; aborts the benchmark when it fails.
bool Lemmalab(std::vector<std::string> arguments, benchmark::State& state) {
  arguments.insert(arguments.begin(), LEMMALAB_BINARY);
  std::vector<char*> argv;
  for (std::string& a : arguments) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  if (spawned != 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    state.SkipWithError(fmt::format("lemmalab {} failed", arguments[1]).c_str());
    return false;
  }
  return true;
}

double Megabytes(const std::filesystem::path& dir) {
  std::uintmax_t bytes = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) bytes += entry.file_size();
  }
  return static_cast<double>(bytes) / 1e6;
}

void BM_SweepVersusSequentialRuns(benchmark::State& state) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("lemmalab-sweep-bench-{}", getpid());
  std::filesystem::create_directories(dir / "points");
  Write(dir / "sweep.toml",
        Base("1", "0.9", "\"stochastic-binary\"") +
            "\n[sweep]\noptimizer.beta = [0.9, 0.95, 0.99, 0.999]\noptimizer.compressor = "
            "[\"stochastic-binary\", \"sign\", \"scaled-sign\", { name = \"top-k\", fraction = "
            "0.25 }]\nseed = [1, 2, 3]\n");
  std::vector<std::filesystem::path> points;
  for (const char* beta : kBetas) {
    for (const char* compressor : kCompressors) {
      for (const int seed : kSeeds) {
        points.push_back(dir / "points" / fmt::format("{}.toml", points.size()));
        Write(points.back(), Base(fmt::format("{}", seed), beta, compressor));
      }
    }
  }
  using Clock = std::chrono::steady_clock;
  double sweep = 1e300, sequential = 1e300, sweep_mb = 0, sequential_mb = 0;
  for (auto _ : state) {
    for (int round = 0; round < state.range(0); ++round) {
      std::filesystem::remove_all(dir / "sweep-out");
      auto start = Clock::now();
      if (!Lemmalab({"sweep", (dir / "sweep.toml").string(), "--out", (dir / "sweep-out").string()},
                    state)) {
        return;
      }
      sweep = std::min(sweep, std::chrono::duration<double>(Clock::now() - start).count());
      sweep_mb = Megabytes(dir / "sweep-out");

      std::filesystem::remove_all(dir / "runs-out");
      start = Clock::now();
      for (std::size_t i = 0; i < points.size(); ++i) {
        if (!Lemmalab({"run", points[i].string(), "--out",
                       (dir / "runs-out" / fmt::format("{}", i)).string()},
                      state)) {
          return;
        }
      }
      sequential =
          std::min(sequential, std::chrono::duration<double>(Clock::now() - start).count());
      sequential_mb = Megabytes(dir / "runs-out");
    }
  }
  std::filesystem::remove_all(dir);
  state.counters["sweep_s"] = sweep;
  state.counters["sequential_s"] = sequential;
  state.counters["ratio"] = sweep / sequential;
  state.counters["sweep_MB"] = sweep_mb;
  state.counters["sequential_MB"] = sequential_mb;
}
BENCHMARK(BM_SweepVersusSequentialRuns)->Arg(3)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
