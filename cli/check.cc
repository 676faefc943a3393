#include "cli/check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>

#include "cli/evidence_reader.h"
#include "core/build_info.h"
#include "core/error.h"
#include "core/text.h"
#include "engine/directory_lock.h"
#include "engine/estimates.h"
#include "engine/experiment.h"
#include "engine/results.h"
#include "engine/results_reader.h"
#include "theory/evidence_rule.h"
#include "theory/probe.h"

namespace lemmalab {
namespace {

// One [[assert]] entry, validated (every key) before anything runs.
struct Claim {
  const AssertionInfo* info = nullptr;
  Judgement judge;
  std::vector<std::string> runs;  // labels; empty: the default selection
  VerdictKind expected = VerdictKind::kHolds;
};

// One experiment of the sweep: the spec at one seed and worker count.
struct Experiment {
  std::uint64_t seed = 0;
  int workers = 1;
  std::filesystem::path dir;
  std::vector<RunEvidence> runs;
};

// `expect`, in the words ExpectationName gives each verdict.
VerdictKind ParseExpectation(OptionTable& table) {
  static constexpr VerdictKind kKinds[] = {VerdictKind::kHolds, VerdictKind::kVacuous,
                                           VerdictKind::kViolated, VerdictKind::kInconclusive};
  std::vector<std::string> names;
  for (const VerdictKind kind : kKinds) names.emplace_back(ExpectationName(kind));
  const std::string expect = table.GetChoice("expect", names.front(), names);
  return kKinds[std::find(names.begin(), names.end(), expect) - names.begin()];
}

std::vector<Claim> ReadClaims(const RunSpec& spec) {
  if (spec.asserts.empty()) {
    throw UserError(
        fmt::format("{}: no [[assert]] table: nothing to check (add e.g. [[assert]] assertion = "
                    "\"ef-norm\"; lemmalab list shows the assertions)",
                    spec.path.string()));
  }
  AssertionContext context;
  for (const OptimizerSpec& o : spec.optimizers) context.labels.push_back(o.label);
  const std::vector<std::string>& labels = context.labels;
  std::vector<Claim> claims;
  for (const std::shared_ptr<OptionTable>& table : spec.asserts) {
    Claim claim;
    const std::string name = table->RequireString("assertion");
    claim.info = Assertions().Find(name);
    if (claim.info == nullptr) {
      table->Fail("assertion", UnknownName("assertion", name, Assertions().names()));
    }
    table->set_context(fmt::format("[[assert]] '{}'", name));
    claim.expected = ParseExpectation(*table);
    claim.runs = table->GetStringList("runs");
    for (const std::string& label : claim.runs) {
      if (std::find(labels.begin(), labels.end(), label) == labels.end()) {
        table->Fail("runs", fmt::format("no [[optimizer]] is labelled '{}' (labels: {})", label,
                                        JoinNames(labels)));
      }
    }
    claim.judge = claim.info->make(*table, context);
    table->RejectUnknownKeys();
    claims.push_back(std::move(claim));
  }
  return claims;
}

// The first difference between two option values, as "path: a then, b now" (nullopt when they
// are equal): tables key by key, arrays element by element.
std::optional<std::string> Difference(const OptionValue& a, const OptionValue& b,
                                      const std::string& path) {
  const auto* ta = std::get_if<OptionValue::Table>(&a.data);
  const auto* tb = std::get_if<OptionValue::Table>(&b.data);
  if (ta != nullptr && tb != nullptr) {
    std::set<std::string> keys;
    for (const auto& [key, value] : (*ta)->entries()) keys.insert(key);
    for (const auto& [key, value] : (*tb)->entries()) keys.insert(key);
    for (const std::string& key : keys) {
      const std::string at = path.empty() ? key : path + "." + key;
      const auto ia = (*ta)->entries().find(key), ib = (*tb)->entries().find(key);
      if (ia == (*ta)->entries().end() || ib == (*tb)->entries().end()) {
        return fmt::format("{}: {} then, {} now", at,
                           ia == (*ta)->entries().end() ? "absent" : ia->second.Show(),
                           ib == (*tb)->entries().end() ? "absent" : ib->second.Show());
      }
      if (auto d = Difference(ia->second, ib->second, at)) return d;
    }
    return std::nullopt;
  }
  const auto* aa = std::get_if<OptionValue::Array>(&a.data);
  const auto* ab = std::get_if<OptionValue::Array>(&b.data);
  if (aa != nullptr && ab != nullptr) {
    if (aa->size() != ab->size()) {
      return fmt::format("{}: {} entries then, {} now", path, aa->size(), ab->size());
    }
    for (std::size_t k = 0; k < aa->size(); ++k) {
      if (auto d = Difference((*aa)[k], (*ab)[k], fmt::format("{}[{}]", path, k))) return d;
    }
    return std::nullopt;
  }
  // Scalars (Show writes numbers in their shortest exact form).
  if (a.data.index() == b.data.index() && a.Show() == b.Show()) return std::nullopt;
  return fmt::format("{}: {} then, {} now", path, a.Show(), b.Show());
}

// Why the results in `dir` are not those of `spec` at this seed and worker count, or "": the spec
// text as far as it decides the runs (everything but [[assert]], [check] and the description),
// the --set arguments, and every run's resolved options (what the build then resolved against
// what this one resolves: a default may have changed).
std::string ProvenanceMismatch(const RunSpec& spec, const std::filesystem::path& dir,
                               const ExperimentReport& resolved,
                               const std::vector<RunEvidence>& runs) {
  ResultsReader db(dir / ResultsWriter::kDatabase);
  std::map<std::string, std::string> meta;
  db.ForEachRow("SELECT key, value FROM meta", [&](sqlite3_stmt* row) {
    meta[ResultsReader::Text(row, 0)] = ResultsReader::Text(row, 1);
  });
  const auto deciding = [](const std::string& text, const std::filesystem::path& path) {
    OptionValue root{ParseSpecTable(text, path), ""};
    for (const char* key : {"assert", "check", "description"}) {
      std::get<OptionValue::Table>(root.data)->Erase(key);
    }
    return root;
  };
  if (meta["spec_text"] != spec.text) {
    const std::optional<std::string> d = Difference(deciding(meta["spec_text"], meta["spec_path"]),
                                                    deciding(spec.text, spec.path), "");
    if (d)
      return fmt::format("its spec ({}) differs from {}: {}", meta["spec_path"], spec.path.string(),
                         *d);
  }
  if (const std::string settings = JoinNames(spec.settings); meta["settings"] != settings) {
    return fmt::format("it was run with --set arguments '{}', this check with '{}'",
                       meta["settings"], settings);
  }
  std::vector<std::string> stored, wanted;
  for (const RunEvidence& run : runs) stored.push_back(run.label);
  for (const RunReport& run : resolved.runs) wanted.push_back(run.record.label);
  if (stored != wanted) {
    return fmt::format("it holds the runs {}, the spec asks for {}", JoinNames(stored),
                       JoinNames(wanted));
  }
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const auto& then = runs[k].hyperparameters.entries();
    const auto& now = resolved.runs[k].hyperparameters.entries();
    std::set<std::string> keys;
    for (const auto& [key, value] : then) keys.insert(key);
    for (const auto& [key, value] : now) keys.insert(key);
    for (const std::string& key : keys) {
      const auto a = then.find(key), b = now.find(key);
      const std::string was = a == then.end() ? "absent" : Hyperparameters::Show(a->second);
      const std::string is = b == now.end() ? "absent" : Hyperparameters::Show(b->second);
      if (was != is) {
        return fmt::format("run '{}' resolved {} = {} then, {} now (another build of lemmalab)",
                           runs[k].label, key, was, is);
      }
    }
  }
  return "";
}

// What a check holds in memory per value of the results estimate (ExperimentReport's
// result_values), once the results are read back as evidence: measured 25 bytes (47.6 KiB more
// per seed of a 50-step Birder check with two probes, whose results estimate counts 1 906
// values), with a margin.
constexpr double kBytesPerEvidenceValue = 32;

// A check keeps every experiment's evidence until it judges them all: refused (UserError) before
// the first run when that, with what the process holds already, exceeds the memory limit.
void RequireEvidenceWithin(const RunSpec& spec, const CheckOptions& options,
                           const std::vector<ExperimentReport>& experiments) {
  double values = 0;
  for (const ExperimentReport& e : experiments) values += e.result_values;
  MemoryEstimate estimate;
  estimate.Add("what the process holds already", ResidentBytes(),
               "measured before the first run: the program, the data and the problem");
  estimate.Add("the evidence kept until the verdicts", values * kBytesPerEvidenceValue,
               fmt::format("{} experiments ([check] seeds x workers) x about {:.0f} values of "
                           "metrics and probes x {:g} bytes",
                           experiments.size(), values / static_cast<double>(experiments.size()),
                           kBytesPerEvidenceValue));
  RequireWithin(options.max_memory.value_or(MemoryLimit::Machine()), estimate, spec.path.string(),
                "memory of the check");
}

// One experiment of a [check] sweep, before it runs: its seed, worker count, spec and folder.
struct Planned {
  std::uint64_t seed = 0;
  int workers = 1;
  RunSpec spec;
  std::filesystem::path dir;
};

// Runs (or reads) every experiment of the sweep. Every experiment's spec is validated (data,
// problem, optimizers, probes built) before the first one runs, so that a value of the sweep that
// cannot run is refused before the others spend their time.
std::vector<Experiment> RunOrReadExperiments(RunSpec& spec, const std::vector<Claim>& claims,
                                             const CheckOptions& options, double& confidence) {
  std::vector<std::int64_t> seeds = {static_cast<std::int64_t>(spec.seed)};
  std::vector<std::int64_t> workers = {spec.workers};
  confidence = 0.99;
  if (spec.check) {
    seeds = spec.check->GetIntList("seeds", seeds, 0, 0xFFFFFFFFll);
    workers = spec.check->GetIntList("workers", workers, 1, 1 << 20);
    confidence = spec.check->GetDouble("confidence", confidence, Interval{0.5, 1.0, true, true});
    for (const auto& [key, list] : {std::pair{"seeds", &seeds}, std::pair{"workers", &workers}}) {
      if (list->empty()) spec.check->Fail(key, "the list is empty");
      std::vector<std::int64_t> sorted = *list;
      std::sort(sorted.begin(), sorted.end());
      if (const auto twice = std::adjacent_find(sorted.begin(), sorted.end());
          twice != sorted.end()) {
        spec.check->Fail(key, fmt::format("{} is listed twice", *twice));
      }
    }
    if (workers.size() > 1 && spec.comm.topology_given) {
      spec.check->Fail("workers",
                       "a worker sweep cannot keep the fixed topology of "
                       "[communication] (nodes, workers_per_node)");
    }
    spec.check->RejectUnknownKeys();
  }
  for (const Claim& claim : claims) {
    std::vector<std::string_view> probes = claim.info->probes;
    probes.insert(probes.end(), claim.info->premise_probes.begin(),
                  claim.info->premise_probes.end());
    for (const std::string_view probe : probes) {
      if (std::find(spec.probes.begin(), spec.probes.end(), probe) == spec.probes.end() &&
          std::find(spec.check_probes.begin(), spec.check_probes.end(), probe) ==
              spec.check_probes.end()) {
        spec.check_probes.emplace_back(probe);
      }
    }
  }
  const bool sweep = seeds.size() > 1 || workers.size() > 1;
  std::vector<Planned> plan;
  for (const std::int64_t n : workers) {
    for (const std::int64_t seed : seeds) {
      Planned p{
          static_cast<std::uint64_t>(seed), static_cast<int>(n), spec,
          sweep ? options.out_dir / fmt::format("seed-{}-workers-{}", seed, n) : options.out_dir};
      p.spec.seed = p.seed;
      if (p.workers != spec.workers) {
        p.spec.workers = p.workers;
        p.spec.comm = CommFromOptions(nullptr, p.workers);
        p.spec.comm.scheme = spec.comm.scheme;
      }
      plan.push_back(std::move(p));
    }
  }
  // Every experiment is built before any runs; the data are loaded once.
  DataCache data;
  std::vector<ExperimentReport> resolved;
  for (const Planned& p : plan) {
    try {
      resolved.push_back(ValidateExperiment(p.spec, &data));
    } catch (const UserError& e) {
      if (!sweep) throw;
      throw UserError(fmt::format("{}: the [check] sweep's seed {} with {} workers cannot run: {}",
                                  spec.path.string(), p.seed, p.workers, e.what()));
    }
  }
  RequireEvidenceWithin(spec, options, resolved);
  std::vector<Experiment> experiments;
  for (std::size_t k = 0; k < plan.size(); ++k) {
    const Planned& p = plan[k];
    Experiment e{p.seed, p.workers, p.dir, {}};
    if (!options.from) {
      ExperimentOptions run;
      run.out_dir = e.dir;
      run.threads = options.threads;
      run.progress = options.progress;
      run.stop = options.stop;
      run.max_memory = options.max_memory;
      run.max_results = options.max_results;
      run.data_cache = &data;
      // A check over one seed keeps its run beside its verdicts; over several, each run is in a
      // run folder of its own.
      run.command = sweep ? "lemmalab run" : "lemmalab check";
      if (options.progress) {
        fmt::print(stderr, "running seed {}, {} workers -> {}\n", p.seed, p.workers,
                   e.dir.string());
      }
      RunExperiment(p.spec, run);
    }
    if (options.from && !std::filesystem::exists(e.dir / ResultsWriter::kDatabase)) {
      throw UserError(fmt::format(
          "--from {}: no results for seed {} with {} workers at {}{}; run lemmalab check "
          "without --from to produce them",
          options.out_dir.string(), p.seed, p.workers, e.dir.string(),
          sweep ? " (the spec's [check] sweep keeps each experiment in "
                  "seed-<s>-workers-<n>/)"
                : ""));
    }
    e.runs = ReadEvidence(e.dir);
    if (options.from) {
      if (e.runs.empty() || e.runs.front().seed != e.seed || e.runs.front().workers != e.workers) {
        throw UserError(fmt::format(
            "--from {}: {} holds results of seed {} with {} workers, not seed {} with {} workers "
            "as {} asks",
            options.out_dir.string(), e.dir.string(), e.runs.empty() ? 0 : e.runs.front().seed,
            e.runs.empty() ? 0 : e.runs.front().workers, e.seed, e.workers, spec.path.string()));
      }
      // The verdicts are about the spec's runs: results of another spec are not judged as if.
      if (const std::string why = ProvenanceMismatch(p.spec, e.dir, resolved[k], e.runs);
          !why.empty()) {
        throw UserError(fmt::format(
            "--from {}: the results in {} are not those of {}: {}; run lemmalab check without "
            "--from to produce its own",
            options.out_dir.string(), e.dir.string(), spec.path.string(), why));
      }
    }
    experiments.push_back(std::move(e));
  }
  return experiments;
}

// Whether the claim judges the run with this label by default: every run that recorded the
// assertion's first probe, the one that measures its quantity (or every run, for assertions that
// read only metrics). The other probes serve its premises, whose absence the verdict reports.
bool Selected(const Claim& claim, const RunEvidence& run) {
  if (!claim.runs.empty()) {
    return std::find(claim.runs.begin(), claim.runs.end(), run.label) != claim.runs.end();
  }
  return claim.info->probes.empty() || run.HasProbe(claim.info->probes.front());
}

// The judged runs' status and final loss, as the check prints them beside the verdict.
std::string DescribeRuns(std::span<const RunEvidence> runs) {
  if (runs.empty()) return "";
  if (runs.size() == 1) {
    return fmt::format("{}, final loss {:.6g}", runs.front().status, runs.front().final_loss);
  }
  const auto completed =
      std::count_if(runs.begin(), runs.end(), [](const RunEvidence& r) { return r.completed(); });
  const auto [low, high] = std::minmax_element(
      runs.begin(), runs.end(),
      [](const RunEvidence& a, const RunEvidence& b) { return a.final_loss < b.final_loss; });
  std::string out = fmt::format("{} of {} runs completed, final loss {:.6g} to {:.6g}", completed,
                                runs.size(), low->final_loss, high->final_loss);
  for (const RunEvidence& r : runs) {
    if (!r.completed()) out += fmt::format("; seed {}, n = {}: {}", r.seed, r.workers, r.status);
  }
  return out;
}

std::vector<CheckRow> Judge(const Claim& claim, const std::vector<Experiment>& experiments,
                            double confidence) {
  std::vector<CheckRow> rows;
  const auto add = [&](std::string runs, std::string status, Verdict verdict, std::string label,
                       std::vector<std::string> folders) {
    CheckRow r;
    r.label = std::move(label);
    r.folders = std::move(folders);
    r.assertion = std::string(claim.info->name);
    r.summary = std::string(claim.info->summary);
    r.source = verdict.source.empty() ? std::string(claim.info->source) : verdict.source;
    r.runs = std::move(runs);
    r.status = std::move(status);
    r.expected = claim.expected;
    r.verdict = std::move(verdict);
    rows.push_back(std::move(r));
  };
  const auto row = [&](std::string runs, std::span<const RunEvidence> group,
                       std::span<const RunEvidence> experiment,
                       const std::vector<const Experiment*>& from) {
    std::vector<std::string> folders;
    for (const Experiment* e : from) folders.push_back(e->dir.string());
    add(std::move(runs), DescribeRuns(group),
        JudgeClaim(*claim.info, claim.judge, {group, experiment, confidence}), group.front().label,
        std::move(folders));
  };
  // Labels in spec order, as the first experiment lists them.
  std::vector<std::string> labels;
  for (const RunEvidence& run : experiments.front().runs) {
    if (Selected(claim, run)) labels.push_back(run.label);
  }
  std::map<int, std::vector<const Experiment*>> by_workers;
  for (const Experiment& e : experiments) by_workers[e.workers].push_back(&e);
  // The worker counts, by hand rather than std::views::keys(by_workers): Clang 14, which builds
  // the ThreadSanitizer preset, cannot compile libstdc++ 12's views over a std::map.
  std::vector<int> worker_counts;
  for (const auto& [n, group] : by_workers) worker_counts.push_back(n);
  const bool seeds = by_workers.begin()->second.size() > 1, sweep_n = by_workers.size() > 1;
  for (const std::string& label : labels) {
    const auto find = [&](const Experiment& e) -> const RunEvidence& {
      for (const RunEvidence& run : e.runs) {
        if (run.label == label) return run;
      }
      throw UserError(fmt::format("{}: no run labelled '{}'", e.dir.string(), label));
    };
    switch (claim.info->scope) {
      case AssertionScope::kRun:
        for (const Experiment& e : experiments) {
          std::string where;
          if (seeds || sweep_n) where = fmt::format(" (seed {}, n = {})", e.seed, e.workers);
          row(label + where, std::span(&find(e), 1), e.runs, {&e});
        }
        break;
      case AssertionScope::kAcrossSeeds:
        for (const auto& [n, group] : by_workers) {
          std::vector<RunEvidence> runs;
          for (const Experiment* e : group) runs.push_back(find(*e));
          row(fmt::format("{} over {} seed{}{}", label, runs.size(), runs.size() == 1 ? "" : "s",
                          sweep_n ? fmt::format(" (n = {})", n) : ""),
              runs, group.front()->runs, group);
        }
        break;
      case AssertionScope::kAcrossWorkers: {
        std::vector<RunEvidence> runs;
        std::vector<const Experiment*> all;
        for (const Experiment& e : experiments) {
          runs.push_back(find(e));
          all.push_back(&e);
        }
        row(fmt::format("{} over n = {}", label, fmt::join(worker_counts, ", ")), runs,
            experiments.front().runs, all);
        break;
      }
    }
  }
  if (labels.empty()) {
    add("(none)", "",
        Verdict::Inconclusive(claim.runs.empty()
                                  ? fmt::format("no run recorded the probes it reads ({})",
                                                fmt::join(claim.info->probes, ", "))
                                  : "none of the listed runs exist"),
        "", {});
  }
  return rows;
}

std::string WorstText(const Verdict& v) {
  if (!v.worst_step) return "";
  std::string s = fmt::format("step {}", *v.worst_step);
  if (v.worst_worker) {
    s += *v.worst_worker == kServer ? ", server" : fmt::format(", worker {}", *v.worst_worker);
  }
  return s;
}

}  // namespace

int CheckReport::mismatches() const {
  return static_cast<int>(
      std::count_if(rows.begin(), rows.end(), [](const CheckRow& r) { return !r.as_expected(); }));
}

CheckReport RunCheck(RunSpec spec, const CheckOptions& options) {
  const std::vector<Claim> claims = ReadClaims(spec);
  // Held while the runs are written and judged (the runs lock their folders again).
  std::optional<DirectoryLock> lock;
  if (!options.from) lock.emplace(options.out_dir, "lemmalab check");
  CheckReport report;
  report.spec = spec.path.string();
  const std::vector<Experiment> experiments =
      RunOrReadExperiments(spec, claims, options, report.confidence);
  for (const Experiment& e : experiments) report.folders.push_back(e.dir.string());
  for (const Claim& claim : claims) {
    for (CheckRow& row : Judge(claim, experiments, report.confidence)) {
      report.rows.push_back(std::move(row));
    }
  }
  return report;
}

namespace {

std::string PremiseLine(const Premise& p) {
  const char* status = p.failed()                                ? "FAILED"
                       : p.status == Premise::Status::kUnchecked ? "unchecked"
                                                                 : "met";
  return fmt::format("[{}] {}: {}", status, p.name, p.detail);
}

std::string FormLine(const BoundForm& f) {
  return fmt::format("{}: {} -> {}{}", f.name, f.bound, VerdictName(f.kind),
                     f.detail.empty() ? "" : fmt::format(" ({})", f.detail));
}

}  // namespace

std::string FormatCheck(const CheckReport& report) {
  std::size_t a = 9, r = 3;
  for (const CheckRow& row : report.rows) {
    a = std::max(a, row.assertion.size());
    r = std::max(r, row.runs.size());
  }
  std::string out = fmt::format("{:<{}}  {:<{}}  {:<15}  {:<12}  {}\n", "assertion", a, "run", r,
                                "verdict", "expected", "source");
  for (const CheckRow& row : report.rows) {
    out += fmt::format("{:<{}}  {:<{}}  {:<15}  {:<12}  {}\n", row.assertion, a, row.runs, r,
                       VerdictName(row.verdict.kind),
                       row.as_expected() ? std::string("yes")
                                         : fmt::format("NO ({})", ExpectationName(row.expected)),
                       row.source);
    const auto line = [&](std::string_view label, const std::string& text) {
      if (!text.empty()) out += fmt::format("    {:<9} {}\n", label, text);
    };
    line("run:", row.status);
    line("measured:", row.verdict.measured);
    line("bound:", row.verdict.bound);
    for (const BoundForm& f : row.verdict.other_forms) line("also:", FormLine(f));
    line("worst:", WorstText(row.verdict));
    for (std::size_t k = 0; k < row.verdict.premises.size(); ++k) {
      line(k == 0 ? "premises:" : "", PremiseLine(row.verdict.premises[k]));
    }
    for (std::size_t k = 0; k < row.verdict.evidence.size(); ++k) {
      line(k == 0 ? "evidence:" : "", row.verdict.evidence[k]);
    }
    line("detail:", row.verdict.detail);
  }
  const int bad = report.mismatches();
  out += fmt::format("{} of {} verdicts as expected (confidence {:g}){}\n",
                     static_cast<int>(report.rows.size()) - bad, report.rows.size(),
                     report.confidence, bad == 0 ? "" : fmt::format("; {} NOT", bad));
  return out;
}

std::string CheckMarkdown(const CheckReport& report) {
  const auto cell = [](std::string text) {
    std::string out;
    for (const char c : text) {
      if (c == '|') {
        out += "\\|";
      } else if (c == '\n') {
        out += "<br>";
      } else {
        out += c;
      }
    }
    return out;
  };
  std::string out =
      fmt::format("# lemmalab check: {}\n\nConfidence {:g}. Results: {}.\n\n{}\n\n", report.spec,
                  report.confidence, fmt::join(report.folders, ", "), ProvenanceLine());
  out += "| assertion | source | run | status | measured | bound | verdict | expected | worst |\n";
  out += "|---|---|---|---|---|---|---|---|---|\n";
  for (const CheckRow& row : report.rows) {
    out +=
        fmt::format("| {} | {} | {} | {} | {} | {} | **{}** | {} | {} |\n", cell(row.assertion),
                    cell(row.source), cell(row.runs), cell(row.status), cell(row.verdict.measured),
                    cell(row.verdict.bound), VerdictName(row.verdict.kind),
                    ExpectationName(row.expected), cell(WorstText(row.verdict)));
  }
  bool details = false;
  for (const CheckRow& row : report.rows) {
    if (row.verdict.detail.empty() && row.verdict.premises.empty() &&
        row.verdict.other_forms.empty() && row.verdict.evidence.empty()) {
      continue;
    }
    if (!details) out += "\n## Details\n\n";
    details = true;
    out += fmt::format("- **{}** ({}): {}\n", row.assertion, row.runs,
                       row.verdict.detail.empty() ? "-" : row.verdict.detail);
    for (const BoundForm& f : row.verdict.other_forms) {
      out += fmt::format("  - also {}\n", FormLine(f));
    }
    for (const Premise& p : row.verdict.premises) {
      out += fmt::format("  - premise {}\n", PremiseLine(p));
    }
    for (const std::string& e : row.verdict.evidence) out += fmt::format("  - evidence {}\n", e);
  }
  return out;
}

std::string CheckJson(const CheckReport& report) {
  // JSON has no NaN or infinity: such values are null.
  const auto number = [](double x) {
    return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
  };
  const auto optional = [](const auto& x) {
    return x ? nlohmann::json(*x) : nlohmann::json(nullptr);
  };
  nlohmann::json doc;
  const BuildInfo& build = Build();
  doc["lemmalab_version"] = build.version;
  doc["commit"] = build.commit;
  doc["build"] = build.build;
  doc["spec"] = report.spec;
  doc["confidence"] = report.confidence;
  doc["folders"] = report.folders;
  doc["as_expected"] = report.mismatches() == 0;
  auto& rows = doc["verdicts"] = nlohmann::json::array();
  for (const CheckRow& row : report.rows) {
    const Verdict& v = row.verdict;
    nlohmann::json j = {{"assertion", row.assertion},
                        {"summary", row.summary},
                        {"source", row.source},
                        {"run", row.runs},
                        {"status", row.status},
                        {"verdict", ExpectationName(v.kind)},
                        {"expected", ExpectationName(row.expected)},
                        {"as_expected", row.as_expected()},
                        {"measured", v.measured},
                        {"bound", v.bound},
                        {"detail", v.detail}};
    j["measured_value"] = number(v.measured_value);
    j["bound_value"] = number(v.bound_value);
    j["worst_step"] = optional(v.worst_step);
    j["worst_worker"] = optional(v.worst_worker);
    auto& forms = j["other_forms"] = nlohmann::json::array();
    for (const BoundForm& f : v.other_forms) {
      forms.push_back({{"name", f.name},
                       {"verdict", ExpectationName(f.kind)},
                       {"bound", f.bound},
                       {"bound_value", number(f.bound_value)},
                       {"detail", f.detail}});
    }
    j["evidence"] = v.evidence;
    j["label"] = row.label;
    j["folders"] = row.folders;
    if (v.statistic) {
      j["statistic"] = {{"series", v.statistic->series},
                        {"reduction", v.statistic->reduction},
                        {"bound_is_level", v.statistic->bound_is_level}};
    } else {
      j["statistic"] = nullptr;
    }
    auto& premises = j["premises"] = nlohmann::json::array();
    for (const Premise& p : v.premises) {
      premises.push_back({{"name", p.name},
                          {"status", p.failed()                                ? "failed"
                                     : p.status == Premise::Status::kUnchecked ? "unchecked"
                                                                               : "met"},
                          {"detail", p.detail},
                          {"step", optional(p.step)},
                          {"worker", optional(p.worker)}});
    }
    rows.push_back(std::move(j));
  }
  return doc.dump(2) + "\n";
}

void WriteCheckFiles(const CheckReport& report, const std::filesystem::path& dir) {
  WriteTextFile(dir / "check.json", CheckJson(report));
  WriteTextFile(dir / "check.md", CheckMarkdown(report));
}

}  // namespace lemmalab
