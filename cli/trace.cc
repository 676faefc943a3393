#include "cli/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "cli/table.h"
#include "comm/scheme.h"
#include "core/error.h"
#include "engine/directory_lock.h"
#include "engine/results.h"
#include "optimizers/optimizer.h"

namespace lemmalab {
namespace {

// More rows than this is not a trace a person reads: the command refuses it before running.
constexpr std::int64_t kMaxRows = 2'000'000;
// Symbols a step of one sender records, at most (Birder's worker: g, m, b_hat, b, m/(b+eps), u, r,
// Q(u), e; with room for scales and per-layer values).
constexpr std::int64_t kSymbolsPerSender = 12;

std::int64_t ParseIndex(std::string_view text, std::string_view option) {
  std::int64_t value = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) {
    throw UserError(fmt::format("{}: '{}' is not an index (a whole number >= 0)", option, text));
  }
  return value;
}

// "A" or "A-B", the one range syntax of every option that takes one (--steps, --coords,
// --workers): the first and last index.
std::pair<std::int64_t, std::int64_t> ParseRange(std::string_view item, std::string_view option) {
  for (const char separator : {':', '.'}) {
    if (const std::size_t at = item.find(separator); at != std::string_view::npos) {
      throw UserError(fmt::format(
          "{}: '{}': write a range as A-B ({}-{}), as every option of "
          "lemmalab that takes a range does",
          option, item, item.substr(0, at), item.substr(item.find_first_not_of(separator, at))));
    }
  }
  const std::size_t dash = item.find('-');
  const std::int64_t first = ParseIndex(item.substr(0, dash), option);
  const std::int64_t last =
      dash == std::string_view::npos ? first : ParseIndex(item.substr(dash + 1), option);
  if (last < first) {
    throw UserError(
        fmt::format("{}: the range '{}' ends before it starts (A-B with A <= B)", option, item));
  }
  return {first, last};
}

// "3", "0-3,7" or "all" into sorted distinct indices below `limit`; "all" gives an empty list.
std::vector<std::int64_t> ParseIndexList(const std::string& text, std::string_view option,
                                         std::int64_t limit, std::string_view what) {
  if (text == "all") return {};
  std::vector<std::int64_t> indices;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    const std::string_view item = std::string_view(text).substr(begin, comma - begin);
    const auto [first, last] = ParseRange(item, option);
    if (last >= limit) {
      throw UserError(fmt::format("{}: {} {} does not exist: the run has {} {} (0 to {})", option,
                                  what, last, limit, what == "worker" ? "workers" : "coordinates",
                                  limit - 1));
    }
    for (std::int64_t j = first; j <= last; ++j) indices.push_back(j);
    begin = comma + 1;
  }
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  return indices;
}

std::string WorkerName(int worker) {
  return worker == kServer ? std::string("server") : fmt::format("{}", worker);
}

// Six significant digits, and whole numbers (draw words, signs) in full.
std::string FormatValue(double value) {
  if (value == std::trunc(value) && std::abs(value) < 1e15) return fmt::format("{:.0f}", value);
  return fmt::format("{:.6g}", value);
}

}  // namespace

TraceOutcome ResolveTrace(const RunSpec& spec, const TraceRequest& request,
                          std::int64_t dimension) {
  if (spec.sweep) {
    throw UserError(fmt::format(
        "{}: the spec has a [sweep] table, a grid of runs; trace one run of it: a copy of the "
        "spec without [sweep], with the point's values",
        spec.path.string()));
  }
  if (spec.comm.scheme == Scheme::kHierarchical) {
    throw UserError(fmt::format(
        "{}: scheme = \"hierarchical\" compresses at the nodes, which a trace does not show; trace "
        "the same optimizer under scheme = \"parameter-server\" (--set "
        "communication.scheme=parameter-server)",
        spec.path.string()));
  }
  TraceOutcome outcome;
  TraceSelection& selection = outcome.selection;

  if (request.steps.empty()) {
    outcome.notes.push_back("--steps: step 1 (default)");
  } else {
    std::tie(selection.first_step, selection.last_step) = ParseRange(request.steps, "--steps");
    if (selection.first_step < 1) {
      throw UserError(fmt::format(
          "--steps: '{}': steps count from 1 (write A or A-B with 1 <= A <= B, e.g. 1-3)",
          request.steps));
    }
  }
  if (selection.last_step > spec.steps) {
    throw UserError(fmt::format("--steps: step {} is past the run's last step, {} (steps = {})",
                                selection.last_step, spec.steps, spec.steps));
  }

  if (!request.coordinates.empty()) {
    selection.coordinates =
        ParseIndexList(request.coordinates, "--coords", dimension, "coordinate");
  } else if (dimension > 8) {
    selection.coordinates = {0, 1, 2, 3};
    outcome.notes.push_back(fmt::format(
        "--coords: 0-3 of the {} coordinates (default; --coords all for every one)", dimension));
  }
  if (!request.workers.empty()) {
    for (const std::int64_t i :
         ParseIndexList(request.workers, "--workers", spec.workers, "worker")) {
      selection.workers.push_back(static_cast<int>(i));
    }
  } else if (spec.workers > 4) {
    selection.workers = {0, 1};
    outcome.notes.push_back(fmt::format(
        "--workers: 0,1 of the {} workers (default; --workers all for every one)", spec.workers));
  }

  const std::int64_t steps = selection.last_step - selection.first_step + 1;
  const std::int64_t senders =
      (selection.workers.empty() ? spec.workers : std::ssize(selection.workers)) + 1;
  const std::int64_t coordinates =
      selection.coordinates.empty() ? dimension : std::ssize(selection.coordinates);
  const double rows = static_cast<double>(steps) * static_cast<double>(senders) *
                      static_cast<double>(kSymbolsPerSender) * static_cast<double>(coordinates) *
                      static_cast<double>(spec.optimizers.size());
  if (rows > static_cast<double>(kMaxRows)) {
    throw UserError(fmt::format(
        "the trace would hold about {:.3g} values ({} steps x {} senders x {} coordinates x {} "
        "optimizers x up to {} symbols), more than {} a trace is for: choose fewer with --steps, "
        "--coords or --workers",
        rows, steps, senders, coordinates, spec.optimizers.size(), kSymbolsPerSender, kMaxRows));
  }
  return outcome;
}

TraceOutcome PrepareTrace(const RunSpec& spec, const TraceRequest& request, DataCache& data_cache) {
  const ExperimentReport built = ValidateExperiment(spec, &data_cache);
  return ResolveTrace(spec, request, built.runs.front().dimension);
}

ExperimentReport RunTrace(const RunSpec& spec, StepTrace& trace, DataCache* data_cache,
                          const std::atomic<bool>* stop) {
  ExperimentOptions options;
  options.stop = stop;
  options.progress = false;
  options.trace = &trace;
  options.last_step = trace.selection().last_step;
  options.discard_results = true;
  options.data_cache = data_cache;
  return RunExperiment(spec, options);
}

std::vector<std::string> TraceGaps(const ExperimentReport& report,
                                   const TraceSelection& selection) {
  std::vector<std::string> gaps;
  for (const RunReport& run : report.runs) {
    if (run.record.steps_done >= selection.last_step) continue;
    gaps.push_back(fmt::format(
        "{}: {}; steps {} to {} are not traced", run.record.label, run.record.status,
        std::max(run.record.steps_done + 1, selection.first_step), selection.last_step));
  }
  return gaps;
}

std::string FormatTrace(const StepTrace& trace) {
  const std::vector<TraceRow> rows = trace.Rows();
  const std::vector<TraceSymbol>& symbols = trace.symbols();
  std::string text;
  // Rows come grouped by run, step and worker; each group becomes one table.
  for (std::size_t begin = 0; begin < rows.size();) {
    const TraceRow& head = rows[begin];
    std::size_t end = begin;
    while (end < rows.size() && rows[end].run == head.run && rows[end].step == head.step &&
           rows[end].worker == head.worker) {
      ++end;
    }
    std::vector<std::int64_t> coordinates;
    for (std::size_t k = begin; k < end; ++k) {
      if (rows[k].by_coordinate) coordinates.push_back(rows[k].coordinate);
    }
    std::sort(coordinates.begin(), coordinates.end());
    coordinates.erase(std::unique(coordinates.begin(), coordinates.end()), coordinates.end());

    std::vector<TableColumn> columns = {{"symbol", true}};
    for (const std::int64_t j : coordinates) columns.push_back({fmt::format("j={}", j), false});
    columns.push_back({"", true});
    std::vector<std::vector<std::string>> table;
    std::vector<std::string> indexed;  // per-layer and per-block values
    for (std::size_t k = begin; k < end;) {
      const int symbol_index = rows[k].symbol;
      const TraceSymbol& symbol = symbols[static_cast<std::size_t>(symbol_index)];
      std::size_t next = k;
      while (next < end && rows[next].symbol == symbol_index) ++next;
      if (!rows[k].by_coordinate) {
        std::string values;
        for (std::size_t r = k; r < next; ++r) {
          values += fmt::format("  [{}] {}", rows[r].coordinate, FormatValue(rows[r].value));
        }
        indexed.push_back(fmt::format("  {}:{}   ({})", symbol.name, values, symbol.source));
      } else {
        std::vector<std::string> cells(columns.size());
        cells.front() = std::string(symbol.name);
        for (std::size_t r = k; r < next; ++r) {
          const auto column =
              std::lower_bound(coordinates.begin(), coordinates.end(), rows[r].coordinate) -
              coordinates.begin();
          cells[static_cast<std::size_t>(column) + 1] = FormatValue(rows[r].value);
        }
        cells.back() = std::string(symbol.source);
        table.push_back(std::move(cells));
      }
      k = next;
    }
    text += fmt::format("{}, step {}, {}\n", trace.runs()[static_cast<std::size_t>(head.run)],
                        head.step,
                        head.worker == kServer ? std::string("server and replicas")
                                               : fmt::format("worker {}", head.worker));
    if (!table.empty()) text += FormatTable(columns, table);
    for (const std::string& line : indexed) text += line + "\n";
    text += "\n";
    begin = end;
  }
  text += "symbols:\n";
  std::vector<std::vector<std::string>> legend;
  int last_run = -1;
  for (const auto& [run, symbol_index, by_coordinate] : StepTrace::SymbolsIn(rows)) {
    const TraceSymbol& symbol = symbols[static_cast<std::size_t>(symbol_index)];
    legend.push_back({run == last_run ? "" : trace.runs()[static_cast<std::size_t>(run)],
                      std::string(symbol.name), std::string(symbol.source),
                      std::string(symbol.meaning)});
    last_run = run;
  }
  text +=
      FormatTable({{"run", true}, {"symbol", true}, {"source", true}, {"meaning", true}}, legend);
  return text;
}

void WriteTrace(const StepTrace& trace, const std::filesystem::path& dir) {
  const std::vector<TraceSymbol>& symbols = trace.symbols();
  const std::vector<TraceRow> rows = trace.Rows();
  std::string values = "label,step,worker,symbol,coordinate,value\n";
  for (const TraceRow& row : rows) {
    values += fmt::format(
        "{},{},{},{},{},{:.17g}\n", CsvText(trace.runs()[static_cast<std::size_t>(row.run)]),
        row.step, WorkerName(row.worker),
        CsvText(symbols[static_cast<std::size_t>(row.symbol)].name), row.coordinate, row.value);
  }
  std::string legend = "label,symbol,index,source,meaning\n";
  for (const auto& [run, symbol_index, by_coordinate] : StepTrace::SymbolsIn(rows)) {
    const TraceSymbol& symbol = symbols[static_cast<std::size_t>(symbol_index)];
    legend += fmt::format("{},{},{},{},{}\n", CsvText(trace.runs()[static_cast<std::size_t>(run)]),
                          CsvText(symbol.name), by_coordinate ? "coordinate" : "block",
                          CsvText(symbol.source), CsvText(symbol.meaning));
  }
  WriteTextFile(dir / "trace.csv", values);
  WriteTextFile(dir / "symbols.csv", legend);
}

int TraceCommand(const std::string& spec_path, const std::vector<std::string>& settings,
                 const TraceRequest& request, const std::string& out_dir,
                 const std::atomic<bool>* stop) {
  // Made and locked before anything runs, as run and sweep do: a bad --out fails fast, and a
  // failure leaves no empty folder behind.
  std::optional<DirectoryLock> lock;
  if (!out_dir.empty()) lock.emplace(out_dir, "lemmalab trace");
  const RunSpec spec = LoadSpec(spec_path, settings);
  DataCache data;
  const TraceOutcome outcome = PrepareTrace(spec, request, data);
  StepTrace trace(outcome.selection);
  const ExperimentReport report = RunTrace(spec, trace, &data, stop);
  if (!out_dir.empty()) WriteTrace(trace, out_dir);
  std::vector<std::string> notes = outcome.notes;
  for (std::string& gap : TraceGaps(report, outcome.selection)) notes.push_back(std::move(gap));
  for (const std::string& note : notes) fmt::print("{}\n", note);
  if (!notes.empty()) fmt::print("\n");
  fmt::print("{}", FormatTrace(trace));
  if (!out_dir.empty()) fmt::print("\ntrace: {}/ (trace.csv, symbols.csv)\n", out_dir);
  return 0;
}

}  // namespace lemmalab
