#include "cli/app.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstring>
#include <iterator>
#include <nlohmann/json.hpp>

#include "cli/experiment.h"
#include "cli/spec.h"
#include "compressors/compressor.h"
#include "core/error.h"
#include "optimizers/optimizer.h"
#include "optimizers/schedule.h"
#include "problems/dataset.h"
#include "problems/problem.h"
#include "theory/probe.h"

namespace lemmalab {
namespace {

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

template <typename Entry>
void AddSection(const Registry<Entry>& registry, std::string_view title, nlohmann::json& json,
                std::string& text) {
  std::size_t width = 0;
  for (const Entry& e : registry.entries()) width = std::max(width, e.name.size());
  text += fmt::format("{}\n", title);
  auto& items = json[std::string(title)] = nlohmann::json::array();
  for (const Entry& e : registry.entries()) {
    text += fmt::format("  {:<{}}  {}\n", e.name, width, e.summary);
    items.push_back({{"name", e.name}, {"summary", e.summary}});
  }
}

int RunCommand(const std::string& spec_path, std::string out_dir, int threads) {
  const RunSpec spec = LoadSpec(spec_path);
  if (out_dir.empty()) out_dir = (std::filesystem::path("results") / spec.path.stem()).string();
  ExperimentOptions options;
  options.out_dir = out_dir;
  options.threads = threads;
  options.stop = &g_interrupted;
  const StopSignals stop_signals;
  const ExperimentReport report = RunExperiment(spec, options);
  fmt::print("{}\nresults: {}/ (results.sqlite, metrics.csv, params.npy)\n", FormatReport(report),
             out_dir);
  return kExitOk;
}

// Optimizers with their paper reference and every option they read.
void AddOptimizers(nlohmann::json& json, std::string& text) {
  text += "optimizers\n";
  auto& items = json["optimizers"] = nlohmann::json::array();
  for (const OptimizerInfo& e : Optimizers().entries()) {
    text += fmt::format("  {}  {}\n      source: {}\n", e.name, e.summary, e.reference);
    nlohmann::json options = nlohmann::json::array();
    for (const OptionTable::Use& use : OptimizerOptions(e)) {
      text += fmt::format("      {} = {}\n", use.key, use.description);
      options.push_back({{"key", use.key}, {"description", use.description}});
    }
    items.push_back({{"name", e.name},
                     {"summary", e.summary},
                     {"reference", e.reference},
                     {"options", std::move(options)}});
  }
}

}  // namespace

std::string ListRegistries(bool json) {
  nlohmann::json doc = nlohmann::json::object();
  std::string text;
  AddOptimizers(doc, text);
  AddSection(Compressors(), "compressors", doc, text);
  AddSection(Problems(), "problems", doc, text);
  AddSection(DataSources(), "data", doc, text);
  AddSection(Schedules(), "schedules", doc, text);
  AddSection(Probes(), "probes", doc, text);
  return json ? doc.dump(2) + "\n" : text;
}

int Main(int argc, char** argv) {
  CLI::App app{
      "lemmalab: a convergence testbed for communication-compressed distributed "
      "optimizers"};
  app.require_subcommand(1);

  bool json = false;
  CLI::App* list = app.add_subcommand("list", "List optimizers, compressors, problems, probes");
  list->add_flag("--json", json, "Print as JSON");

  std::string spec_path, out_dir;
  int threads = 0;
  CLI::App* run = app.add_subcommand("run", "Run the experiment a spec describes");
  run->add_option("SPEC", spec_path, "Run spec (TOML)")->required();
  run->add_option("--out", out_dir, "Results folder (default: results/<spec name>)");
  run->add_option("--threads", threads,
                  "Threads for the workers (default: chosen; results do not depend on it)")
      ->check(CLI::Range(1, 1024));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message and usage to stderr
    return kExitUserError;
  }

  try {
    if (list->parsed()) {
      fmt::print("{}", ListRegistries(json));
      return kExitOk;
    }
    return RunCommand(spec_path, out_dir, threads);
  } catch (const UserError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return kExitUserError;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr,
               "error: out of memory: the spec asks for more than this machine has "
               "(data size, batch_size, workers)\n");
    return kExitUserError;
  } catch (const Interrupted&) {
    const int signal = g_signal.load();
    fmt::print(stderr, "\ninterrupted ({}): no results written\n", strsignal(signal));
    return 128 + signal;
  } catch (const std::exception& e) {
    fmt::print(stderr, "internal error (please report): {}\n", e.what());
    return kExitInternalError;
  }
}

}  // namespace lemmalab
