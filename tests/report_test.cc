// `lemmalab report`: configurations grouped over seeds with Student-t intervals that match a
// hand computation from the runs table, plain-run and check folders, verdicts aggregated over
// seeds, plots or a clear word on why there are none; and `--set` overrides on the command line.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/table.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ReadFile;
using testing::RunLemmalab;
using testing::TempDir;
using testing::WriteFile;

const std::string kSpec = testing::TinySpec(30);

// summary.csv as rows of column -> text.
std::vector<std::map<std::string, std::string>> ReadCsv(const std::filesystem::path& path) {
  std::istringstream in(ReadFile(path));
  const auto split = [](const std::string& line) {
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (const char c : line) {
      if (c == '"') {
        quoted = !quoted;
      } else if (c == ',' && !quoted) {
        cells.push_back(cell);
        cell.clear();
      } else {
        cell += c;
      }
    }
    cells.push_back(cell);
    return cells;
  };
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = split(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    const std::vector<std::string> cells = split(line);
    std::map<std::string, std::string> row;
    for (std::size_t c = 0; c < header.size() && c < cells.size(); ++c) row[header[c]] = cells[c];
    rows.push_back(row);
  }
  return rows;
}

std::vector<double> FinalLosses(const std::filesystem::path& db_path, const std::string& where) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  const std::string sql = "SELECT final_loss FROM runs WHERE " + where;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr), SQLITE_OK);
  std::vector<double> values;
  while (sqlite3_step(s) == SQLITE_ROW) values.push_back(sqlite3_column_double(s, 0));
  sqlite3_finalize(s);
  sqlite3_close(db);
  return values;
}

TEST(Report, SweepConfigurationsHaveStudentTIntervalsOverSeeds) {
  TempDir dir;
  WriteFile(dir / "spec.toml", kSpec + "[sweep]\noptimizer.beta = [0.5, 0.9]\nseed = [1, 2, 3]\n");
  ASSERT_EQ(RunLemmalab({"sweep", (dir / "spec.toml").string(), "--out", (dir / "out").string()})
                .exit_code,
            0);
  const auto report = RunLemmalab({"report", (dir / "out").string(), "--no-plots"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_THAT(report.out, HasSubstr("6 runs in 2 configurations (up to 3 seeds each)"));
  EXPECT_THAT(report.out, HasSubstr("beta=0.5 "));
  EXPECT_THAT(report.out, HasSubstr("ef-norm/worker_sq_norm/d"));  // shown as the summary does
  // Not a terminal: the table fits 100 columns (issue 36: about 270), naming what it leaves out.
  std::istringstream lines(report.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("beta=") || line.starts_with("configuration")) {
      EXPECT_LE(line.size(), 100u) << line;
    }
  }
  EXPECT_THAT(report.out, HasSubstr("more column"));

  const auto rows = ReadCsv(dir / "out" / "summary.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("configuration"), "beta=0.5");
  EXPECT_EQ(rows[0].at("beta"), "0.5");
  EXPECT_EQ(rows[0].at("runs"), "3");
  // By hand: the mean of the three seeds' final losses and t(0.975, 2) s / sqrt(3).
  const std::vector<double> x = FinalLosses(dir / "out" / "results.sqlite", "beta = 0.5");
  ASSERT_EQ(x.size(), 3u);
  const double mean = (x[0] + x[1] + x[2]) / 3;
  double ss = 0;
  for (const double v : x) ss += (v - mean) * (v - mean);
  const double half = 4.302652729911275 * std::sqrt(ss / 2) / std::sqrt(3.0);
  EXPECT_NEAR(std::stod(rows[0].at("final_loss_mean")), mean, 1e-12 * std::abs(mean));
  EXPECT_NEAR(std::stod(rows[0].at("final_loss_ci95")), half, 1e-9 * half);
  EXPECT_EQ(rows[0].at("final_loss_n"), "3");
  // Birder sends one bit per coordinate plus the server's broadcast: a quantity per parameter.
  EXPECT_GT(std::stod(rows[0].at("bits_per_param_step_mean")), 0.99);
  const std::string markdown = ReadFile(dir / "out" / "report.md");
  EXPECT_THAT(markdown, HasSubstr("| configuration | runs | final loss"));
  EXPECT_THAT(markdown, HasSubstr("Plots not drawn (lemmalab report --no-plots)"));
}

// An axis of one optimizer's option: the other optimizer's runs are named without it and its
// repeats at the same seed (one per point) count once.
TEST(Report, AnAxisOnlyOneOptimizerReadsNamesOnlyItsRuns) {
  TempDir dir;
  WriteFile(dir / "spec.toml", kSpec +
                                   "[[optimizer]]\nname = \"sgd\"\n[sweep]\n"
                                   "optimizer.birder.beta = [0.5, 0.9]\nseed = [1, 2]\n");
  ASSERT_EQ(RunLemmalab({"sweep", (dir / "spec.toml").string(), "--out", (dir / "out").string()})
                .exit_code,
            0);
  const auto report = RunLemmalab({"report", (dir / "out").string(), "--no-plots"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const auto rows = ReadCsv(dir / "out" / "summary.csv");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].at("configuration"), "birder beta=0.5");
  EXPECT_EQ(rows[1].at("configuration"), "sgd");
  EXPECT_EQ(rows[1].at("runs"), "2");  // seeds 1 and 2, not 4 runs
  EXPECT_EQ(rows[2].at("configuration"), "birder beta=0.9");
}

TEST(Report, APlainRunIsOneConfigurationPerLabel) {
  TempDir dir;
  std::string spec = kSpec;
  spec += "[[optimizer]]\nname = \"sgd\"\n";
  WriteFile(dir / "spec.toml", spec);
  ASSERT_EQ(
      RunLemmalab({"run", (dir / "spec.toml").string(), "--out", (dir / "out").string()}).exit_code,
      0);
  const auto report = RunLemmalab({"report", (dir / "out").string(), "--no-plots"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const auto rows = ReadCsv(dir / "out" / "summary.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("configuration"), "birder");
  EXPECT_EQ(rows[1].at("configuration"), "sgd");
  EXPECT_EQ(rows[1].at("final_loss_ci95"), "");  // one seed: no interval
}

TEST(Report, ACheckFolderAggregatesVerdictsOverSeeds) {
  TempDir dir;
  WriteFile(dir / "spec.toml",
            std::string(kSpec) +
                "[check]\nseeds = [1, 2, 3]\n\n[[assert]]\nassertion = \"ef-norm\"\n"
                "expect = \"inconclusive\"\n");
  const auto check =
      RunLemmalab({"check", (dir / "spec.toml").string(), "--out", (dir / "out").string()});
  ASSERT_LE(check.exit_code, 1) << check.err;
  std::map<std::string, int> kinds;
  const auto doc = nlohmann::json::parse(ReadFile(dir / "out" / "check.json"));
  for (const auto& row : doc.at("verdicts")) ++kinds[row.at("verdict").get<std::string>()];
  ASSERT_EQ(doc.at("verdicts").size(), 3u);  // one per seed

  const auto report = RunLemmalab({"report", (dir / "out").string(), "--no-plots"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_THAT(report.out, HasSubstr("3 runs in 1 configurations (up to 3 seeds each)"));
  EXPECT_THAT(report.out, HasSubstr("verdicts (check.json)"));
  // The three per-seed rows are one row "birder (n = 2)", its verdicts counted.
  for (const auto& [kind, count] : kinds) {
    EXPECT_THAT(report.out, HasSubstr(fmt::format("{} in {} of 3", kind, count)));
  }
  EXPECT_THAT(report.out, HasSubstr("birder (n = 2)"));
  EXPECT_THAT(report.out, Not(HasSubstr("seed 2")));
}

// A check folder's report draws the evidence of each verdict that names its statistic: here
// Birder's b + eps against a floor it breaks, the figure of the verdict's own run.
TEST(Report, ACheckFolderShowsEachVerdictsEvidence) {
  TempDir dir;
  WriteFile(dir / "spec.toml", kSpec +
                                   "[[assert]]\nassertion = \"b-floor\"\nrho = 1.0\n"
                                   "expect = \"violated\"\n");
  const auto check =
      RunLemmalab({"check", (dir / "spec.toml").string(), "--out", (dir / "out").string()});
  ASSERT_EQ(check.exit_code, 0) << check.out << check.err;
  const auto doc = nlohmann::json::parse(ReadFile(dir / "out" / "check.json"));
  const auto& statistic = doc.at("verdicts").at(0).at("statistic");
  EXPECT_EQ(statistic.at("reduction"), "min");
  EXPECT_EQ(statistic.at("series").at(0), "probe min-b/min_denominator");
  const auto report = RunLemmalab({"report", (dir / "out").string()});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "plots" / "evidence-01-b-floor-birder.png"))
      << report.out;
}

TEST(Report, PlotsOrAClearWordOnWhyNot) {
  TempDir dir;
  WriteFile(dir / "spec.toml", kSpec + "[sweep]\nseed = [1, 2]\n");
  ASSERT_EQ(RunLemmalab({"sweep", (dir / "spec.toml").string(), "--out", (dir / "out").string()})
                .exit_code,
            0);
  const auto report = RunLemmalab({"report", (dir / "out").string()});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_THAT(report.out, HasSubstr("plots: "));
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "plots" / "loss-vs-steps.png"));
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "plots" / "loss-vs-bits.png"));
  EXPECT_THAT(ReadFile(dir / "out" / "report.md"), HasSubstr("![plots/loss-vs-steps.png]"));
  // Without the plotting module the tables are still written, and the report says what to do.
  std::filesystem::remove(dir / "out" / "summary.csv");
  setenv("LEMMALAB_PYTHON_DIR", (dir / "nowhere").c_str(), 1);
  const auto without = RunLemmalab({"report", (dir / "out").string()});
  unsetenv("LEMMALAB_PYTHON_DIR");
  ASSERT_EQ(without.exit_code, 0) << without.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "summary.csv"));
  EXPECT_THAT(without.out, HasSubstr("no plots: the plotting module failed"));
  EXPECT_THAT(without.out, HasSubstr("install Debian's python3-matplotlib"));
}

TEST(Report, AFolderWithoutResultsIsAClearError) {
  TempDir dir;
  std::filesystem::create_directories(dir / "empty");
  const auto report = RunLemmalab({"report", (dir / "empty").string()});
  EXPECT_EQ(report.exit_code, 2);
  EXPECT_THAT(report.err, HasSubstr("no results.sqlite there or in its subfolders"));
  EXPECT_EQ(RunLemmalab({"report", (dir / "missing").string()}).exit_code, 2);
}

// A console table within a width: the names cut with "…", then the columns that fit in order,
// and a line naming the others and where the whole table is.
TEST(Table, FitsTheWidthAndNamesWhatItLeavesOut) {
  const std::vector<TableColumn> columns = {{"name", true}, {"a"}, {"bb"}, {"c"}};
  const std::vector<std::vector<std::string>> rows = {{"a-long-configuration-name", "1", "22", "3"},
                                                      {"short", "4", "55", "6"}};
  EXPECT_EQ(FormatTableWithin(columns, rows, 200, "x.csv"), FormatTable(columns, rows));
  EXPECT_EQ(FormatTableWithin(columns, rows, 18, "x.csv"),
            "name       a  bb\n"
            "a-long-c…  1  22\n"
            "short      4  55\n"
            "(1 more column in x.csv: c)\n");
}

TEST(Settings, SetOverridesAnOptionByItsPath) {
  TempDir dir;
  WriteFile(dir / "spec.toml", kSpec);
  const auto run =
      RunLemmalab({"run", (dir / "spec.toml").string(), "--out", (dir / "out").string(), "--set",
                   "steps=4", "--set", "optimizer.beta=0.5", "--set", "optimizer.compressor=sign"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  sqlite3* db = nullptr;
  ASSERT_EQ(
      sqlite3_open_v2((dir / "out" / "results.sqlite").c_str(), &db, SQLITE_OPEN_READONLY, nullptr),
      SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT steps_done, beta, \"compressor.name\" FROM runs", -1, &s,
                               nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(s, 0), 4);
  EXPECT_EQ(sqlite3_column_double(s, 1), 0.5);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 2)), "sign");
  sqlite3_finalize(s);
  sqlite3_close(db);

  const auto bad = RunLemmalab({"run", (dir / "spec.toml").string(), "--out",
                                (dir / "bad").string(), "--set", "steps=many"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--set steps=many"));
  EXPECT_THAT(bad.err, HasSubstr("steps must be an integer"));
  const auto malformed = RunLemmalab({"run", (dir / "spec.toml").string(), "--set", "=3"});
  EXPECT_EQ(malformed.exit_code, 2);
  EXPECT_THAT(malformed.err, HasSubstr("expected PATH=VALUE"));
  const auto not_toml = RunLemmalab({"run", (dir / "spec.toml").string(), "--set", "lr=[1,"});
  EXPECT_EQ(not_toml.exit_code, 2);
  EXPECT_THAT(not_toml.err, HasSubstr("is not TOML"));
  EXPECT_FALSE(std::filesystem::exists(dir / "bad"));
}

}  // namespace
}  // namespace lemmalab
