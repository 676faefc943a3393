#include "cli/app.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <charconv>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/check.h"
#include "cli/list.h"
#include "cli/report.h"
#include "cli/run_table.h"
#include "cli/sweep.h"
#include "cli/table.h"
#include "cli/trace.h"
#include "comm/network.h"
#include "comm/scheme.h"
#include "compressors/compressor.h"
#include "core/build_info.h"
#include "core/error.h"
#include "core/text.h"
#include "engine/experiment.h"
#include "engine/failure.h"
#include "engine/spec.h"
#include "optimizers/optimizer.h"
#include "optimizers/schedule.h"
#include "problems/dataset.h"
#include "problems/problem.h"
#include "theory/assertion.h"
#include "theory/probe.h"

#ifdef LEMMALAB_HAVE_MPI
#include "comm/mpi_transport.h"
#endif

namespace lemmalab {
namespace {

// For an unexpected argument (CLI11's ExtrasError) that looks like a misspelt option of the
// command it was given to: " ('--stpes': did you mean '--steps'?)" for each; else "".
std::string MisspeltOptions(const CLI::App& app, const CLI::ParseError& error) {
  if (dynamic_cast<const CLI::ExtrasError*>(&error) == nullptr) return "";
  const CLI::App* command = &app;
  while (!command->get_subcommands().empty()) command = command->get_subcommands().back();
  std::vector<std::string> options;
  for (const CLI::App* scope : {command, &app}) {
    for (const CLI::Option* option : scope->get_options()) {
      for (const std::string& name : option->get_lnames()) options.push_back("--" + name);
    }
  }
  std::string hints;
  for (const std::string& extra : app.remaining(true)) {
    if (!extra.starts_with("--")) continue;
    const std::string name = extra.substr(0, extra.find('='));
    if (const auto match = ClosestMatch(name, options)) {
      hints += fmt::format(" ('{}': did you mean '{}'?)", name, *match);
    }
  }
  return hints;
}

// SIGINT, SIGTERM and SIGHUP stop the run between steps; partial results are removed.
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
std::atomic<bool> g_interrupted{false};
std::atomic<int> g_signal{0};

extern "C" void OnStopSignal(int signal) {
  g_signal.store(signal);
  g_interrupted.store(true);
}

// Installs OnStopSignal for the stop signals and restores the previous handlers on destruction.
class StopSignals {
 public:
  StopSignals() {
    g_interrupted.store(false);
    g_signal.store(0);
    for (std::size_t i = 0; i < std::size(kStopSignals); ++i) {
      previous_[i] = std::signal(kStopSignals[i], OnStopSignal);
    }
  }
  ~StopSignals() {
    for (std::size_t i = 0; i < std::size(kStopSignals); ++i) {
      std::signal(kStopSignals[i], previous_[i]);
    }
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  void (*previous_[std::size(kStopSignals)])(int) = {};
};

// A spec with [sweep] is a grid of runs, which lemmalab sweep runs; run and check refuse it
// rather than run one arbitrary point.
void RequireNoSweep(const RunSpec& spec, std::string_view command) {
  if (!spec.sweep) return;
  throw UserError(fmt::format(
      "{}: the spec has a [sweep] table, a grid of runs: run it with lemmalab sweep {} --out DIR "
      "(lemmalab {} runs a spec without one)",
      spec.path.string(), spec.path.string(), command));
}

// results/<the spec's name>, the name made a plain folder name: a spec named "...toml" or
// "-x.toml" cannot send it out of results/ or make it look like an option.
std::string DefaultOutDir(const std::filesystem::path& spec) {
  std::string name = spec.stem().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  }
  while (!name.empty() && (name.front() == '.' || name.front() == '-')) name.erase(0, 1);
  return (std::filesystem::path("results") / (name.empty() ? "spec" : name)).string();
}

// What an interrupted run left: its last checkpoint when it has one, and the command that
// continues it (under mpirun, with as many processes as this job has).
std::string AfterInterrupt(const RunSpec& spec, const std::string& out_dir,
                           const Transport* transport) {
  const std::optional<CheckpointMark> mark = ResultsWriter::StagedCheckpoint(out_dir);
  if (!mark) return "no results written";
  return fmt::format(
      "no results written; the checkpoint at step {} of run {} is kept: {}lemmalab run {} "
      "--resume {} continues it",
      mark->step, mark->run + 1,
      transport == nullptr ? "" : fmt::format("mpirun -np {} ", transport->workers()),
      spec.path.string(), out_dir);
}

// --max-memory and --max-results as given (0: not given, the machine's and the disk's limits).
struct Limits {
  std::uint64_t memory = 0, results = 0;

  std::optional<MemoryLimit> Memory() const {
    return memory > 0
               ? std::optional(MemoryLimit::Given(static_cast<double>(memory), "--max-memory"))
               : std::nullopt;
  }
  std::optional<MemoryLimit> Results() const {
    return results > 0
               ? std::optional(MemoryLimit::Given(static_cast<double>(results), "--max-results"))
               : std::nullopt;
  }
  // Adds the two options to `command`. A limit is a size above 0: "no limit" is leaving the
  // option out, never a value that means it.
  void AddTo(CLI::App* command) {
    const CLI::Validator positive(
        [](std::string& bytes) -> std::string {
          std::uint64_t n = 0;
          const auto [end, ec] = std::from_chars(bytes.data(), bytes.data() + bytes.size(), n);
          if (ec != std::errc() || end != bytes.data() + bytes.size() || n == 0) {
            return "must be a size above 0 bytes (e.g. 512MiB, 8GiB), got " + bytes;
          }
          return {};
        },
        "SIZE > 0");
    const auto size_option = [&](const char* name, std::uint64_t& value, const char* help) {
      command->add_option(name, value, help)
          ->check(CLI::Validator(
              [](std::string& text) -> std::string {
                return !text.empty() && text.front() == '-'
                           ? "must be a size above 0 bytes (e.g. 512MiB, 8GiB), got " + text
                           : std::string();
              },
              ""))
          ->transform(CLI::AsSizeValue(false))
          ->check(positive);
    };
    size_option("--max-memory", memory,
                "Refuse a run whose estimated memory is larger (e.g. 8GiB; default: what the "
                "machine has available)");
    size_option("--max-results", results,
                "Refuse a run whose estimated results are larger on disk (e.g. 500MiB; default: "
                "the free space where they go)");
  }
};

int RunCommand(const RunSpec& spec, std::string out_dir, bool resume, int threads,
               const Limits& limits, Transport* transport) {
  RequireNoSweep(spec, "run");
  if (out_dir.empty()) out_dir = DefaultOutDir(spec.path);
  ExperimentOptions options;
  options.out_dir = out_dir;
  options.threads = threads;
  options.stop = &g_interrupted;
  options.stop_signal = &g_signal;
  options.transport = transport;
  options.checkpoints = true;
  options.resume = resume;
  options.max_memory = limits.Memory();
  options.max_results = limits.Results();
  const bool reporting = transport == nullptr || transport->reports();
  const StopSignals stop_signals;
  try {
    const ExperimentReport report = RunExperiment(spec, options);
    if (reporting) {
      fmt::print("{}\nresults: {}/ (results.sqlite, metrics.csv, runs.csv, params.npy)\n",
                 FormatRunTable(report, ConsoleWidth()), out_dir);
    }
  } catch (const Interrupted& e) {
    // Under mpirun every rank stops after the same step (engine/experiment.h): one message, and
    // every rank's exit code is the signalled rank's.
    const int signal = e.signal() != 0 ? e.signal() : g_signal.load();
    if (reporting) {
      fmt::print(stderr, "\ninterrupted ({}): {}\n", strsignal(signal),
                 AfterInterrupt(spec, out_dir, transport));
    }
    return 128 + signal;
  }
  return kExitOk;
}

// `lemmalab check`: judges the spec's claims; exit 1 when a verdict is not the expected one.
int CheckCommand(const std::string& spec_path, const std::vector<std::string>& settings,
                 std::string out_dir, const std::string& from, int threads, const Limits& limits) {
  const RunSpec spec = LoadSpec(spec_path, settings);
  RequireNoSweep(spec, "check");
  CheckOptions options;
  options.from = !from.empty();
  if (options.from) out_dir = from;
  if (out_dir.empty()) out_dir = DefaultOutDir(spec.path);
  options.out_dir = out_dir;
  options.threads = threads;
  options.stop = &g_interrupted;
  options.max_memory = limits.Memory();
  options.max_results = limits.Results();
  const StopSignals stop_signals;
  const CheckReport report = RunCheck(spec, options);
  WriteCheckFiles(report, options.out_dir);
  fmt::print("{}verdicts: {}/check.md, {}/check.json\n", FormatCheck(report), out_dir, out_dir);
  return report.mismatches() == 0 ? kExitOk : kExitCheckFailed;
}

// `lemmalab sweep`: the points of a [sweep] grid into one database; resumable.
int SweepCommand(const std::string& spec_path, const std::vector<std::string>& settings,
                 std::string out_dir, int jobs, const Limits& limits) {
  if (out_dir.empty()) out_dir = DefaultOutDir(spec_path);
  SweepOptions options;
  options.out_dir = out_dir;
  options.jobs = jobs;
  options.settings = settings;
  options.stop = &g_interrupted;
  options.max_memory = limits.Memory();
  options.max_results = limits.Results();
  const StopSignals stop_signals;
  try {
    fmt::print("{}", FormatSweep(RunSweep(spec_path, options), out_dir));
  } catch (const Interrupted&) {
    const int signal = g_signal.load();
    fmt::print(stderr,
               "\ninterrupted ({}): the finished points are saved in {}; run the same command "
               "to resume\n",
               strsignal(signal), out_dir);
    return 128 + signal;
  }
  return kExitOk;
}

#ifdef LEMMALAB_HAVE_MPI
// `lemmalab run` as one rank of an MPI job. Errors every rank meets alike (the spec, the world
// size) are printed once, by rank 0, and every rank exits with 2. An error in the run itself may
// be one rank's alone, so that rank prints it and aborts the job, which ends every rank instead
// of leaving them waiting in a collective.
int RunUnderMpi(const MpiSession& session, const std::string& spec_path,
                const std::vector<std::string>& settings, const std::string& out_dir, bool resume,
                int threads, const Limits& limits) {
  std::optional<MpiTransport> transport;
  RunSpec spec;
  try {
    spec = LoadSpec(spec_path, settings);
    if (spec.workers != session.size()) {
      throw UserError(fmt::format(
          "{}: the spec has workers = {} but mpirun started {} processes (one worker per "
          "process): run mpirun -np {} or set workers = {}",
          spec.path.string(), spec.workers, session.size(), spec.workers, session.size()));
    }
    RequireNoProbes(spec);
    transport.emplace();
    if (!spec.comm.topology_given) {
      spec.comm.topology = transport->HostTopology(spec.path.string());
      spec.comm.topology_given = true;
    }
  } catch (const UserError& e) {
    if (session.rank() == 0) fmt::print(stderr, "error: {}\n", e.what());
    return kExitUserError;
  }
  try {
    return RunCommand(spec, out_dir, resume, threads, limits, &*transport);
  } catch (const SharedFailure& e) {
    // Met by every rank before the first step: printed once, and no rank aborts the job.
    if (std::string_view(e.what()).size() > 0) fmt::print(stderr, "{}\n", e.what());
    return e.exit_code();
  } catch (const UserError& e) {
    fmt::print(stderr, "error (rank {} of {}): {}\n", session.rank(), session.size(), e.what());
    MpiSession::Abort(kExitUserError);
  } catch (const std::exception& e) {
    fmt::print(stderr, "internal error (rank {} of {}, please report): {}\n", session.rank(),
               session.size(), e.what());
    MpiSession::Abort(kExitInternalError);
  }
}
#endif

// The command line's commands; Main adds the check of standard output.
int Dispatch(int argc, char** argv) {
  CLI::App app{
      "lemmalab: a convergence testbed for communication-compressed distributed "
      "optimizers"};
  app.require_subcommand(0, 1);
  // A folder argument given as "" would silently mean the default folder, or the current one.
  const CLI::Validator folder(
      [](std::string& value) {
        return value.empty() ? std::string("an empty path names no folder") : std::string();
      },
      "DIR");

  bool json = false;
  std::string list_kind;
  CLI::App* list = app.add_subcommand(
      "list", "List the components (optimizers, compressors, problems, ...) and their options");
  std::string list_name;
  list->add_option("KIND", list_kind,
                   fmt::format("Only this kind: {}", fmt::join(ListKinds(), ", ")));
  list->add_option("NAME", list_name, "Only this component of the kind (e.g. list problems mlp)");
  list->add_flag("--json", json, "Print as JSON");

  std::string spec_path, out_dir, resume_dir;
  std::vector<std::string> settings;
  int threads = 0;
  Limits limits;
  const auto add_settings = [&](CLI::App* command) {
    command->add_option("--set", settings,
                        "PATH=VALUE: set an option of the spec, as a [sweep] axis names it "
                        "(steps=10, optimizer.beta=0.9, optimizer.compressor=sign); repeatable");
  };
  CLI::App* run = app.add_subcommand("run", "Run the experiment a spec describes");
  run->add_option("SPEC", spec_path, "Run spec (TOML)")->required();
  CLI::Option* run_out =
      run->add_option("--out", out_dir, "Results folder (default: results/<spec name>)")
          ->check(folder);
  run->add_option("--resume", resume_dir,
                  "Continue the run whose last checkpoint is in this results folder "
                  "(the spec's checkpoint_every); the same spec, --set arguments and build")
      ->excludes(run_out)
      ->check(folder);
  limits.AddTo(run);
  add_settings(run);
  run->add_option("--threads", threads,
                  "Threads for the workers (default: chosen; results do not depend on it)")
      ->check(CLI::Range(1, 1024));

  std::string check_spec, check_out, check_from;
  int check_threads = 0;
  CLI::App* check = app.add_subcommand("check",
                                       "Run a spec (or read its results) and judge its [[assert]] "
                                       "claims; exit 1 when a verdict is not the expected one");
  check->add_option("SPEC", check_spec, "Run spec (TOML) with [[assert]] tables")->required();
  CLI::Option* check_out_option =
      check->add_option("--out", check_out, "Results folder (default: results/<spec name>)")
          ->check(folder);
  check
      ->add_option("--from", check_from,
                   "Judge the finished results in this folder instead of running")
      ->excludes(check_out_option)
      ->check(folder);
  check->add_option("--threads", check_threads, "Threads for the workers (default: chosen)")
      ->check(CLI::Range(1, 1024));
  add_settings(check);
  limits.AddTo(check);

  std::string trace_spec, trace_out;
  TraceRequest trace_request;
  CLI::App* trace = app.add_subcommand(
      "trace",
      "Show what each worker and the server compute at a few steps, coordinate by coordinate, "
      "by the symbols of the algorithm's paper (taken from the real run; nothing else written)");
  trace->add_option("SPEC", trace_spec, "Run spec (TOML) of a small problem")->required();
  trace->add_option("--steps", trace_request.steps,
                    "The steps to show: A-B, or A for one (default 1)");
  trace->add_option("--coords", trace_request.coordinates,
                    "Coordinates to show: 0,2,5-7 or all (default: all up to 8, else 0-3)");
  trace->add_option("--workers", trace_request.workers,
                    "Workers to show: 0,1 or all (default: all up to 4, else 0,1); the server "
                    "is always shown");
  trace
      ->add_option("--out", trace_out,
                   "Also write DIR/trace.csv (label,step,worker,symbol,coordinate,value) and "
                   "DIR/symbols.csv")
      ->check(folder);
  add_settings(trace);

  std::string sweep_spec, sweep_out;
  int jobs = 0;
  CLI::App* sweep = app.add_subcommand(
      "sweep",
      "Run every point of a spec's [sweep] grid into one results database; the same command "
      "again resumes");
  sweep->add_option("SPEC", sweep_spec, "Run spec (TOML) with a [sweep] table")->required();
  sweep->add_option("--out", sweep_out, "Results folder (default: results/<spec name>)")
      ->check(folder);
  sweep->add_option("--jobs", jobs, "Points run at a time (default: one per core)")
      ->check(CLI::Range(1, 1024));
  add_settings(sweep);
  limits.AddTo(sweep);

  std::string report_dir;
  bool no_plots = false;
  CLI::App* report = app.add_subcommand(
      "report",
      "Summarise a results folder (run, check or sweep): mean and confidence interval per "
      "configuration over seeds, summary.csv, report.md and plots");
  report->add_option("DIR", report_dir, "Results folder")->required()->check(folder);
  report->add_flag("--no-plots", no_plots, "Write the tables only");

  bool version = false;
  app.add_flag("--version", version, "Print lemmalab's version, commit and build, and exit");

#ifdef LEMMALAB_HAVE_MPI
  // Under mpirun every rank runs this; MPI lives until Main returns.
  std::optional<MpiSession> mpi;
  if (LaunchedByMpirun()) mpi.emplace();
  const bool quiet = mpi && mpi->rank() != 0;
#else
  const bool quiet = false;
#endif

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    if (quiet) return kExitOk;
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (quiet) return kExitUserError;
    if (app.get_subcommands().empty() && argc > 1 && argv[1][0] != '-') {
      std::vector<std::string> commands;
      for (const CLI::App* command : app.get_subcommands({}))
        commands.push_back(command->get_name());
      const std::string_view word = argv[1];
      fmt::print(stderr, "error: unknown command '{}'{}; {} (lemmalab --help)\n", word,
                 DidYouMean(word, commands),
                 word.ends_with(".toml")
                     ? fmt::format("to run a spec: lemmalab run {}", word)
                     : fmt::format("the commands are {}", fmt::join(commands, ", ")));
    } else if (const std::string hint = MisspeltOptions(app, e); !hint.empty()) {
      fmt::print(stderr, "error: {}{}\n", e.what(), hint);
      fmt::print(stderr, "(lemmalab {} --help lists its options)\n",
                 app.get_subcommands().back()->get_name());
    } else {
      app.exit(e);  // prints the message and usage to stderr
    }
    return kExitUserError;
  }

  try {
    if (version) {
      if (!quiet) {
        const BuildInfo& build = Build();
        fmt::print("lemmalab {}\ncommit {}\nbuild {}\n", build.version, build.commit, build.build);
      }
      return kExitOk;
    }
    if (app.get_subcommands().empty()) {
      if (!quiet) fmt::print(stderr, "{}", app.help());
      return kExitUserError;
    }
    if (report->parsed()) {
      ReportOptions options;
      options.dir = report_dir;
      options.plots = !no_plots;
      const ReportResult result = WriteReport(options);
      fmt::print("{}\nwritten: {}\n", result.text, fmt::join(result.written, ", "));
      return kExitOk;
    }
    if (list->parsed()) {
      const std::string listing = ListRegistries(json, list_kind, list_name);
      if (!quiet) fmt::print("{}", listing);
      return kExitOk;
    }
    // Commands that run in one process: under mpirun, rank 0 says why and every rank exits.
    const auto one_process = [&](std::string_view why) {
#ifdef LEMMALAB_HAVE_MPI
      if (mpi) {
        if (!quiet) fmt::print(stderr, "error: {} (run it without mpirun)\n", why);
        return true;
      }
#else
      (void)why;
#endif
      return false;
    };
    if (check->parsed()) {
      if (one_process("lemmalab check runs in one process: its probes read every worker's "
                      "state")) {
        return kExitUserError;
      }
      return CheckCommand(check_spec, settings, check_out, check_from, check_threads, limits);
    }
    if (trace->parsed()) {
      if (one_process("lemmalab trace runs its workers in one process, as the run would on any "
                      "backend")) {
        return kExitUserError;
      }
      const StopSignals stop_signals;
      return TraceCommand(trace_spec, settings, trace_request, trace_out, &g_interrupted);
    }
    if (sweep->parsed()) {
      if (one_process("lemmalab sweep runs its points in one process; --jobs sets how many at "
                      "a time")) {
        return kExitUserError;
      }
      return SweepCommand(sweep_spec, settings, sweep_out, jobs, limits);
    }
    const bool resume = !resume_dir.empty();
    if (resume) out_dir = resume_dir;
#ifdef LEMMALAB_HAVE_MPI
    if (mpi) return RunUnderMpi(*mpi, spec_path, settings, out_dir, resume, threads, limits);
#endif
    return RunCommand(LoadSpec(spec_path, settings), out_dir, resume, threads, limits, nullptr);
  } catch (...) {
    const Failure failure = CurrentFailure(g_signal.load());
    fmt::print(stderr, "{}\n", failure.message);
    return failure.exit_code;
  }
}

}  // namespace

int Main(int argc, char** argv) {
  const int code = Dispatch(argc, argv);
  // What went to standard output (a table, a listing) is part of the result: a write that
  // failed (a full disk, /dev/full) is reported, not lost behind exit code 0.
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  if (!flushed || std::ferror(stdout)) {
    const int reason = errno;
    std::clearerr(stdout);
    fmt::print(stderr, "error: standard output: cannot write: {}\n",
               !flushed && reason != 0 ? std::strerror(reason) : "the stream reported failure");
    return code == kExitOk ? kExitUserError : code;
  }
  return code;
}

}  // namespace lemmalab
