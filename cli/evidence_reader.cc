#include "cli/evidence_reader.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>

#include "core/error.h"
#include "engine/results.h"
#include "engine/results_reader.h"

namespace lemmalab {
namespace {

using Row = sqlite3_stmt*;
constexpr auto Text = &ResultsReader::Text;
constexpr auto Real = &ResultsReader::Real;

int Worker(Row s, int column) {
  return sqlite3_column_type(s, column) == SQLITE_NULL ? kRunWide : sqlite3_column_int(s, column);
}

Certainty ParseCertainty(const std::string& name) {
  if (name == "exact") return Certainty::kExact;
  if (name == "bound") return Certainty::kBound;
  return Certainty::kEstimate;
}

}  // namespace

std::vector<RunEvidence> ReadEvidence(const std::filesystem::path& dir) {
  const std::filesystem::path file = dir / ResultsWriter::kDatabase;
  if (!std::filesystem::is_regular_file(file)) {
    throw UserError(fmt::format(
        "--from {}: no {} there (results are written only when a run finishes; run lemmalab "
        "check without --from to produce them)",
        dir.string(), ResultsWriter::kDatabase));
  }
  ResultsReader db(file);
  std::map<std::string, std::string> meta;
  db.ForEachRow("SELECT key, value FROM meta", [&](Row s) { meta[Text(s, 0)] = Text(s, 1); });
  for (const char* key : {"seed", "steps", "workers", "precision", "dimension"}) {
    if (!meta.contains(key)) {
      throw UserError(fmt::format("{}: the results lack '{}' (written by an older lemmalab?)",
                                  file.string(), key));
    }
  }

  std::vector<Constant> problem_constants;
  std::map<std::int64_t, std::vector<Constant>> run_constants;
  // Results of an older lemmalab know no regions: their constants read as holding everywhere,
  // and their series have no extents (judged as recorded points only).
  const bool regions = db.HasColumn("constants", "region_position");
  db.ForEachRow(
      regions ? "SELECT run_id, name, value, certainty, basis, region_position, region_radius, "
                "region FROM constants ORDER BY rowid"
              : "SELECT run_id, name, value, certainty, basis FROM constants ORDER BY rowid",
      [&](Row s) {
        Constant c{Text(s, 1), Real(s, 2), ParseCertainty(Text(s, 3)), Text(s, 4), std::nullopt};
        if (regions && sqlite3_column_type(s, 5) != SQLITE_NULL) {
          c.region = Region{Text(s, 5), Real(s, 6), Text(s, 7)};
        }
        if (sqlite3_column_type(s, 0) == SQLITE_NULL) {
          problem_constants.push_back(std::move(c));
        } else {
          run_constants[sqlite3_column_int64(s, 0)].push_back(std::move(c));
        }
      });

  std::vector<RunEvidence> runs;
  std::map<std::int64_t, std::size_t> index;
  db.ForEachRow(
      "SELECT run_id, label, optimizer, status, steps_done, final_loss FROM "
      "runs ORDER BY run_id",
      [&](Row s) {
        RunEvidence run;
        run.label = Text(s, 1);
        run.optimizer = Text(s, 2);
        run.status = Text(s, 3);
        run.steps_done = sqlite3_column_int64(s, 4);
        run.final_loss = Real(s, 5);
        run.seed = std::stoull(meta["seed"]);
        run.workers = std::stoi(meta["workers"]);
        run.dimension = std::stoll(meta["dimension"]);
        run.precision = meta["precision"] == "fp64" ? Precision::kFp64 : Precision::kFp32;
        run.constants = problem_constants;
        const std::int64_t id = sqlite3_column_int64(s, 0);
        for (const Constant& c : run_constants[id]) run.constants.push_back(c);
        index[id] = runs.size();
        runs.push_back(std::move(run));
      });
  db.ForEachRow("SELECT run_id, key, value, type FROM hyperparameters ORDER BY rowid", [&](Row s) {
    RunEvidence& run = runs.at(index.at(sqlite3_column_int64(s, 0)));
    const std::string type = Text(s, 3);
    Hyperparameters::Value value;
    if (type == "boolean") {
      value = sqlite3_column_int64(s, 2) != 0;
    } else if (type == "integer") {
      value = static_cast<std::int64_t>(sqlite3_column_int64(s, 2));
    } else if (type == "number") {
      value = Real(s, 2);
    } else {
      value = Text(s, 2);
    }
    run.hyperparameters.Set(Text(s, 1), std::move(value));
  });
  db.ForEachRow("SELECT run_id, step, name, worker, value FROM metrics ORDER BY rowid", [&](Row s) {
    RunEvidence& run = runs.at(index.at(sqlite3_column_int64(s, 0)));
    run.metrics[Text(s, 2)].Add({sqlite3_column_int64(s, 1), Worker(s, 3), Real(s, 4)});
  });
  db.ForEachRow(
      "SELECT run_id, step, probe, series, worker, value FROM probes ORDER "
      "BY rowid",
      [&](Row s) {
        RunEvidence& run = runs.at(index.at(sqlite3_column_int64(s, 0)));
        run.probes[fmt::format("{}/{}", Text(s, 2), Text(s, 3))].Add(
            {sqlite3_column_int64(s, 1), Worker(s, 4), Real(s, 5)});
      });
  if (db.HasColumn("extents", "name")) {
    db.ForEachRow(
        "SELECT run_id, kind, name, worker, count, first_step, last_step, sum, min, min_step, "
        "min_worker, max, max_step, max_worker, non_finite, first_non_finite_step, "
        "first_non_finite_worker, first_non_finite, sum_squares FROM extents ORDER BY rowid",
        [&](Row s) {
          RunEvidence& run = runs.at(index.at(sqlite3_column_int64(s, 0)));
          const auto integer = [&](int column) { return sqlite3_column_int64(s, column); };
          Extent e;
          e.count = integer(4);
          e.first_step = integer(5);
          e.last_step = integer(6);
          e.sum = Real(s, 7);
          e.min = Real(s, 8);
          e.min_step = integer(9);
          e.min_worker = Worker(s, 10);
          e.max = Real(s, 11);
          e.max_step = integer(12);
          e.max_worker = Worker(s, 13);
          e.non_finite = integer(14);
          e.first_non_finite_step = integer(15);
          e.first_non_finite_worker = Worker(s, 16);
          e.first_non_finite = Real(s, 17);
          e.sum_squares = Real(s, 18);
          auto& series = Text(s, 1) == "probe" ? run.probes : run.metrics;
          series[Text(s, 2)].SetExtent(Worker(s, 3), e);
        });
  }
  return runs;
}

}  // namespace lemmalab
