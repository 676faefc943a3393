#include "cli/sweep.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <vector>

#include "cli/sweep_grid.h"
#include "core/build_info.h"
#include "core/error.h"
#include "engine/directory_lock.h"
#include "engine/experiment.h"
#include "engine/results.h"
#include "engine/spec.h"
#include "theory/probe.h"

namespace lemmalab {
namespace {

using Clock = std::chrono::steady_clock;

// A sweep records about this many points per series unless the spec says otherwise.
constexpr std::int64_t kRecordsPerSeries = 100;
constexpr std::string_view kInFlight = ".inflight";

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// 0:07, 12:34, 1:02:03.
std::string Duration(double seconds) {
  const auto s = static_cast<long long>(std::max(0.0, std::round(seconds)));
  if (s < 3600) return fmt::format("{}:{:02}", s / 60, s % 60);
  return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
}

nlohmann::json AxisValueJson(const OptionValue& value) {
  if (const auto* b = std::get_if<bool>(&value.data)) return *b;
  if (const auto* i = std::get_if<std::int64_t>(&value.data)) return *i;
  if (const auto* d = std::get_if<double>(&value.data)) return *d;
  return ShowValue(value);
}

std::string AxesJson(const SweepGrid& grid, const SweepPoint& point) {
  nlohmann::ordered_json axes = nlohmann::ordered_json::object();
  for (std::size_t a = 0; a < grid.axes.size(); ++a) {
    axes[grid.axes[a].name] = AxisValueJson(*point.values[a]);
  }
  return axes.dump();
}

// What a point resolved to, as text: two points with the same text run the same thing.
std::string Fingerprint(const ExperimentReport& report) {
  std::string out;
  for (const RunReport& run : report.runs) {
    out += run.record.label + "{";
    for (const auto& [key, value] : run.hyperparameters.entries()) {
      out += fmt::format("{}={};", key, Hyperparameters::Show(value));
    }
    out += "}";
  }
  return out;
}

// The point currently running in one job slot, for the progress display.
struct Slot {
  std::mutex mutex;
  std::string label;
  std::int64_t steps = 0;
  std::atomic<std::int64_t> step{0};
  std::atomic<double> loss{std::nan("")};
  std::atomic<bool> busy{false};
};

class Sweep {
 public:
  Sweep(const std::filesystem::path& spec_path, const SweepOptions& options)
      : path_(spec_path), options_(options), text_(ReadSpecText(spec_path)) {
    root_ = ApplySettings(ParseSpecTable(text_, path_), options_.settings);
    const RunSpec base = SpecFromTable(root_->Clone(), path_, text_);
    if (!base.sweep) {
      throw UserError(fmt::format(
          "{}: no [sweep] table: nothing to sweep (add one, e.g. [sweep] seed = [1, 2, 3]; "
          "lemmalab run runs a spec without one)",
          path_.string()));
    }
    if (base.checkpoint_every > 0) {
      throw UserError(fmt::format(
          "{}: checkpoint_every = {}: a sweep resumes point by point (run the same command "
          "again); only lemmalab run saves checkpoints within a run",
          path_.string(), base.checkpoint_every));
    }
    if (!base.asserts.empty() || base.check) {
      throw UserError(fmt::format(
          "{}: lemmalab sweep does not judge [[assert]] claims or read [check]: for verdicts "
          "over seeds and worker counts, run lemmalab check on a spec without [sweep]",
          path_.string()));
    }
    grid_ = ExpandSweep(*base.sweep);
  }

  // Builds every point (every option checked) and refuses two that run the same thing.
  void Validate() {
    std::map<std::string, const SweepPoint*> seen;
    std::map<std::string, int> unused;  // probe -> points where it measures nothing
    for (const SweepPoint& point : grid_.points) {
      if (options_.stop != nullptr && options_.stop->load()) throw Interrupted();
      try {
        const ExperimentReport report = ValidateExperiment(SpecOf(point), &data_cache_, true);
        for (const std::string& probe : report.unused_probes) ++unused[probe];
        const std::string fingerprint = Fingerprint(report);
        const auto [it, inserted] = seen.emplace(fingerprint, &point);
        if (!inserted) {
          throw UserError(fmt::format(
              "it runs the same configuration as point {} ({}): an axis value that differs "
              "between them is read by no run (an optimizer with its own schedule ignores "
              "schedule.*; use optimizer.<label>.<option> for one optimizer's option)",
              it->second->index, it->second->label));
        }
      } catch (const UserError& e) {
        throw UserError(fmt::format("{}: [sweep] point {} of {} ({}): {}", path_.string(),
                                    point.index, grid_.expanded, point.label, e.what()));
      }
    }
    for (const auto& [probe, points] : unused) {
      if (points == static_cast<int>(grid_.points.size())) {
        throw UserError(fmt::format(
            "{}: probe '{}' applies to the optimizers of none of the {} points; it measures {}",
            path_.string(), probe, points, Probes().Find(probe)->summary));
      }
    }
  }

  SweepSummary Run() {
    const auto start = Clock::now();
    const DirectoryLock lock(options_.out_dir, "lemmalab sweep");
    std::shared_ptr<OptionTable> base = root_->Clone();
    base->Erase("sweep");
    nlohmann::json axes = nlohmann::json::array(), paths = nlohmann::json::array();
    for (const SweepAxis& axis : grid_.axes) {
      axes.push_back(axis.name);
      paths.push_back(axis.path);
    }
    const BuildInfo& build = Build();
    SweepStore store(options_.out_dir, {{"kind", "sweep"},
                                        {"spec_path", path_.string()},
                                        {"spec_text", text_},
                                        {"sweep_base", ShowValue({base, ""})},
                                        {"sweep_axes", axes.dump()},
                                        {"sweep_axis_paths", paths.dump()},
                                        {"sweep_points", fmt::format("{}", grid_.points.size())},
                                        {"lemmalab_version", build.version},
                                        {"commit", build.commit},
                                        {"build", build.build}});
    const std::vector<std::string> finished = store.FinishedPoints();
    const std::set<std::string> done(finished.begin(), finished.end());
    std::vector<const SweepPoint*> todo;
    for (const SweepPoint& point : grid_.points) {
      if (!done.contains(point.label)) todo.push_back(&point);
    }
    summary_.points = static_cast<int>(grid_.points.size());
    summary_.already = summary_.points - static_cast<int>(todo.size());
    const std::filesystem::path in_flight = options_.out_dir / kInFlight;
    std::filesystem::remove_all(in_flight);  // points a killed sweep left unfinished

    const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    const int jobs = std::max(
        1, std::min(options_.jobs > 0 ? options_.jobs : cores, static_cast<int>(todo.size())));
    const int threads = std::max(1, cores / jobs);
    std::vector<Slot> slots(static_cast<std::size_t>(jobs));
    std::vector<std::thread> workers;
    std::atomic<std::size_t> next{0};
    std::atomic<int> running{jobs};
    std::exception_ptr error;
    std::mutex commit;
    const bool terminal = options_.progress && isatty(STDERR_FILENO) == 1;

    const auto work = [&](Slot& slot) {
      try {
        for (std::size_t i; !halt_.load() && (i = next++) < todo.size();) {
          const SweepPoint& point = *todo[i];
          RunSpec spec = SpecOf(point);
          {
            const std::lock_guard guard(slot.mutex);
            slot.label = point.label;
            slot.steps = spec.steps;
          }
          slot.step = 0;
          slot.busy = true;
          ExperimentOptions run;
          run.out_dir = in_flight / fmt::format("{}", point.index);
          run.threads = threads;
          run.progress = false;
          run.database_only = true;
          run.data_cache = &data_cache_;
          run.shares_process = true;
          run.probes_may_not_apply = true;
          run.stop = &halt_;
          // The memory limit (--max-memory, or what the machine has) bounds the sweep, all
          // jobs together: each point running at once gets its share.
          const MemoryLimit& limit =
              options_.max_memory ? *options_.max_memory : MemoryLimit::Machine();
          run.max_memory = MemoryLimit{
              limit.bytes / jobs,
              jobs == 1 ? limit.source : fmt::format("{} shared by {} jobs", limit.source, jobs)};
          run.max_results = options_.max_results;
          run.on_step = [&slot](std::int64_t step, double loss) {
            slot.step = step;
            slot.loss = loss;
          };
          const ExperimentReport report = RunExperiment(spec, run);
          slot.busy = false;
          const std::lock_guard guard(commit);
          store.AddPoint(run.out_dir / ResultsWriter::kDatabase, point.label, point.index,
                         AxesJson(grid_, point));
          std::filesystem::remove_all(run.out_dir);
          ++summary_.ran;
          std::string outcome;
          double seconds = 0;
          bool any_diverged = false;
          for (const RunReport& r : report.runs) {
            seconds += r.record.wall_seconds;
            const bool diverged = r.record.status != "completed";
            summary_.diverged += diverged;
            any_diverged |= diverged;
            outcome += fmt::format("{}{}: {}, final loss {:.6g}", outcome.empty() ? "" : "; ",
                                   r.record.label, diverged ? r.record.status : "completed",
                                   r.record.final_loss);
          }
          // A line per point where there is no live display; on a terminal, diverged ones only.
          if (options_.progress && (!terminal || any_diverged)) {
            fmt::print(stderr, "{}[{}/{}] {}  {} ({:.2f} s)\n", terminal ? "\r\033[K" : "",
                       summary_.already + summary_.ran, summary_.points, point.label, outcome,
                       seconds);
          }
        }
      } catch (const Interrupted&) {
        // halt_ was set: the point in flight is dropped, the finished ones stay.
      } catch (...) {
        const std::lock_guard guard(commit);
        if (!error) error = std::current_exception();
        halt_ = true;
      }
      slot.busy = false;
      --running;
    };
    for (Slot& slot : slots) workers.emplace_back(work, std::ref(slot));
    while (running.load() > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (options_.stop != nullptr && options_.stop->load()) halt_ = true;
      if (terminal) {
        const std::lock_guard guard(commit);
        Draw(slots, todo.size(), SecondsSince(start));
      }
    }
    for (std::thread& t : workers) t.join();
    if (terminal) fmt::print(stderr, "\r\033[K");
    std::filesystem::remove_all(in_flight);
    store.ExportRuns(options_.out_dir / ResultsWriter::kRuns);
    if (error) std::rethrow_exception(error);
    summary_.seconds = SecondsSince(start);
    if (halt_.load()) throw Interrupted();
    return summary_;
  }

 private:
  // The point's spec: its axis values, then --set (which pins an option an axis also sets).
  RunSpec SpecOf(const SweepPoint& point) const {
    RunSpec spec = SpecFromTable(ApplySettings(ApplyPoint(*root_, grid_, point), options_.settings),
                                 path_, text_);
    const std::int64_t every = std::max<std::int64_t>(1, spec.steps / kRecordsPerSeries);
    if (spec.metrics_every == 0) spec.metrics_every = every;
    if (spec.probe_every == 0) spec.probe_every = every;
    return spec;
  }

  // [12/48] 0:05 elapsed, ETA 0:15 | beta=0.9 seed=2: step 200/400, loss 0.3123
  void Draw(std::vector<Slot>& slots, std::size_t todo, double elapsed) const {
    double work = summary_.ran;
    std::string current;
    for (Slot& slot : slots) {
      if (!slot.busy.load()) continue;
      const std::lock_guard guard(slot.mutex);
      const std::int64_t step = slot.step.load();
      work += slot.steps > 0 ? static_cast<double>(step) / static_cast<double>(slot.steps) : 0;
      if (current.empty()) {
        current = fmt::format(" | {}: step {}/{}, loss {:.4g}", slot.label, step, slot.steps,
                              slot.loss.load());
      }
    }
    const std::string eta =
        work > 0 ? Duration(elapsed * (static_cast<double>(todo) - work) / work) : "?";
    std::string line = fmt::format("[{}/{}] {} elapsed, ETA {}{}", summary_.already + summary_.ran,
                                   summary_.points, Duration(elapsed), eta, current);
    constexpr std::size_t kWidth = 150;
    if (line.size() > kWidth) line.resize(kWidth);
    fmt::print(stderr, "\r\033[K{}", line);
    std::fflush(stderr);
  }

  std::filesystem::path path_;
  SweepOptions options_;
  std::string text_;
  std::shared_ptr<OptionTable> root_;
  SweepGrid grid_;
  std::atomic<bool> halt_{false};
  SweepSummary summary_;
  DataCache data_cache_;  // the points' data, loaded once
};

}  // namespace

SweepSummary RunSweep(const std::filesystem::path& spec_path, const SweepOptions& options) {
  Sweep sweep(spec_path, options);
  sweep.Validate();
  return sweep.Run();
}

std::string FormatSweep(const SweepSummary& summary, const std::filesystem::path& out_dir) {
  std::string out = fmt::format("sweep: {} points", summary.points);
  if (summary.already > 0) out += fmt::format(", {} found finished", summary.already);
  out += fmt::format(", {} run now in {}", summary.ran, Duration(summary.seconds));
  if (summary.diverged > 0) {
    out += fmt::format(" ({} run{} diverged)", summary.diverged, summary.diverged == 1 ? "" : "s");
  }
  out += fmt::format(
      "\nresults: {}/ (results.sqlite, runs.csv); tables and plots: lemmalab report {}\n",
      out_dir.string(), out_dir.string());
  return out;
}

}  // namespace lemmalab
