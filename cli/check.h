// `lemmalab check SPEC.toml`: runs what a spec asks (or reads finished results with --from DIR)
// and judges the spec's [[assert]] claims (theory/assertion.h) into a table of verdicts.
//
//   [check]
//   seeds = [1, 2, 3]        # the spec is run once per seed (default: its own seed)
//   workers = [2, 4, 8]      # ... and per worker count (default: its own workers)
//   confidence = 0.99        # of every statistical verdict
//
//   [[assert]]
//   assertion = "ef-norm"    # a registered assertion (lemmalab list)
//   runs = ["birder"]        # labels; default: every run that recorded the probes it reads
//                            # (assertions that read only metrics: every run)
//   expect = "holds"         # or "vacuous", "violated" (a counterexample) or "inconclusive"
//   tolerance = 1e-12        # ... and the assertion's own keys
//
// Every [[assert]] table is validated (each assertion reads all its keys) before the first run
// starts. The probes the assertions read are attached to the runs without being listed in
// `probes`.
// With one seed and one worker count the results go to DIR itself; with a sweep, to
// DIR/seed-<s>-workers-<n>/. The verdicts are written to DIR/check.json and DIR/check.md (under
// .partial names until complete) and printed; the command exits 1 when a verdict differs from
// its expectation, so a researcher can put it in their own CI.
#pragma once

#include <atomic>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/resources.h"
#include "engine/spec.h"
#include "theory/assertion.h"

namespace lemmalab {

struct CheckOptions {
  std::filesystem::path out_dir;  // where results are written, or read from with `from`
  bool from = false;              // judge the results already in out_dir instead of running
  int threads = 0;
  bool progress = true;
  const std::atomic<bool>* stop = nullptr;
  std::optional<MemoryLimit> max_memory, max_results;  // ExperimentOptions' for every run
};

struct CheckRow {
  std::string assertion;
  std::string summary;
  std::string source;
  std::string runs;   // which runs were judged: "birder", "birder (seed 2)", "birder over 5 seeds"
  std::string label;  // their [[optimizer]] label
  std::vector<std::string> folders;  // the results folders they are in
  std::string status;                // their status and final loss: "completed, final loss 0.0643"
  Verdict verdict;
  VerdictKind expected = VerdictKind::kHolds;
  bool as_expected() const { return verdict.kind == expected; }
};

struct CheckReport {
  std::string spec;
  double confidence = 0.99;
  std::vector<std::string> folders;  // the results folders judged
  std::vector<CheckRow> rows;
  int mismatches() const;
};

CheckReport RunCheck(RunSpec spec, const CheckOptions& options);

// The table `lemmalab check` prints, and the same as Markdown and JSON.
std::string FormatCheck(const CheckReport& report);
std::string CheckMarkdown(const CheckReport& report);
std::string CheckJson(const CheckReport& report);

// Writes DIR/check.json and DIR/check.md, each under a .partial name until it is complete.
void WriteCheckFiles(const CheckReport& report, const std::filesystem::path& dir);

}  // namespace lemmalab
