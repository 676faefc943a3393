// The table `lemmalab run` prints.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "cli/experiment.h"

namespace lemmalab {

std::string FormatReport(const ExperimentReport& report) {
  std::string out = fmt::format("problem: {}\n{} workers, {}\n\n", report.problem, report.workers,
                                PrecisionName(report.precision));

  const std::vector<std::string> header = {
      "run",      "optimizer",  "status",      "steps",           "train loss",
      "accuracy", "|grad f|^2", "bits/worker", "bits/param/step", "time"};
  std::vector<std::vector<std::string>> rows;
  for (const RunReport& run : report.runs) {
    const RunRecord& r = run.record;
    const bool completed = r.status == "completed";
    const double per_param_step =
        r.bits_sent_per_worker / (static_cast<double>(run.dimension) *
                                  static_cast<double>(std::max<std::int64_t>(1, r.steps_done)));
    rows.push_back({r.label, r.optimizer, completed ? "completed" : "DIVERGED",
                    fmt::format("{}", r.steps_done), fmt::format("{:.6g}", r.final_loss),
                    fmt::format("{:.4f}", r.final_accuracy),
                    fmt::format("{:.3g}", r.final_grad_sq_norm),
                    fmt::format("{:.4g}", r.bits_sent_per_worker),
                    fmt::format("{:.3f}", per_param_step), fmt::format("{:.2f}s", r.wall_seconds)});
  }
  std::vector<std::size_t> width(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      // Names left-aligned, numbers right-aligned.
      s += c < 3 ? fmt::format("{:<{}}", cells[c], width[c])
                 : fmt::format("{:>{}}", cells[c], width[c]);
      s += c + 1 < cells.size() ? "  " : "\n";
    }
    return s;
  };
  out += line(header);
  for (const auto& row : rows) out += line(row);

  for (const RunReport& run : report.runs) {
    if (run.record.status != "completed")
      out += fmt::format("\n{}: {}\n", run.record.label, run.record.status);
  }
  bool any_probe = false;
  for (const RunReport& run : report.runs) any_probe |= !run.probe_lines.empty();
  if (any_probe) {
    out += "\nprobes\n";
    for (const RunReport& run : report.runs) {
      for (const std::string& probe_line : run.probe_lines) {
        out += fmt::format("  {:<{}}  {}\n", run.record.label, width[0], probe_line);
      }
    }
  }
  return out;
}

}  // namespace lemmalab
