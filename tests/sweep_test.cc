// Sweeps: the [sweep] grid (axes, zip groups, exclusions, labels, paths into the spec), and
// `lemmalab sweep` end to end: every point validated up front, one database, resumable, locked,
// a SIGKILL losing nothing finished and the rerun giving exactly the uninterrupted results.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>

#include <chrono>
#include <thread>

#include "cli/sweep_grid.h"
#include "engine/directory_lock.h"
#include "engine/spec.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::RunLemmalab;
using testing::TempDir;
using testing::UserErrorOf;
using testing::WriteFile;

// A spec's [sweep] grid, from spec text.
SweepGrid GridOf(const std::string& sweep) {
  const auto root = ParseSpecTable(sweep, "spec.toml");
  return ExpandSweep(*root->GetTable("sweep"));
}

std::vector<std::string> Labels(const SweepGrid& grid) {
  std::vector<std::string> labels;
  for (const SweepPoint& p : grid.points) labels.push_back(p.label);
  return labels;
}

TEST(SweepGrid, CartesianProductInPathOrderWithSeedInnermost) {
  const SweepGrid grid = GridOf(R"toml(
[sweep]
seed = [1, 2]
optimizer.beta = [0.9, 0.99]
optimizer.compressor = ["sign", { name = "top-k", fraction = 0.1 }]
)toml");
  ASSERT_EQ(grid.axes.size(), 3u);
  EXPECT_EQ(grid.axes[0].path, "optimizer.beta");
  EXPECT_EQ(grid.axes[1].path, "optimizer.compressor");
  EXPECT_EQ(grid.axes[2].path, "seed");
  EXPECT_EQ(grid.expanded, 8);
  EXPECT_THAT(Labels(grid),
              ElementsAre("beta=0.9 compressor=sign seed=1", "beta=0.9 compressor=sign seed=2",
                          "beta=0.9 compressor=top-k(fraction=0.1) seed=1",
                          "beta=0.9 compressor=top-k(fraction=0.1) seed=2",
                          "beta=0.99 compressor=sign seed=1", "beta=0.99 compressor=sign seed=2",
                          "beta=0.99 compressor=top-k(fraction=0.1) seed=1",
                          "beta=0.99 compressor=top-k(fraction=0.1) seed=2"));
  for (int k = 0; k < 8; ++k) EXPECT_EQ(grid.points[k].index, k + 1);
}

TEST(SweepGrid, ZipAdvancesTogetherAndExclusionsLeaveGaps) {
  const SweepGrid grid = GridOf(R"toml(
[sweep]
optimizer.beta = [0.9, 0.99]
schedule.lr = [0.1, 0.01]
workers = [2, 4]
zip = [["optimizer.beta", "schedule.lr"]]
exclude = [{ optimizer.beta = 0.99, workers = 4 }]
)toml");
  EXPECT_EQ(grid.expanded, 4);
  EXPECT_THAT(Labels(grid), ElementsAre("beta=0.9 lr=0.1 workers=2", "beta=0.9 lr=0.1 workers=4",
                                        "beta=0.99 lr=0.01 workers=2"));
  EXPECT_EQ(grid.points[2].index, 3);
}

TEST(SweepGrid, ZippedAxesMayRepeatAValueButNotATuple) {
  EXPECT_EQ(GridOf("[sweep]\na = [1, 1]\nb = [1, 2]\nzip = [['a', 'b']]\n").points.size(), 2u);
  EXPECT_THAT(UserErrorOf([] { GridOf("[sweep]\na = [1, 1]\nb = [2, 2]\nzip = [['a', 'b']]\n"); }),
              HasSubstr("the zipped axes list (1, 2) twice"));
}

TEST(SweepGrid, AxesSharingALastPartAreNamedByPath) {
  const SweepGrid grid = GridOf(R"toml(
[sweep]
optimizer.birder.beta = [0.9]
optimizer.ef.beta = [0.5, 0.6]
)toml");
  EXPECT_THAT(Labels(grid), ElementsAre("optimizer.birder.beta=0.9 optimizer.ef.beta=0.5",
                                        "optimizer.birder.beta=0.9 optimizer.ef.beta=0.6"));
}

TEST(SweepGrid, EveryMistakeIsNamed) {
  const auto error = [](const std::string& sweep) {
    return UserErrorOf([&] { GridOf(fmt::format("[sweep]\n{}", sweep)); });
  };
  EXPECT_THAT(error("optimizer.beta = 0.9"),
              HasSubstr("the sweep axis optimizer.beta must be a list of values"));
  EXPECT_THAT(error("seed = []"), HasSubstr("the axis seed is empty"));
  EXPECT_THAT(error("seed = [1, 2, 1]"), HasSubstr("the axis seed lists 1 twice"));
  EXPECT_THAT(error("a = [1, 2]\nb = [1]\nzip = [['a', 'b']]"),
              HasSubstr("need equally many values: a has 2, b has 1"));
  EXPECT_THAT(error("a = [1, 2]\nzip = [['a', 'c']]"),
              HasSubstr("c is not an axis of this sweep (axes: a)"));
  EXPECT_THAT(error("a = [1, 2]\nexclude = [{ a = 3 }]"),
              HasSubstr("a = 3 is not among the axis's values (1, 2)"));
  EXPECT_THAT(error("a = [1, 2]\nb = [1, 2]\nexclude = [{ a = 1, b = 1 }, { a = 1, b = 1 }]"),
              Not(HasSubstr("matches no point")));  // both match point 1: neither is dead
  EXPECT_THAT(error("a = [1]\nexclude = [{ a = 1 }]"), HasSubstr("leave no point"));
  EXPECT_THAT(UserErrorOf([] { GridOf("[sweep]\n"); }), HasSubstr("[sweep] has no axis"));
  // Errors point at the line.
  EXPECT_THAT(error("seed = 3"), HasSubstr("spec.toml:2:"));
}

TEST(SweepGrid, PointsSetTheirValuesOnACopy) {
  const std::string spec = R"toml(seed = 1
steps = 10
[problem]
name = "quadratic"
[[optimizer]]
name = "birder"
compressor = "scaled-sign"
schedule = { lr = 0.1 }
[[optimizer]]
name = "ef-sgd"
label = "ef"
compressor = { name = "scaled-sign" }
schedule = { lr = 0.1 }
[sweep]
optimizer.birder.beta = [0.5]
optimizer.compressor.chunk = [4]
seed = [9]
problem.dimension = [7]
)toml";
  const auto root = ParseSpecTable(spec, "spec.toml");
  const SweepGrid grid = ExpandSweep(*root->Clone()->GetTable("sweep"));
  const auto point = ApplyPoint(*root, grid, grid.points.front());
  const RunSpec run = SpecFromTable(point, "spec.toml", spec);
  EXPECT_EQ(run.seed, 9u);
  EXPECT_FALSE(run.sweep);
  EXPECT_EQ(run.problem->GetInt("dimension", 0), 7);
  EXPECT_EQ(run.optimizers[0].options->GetDouble("beta", 0), 0.5);
  EXPECT_FALSE(run.optimizers[1].options->Has("beta"));  // optimizer.<label>: that one only
  // A compressor given by name became a table holding the name and the new option.
  for (const OptimizerSpec& o : run.optimizers) {
    const auto compressor = o.options->GetComponent("compressor", "identity");
    EXPECT_EQ(compressor->GetInt("chunk", 0), 4);
    EXPECT_EQ(compressor->GetString("name", ""), "scaled-sign");
  }
  // The spec itself is untouched.
  EXPECT_EQ(SpecFromTable(root->Clone(), "spec.toml", spec).seed, 1u);
}

// --- lemmalab sweep, end to end -------------------------------------------------------------

// The tiny spec with a [sweep] table.
std::string SweepSpec(const std::string& sweep, int steps = 40) {
  return testing::TinySpec(steps, fmt::format("\n[sweep]\n{}\n", sweep));
}

struct Database {
  sqlite3* db = nullptr;
  explicit Database(const std::filesystem::path& file) {
    EXPECT_EQ(sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
  }
  ~Database() { sqlite3_close(db); }
  // Every row of `sql`, each as its columns' text joined by '|'.
  std::vector<std::string> Rows(const std::string& sql) const {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr), SQLITE_OK)
        << sql << ": " << sqlite3_errmsg(db);
    std::vector<std::string> rows;
    while (sqlite3_step(s) == SQLITE_ROW) {
      std::string row;
      for (int c = 0; c < sqlite3_column_count(s); ++c) {
        const auto* text = sqlite3_column_text(s, c);
        if (c > 0) row += '|';
        row += text ? reinterpret_cast<const char*>(text) : "NULL";
      }
      rows.push_back(row);
    }
    sqlite3_finalize(s);
    return rows;
  }
  std::string One(const std::string& sql) const {
    const auto rows = Rows(sql);
    return rows.empty() ? "" : rows.front();
  }
};

TEST(SweepCommand, RunsEveryPointIntoOneDatabaseAndResumes) {
  TempDir dir;
  WriteFile(dir / "spec.toml",
            SweepSpec("optimizer.beta = [0.9, 0.99]\noptimizer.compressor = ['sign', "
                      "'stochastic-binary']\nseed = [1, 2]"));
  const auto sweep = RunLemmalab(
      {"sweep", (dir / "spec.toml").string(), "--out", (dir / "out").string(), "--jobs", "2"});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  EXPECT_THAT(sweep.out, HasSubstr("sweep: 8 points, 8 run now"));
  // One line per point when stderr is not a terminal.
  EXPECT_THAT(sweep.err, HasSubstr("beta=0.99 compressor=sign seed=2  birder: completed"));
  {
    const Database db(dir / "out" / "results.sqlite");
    EXPECT_EQ(db.One("SELECT COUNT(*), COUNT(DISTINCT point) FROM runs"), "8|8");
    EXPECT_EQ(db.One("SELECT COUNT(*) FROM points"), "8");
    // Hyperparameters are columns, resolved (defaults filled in) and set by the point.
    EXPECT_EQ(db.One("SELECT beta, \"compressor.name\", seed, workers, \"schedule.lr\", eps "
                     "FROM runs WHERE point = 'beta=0.99 compressor=sign seed=2'"),
              "0.99|sign|2|2|0.05|1.0e-08");
    EXPECT_EQ(db.One("SELECT COUNT(*) FROM runs WHERE version <> '' AND \"commit\" <> '' AND "
                     "build <> ''"),
              "8");
    // Default recording: steps / 100 rounds to every step here (40 steps), and the probe series
    // are there for every run.
    EXPECT_EQ(db.One("SELECT COUNT(DISTINCT run_id) FROM probes WHERE probe = 'ef-norm'"), "8");
    EXPECT_EQ(db.One("SELECT COUNT(*) FROM metrics WHERE name = 'lr'"), "320");
  }
  const std::string csv = testing::ReadFile(dir / "out" / "runs.csv");
  EXPECT_THAT(csv, HasSubstr("\"point\",\"label\""));
  EXPECT_THAT(csv, HasSubstr("\"compressor.name\""));
  EXPECT_THAT(csv, HasSubstr("\"beta=0.99 compressor=sign seed=2\""));
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 9);

  // The same command again: nothing to do.
  const auto again =
      RunLemmalab({"sweep", (dir / "spec.toml").string(), "--out", (dir / "out").string()});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("sweep: 8 points, 8 found finished, 0 run now"));
  // A grown axis runs only the new points.
  WriteFile(dir / "spec.toml",
            SweepSpec("optimizer.beta = [0.9, 0.99]\noptimizer.compressor = ['sign', "
                      "'stochastic-binary']\nseed = [1, 2, 3]"));
  const auto grown =
      RunLemmalab({"sweep", (dir / "spec.toml").string(), "--out", (dir / "out").string()});
  ASSERT_EQ(grown.exit_code, 0) << grown.err;
  EXPECT_THAT(grown.out, HasSubstr("sweep: 12 points, 8 found finished, 4 run now"));
  // --set pins an option an axis sets too (here zipped with workers, which still differ).
  WriteFile(dir / "steps.toml",
            SweepSpec("steps = [10, 20]\nworkers = [2, 4]\nzip = [['steps', 'workers']]"));
  const auto pinned = RunLemmalab({"sweep", (dir / "steps.toml").string(), "--out",
                                   (dir / "pinned").string(), "--set", "steps=3"});
  ASSERT_EQ(pinned.exit_code, 0) << pinned.err;
  EXPECT_EQ(Database(dir / "pinned" / "results.sqlite").One("SELECT MAX(steps_done) FROM runs"),
            "3");
  // A spec changed outside [sweep] is another sweep.
  std::string other = SweepSpec("seed = [1, 2]");
  other.replace(other.find("lr = 0.05"), 9, "lr = 0.07");
  WriteFile(dir / "spec.toml", other);
  const auto changed =
      RunLemmalab({"sweep", (dir / "spec.toml").string(), "--out", (dir / "out").string()});
  EXPECT_EQ(changed.exit_code, 2);
  EXPECT_THAT(changed.err, HasSubstr("holds a sweep of a spec that differs outside [sweep]"));
  // ... naming what differs (issue 36: the refusal said only that something did).
  EXPECT_THAT(changed.err, HasSubstr(": schedule.lr: 0.05 then, 0.07 now"));
}

// What two spec texts set differently, by path: values, keys one lacks, the optimizers by index,
// and [sweep] left out where a sweep's points may differ.
TEST(SpecDifferences, NameEverySettingThatDiffers) {
  const std::string then =
      "seed = 1\nsteps = 5\n[[optimizer]]\nname = \"sgd\"\n"
      "[[optimizer]]\nname = \"birder\"\nbeta = 0.9\n[sweep]\nseed = [1, 2]\n";
  std::string now = then;
  now.replace(now.find("beta = 0.9"), 10, "beta = 0.95");
  now.replace(now.find("steps = 5"), 9, "workers = 4");
  now.replace(now.find("seed = [1, 2]"), 13, "seed = [3]");
  EXPECT_EQ(
      SpecDifferences(then, now, /*outside_sweep=*/true),
      (std::vector<std::string>{"optimizer[1].beta: 0.9 then, 0.95 now",
                                "steps: 5 then, (absent) now", "workers: (absent) then, 4 now"}));
  EXPECT_THAT(SpecDifferences(then, now), ::testing::Contains("sweep.seed: [1,2] then, [3] now"));
  EXPECT_EQ(SpecDifferences(then, "not toml ="), std::vector<std::string>{});
  EXPECT_EQ(ListDifferences({"a", "b", "c", "d", "e", "f", "g"}), "a; b; c; d; e; and 2 more");
}

// A point's results are the results of `lemmalab run` on the same settings: sweeping (in
// parallel, single-threaded, with shared data) changes nothing in what a run computes.
TEST(SweepCommand, APointEqualsTheSameRunOnItsOwn) {
  TempDir dir;
  WriteFile(dir / "spec.toml", SweepSpec("optimizer.beta = [0.5, 0.9]\nseed = [3, 4]"));
  ASSERT_EQ(RunLemmalab({"sweep", (dir / "spec.toml").string(), "--out", (dir / "sweep").string(),
                         "--jobs", "2"})
                .exit_code,
            0);
  WriteFile(dir / "one.toml", testing::TinySpec(40));
  const auto run = RunLemmalab({"run", (dir / "one.toml").string(), "--out", (dir / "run").string(),
                                "--set", "optimizer.beta=0.9", "--set", "seed=4"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string columns =
      "SELECT final_loss, final_grad_sq_norm, bits_sent_per_worker, steps_done FROM runs";
  EXPECT_EQ(
      Database(dir / "sweep" / "results.sqlite").One(columns + " WHERE point = 'beta=0.9 seed=4'"),
      Database(dir / "run" / "results.sqlite").One(columns));
  const std::string probes =
      "SELECT step, worker, value FROM probes WHERE run_id = (SELECT run_id FROM runs{}) ORDER "
      "BY rowid";
  EXPECT_EQ(Database(dir / "sweep" / "results.sqlite")
                .Rows(fmt::format(fmt::runtime(probes), " WHERE point = 'beta=0.9 seed=4'")),
            Database(dir / "run" / "results.sqlite").Rows(fmt::format(fmt::runtime(probes), "")));
}

TEST(SweepCommand, EveryPointIsValidatedBeforeAnyRuns) {
  TempDir dir;
  WriteFile(dir / "spec.toml", SweepSpec("optimizer.beta = [0.9, 0.99, 1.5]\nseed = [1, 2]"));
  const auto bad =
      RunLemmalab({"sweep", (dir / "spec.toml").string(), "--out", (dir / "out").string()});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("[sweep] point 5 of 6 (beta=1.5 seed=1)"));
  EXPECT_THAT(bad.err, HasSubstr("beta must be in [0, 1), got 1.5"));
  EXPECT_FALSE(std::filesystem::exists(dir / "out" / "results.sqlite"));

  // An axis no run reads: every optimizer has its own schedule, so [schedule] lr is ignored.
  std::string own = SweepSpec("schedule.lr = [0.1, 0.2]");
  own.replace(own.find("name = \"birder\""), 15, "name = \"birder\"\nschedule = { lr = 0.3 }");
  WriteFile(dir / "own.toml", own);
  const auto unread =
      RunLemmalab({"sweep", (dir / "own.toml").string(), "--out", (dir / "out").string()});
  EXPECT_EQ(unread.exit_code, 2);
  EXPECT_THAT(unread.err, HasSubstr("point 2 of 2 (lr=0.2): it runs the same configuration as "
                                    "point 1 (lr=0.1)"));

  // run and check refuse a sweep spec instead of running one arbitrary point.
  WriteFile(dir / "ok.toml", SweepSpec("seed = [1, 2]"));
  const auto run = RunLemmalab({"run", (dir / "ok.toml").string(), "--out", (dir / "r").string()});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("run it with lemmalab sweep"));

  // A sweep resumes point by point; checkpoints within a point are lemmalab run's.
  WriteFile(dir / "checkpointed.toml", "checkpoint_every = 10\n" + SweepSpec("seed = [1, 2]"));
  const auto checkpointed =
      RunLemmalab({"sweep", (dir / "checkpointed.toml").string(), "--out", (dir / "c").string()});
  EXPECT_EQ(checkpointed.exit_code, 2);
  EXPECT_THAT(checkpointed.err, HasSubstr("checkpoint_every = 10: a sweep resumes point by point"));
}

TEST(SweepCommand, ASecondSweepIntoTheSameFolderIsRefused) {
  TempDir dir;
  WriteFile(dir / "spec.toml", SweepSpec("seed = [1, 2]"));
  const DirectoryLock held(dir / "out", "a test");
  const auto second =
      RunLemmalab({"sweep", (dir / "spec.toml").string(), "--out", (dir / "out").string()});
  EXPECT_EQ(second.exit_code, 2);
  EXPECT_THAT(second.err, HasSubstr("another lemmalab process (a test, pid"));
  EXPECT_FALSE(std::filesystem::exists(dir / "out" / "results.sqlite"));
}

TEST(SweepCommand, ADivergedRunIsRecordedAndTheSweepGoesOn) {
  TempDir dir;
  WriteFile(dir / "spec.toml", SweepSpec("schedule.lr = [0.05, 1e30]"));
  const auto sweep =
      RunLemmalab({"sweep", (dir / "spec.toml").string(), "--out", (dir / "out").string()});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  EXPECT_THAT(sweep.out, HasSubstr("(1 run diverged)"));
  const Database db(dir / "out" / "results.sqlite");
  EXPECT_EQ(db.One("SELECT status FROM runs WHERE point = 'lr=0.05'"), "completed");
  EXPECT_THAT(db.One("SELECT status FROM runs WHERE point = 'lr=1e+30'"),
              HasSubstr("diverged at step"));
}

TEST(SweepCommand, AProbeThatDoesNotApplyToAPointRecordsNothingThere) {
  TempDir dir;
  WriteFile(dir / "spec.toml", SweepSpec("optimizer.name = ['birder', 'sgd']"));
  const auto sweep =
      RunLemmalab({"sweep", (dir / "spec.toml").string(), "--out", (dir / "out").string()});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  {
    const Database db(dir / "out" / "results.sqlite");
    EXPECT_EQ(db.One("SELECT COUNT(*) FROM probes JOIN runs USING (run_id) WHERE label = 'sgd'"),
              "0");
    EXPECT_NE(db.One("SELECT COUNT(*) FROM probes JOIN runs USING (run_id) WHERE label = "
                     "'birder'"),
              "0");
  }
  const auto report = RunLemmalab({"report", (dir / "out").string(), "--no-plots"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_THAT(testing::ReadFile(dir / "out" / "summary.csv"), HasSubstr(",0\n"));  // n = 0
  // A probe that measures nothing at any point is still a mistake.
  WriteFile(dir / "none.toml", SweepSpec("optimizer.name = ['sgd', 'adam']"));
  const auto none =
      RunLemmalab({"sweep", (dir / "none.toml").string(), "--out", (dir / "none").string()});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, HasSubstr("probe 'ef-norm' applies to the optimizers of none of the 2"));
}

// metrics_every and probe_every thin what is recorded, not what is run: the trajectory is the
// same, the counters' records still sum to the run's totals, and every probe keeps its first
// value.
TEST(Recording, EveryKStepsKeepsTotalsAndTheTrajectory) {
  TempDir dir;
  std::string spec = SweepSpec("");
  spec.erase(spec.find("[sweep]"));
  spec.replace(spec.find("steps = 40"), 10, "steps = 40\neval_every = 10");
  WriteFile(dir / "spec.toml", spec);
  const auto every =
      RunLemmalab({"run", (dir / "spec.toml").string(), "--out", (dir / "every").string()});
  ASSERT_EQ(every.exit_code, 0) << every.err;
  const auto thin =
      RunLemmalab({"run", (dir / "spec.toml").string(), "--out", (dir / "thin").string(), "--set",
                   "metrics_every=7", "--set", "probe_every=5"});
  ASSERT_EQ(thin.exit_code, 0) << thin.err;
  const Database a(dir / "every" / "results.sqlite"), b(dir / "thin" / "results.sqlite");
  EXPECT_EQ(a.One("SELECT final_loss, bits_sent_per_worker FROM runs"),
            b.One("SELECT final_loss, bits_sent_per_worker FROM runs"));
  // Records at multiples of 7, at evaluations (multiples of 10) and at the last step.
  EXPECT_EQ(b.Rows("SELECT step FROM metrics WHERE name = 'bits_sent' ORDER BY step"),
            (std::vector<std::string>{"7", "10", "14", "20", "21", "28", "30", "35", "40"}));
  for (const char* counter : {"bits_sent", "bytes_inter", "comm_seconds"}) {
    const std::string sum =
        fmt::format("SELECT SUM(value) FROM metrics WHERE name = '{}'", counter);
    EXPECT_NEAR(std::stod(a.One(sum)), std::stod(b.One(sum)), 1e-9 * std::stod(a.One(sum)))
        << counter;
  }
  // The loss recorded at step 14 is the mean of steps 11..14.
  EXPECT_NEAR(std::stod(b.One("SELECT value FROM metrics WHERE name = 'minibatch_loss' AND "
                              "step = 14")),
              std::stod(a.One("SELECT AVG(value) FROM metrics WHERE name = 'minibatch_loss' AND "
                              "step BETWEEN 11 AND 14")),
              1e-6);
  // Probes: the first value, then every 5th step.
  EXPECT_EQ(b.Rows("SELECT DISTINCT step FROM probes ORDER BY step"),
            (std::vector<std::string>{"1", "5", "10", "15", "20", "25", "30", "35", "40"}));
  EXPECT_EQ(a.One("SELECT value FROM probes WHERE step = 35 AND worker = 1 AND series = "
                  "'worker_sq_norm'"),
            b.One("SELECT value FROM probes WHERE step = 35 AND worker = 1 AND series = "
                  "'worker_sq_norm'"));
}

// The number of points saved in a sweep's database while it runs (0 before it exists).
int SavedPoints(const std::filesystem::path& file) {
  // Read while the sweep writes (its database is in WAL mode: readers never block it).
  sqlite3* db = nullptr;
  sqlite3_stmt* s = nullptr;
  int saved = 0;
  if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK &&
      sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM points", -1, &s, nullptr) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW) {
    saved = sqlite3_column_int(s, 0);
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return saved;
}

// Starts `lemmalab sweep SPEC --out OUT` and sends `signal` once `at_least` points are saved;
// returns the exit code and the points saved when the signal was sent.
std::pair<int, int> InterruptSweep(const TempDir& dir, const std::filesystem::path& spec,
                                   const std::filesystem::path& out, int at_least, int signal) {
  const int pid = testing::SpawnLemmalab({"sweep", spec.string(), "--out", out.string()},
                                         dir / "out.txt", dir / "err.txt");
  int saved = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline &&
         (saved = SavedPoints(out / "results.sqlite")) < at_least) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  kill(pid, signal);
  return {testing::WaitForExit(pid), saved};
}

constexpr const char* kHundredPoints =
    "optimizer.beta = [0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.99]\n"
    "seed = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]";

TEST(SweepCommand, SigintKeepsTheFinishedPointsAndTheRerunCompletes) {
  TempDir dir;
  WriteFile(dir / "spec.toml", SweepSpec(kHundredPoints, 400));
  const auto [code, saved] = InterruptSweep(dir, dir / "spec.toml", dir / "out", 10, SIGINT);
  EXPECT_EQ(code, 130);
  ASSERT_GE(saved, 10);
  EXPECT_THAT(testing::ReadFile(dir / "err.txt"), HasSubstr("the finished points are saved in"));
  const int kept =
      std::stoi(Database(dir / "out" / "results.sqlite").One("SELECT COUNT(*) FROM points"));
  EXPECT_GE(kept, saved);
  EXPECT_LT(kept, 100);
  EXPECT_FALSE(std::filesystem::exists(dir / "out" / ".inflight"));
  EXPECT_FALSE(std::filesystem::exists(dir / "out" / ".lock"));
  const auto resumed =
      RunLemmalab({"sweep", (dir / "spec.toml").string(), "--out", (dir / "out").string()});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_THAT(resumed.out,
              HasSubstr(fmt::format("{} found finished, {} run now", kept, 100 - kept)));
}

// The issue's guarantee: a sweep killed with SIGKILL halfway and run again holds exactly its
// points once each, with the results of a sweep never interrupted.
TEST(SweepCommand, SigkillHalfwayThenRerunEqualsAnUninterruptedSweep) {
  TempDir dir;
  // 100 points: 10 betas x 10 seeds.
  WriteFile(dir / "spec.toml", SweepSpec(kHundredPoints, 400));
  const std::string spec = (dir / "spec.toml").string();
  const auto whole = RunLemmalab({"sweep", spec, "--out", (dir / "whole").string()});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;

  const auto [code, at_kill] = InterruptSweep(dir, spec, dir / "killed", 30, SIGKILL);
  EXPECT_EQ(code, -1);
  ASSERT_GE(at_kill, 30);
  {
    const Database db(dir / "killed" / "results.sqlite");
    const int saved = std::stoi(db.One("SELECT COUNT(*) FROM points"));
    ASSERT_LT(saved, 100) << "the sweep finished before it was killed: the test proves nothing";
  }
  const auto resumed = RunLemmalab({"sweep", spec, "--out", (dir / "killed").string()});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_THAT(resumed.out, HasSubstr("found finished"));

  const Database a(dir / "whole" / "results.sqlite"), b(dir / "killed" / "results.sqlite");
  EXPECT_EQ(b.One("SELECT COUNT(*), COUNT(DISTINCT point) FROM runs"), "100|100");
  EXPECT_EQ(b.One("SELECT COUNT(*) FROM points"), "100");
  const std::string runs =
      "SELECT point, label, status, steps_done, final_loss, final_grad_sq_norm, "
      "bits_sent_per_worker, beta, seed FROM runs ORDER BY point";
  EXPECT_EQ(a.Rows(runs), b.Rows(runs));
  for (const char* table : {"metrics", "probes"}) {
    const std::string series = fmt::format(
        "SELECT point, t.* FROM {} t JOIN runs USING (run_id) ORDER BY point, t.rowid", table);
    std::vector<std::string> x = a.Rows(series), y = b.Rows(series);
    // run_id differs with the order points finished in; compare everything else.
    for (auto* rows : {&x, &y}) {
      for (std::string& row : *rows) {
        const auto first = row.find('|'), second = row.find('|', first + 1);
        row.erase(first, second - first);
      }
    }
    EXPECT_EQ(x.size(), y.size()) << table;
    EXPECT_TRUE(x == y) << table << " differ";
  }
}

}  // namespace
}  // namespace lemmalab
