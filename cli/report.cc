#include "cli/report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <variant>

#include "cli/table.h"
#include "core/build_info.h"
#include "core/error.h"
#include "engine/results.h"
#include "engine/results_reader.h"
#include "engine/spec.h"
#include "theory/probe_series.h"
#include "theory/rate_fit.h"
#include "theory/statistics.h"

extern char** environ;

namespace lemmalab {
namespace {

using Cell = std::variant<std::monostate, std::int64_t, double, std::string>;

std::string ShowCell(const Cell& cell) {
  if (const auto* i = std::get_if<std::int64_t>(&cell)) return fmt::format("{}", *i);
  if (const auto* d = std::get_if<double>(&cell)) return fmt::format("{}", *d);
  if (const auto* s = std::get_if<std::string>(&cell)) return *s;
  return "";
}

double Number(const Cell& cell) {
  if (const auto* i = std::get_if<std::int64_t>(&cell)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&cell)) return *d;
  return std::nan("");
}

struct Run {
  std::map<std::string, Cell> columns;   // the runs table's row
  std::map<std::string, double> probes;  // "<probe>/<series>" -> mean of its recorded values
  std::string configuration;
  std::int64_t order = 0;  // the point's index (sweeps), then the run id
  bool completed() const {
    const auto it = columns.find("status");
    return it != columns.end() && ShowCell(it->second) == "completed";
  }
  double Get(const std::string& column) const {
    const auto it = columns.find(column);
    return it == columns.end() ? std::nan("") : Number(it->second);
  }
};

// Whether the run reads the option an axis sets: an optimizer's option only where the run's
// optimizer has it (1-bit Adam's warmup_steps is not Birder's), and a labelled one
// (optimizer.<label>.x) only on that label's runs; every other axis applies to every run.
bool AxisApplies(const Run& run, const std::string& path, const std::vector<std::string>& labels) {
  const std::optional<OptimizerOption> option = ResolveOptimizerPath(path, labels);
  if (!option) return true;
  if (option->label && *option->label != ShowCell(run.columns.at("label"))) return false;
  return std::any_of(run.columns.begin(), run.columns.end(), [&](const auto& c) {
    return (c.first == option->key || c.first.starts_with(option->key + ".")) &&
           !std::holds_alternative<std::monostate>(c.second);
  });
}

// A sweep run's configuration: its point's axis values without the seed, leaving out the axes
// its optimizer does not read.
std::string ConfigurationOf(const Run& run, const nlohmann::ordered_json& axes,
                            const std::vector<std::string>& paths,
                            const std::vector<std::string>& labels) {
  std::vector<std::string> parts;
  if (!axes.is_object()) return "";
  std::size_t a = 0;
  for (const auto& [name, value] : axes.items()) {
    const std::string path = a < paths.size() ? paths[a] : name;
    ++a;
    if (name == "seed" || !AxisApplies(run, path, labels)) continue;
    parts.push_back(
        fmt::format("{}={}", name, value.is_string() ? value.get<std::string>() : value.dump()));
  }
  return fmt::format("{}", fmt::join(parts, " "));
}

// Reads every run of one results database, with its probe means and its sweep point's axes.
std::vector<Run> ReadRuns(const std::filesystem::path& file, std::int64_t order_offset) {
  ResultsReader db(file);
  const auto cell = [](sqlite3_stmt* s, int c) -> Cell {
    switch (sqlite3_column_type(s, c)) {
      case SQLITE_INTEGER:
        return sqlite3_column_int64(s, c);
      case SQLITE_FLOAT:
        return sqlite3_column_double(s, c);
      case SQLITE_TEXT:
        return std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, c)));
      default:
        return std::monostate{};
    }
  };
  // A sweep's axes: their names in the points' labels and the option paths they set.
  std::vector<std::string> axis_paths;
  db.ForEachRow("SELECT value FROM meta WHERE key = 'sweep_axis_paths'", [&](sqlite3_stmt* s) {
    const nlohmann::json paths = nlohmann::json::parse(ShowCell(cell(s, 0)), nullptr, false);
    if (!paths.is_array() ||
        !std::all_of(paths.begin(), paths.end(), [](const auto& p) { return p.is_string(); })) {
      throw UserError(fmt::format(
          "{}: meta 'sweep_axis_paths' is not a list of option paths; the database was not "
          "written by lemmalab sweep, or was edited",
          file.string()));
    }
    for (const auto& p : paths) axis_paths.push_back(p.get<std::string>());
  });
  // In the axes' order (ordered_json keeps the order they were written in).
  std::map<std::string, std::pair<std::int64_t, nlohmann::ordered_json>> points;
  db.ForEachRow("SELECT point, idx, axes FROM points", [&](sqlite3_stmt* s) {
    points[ShowCell(cell(s, 0))] = {
        sqlite3_column_int64(s, 1),
        nlohmann::ordered_json::parse(ShowCell(cell(s, 2)), nullptr, false)};
  });
  std::vector<Run> runs;
  std::map<std::int64_t, std::size_t> by_id;
  std::map<std::size_t, const nlohmann::ordered_json*> axes_of;  // run -> its point's axes
  db.ForEachRow("SELECT * FROM runs ORDER BY run_id", [&](sqlite3_stmt* s) {
    Run run;
    for (int c = 0; c < sqlite3_column_count(s); ++c) {
      run.columns[sqlite3_column_name(s, c)] = cell(s, c);
    }
    const auto id = std::get<std::int64_t>(run.columns["run_id"]);
    run.order = order_offset + id;
    if (const auto* point = std::get_if<std::string>(&run.columns["point"])) {
      const auto it = points.find(*point);
      if (it != points.end()) {
        run.order = it->second.first * 1000000 + id;
        axes_of[runs.size()] = &it->second.second;
      }
    }
    by_id[id] = runs.size();
    runs.push_back(std::move(run));
  });
  // A sweep run is named by its point's axes, leaving out those its optimizer does not read.
  std::vector<std::string> labels;
  for (const Run& run : runs) labels.push_back(ShowCell(run.columns.at("label")));
  for (const auto& [r, axes] : axes_of) {
    runs[r].configuration = ConfigurationOf(runs[r], *axes, axis_paths, labels);
  }
  std::map<std::pair<std::string, std::string>, bool> per_dimension;
  db.ForEachRow(
      "SELECT run_id, probe, series, AVG(value) FROM probes GROUP BY run_id, probe, series",
      [&](sqlite3_stmt* s) {
        const auto it = by_id.find(sqlite3_column_int64(s, 0));
        if (it == by_id.end()) return;
        Run& run = runs[it->second];
        const std::string probe = ShowCell(cell(s, 1)), series = ShowCell(cell(s, 2));
        const SeriesInfo* info = FindProbeSeries(probe, series);
        double value = sqlite3_column_double(s, 3);
        std::string name = fmt::format("{}/{}", probe, series);
        if (info != nullptr && info->per_dimension) {
          value /= run.Get("dimension");
          name += "/d";
        }
        run.probes[name] = value;
      });
  return runs;
}

// The databases under DIR: its own, or one per subfolder (a check's [check] sweep).
std::vector<std::filesystem::path> FindDatabases(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir)) {
    throw UserError(fmt::format("{}: no such results folder", dir.string()));
  }
  if (std::filesystem::is_regular_file(dir / ResultsWriter::kDatabase)) {
    return {dir / ResultsWriter::kDatabase};
  }
  std::vector<std::filesystem::path> found;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_directory() &&
        std::filesystem::is_regular_file(entry.path() / ResultsWriter::kDatabase)) {
      found.push_back(entry.path() / ResultsWriter::kDatabase);
    }
  }
  std::sort(found.begin(), found.end());
  if (found.empty()) {
    throw UserError(fmt::format(
        "{}: no results.sqlite there or in its subfolders (results are written when a run, a "
        "check or a sweep point finishes)",
        dir.string()));
  }
  return found;
}

struct Estimate {
  double mean = std::nan("");
  double ci95 = std::nan("");  // half-width; NaN with fewer than 2 values
  std::size_t n = 0;
};

// Over the finite values: their mean and the half-width of Student's t 95% interval
// (IndependentMean's standard error, theory/statistics.h).
Estimate Estimate95(const std::vector<double>& values) {
  std::vector<double> finite;
  std::copy_if(values.begin(), values.end(), std::back_inserter(finite),
               [](double v) { return std::isfinite(v); });
  Estimate e;
  e.n = finite.size();
  if (finite.empty()) return e;
  const MeanEstimate mean = IndependentMean(finite);
  e.mean = mean.mean;
  if (e.n >= 2) e.ci95 = StudentTQuantile(0.975, mean.dof) * mean.standard_error;
  return e;
}

std::string ShowEstimate(const Estimate& e) {
  if (e.n == 0) return "-";
  // One run, or runs that agree up to rounding (bits of a fixed-size message): no interval.
  if (!std::isfinite(e.ci95) || e.ci95 <= 1e-9 * std::abs(e.mean)) {
    return fmt::format("{:.4g}", e.mean);
  }
  return fmt::format("{:.4g} ± {:.2g}", e.mean, e.ci95);
}

struct ReportQuantity {
  std::string name;    // summary.csv's column stem
  std::string header;  // the printed table's
};

struct Configuration {
  std::string name;
  std::vector<const Run*> runs;
  std::map<std::string, Estimate> estimates;
  int completed = 0;
};

// Columns a configuration is defined by: every hyperparameter but the seed.
bool IsSettingColumn(const std::string& column) {
  if (column == "seed") return false;
  return !IsRunColumn(column) || column == "label";
}

std::string MarkdownTable(const std::vector<std::string>& header,
                          const std::vector<std::vector<std::string>>& rows) {
  std::string out = fmt::format(
      "| {} |\n|{}\n", fmt::join(header, " | "),
      fmt::format("{}", fmt::join(std::vector<std::string>(header.size(), "---|"), "")));
  for (const auto& row : rows) out += fmt::format("| {} |\n", fmt::join(row, " | "));
  return out;
}

// For the console: the first column (the configuration, the assertion) left-aligned, the
// numbers right, within the console's width; the whole table is in `full_table`.
std::string TextTable(const std::vector<std::string>& header,
                      const std::vector<std::vector<std::string>>& rows,
                      std::string_view full_table) {
  std::vector<TableColumn> columns;
  for (const std::string& h : header) columns.push_back({h, columns.empty()});
  return FormatTableWithin(columns, rows, ConsoleWidth(), full_table);
}

// A check folder's verdicts, aggregated over seeds where check judged each seed alone.
std::string VerdictSummary(const std::filesystem::path& file, std::string& markdown) {
  std::ifstream in(file);
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.contains("verdicts")) {
    throw UserError(fmt::format("{}: not a lemmalab check.json", file.string()));
  }
  struct Tally {
    std::map<std::string, int> kinds;
    std::vector<double> measured;
    std::set<double> bounds;
    int n = 0;
  };
  std::map<std::pair<std::string, std::string>, Tally> groups;
  std::vector<std::pair<std::string, std::string>> order;
  for (const nlohmann::json& row : doc["verdicts"]) {
    // "birder (seed 2, n = 4)" -> "birder (n = 4)": the seeds of one configuration together.
    std::string run = row.value("run", "");
    if (const auto open = run.find(" (seed "); open != std::string::npos) {
      const auto comma = run.find(", ", open);
      run = comma == std::string::npos
                ? run.substr(0, open)
                : fmt::format("{} ({}", run.substr(0, open), run.substr(comma + 2));
    }
    const std::pair key{row.value("assertion", ""), run};
    if (!groups.contains(key)) order.push_back(key);
    Tally& t = groups[key];
    ++t.n;
    ++t.kinds[row.value("verdict", "")];
    if (row["measured_value"].is_number() && row["bound_value"].is_number()) {
      t.measured.push_back(row["measured_value"].get<double>());
      t.bounds.insert(row["bound_value"].get<double>());
    }
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& key : order) {
    const Tally& t = groups.at(key);
    std::vector<std::string> kinds;
    for (const auto& [kind, count] : t.kinds)
      kinds.push_back(fmt::format("{} in {} of {}", kind, count, t.n));
    std::string combined = "-";
    if (t.n > 1 && static_cast<int>(t.measured.size()) == t.n && t.bounds.size() == 1) {
      combined = fmt::format("measured {} vs bound {:.4g}", ShowEstimate(Estimate95(t.measured)),
                             *t.bounds.begin());
    }
    rows.push_back({key.first, key.second, fmt::format("{}", fmt::join(kinds, ", ")), combined});
  }
  const std::vector<std::string> header = {"assertion", "runs", "verdicts", "over seeds"};
  markdown += "\n## Verdicts (check.json)\n\n" + MarkdownTable(header, rows);
  return "\nverdicts (check.json)\n" + TextTable(header, rows, "report.md");
}

std::string Python() {
  // Debian's interpreter holds Debian's matplotlib and pandas; another python3 first on PATH
  // may not.
  return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

// Runs python -m lemmalab.plots, drawing into OUT the figures that will be read from PLOTS and
// writing the page HTML; returns its exit status (127: no interpreter).
int DrawPlots(const std::filesystem::path& dir, const std::filesystem::path& out,
              const std::filesystem::path& plots, const std::filesystem::path& html,
              std::string& output) {
  const char* from_env = std::getenv("LEMMALAB_PYTHON_DIR");
  const std::string module_dir = from_env != nullptr ? from_env : LEMMALAB_PYTHON_DIR;
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).starts_with("PYTHONPATH=")) continue;
    env.emplace_back(*e);
  }
  env.push_back("PYTHONPATH=" + module_dir);
  env.push_back("MPLBACKEND=Agg");
  const std::string python = Python();
  std::vector<std::string> args = {python,         "-m",         "lemmalab.plots",
                                   dir.string(),   out.string(), "--plots-at",
                                   plots.string(), "--html",     html.string()};
  const auto pointers = [](std::vector<std::string>& strings) {
    std::vector<char*> p;
    for (std::string& s : strings) p.push_back(s.data());
    p.push_back(nullptr);
    return p;
  };
  std::vector<char*> argv = pointers(args), envp = pointers(env);
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return 127;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  pid_t pid = 0;
  const int spawned =
      posix_spawnp(&pid, python.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (spawned != 0) {
    close(pipe_fds[0]);
    return 127;
  }
  char buffer[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof buffer)) > 0;) output.append(buffer, n);
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

}  // namespace

ReportResult WriteReport(const ReportOptions& options) {
  const std::filesystem::path& dir = options.dir;
  std::vector<Run> runs;
  std::int64_t offset = 0;
  for (const std::filesystem::path& file : FindDatabases(dir)) {
    for (Run& run : ReadRuns(file, offset)) runs.push_back(std::move(run));
    offset += 1000000000;
  }
  if (runs.empty()) throw UserError(fmt::format("{}: the results hold no run", dir.string()));
  std::stable_sort(runs.begin(), runs.end(),
                   [](const Run& a, const Run& b) { return a.order < b.order; });

  // A configuration is named by its label (where runs have several) and the settings that vary
  // between runs of that label, the seed aside; a sweep's runs by their point's axes.
  std::set<std::string> labels;
  for (const Run& run : runs) labels.insert(ShowCell(run.columns.at("label")));
  const auto varying_among = [&](const std::string& label) {
    std::vector<const Run*> same;
    for (const Run& run : runs) {
      if (ShowCell(run.columns.at("label")) == label) same.push_back(&run);
    }
    std::vector<std::string> columns;
    for (const auto& [column, value] : same.front()->columns) {
      if (!IsSettingColumn(column) || column == "label") continue;
      for (const Run* run : same) {
        const auto it = run->columns.find(column);
        if (it == run->columns.end() || ShowCell(it->second) != ShowCell(value)) {
          columns.push_back(column);
          break;
        }
      }
    }
    return columns;
  };
  std::map<std::string, std::vector<std::string>> varying_by_label;
  for (const std::string& label : labels) varying_by_label[label] = varying_among(label);
  // summary.csv's setting columns: every one that varies for some label.
  std::vector<std::string> varying;
  for (const auto& [label, columns] : varying_by_label) {
    for (const std::string& column : columns) {
      if (std::find(varying.begin(), varying.end(), column) == varying.end()) {
        varying.push_back(column);
      }
    }
  }
  std::sort(varying.begin(), varying.end());
  std::map<std::string, Configuration> by_key;
  std::vector<std::string> order;
  for (Run& run : runs) {
    std::string key;
    for (const auto& [column, value] : run.columns) {
      if (IsSettingColumn(column)) key += column + "=" + ShowCell(value) + ";";
    }
    const std::string label = ShowCell(run.columns.at("label"));
    if (run.configuration.empty()) {
      std::vector<std::string> parts;
      if (labels.size() > 1) parts.push_back(label);
      for (const std::string& column : varying_by_label.at(label)) {
        const auto it = run.columns.find(column);
        if (it != run.columns.end() && !std::holds_alternative<std::monostate>(it->second)) {
          parts.push_back(fmt::format("{}={}", column, ShowCell(it->second)));
        }
      }
      run.configuration = parts.empty() ? label : fmt::format("{}", fmt::join(parts, " "));
    } else if (labels.size() > 1) {
      run.configuration = label + " " + run.configuration;
    }
    auto [it, inserted] = by_key.try_emplace(key);
    if (inserted) {
      order.push_back(key);
      it->second.name = run.configuration;
    }
    // A run another point repeated (sgd beside a birder-only axis) with the same seed is the
    // same computation: counted once, so that it does not narrow the interval.
    const std::string seed = ShowCell(run.columns.at("seed"));
    const auto& same = it->second.runs;
    if (std::none_of(same.begin(), same.end(),
                     [&](const Run* r) { return ShowCell(r->columns.at("seed")) == seed; })) {
      it->second.runs.push_back(&run);
    }
  }

  // Quantities, each a number per run.
  std::vector<ReportQuantity> quantities = {{"final_loss", "final loss"}};
  const auto any = [&](const std::string& column) {
    return std::any_of(runs.begin(), runs.end(),
                       [&](const Run& r) { return std::isfinite(r.Get(column)); });
  };
  for (const auto& [column, header] :
       {std::pair{"final_accuracy", "accuracy"}, std::pair{"final_test_loss", "test loss"},
        std::pair{"final_test_accuracy", "test acc."}}) {
    if (any(column)) quantities.push_back({column, header});
  }
  quantities.push_back({"bits_per_param_step", "bits/param/step"});
  quantities.push_back({"comm_seconds", "comm s (projected)"});
  std::set<std::string> probe_names;
  for (const Run& run : runs) {
    for (const auto& [name, value] : run.probes) probe_names.insert(name);
  }
  // A probe's column is the mean of its recorded series over the steps and workers.
  for (const std::string& name : probe_names) quantities.push_back({name, name + " (mean)"});
  const auto value_of = [](const Run& run, const std::string& quantity) {
    if (quantity == "bits_per_param_step") {
      return run.Get("bits_sent_per_worker") / (run.Get("dimension") * run.Get("steps_done"));
    }
    if (quantity == "comm_seconds") return run.Get("comm_seconds_per_step") * run.Get("steps_done");
    if (const auto it = run.probes.find(quantity); it != run.probes.end()) return it->second;
    return run.Get(quantity);
  };

  std::vector<std::string> header = {"configuration", "runs"};
  for (const ReportQuantity& q : quantities) header.push_back(q.header);
  std::vector<std::vector<std::string>> rows;
  std::string csv = "configuration,label";
  for (const std::string& column : varying) {
    csv += fmt::format(",{}", CsvText(column));
  }
  csv += ",runs,completed";
  for (const ReportQuantity& q : quantities) {
    csv += fmt::format(",{},{},{}", CsvText(q.name + "_mean"), CsvText(q.name + "_ci95"),
                       CsvText(q.name + "_n"));
  }
  csv += "\n";
  std::vector<std::string> notes;
  for (const std::string& key : order) {
    Configuration& c = by_key.at(key);
    std::vector<const Run*> completed;
    for (const Run* run : c.runs) {
      if (run->completed()) {
        completed.push_back(run);
      } else {
        notes.push_back(fmt::format("{} (seed {}): {}", c.name, ShowCell(run->columns.at("seed")),
                                    ShowCell(run->columns.at("status"))));
      }
    }
    c.completed = static_cast<int>(completed.size());
    std::vector<std::string> row = {c.name, fmt::format("{}/{}", c.completed, c.runs.size())};
    const Run& first = *c.runs.front();
    csv += CsvText(c.name) + "," + CsvText(ShowCell(first.columns.at("label")));
    for (const std::string& column : varying) {
      const auto it = first.columns.find(column);
      const Cell value = it == first.columns.end() ? Cell{} : it->second;
      const bool text = std::holds_alternative<std::string>(value);
      csv += fmt::format(",{}", text ? CsvText(ShowCell(value)) : ShowCell(value));
    }
    csv += fmt::format(",{},{}", c.runs.size(), c.completed);
    for (const ReportQuantity& q : quantities) {
      std::vector<double> values;
      for (const Run* run : completed) values.push_back(value_of(*run, q.name));
      const Estimate e = Estimate95(values);
      c.estimates[q.name] = e;
      row.push_back(ShowEstimate(e));
      const auto number = [](double x) {
        return std::isfinite(x) ? fmt::format("{}", x) : std::string();
      };
      csv += fmt::format(",{},{},{}", number(e.mean), number(e.ci95), e.n);
    }
    csv += "\n";
    rows.push_back(std::move(row));
  }

  ReportResult result;
  const auto write = [&](const std::string& name, const std::string& text) {
    WriteTextFile(dir / name, text);
    result.written.push_back((dir / name).string());
  };

  std::size_t seeds = 0;
  for (const auto& [key, c] : by_key) seeds = std::max(seeds, c.runs.size());
  std::string intro = fmt::format(
      "{} runs in {} configurations (up to {} seeds each); mean ± 95% confidence interval "
      "(Student's t) over the runs that completed\n\n",
      runs.size(), order.size(), seeds);
  result.text = intro + TextTable(header, rows, "summary.csv and report.md");
  // The build that wrote the report; the runs' own builds are in runs.csv and results.sqlite.
  std::string markdown =
      fmt::format("# Report: {}\n\n{}\n\n{}", dir.string(), ProvenanceLine(), intro) +
      MarkdownTable(header, rows);
  if (!notes.empty()) {
    result.text += "\nnot completed:\n";
    markdown += "\nNot completed:\n\n";
    for (const std::string& note : notes) {
      result.text += "  " + note + "\n";
      markdown += "- " + note + "\n";
    }
  }
  if (std::filesystem::is_regular_file(dir / "check.json")) {
    result.text += VerdictSummary(dir / "check.json", markdown);
  }
  write("summary.csv", csv);

  // The page is written only with the figures it embeds; an earlier one would describe results
  // that may have changed since, so it goes first.
  const std::filesystem::path html = dir / "report.html";
  std::error_code html_ec;
  std::filesystem::remove(html, html_ec);
  CheckFileOperation(html_ec, "remove", html);
  if (options.plots) {
    std::string output;
    // Drawn afresh into a folder of their own, which then replaces the earlier figures whole:
    // none of those describes results that are gone, and nothing is drawn through a link.
    const std::filesystem::path plots = dir / "plots", drawing = dir / "plots.partial";
    std::error_code ec;
    std::filesystem::remove_all(drawing, ec);
    CheckFileOperation(ec, "remove", drawing);
    const int status = DrawPlots(dir, drawing, plots, html, output);
    if (status == 0) {
      std::filesystem::remove_all(plots, ec);  // a link goes, not what it points to
      CheckFileOperation(ec, "remove", plots);
      std::filesystem::rename(drawing, plots, ec);
      CheckFileOperation(ec, "move into place", plots);
      for (std::size_t at; (at = output.find(drawing.string())) != std::string::npos;) {
        output.replace(at, drawing.string().size(), plots.string());
      }
    } else {
      std::filesystem::remove_all(drawing, ec);
    }
    if (status == 0) {
      std::vector<std::string> pngs;
      std::istringstream lines(output);
      for (std::string line; std::getline(lines, line);) {
        if (line.ends_with(".png")) pngs.push_back(line);
      }
      markdown += "\nThe whole report as one page, figures included: report.html.\n\n## Plots\n\n";
      for (const std::string& png : pngs) {
        const std::string relative = std::filesystem::relative(png, dir).string();
        markdown += fmt::format("![{}]({})\n", relative, relative);
        result.written.push_back(png);
      }
      result.text += fmt::format("\nplots: {} PNGs (each with a vector PDF) in {}/\n", pngs.size(),
                                 plots.string());
      result.written.push_back(html.string());
    } else {
      const std::string why =
          status == 127 ? fmt::format("{} was not found", Python())
          : status == 3 ? std::string("matplotlib is missing")
                        : fmt::format("the plotting module failed (exit {}): {}", status, output);
      const std::string advice = fmt::format(
          "no plots: {}; install Debian's python3-matplotlib and python3-pandas "
          "(scripts/install-deps does), then run lemmalab report {} again",
          why, dir.string());
      result.text += "\n" + advice + "\n";
      markdown += "\n" + advice + "\n";
    }
  }
  if (!options.plots) markdown += "\nPlots not drawn (lemmalab report --no-plots).\n";
  write("report.md", markdown);
  return result;
}

}  // namespace lemmalab
