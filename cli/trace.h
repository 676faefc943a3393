// `lemmalab trace SPEC [--steps A:B] [--coords LIST] [--workers LIST] [--out DIR]`: what each
// worker and the server compute at a few steps of a run, coordinate by coordinate, by the symbols
// of the algorithm's paper (optimizers/trace.h), for teaching and for checking a step by hand.
//
// The trace is taken from the real run: the spec runs as `lemmalab run` would run it (same code,
// same streams), up to the last traced step, and the values are copied out as they are computed.
// Nothing is written but DIR/trace.csv (label, step, worker, symbol, coordinate, value; worker is
// an index or "server") and DIR/symbols.csv (label, symbol, index, source, meaning; index says
// whether a symbol's coordinate is a parameter's or a layer's or block's), each complete or
// absent.
#pragma once

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/experiment.h"
#include "engine/spec.h"
#include "optimizers/trace.h"

namespace lemmalab {

// The command line's choice of steps ("A:B" or "A"), coordinates and workers (comma-separated
// indices and ranges "a-b", or "all"); an empty string takes the default: step 1, every
// coordinate when there are at most 8 (else 0-3), every worker when there are at most 4 (else
// 0,1). UserError names the option and the rule.
struct TraceRequest {
  std::string steps = {};
  std::string coordinates = {};
  std::string workers = {};
};

struct TraceOutcome {
  TraceSelection selection;
  std::vector<std::string> notes;  // defaults taken, in words
};

// Resolves the request against the spec's dimension and workers, and refuses what a trace
// cannot show (a [sweep] grid, the hierarchical scheme whose compression happens at the nodes,
// a trace too large to print).
TraceOutcome ResolveTrace(const RunSpec& spec, const TraceRequest& request, std::int64_t dimension);

// Builds the spec as a run would (every option checked; the data loaded into `data_cache`) and
// resolves the request against its dimension: what `lemmalab trace` and the bindings both do.
TraceOutcome PrepareTrace(const RunSpec& spec, const TraceRequest& request, DataCache& data_cache);

// Runs `spec` with `trace` attached, up to its selection's last step; nothing is written.
// `data_cache`: where the spec's data may already be loaded (may be null); `stop`: set (by
// SIGINT) to stop between steps, RunTrace then throws Interrupted.
ExperimentReport RunTrace(const RunSpec& spec, StepTrace& trace, DataCache* data_cache = nullptr,
                          const std::atomic<bool>* stop = nullptr);

// What a reader of the trace must know of the runs: those that stopped (diverged) before the
// last traced step, whose later steps the trace cannot show.
std::vector<std::string> TraceGaps(const ExperimentReport& report, const TraceSelection& selection);

// The readable tables `lemmalab trace` prints: per run and step, one table per worker and one for
// the server, a row per symbol and a column per coordinate, then the symbols' sources.
std::string FormatTrace(const StepTrace& trace);

// DIR/trace.csv and DIR/symbols.csv (DIR exists), each complete or absent.
void WriteTrace(const StepTrace& trace, const std::filesystem::path& dir);

int TraceCommand(const std::string& spec_path, const std::vector<std::string>& settings,
                 const TraceRequest& request, const std::string& out_dir,
                 const std::atomic<bool>* stop);

}  // namespace lemmalab
