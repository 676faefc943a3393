// Checkpoints and --resume (engine/checkpoint.h), and the all-or-nothing commit of a results
// folder (engine/result_folder.h), in one process. The SIGKILL tests, in one process and under
// mpirun, are tests/backends/resume.sh.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <sqlite3.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <set>
#include <tuple>

#include "core/error.h"
#include "engine/checkpoint.h"
#include "engine/experiment.h"
#include "engine/result_folder.h"
#include "engine/spec.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using ::testing::HasSubstr;
using testing::ReadFile;
using testing::TempDir;
using testing::UserErrorOf;
using testing::WriteFile;

// Three optimizers, one of them with probes, on a noisy quadratic: a checkpoint inside the second
// run restores a finished run, a run in progress with probes, and a run not yet started.
constexpr const char* kSpec = R"toml(
seed = 11
steps = 60
workers = 3
eval_every = 7
metrics_every = 2
probe_every = 3
checkpoint_every = 10
probes = ["ef-norm", "min-b"]

[problem]
name = "quadratic"
dimension = 24
sigma = 0.2
heterogeneity = 0.3

[schedule]
name = "inv-sqrt"
lr = 0.05

[[optimizer]]
name = "adam"

[[optimizer]]
name = "birder"
t0 = 20

[[optimizer]]
name = "onebit-adam"
warmup_steps = 15
)toml";

RunSpec Spec(const std::filesystem::path& dir, const std::string& text = kSpec,
             const std::vector<std::string>& settings = {}) {
  WriteFile(dir / "spec.toml", text);
  return LoadSpec(dir / "spec.toml", settings);
}

ExperimentOptions Options(const std::filesystem::path& out) {
  ExperimentOptions options;
  options.out_dir = out;
  options.progress = false;
  options.checkpoints = true;
  return options;
}

// Runs `spec` into `out` and stops it (as SIGINT would) after step `step` of run `run`.
void RunAndStop(const RunSpec& spec, const std::filesystem::path& out, int run, std::int64_t step) {
  std::atomic<bool> stop{false};
  ExperimentOptions options = Options(out);
  options.stop = &stop;
  int current = 0;
  std::int64_t previous = 0;
  options.on_step = [&](std::int64_t t, double) {
    if (t < previous) ++current;  // the next run started
    previous = t;
    if (current == run && t == step) stop = true;
  };
  EXPECT_THROW(RunExperiment(spec, options), Interrupted);
}

ExperimentReport Resume(const RunSpec& spec, const std::filesystem::path& out) {
  ExperimentOptions options = Options(out);
  options.resume = true;
  return RunExperiment(spec, options);
}

TEST(Resume, ContinuesBitForBitFromEveryKindOfStop) {
  TempDir dir;
  const RunSpec spec = Spec(dir.path());
  const ExperimentReport whole = RunExperiment(spec, Options(dir / "whole"));
  const std::string metrics = ReadFile(dir / "whole/metrics.csv");
  const std::string params = ReadFile(dir / "whole/params.npy");
  // Stopped at a checkpoint, just after one, in the first run, and twice in a row.
  for (const auto& [run, step] : {std::pair{1, 30}, std::pair{1, 34}, std::pair{0, 12}}) {
    SCOPED_TRACE(fmt::format("stopped after step {} of run {}", step, run));
    const std::filesystem::path out = dir / fmt::format("stop-{}-{}", run, step);
    RunAndStop(spec, out, run, step);
    const std::optional<CheckpointMark> mark = ResultsWriter::StagedCheckpoint(out);
    ASSERT_TRUE(mark.has_value());
    EXPECT_EQ(mark->run, run);
    EXPECT_EQ(mark->step, step / 10 * 10);
    EXPECT_FALSE(std::filesystem::exists(out / "metrics.csv"));  // nothing published yet
    const ExperimentReport resumed = Resume(spec, out);
    EXPECT_EQ(ReadFile(out / "metrics.csv"), metrics);
    EXPECT_EQ(ReadFile(out / "params.npy"), params);
    ASSERT_EQ(resumed.runs.size(), whole.runs.size());
    for (std::size_t k = 0; k < whole.runs.size(); ++k) {
      EXPECT_EQ(resumed.runs[k].probe_lines, whole.runs[k].probe_lines);
      EXPECT_EQ(resumed.runs[k].record.final_loss, whole.runs[k].record.final_loss);
      EXPECT_EQ(resumed.runs[k].record.bits_sent_per_worker,
                whole.runs[k].record.bits_sent_per_worker);
      EXPECT_EQ(resumed.runs[k].observed_g, whole.runs[k].observed_g);
    }
    // The checkpoints are gone with the staging folder; the published set is what remains.
    EXPECT_FALSE(std::filesystem::exists(out / ".results/next"));
    EXPECT_FALSE(ResultsWriter::StagedCheckpoint(out).has_value());
  }
  // Stopped, resumed, stopped again later, resumed.
  const std::filesystem::path out = dir / "twice";
  RunAndStop(spec, out, 0, 25);
  {
    std::atomic<bool> stop{false};
    ExperimentOptions options = Options(out);
    options.resume = true;
    options.stop = &stop;
    options.on_step = [&](std::int64_t t, double) { stop = stop || t == 45; };
    EXPECT_THROW(RunExperiment(spec, options), Interrupted);
  }
  EXPECT_EQ(ResultsWriter::StagedCheckpoint(out)->step, 40);
  Resume(spec, out);
  EXPECT_EQ(ReadFile(out / "metrics.csv"), metrics);
  EXPECT_EQ(ReadFile(out / "params.npy"), params);
}

TEST(Resume, RefusesWhatItCannotContinue) {
  TempDir dir;
  const RunSpec spec = Spec(dir.path());
  // Nothing to resume.
  EXPECT_THAT(UserErrorOf([&] { Resume(spec, dir / "empty"); }),
              HasSubstr("--resume " + (dir / "empty").string() +
                        ": there is no checkpoint to resume there"));
  RunExperiment(spec, Options(dir / "done"));
  EXPECT_THAT(UserErrorOf([&] { Resume(spec, dir / "done"); }),
              HasSubstr("there is no checkpoint to resume there"));

  const std::filesystem::path out = dir / "stopped";
  RunAndStop(spec, out, 1, 30);
  // A fresh run into the folder would throw the checkpoint away: refused, saying how to go on.
  EXPECT_THAT(UserErrorOf([&] { RunExperiment(spec, Options(out)); }),
              HasSubstr("it holds the checkpoint of an unfinished run (run 2, step 30); continue "
                        "it with lemmalab run SPEC --resume"));
  // Another spec text, other --set arguments: refused, the checkpoint kept.
  TempDir other;
  std::string edited = kSpec;
  edited.replace(edited.find("sigma = 0.2"), 11, "sigma = 0.3");
  EXPECT_THAT(UserErrorOf([&] { Resume(Spec(other.path(), edited), out); }),
              ::testing::AllOf(HasSubstr("the checkpoint was written by another spec"),
                               HasSubstr("whose text differs: problem.sigma: 0.2 then, 0.3 now")));
  EXPECT_THAT(UserErrorOf([&] { Resume(Spec(dir.path(), kSpec, {"steps=70"}), out); }),
              HasSubstr("another set of --set arguments ('' then, 'steps=70' now)"));
  EXPECT_EQ(ResultsWriter::StagedCheckpoint(out)->step, 30);
  // The same spec still resumes.
  Resume(spec, out);
  EXPECT_TRUE(std::filesystem::exists(out / "params.npy"));
}

// The data a run learns from are part of what it continues: a data file changed since the
// checkpoint shows in f(x_0), and the resume is refused.
TEST(Resume, RefusesChangedData) {
  TempDir dir;
  const std::string table = "a,b,y\n1,2,1\n-1,0.5,0\n2,1,1\n0.5,-1,0\n-2,0,0\n1,1,1\n";
  WriteFile(dir / "table.csv", table);
  const std::string text = R"toml(
seed = 3
steps = 40
workers = 2
checkpoint_every = 10
[data]
source = "csv"
path = "table.csv"
[problem]
name = "logreg"
batch_size = 2
[[optimizer]]
name = "sgd"
schedule = { name = "constant", lr = 0.1 }
)toml";
  const RunSpec spec = Spec(dir.path(), text);
  RunAndStop(spec, dir / "out", 0, 25);
  WriteFile(dir / "table.csv", "a,b,y\n1,2,1\n-1,0.5,0\n2,1,1\n0.5,-1,0\n-2,0,0\n1,1.5,1\n");
  EXPECT_THAT(UserErrorOf([&] { Resume(Spec(dir.path(), text), dir / "out"); }),
              HasSubstr("the data (CRC-32 of the samples) differ from the checkpointed run's"));
}

// A copy of the stopped run's folder `from` at `to`, with its state file, for one damage.
std::filesystem::path CopyOfStopped(const std::filesystem::path& from,
                                    const std::filesystem::path& to) {
  std::filesystem::copy(
      from, to,
      std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
  return to / ".results/next/state-run1-step30-rank0.sqlite";
}

// The refusal of resuming `spec` from a copy (at `out`) of the stopped run `stopped` whose state
// file holds `edited`, written with its checksum as lemmalab writes it; the copy is removed.
std::string ResumeEdited(const RunSpec& spec, const std::filesystem::path& stopped,
                         const std::filesystem::path& out, const StateSnapshot& edited) {
  WriteStateFile(CopyOfStopped(stopped, out), edited);
  const std::string error = UserErrorOf([&] { Resume(spec, out); });
  std::filesystem::remove_all(out);
  return error;
}

// Runs SQL on a file (a state file or a results database) as a hand with sqlite3 would.
void EditWithSql(const std::filesystem::path& file, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
}

// Issue 33, finding 2: restore took lengths and counts from the state file. 4 MB appended to
// run/x crashed Birder::Apply, 4 bytes more or fewer were an internal error, a count of 5e7
// allocated gigabytes before a refusal, and a NaN written into x was accepted.
TEST(Resume, ADamagedStateFileIsRefusedWhole) {
  TempDir dir;
  const RunSpec spec = Spec(dir.path());
  const std::filesystem::path stopped = dir / "stopped";
  RunAndStop(spec, stopped, 1, 30);
  const StateSnapshot saved = ReadStateFile(CopyOfStopped(stopped, dir / "read"));

  // Edited by hand: the checksum no longer matches, whatever the edit.
  const std::filesystem::path raw = CopyOfStopped(stopped, dir / "raw");
  EditWithSql(raw,
              "UPDATE state SET bytes = bytes || zeroblob(4) WHERE rowid = "
              "(SELECT MIN(rowid) FROM state WHERE kind = 'f32')");
  EXPECT_THAT(UserErrorOf([&] { Resume(spec, dir / "raw"); }),
              HasSubstr("the checkpoint's state file is damaged (CRC-32"));

  // Edited consistently (checksum recomputed): every number array of the parameters, the
  // optimizers' state and the finished runs, one element longer or shorter than the run's own, is
  // refused by its length, never restored at the file's length. (A probe's state sized at its
  // first step takes the saved length; tests/checkpoint_test.cc covers every optimizer.)
  int arrays = 0;
  for (const auto& [path, item] : saved) {
    const std::size_t element = item.kind == StateKind::kF32   ? 4
                                : item.kind == StateKind::kF64 ? 8
                                                               : 0;
    if (element == 0 || item.bytes.size() < 2 * element || path.starts_with("run/probes/")) {
      continue;
    }
    ++arrays;
    for (const int change : {+1, -1}) {
      SCOPED_TRACE(fmt::format("{} with {} element", path, change > 0 ? "one more" : "one fewer"));
      StateSnapshot edited = saved;
      auto& bytes = edited.at(path).bytes;
      bytes.resize(change > 0 ? bytes.size() + element : bytes.size() - element);
      EXPECT_THAT(ResumeEdited(spec, stopped, dir / "edited", edited),
                  ::testing::AnyOf(HasSubstr("as this run has"), HasSubstr("but this run has d")));
    }
  }
  EXPECT_GT(arrays, 10);

  // A count far beyond what the file holds is refused before anything is sized by it.
  int counts = 0;
  for (const auto& [path, item] : saved) {
    // A container's count (its elements follow as .../0, ...), not a scalar named count.
    const std::string first = path.substr(0, path.size() - 5) + "0";
    const auto next = saved.lower_bound(first);
    if (!path.ends_with("/count") || next == saved.end() || !next->first.starts_with(first)) {
      continue;
    }
    ++counts;
    SCOPED_TRACE(path);
    StateSnapshot edited = saved;
    const std::uint64_t huge = 50'000'000;
    std::memcpy(edited.at(path).bytes.data(), &huge, sizeof(huge));
    EXPECT_THAT(
        ResumeEdited(spec, stopped, dir / "edited", edited),
        ::testing::AnyOf(HasSubstr("but it says 50000000"), HasSubstr("(as this run has)")));
  }
  EXPECT_GT(counts, 0);
}

// Issue 33, finding 1: a checkpoint resumed by another job (another number of processes, or
// another rank's state file) crashed a rank. The state file says which job and rank wrote it and
// for what sizes; the results say how many processes; each is compared before anything is
// restored, and the refusal gives the command that resumes it.
TEST(Resume, ACheckpointResumesOnlyInTheJobThatWroteIt) {
  TempDir dir;
  const RunSpec spec = Spec(dir.path());
  const std::filesystem::path stopped = dir / "stopped";
  RunAndStop(spec, stopped, 1, 30);
  const StateSnapshot saved = ReadStateFile(CopyOfStopped(stopped, dir / "read"));
  for (const auto& [item, value, says] :
       {std::tuple{"origin/rank", 2,
                   "the state file was written with rank = 2, but this process "
                   "has rank = 0"},
        std::tuple{"origin/processes", 4, "written with processes = 4"},
        std::tuple{"origin/workers", 5, "written with workers = 5"},
        std::tuple{"origin/dimension", 25, "written with dimension = 25"}}) {
    SCOPED_TRACE(item);
    StateSnapshot edited = saved;
    const std::int64_t v = value;
    std::memcpy(edited.at(item).bytes.data(), &v, sizeof(v));
    EXPECT_THAT(ResumeEdited(spec, stopped, dir / "edited", edited), HasSubstr(says));
  }
  // The results say the job had 4 processes: the refusal says how to resume it.
  const std::filesystem::path out = dir / "mpi";
  CopyOfStopped(stopped, out);
  EditWithSql(out / ".results/next/results.sqlite",
              "UPDATE meta SET value = '4' WHERE key = 'processes'");
  EXPECT_THAT(UserErrorOf([&] { Resume(spec, out); }),
              HasSubstr("the checkpoint was written by mpirun with 4 processes and this is one "
                        "process; resume it as it was started: mpirun -np 4 lemmalab run"));
}

// Only `lemmalab run` saves checkpoints: nothing would resume a check's, sweep's or trace's.
TEST(Resume, CheckpointsAreRefusedWhereNothingCanResumeThem) {
  TempDir dir;
  ExperimentOptions options = Options(dir / "out");
  options.checkpoints = false;
  EXPECT_THAT(UserErrorOf([&] { RunExperiment(Spec(dir.path()), options); }),
              HasSubstr("checkpoint_every = 10: only lemmalab run saves checkpoints"));
  // A trace writes nothing and ignores the key.
  options.discard_results = true;
  options.last_step = 3;
  EXPECT_EQ(RunExperiment(Spec(dir.path()), options).runs.size(), 3u);
}

// Checkpoints change no result: the same run with and without them writes the same bytes.
TEST(Resume, CheckpointsChangeNoResult) {
  TempDir dir;
  RunExperiment(Spec(dir.path()), Options(dir / "with"));
  ExperimentOptions options = Options(dir / "without");
  RunExperiment(Spec(dir.path(), kSpec, {"checkpoint_every=1000"}), options);
  EXPECT_EQ(ReadFile(dir / "with/metrics.csv"), ReadFile(dir / "without/metrics.csv"));
  EXPECT_EQ(ReadFile(dir / "with/params.npy"), ReadFile(dir / "without/params.npy"));
}

std::set<std::string> Names(const std::filesystem::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

// Stages `files` (name -> text) and publishes them.
void Publish(ResultFolder& folder, const std::map<std::string, std::string>& files) {
  folder.ResetStaging();
  std::vector<std::string_view> names;
  for (const auto& [name, text] : files) {
    WriteFile(folder.staging() / name, text);
    names.push_back(name);
  }
  folder.Publish(names);
}

TEST(ResultFolder, PublishesEachSetWholeThroughOneLink) {
  TempDir dir;
  ResultFolder folder(dir.path());
  Publish(folder, {{"a.csv", "first a"}, {"b.npy", "first b"}});
  EXPECT_EQ(ReadFile(dir / "a.csv"), "first a");
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "a.csv"));
  EXPECT_EQ(std::filesystem::read_symlink(dir / ".results/current"), "gen-0");
  // A reader holding the first set's file keeps reading it after the switch.
  const int held = open((dir / "b.npy").c_str(), O_RDONLY);
  ASSERT_GE(held, 0);
  Publish(folder, {{"a.csv", "second a"}, {"b.npy", "second b"}});
  EXPECT_EQ(ReadFile(dir / "a.csv"), "second a");
  EXPECT_EQ(ReadFile(dir / "b.npy"), "second b");
  char text[16] = {};
  EXPECT_EQ(pread(held, text, sizeof(text), 0), 7);
  EXPECT_STREQ(text, "first b");
  close(held);
  EXPECT_EQ(Names(dir / ".results"), (std::set<std::string>{"current", "gen-1"}));
  EXPECT_EQ(Names(dir.path()), (std::set<std::string>{".results", "a.csv", "b.npy"}));
}

// A folder of plain files (written by an earlier lemmalab) becomes a published set first, then
// the new set replaces it whole.
TEST(ResultFolder, AdoptsPlainFilesOfAnOlderLayout) {
  TempDir dir;
  WriteFile(dir / "a.csv", "old a");
  WriteFile(dir / "b.npy", "old b");
  WriteFile(dir / "notes.txt", "the user's");
  ResultFolder folder(dir.path());
  Publish(folder, {{"a.csv", "new a"}, {"b.npy", "new b"}});
  EXPECT_EQ(ReadFile(dir / "a.csv"), "new a");
  EXPECT_EQ(ReadFile(dir / "b.npy"), "new b");
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "b.npy"));
  EXPECT_EQ(ReadFile(dir / "notes.txt"), "the user's");
}

// Sets or clears the immutable attribute (chattr +i); false where the file system has none.
bool SetImmutable(const std::filesystem::path& path, bool on) {
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  int flags = 0;
  bool ok = ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
  flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
  ok = ok && ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
  close(fd);
  return ok;
}

// Issue 21, finding 4: with results.sqlite made immutable, a run exited 2 after metrics.csv and
// params.npy had already been replaced. Now the run fails before anything changes, or publishes
// its whole set: never a mix.
TEST(ResultFolder, AFolderThatCannotChangeKeepsItsWholeEarlierSet) {
  TempDir dir;
  const RunSpec spec = Spec(dir.path(), kSpec, {"checkpoint_every=1000"});
  const std::filesystem::path out = dir / "out";
  // The layout of earlier versions: plain files (an earlier run's), results.sqlite immutable.
  RunExperiment(Spec(dir.path(), kSpec, {"checkpoint_every=1000", "seed=13"}),
                Options(dir / "earlier"));
  std::filesystem::create_directories(out);
  std::map<std::string, std::string> earlier;
  for (const char* name : {"results.sqlite", "metrics.csv", "runs.csv", "params.npy"}) {
    std::filesystem::copy_file(dir / "earlier" / name, out / name);
    earlier[name] = ReadFile(out / name);
  }
  if (!SetImmutable(out / "results.sqlite", true)) {
    GTEST_SKIP() << "no immutable attribute on this file system (or not root)";
  }
  const std::string error = UserErrorOf([&] { RunExperiment(spec, Options(out)); });
  SetImmutable(out / "results.sqlite", false);
  EXPECT_THAT(error, HasSubstr("results.sqlite"));
  for (const char* name : {"results.sqlite", "metrics.csv", "runs.csv", "params.npy"}) {
    EXPECT_EQ(ReadFile(out / name), earlier[name]) << name;
  }
  // The store itself immutable: the new set cannot become a generation; the old set stays.
  RunExperiment(spec, Options(out));
  const std::string metrics = ReadFile(out / "metrics.csv");
  ASSERT_TRUE(SetImmutable(out / ".results", true));
  const std::string refused =
      UserErrorOf([&] { RunExperiment(Spec(dir.path(), kSpec, {"seed=12"}), Options(out)); });
  SetImmutable(out / ".results", false);
  EXPECT_THAT(refused, HasSubstr(".results"));
  EXPECT_EQ(ReadFile(out / "metrics.csv"), metrics);
  EXPECT_EQ(Names(out / ".results"), (std::set<std::string>{"current", "gen-1"}));
}

}  // namespace
}  // namespace lemmalab
