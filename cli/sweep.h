// `lemmalab sweep SPEC --out DIR [--jobs N]`: runs every point of the spec's [sweep] grid
// (cli/sweep_grid.h) into one results database, DIR/results.sqlite (engine/results.h, SweepStore).
//
// - Every point is built (data, problem, optimizers, probes: every option checked) before the
//   first one runs; an error names the point. Two points that resolve to the same configuration
//   are refused: an axis that no run reads would otherwise pass for an ablation.
// - Points run in parallel, `jobs` at a time (default: one per core), each single-threaded (a
//   sweep's parallelism is across points; results never depend on either).
// - Each finished point is committed in one transaction with its runs' resolved
//   hyperparameters, seed, and lemmalab's version, commit and build flags. SIGINT or SIGTERM
//   stops the points in flight and keeps the finished ones; SIGKILL loses at most the points in
//   flight. The same command again skips the points already in DIR. A diverged run is recorded
//   as diverged, with its step, and the sweep goes on.
// - DIR is locked (engine/directory_lock.h): a second sweep into it is refused.
// - Unless the spec sets them, metrics_every and probe_every default to steps / 100, so that a
//   sweep's database stays small; probe summaries still see every step.
// - DIR/runs.csv is the runs table, hyperparameters as columns, rewritten at the end.
#pragma once

#include <atomic>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/resources.h"

namespace lemmalab {

struct SweepOptions {
  std::filesystem::path out_dir;
  int jobs = 0;          // points at a time; 0: one per core
  bool progress = true;  // a live display on a terminal; one line per point otherwise
  // --set PATH=VALUE (engine/spec.h), applied to the spec and again to every point after its axis
  // values: a setting pins an option an axis also sets.
  std::vector<std::string> settings;
  const std::atomic<bool>* stop = nullptr;  // set (by SIGINT) to stop; RunSweep then throws
                                            // Interrupted after saving what finished
  std::optional<MemoryLimit> max_memory, max_results;  // ExperimentOptions' for every point
};

struct SweepSummary {
  int points = 0;      // in the grid (after exclusions)
  int already = 0;     // found finished in DIR
  int ran = 0;         // finished by this command
  int diverged = 0;    // runs of this command's points that diverged
  double seconds = 0;  // wall time of this command
};

SweepSummary RunSweep(const std::filesystem::path& spec_path, const SweepOptions& options);

// What `lemmalab sweep` prints at the end.
std::string FormatSweep(const SweepSummary& summary, const std::filesystem::path& out_dir);

}  // namespace lemmalab
