#include "cli/run_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

#include "cli/table.h"
#include "problems/reference.h"

namespace lemmalab {
namespace {

std::string Optional(const std::optional<double>& value, std::string_view format) {
  return value ? fmt::format(fmt::runtime(format), *value) : std::string("-");
}

// Bytes with a decimal unit: 950 B, 25.4 kB, 1.02 MB.
std::string Bytes(double bytes) {
  if (bytes < 1e3) return fmt::format("{:.0f} B", bytes);
  if (bytes < 1e6) return fmt::format("{:.3g} kB", bytes / 1e3);
  if (bytes < 1e9) return fmt::format("{:.3g} MB", bytes / 1e6);
  return fmt::format("{:.3g} GB", bytes / 1e9);
}

// Seconds in the unit that suits them.
std::string Seconds(double seconds) {
  if (seconds < 1e-3) return fmt::format("{:.3g} us", seconds * 1e6);
  if (seconds < 1) return fmt::format("{:.3g} ms", seconds * 1e3);
  return fmt::format("{:.3g} s", seconds);
}

std::string FormatShards(const std::vector<ShardSummary>& shards) {
  if (shards.empty()) return "";
  std::int64_t smallest = shards.front().samples, largest = smallest;
  for (const ShardSummary& s : shards) {
    smallest = std::min(smallest, s.samples);
    largest = std::max(largest, s.samples);
  }
  std::string out =
      fmt::format("\nshards: {} workers, {} to {} samples each", shards.size(), smallest, largest);
  constexpr std::size_t kMaxListed = 16, kMaxClasses = 10;
  if (shards.size() > kMaxListed || shards.front().label_counts.size() > kMaxClasses) {
    return out + " (label histograms in results.sqlite, table shards)\n";
  }
  out += "; label histogram per worker:\n";
  for (std::size_t w = 0; w < shards.size(); ++w) {
    out += fmt::format("  worker {:<3} {:>7}  [{}]\n", w, shards[w].samples,
                       fmt::join(shards[w].label_counts, " "));
  }
  return out;
}

}  // namespace

std::string FormatRunTable(const ExperimentReport& report, std::size_t width) {
  std::string out =
      fmt::format("problem: {}\n{} workers, {}\ncommunication: {}\n\n", report.problem,
                  report.workers, PrecisionName(report.precision), report.communication);
  const Constant* f_star = FindConstant(report.constants, "f_star");
  bool accuracy = false, test = false;
  for (const RunReport& run : report.runs) {
    accuracy |= run.record.final_accuracy.has_value();
    test |= run.record.final_test_accuracy.has_value();
  }

  // Columns whose quantity no run has are left out.
  std::vector<TableColumn> columns = {{"run", true},
                                      {"optimizer", true},
                                      {"status", true},
                                      {"steps", false},
                                      {"train loss", false}};
  if (f_star != nullptr) columns.push_back({"f - f*", false});
  if (accuracy) columns.push_back({"accuracy", false});
  if (test) columns.insert(columns.end(), {{"test loss", false}, {"test acc.", false}});
  columns.insert(columns.end(), {{"|grad f|^2", false},
                                 {"bits/worker", false},
                                 {"bits/param/step", false},
                                 {"intra/step", false},
                                 {"inter/step", false},
                                 {"step (measured)", false},
                                 {"comm (projected)", false},
                                 {"time", false}});
  std::vector<std::vector<std::string>> rows;
  for (const RunReport& run : report.runs) {
    const RunRecord& r = run.record;
    const double per_param_step =
        r.bits_sent_per_worker / (static_cast<double>(run.dimension) *
                                  static_cast<double>(std::max<std::int64_t>(1, r.steps_done)));
    std::vector<std::string> row = {
        r.label, r.optimizer, r.status == "completed" ? "completed" : "DIVERGED",
        fmt::format("{}", r.steps_done), fmt::format("{:.6g}", r.final_loss)};
    if (f_star != nullptr) row.push_back(fmt::format("{:.3g}", r.final_loss - f_star->value));
    if (accuracy) row.push_back(Optional(r.final_accuracy, "{:.4f}"));
    if (test) {
      row.push_back(Optional(r.final_test_loss, "{:.4g}"));
      row.push_back(Optional(r.final_test_accuracy, "{:.4f}"));
    }
    row.insert(
        row.end(),
        {fmt::format("{:.3g}", r.final_grad_sq_norm), fmt::format("{:.4g}", r.bits_sent_per_worker),
         fmt::format("{:.3f}", per_param_step), Bytes(r.bytes_intra_per_step),
         Bytes(r.bytes_inter_per_step), Seconds(r.step_seconds), Seconds(r.comm_seconds_per_step),
         fmt::format("{:.2f}s", r.wall_seconds)});
    rows.push_back(std::move(row));
  }
  out += FormatTableWithin(columns, rows, width, "runs.csv");

  std::size_t label_width = 0;
  for (const RunReport& run : report.runs) {
    label_width = std::max(label_width, run.record.label.size());
    if (run.record.status != "completed") {
      out += fmt::format("\n{}: {}\n", run.record.label, run.record.status);
    }
  }
  if (!report.constants.empty() || !report.runs.empty()) {
    out += "\nconstants\n";
    for (const Constant& c : report.constants) {
      out += fmt::format("  {:<7} {:>12.6g}  {}: {}\n", c.name, c.value, CertaintyName(c.certainty),
                         c.basis);
    }
    for (const RunReport& run : report.runs) {
      out += fmt::format("  {:<7} {:>12.6g}  observed: largest ||g|| in run {}\n", "G",
                         run.observed_g, run.record.label);
    }
  }
  out += FormatShards(report.shards);

  bool any_probe = false;
  for (const RunReport& run : report.runs) any_probe |= !run.probe_lines.empty();
  if (any_probe) {
    out += "\nprobes\n";
    for (const RunReport& run : report.runs) {
      for (const std::string& probe_line : run.probe_lines) {
        out += fmt::format("  {:<{}}  {}\n", run.record.label, label_width, probe_line);
      }
    }
  }
  return out;
}

}  // namespace lemmalab
