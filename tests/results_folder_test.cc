// Issue 33: a results folder is lemmalab's and nothing else's. No command follows a link there
// that it did not make, writes, truncates or deletes outside --out, replaces results of another
// kind or files it did not write, or leaves derived files describing results that are gone; and
// every user-caused condition on the way is exit code 2 with the path and the reason. Each
// observation of the issue is a test here with its original input, and a property test runs
// random sequences of commands, planted links and foreign files against one folder.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/estimates.h"
#include "engine/experiment.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using testing::CommandResult;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ReadFile;
using testing::RunLemmalab;
using testing::TempDir;
using testing::TinySpec;
using testing::WriteFile;

namespace fs = std::filesystem;

// Every file under `root` (links as their targets' text, never followed) with its bytes: what
// must not change outside a results folder.
std::map<std::string, std::string> Snapshot(const fs::path& root) {
  std::map<std::string, std::string> files;
  if (!fs::exists(fs::symlink_status(root))) return files;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator();
       ++it) {
    const fs::path relative = fs::relative(it->path(), root);
    if (it->is_symlink()) {
      files[relative.string()] = "-> " + fs::read_symlink(it->path()).string();
    } else if (it->is_regular_file()) {
      files[relative.string()] = ReadFile(it->path());
    } else {
      files[relative.string() + "/"] = "";
    }
  }
  return files;
}

CommandResult Lemmalab(std::vector<std::string> arguments) {
  return RunLemmalab(std::move(arguments));
}

std::string CheckSpec(int steps) {
  return TinySpec(steps, "\n[[assert]]\nassertion = \"birder-lemma2\"\n");
}

std::string SweepSpec(int steps) {
  return TinySpec(steps, "\n[sweep]\n\"optimizer.beta\" = [0.9, 0.95]\n");
}

// A folder beside the results folder, with a file, that no command may touch.
struct Outside {
  explicit Outside(const fs::path& root) : dir(root / "elsewhere") {
    fs::create_directories(dir);
    WriteFile(dir / "precious.txt", "the user's own data\n");
    fs::create_directories(dir / "next");
    WriteFile(dir / "next/keep.txt", "kept\n");
    fs::create_directories(dir / "gen-0");
    before = Snapshot(dir);
  }
  void ExpectUntouched() const { EXPECT_EQ(Snapshot(dir), before); }
  fs::path dir;
  std::map<std::string, std::string> before;
};

// Finding 3: a .lock linked to a file elsewhere had that file truncated and overwritten, for run,
// trace, check and sweep alike; a dangling .lock created the outside file.
TEST(ResultsFolder, TheLockFileIsNeverFollowed) {
  TempDir dir;
  const Outside outside(dir.path());
  WriteFile(dir / "spec.toml", TinySpec(5));
  WriteFile(dir / "check.toml", CheckSpec(5));
  WriteFile(dir / "sweep.toml", SweepSpec(5));
  const std::vector<std::vector<std::string>> commands = {{"run", (dir / "spec.toml").string()},
                                                          {"trace", (dir / "spec.toml").string()},
                                                          {"check", (dir / "check.toml").string()},
                                                          {"sweep", (dir / "sweep.toml").string()}};
  for (const auto& command : commands) {
    for (const bool dangling : {false, true}) {
      SCOPED_TRACE(
          fmt::format("{} with a {} .lock", command.front(), dangling ? "dangling" : "linked"));
      const fs::path out = dir / fmt::format("out-{}-{}", command.front(), dangling);
      fs::create_directories(out);
      fs::create_symlink(dangling ? outside.dir / "created.txt" : outside.dir / "precious.txt",
                         out / ".lock");
      std::vector<std::string> arguments = command;
      arguments.insert(arguments.end(), {"--out", out.string()});
      const CommandResult r = Lemmalab(arguments);
      EXPECT_EQ(r.exit_code, 2) << r.err;
      EXPECT_THAT(r.err, HasSubstr((out / ".lock").string() + " is a link that lemmalab did not "
                                                              "make"));
      outside.ExpectUntouched();
    }
  }
}

// Finding 3: .results linked to a folder elsewhere made lemmalab write gen-N/ there and delete
// that folder's next/ and gen-*; a results file or a derived file linked elsewhere likewise.
TEST(ResultsFolder, NoLinkItDidNotMakeIsFollowed) {
  TempDir dir;
  const Outside outside(dir.path());
  WriteFile(dir / "spec.toml", TinySpec(5));
  for (const std::string name :
       {".results", "metrics.csv", "results.sqlite", "plots", "summary.csv", "check.json"}) {
    SCOPED_TRACE(name);
    const fs::path out = dir / ("out-" + name);
    fs::create_directories(out);
    fs::create_symlink(
        name == ".results" || name == "plots" ? outside.dir : outside.dir / "precious.txt",
        out / name);
    const CommandResult r = Lemmalab({"run", (dir / "spec.toml").string(), "--out", out.string()});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr((out / name).string() + " is a link"));
    EXPECT_THAT(r.err, HasSubstr("that lemmalab did not make"));
    outside.ExpectUntouched();
  }
}

// Finding 3: report wrote through a planted summary.csv.partial and a plots link. Its own
// temporary names are replaced, not followed; the figures are drawn into a folder of its own.
TEST(ResultsFolder, ReportWritesThroughNoLink) {
  TempDir dir;
  const Outside outside(dir.path());
  WriteFile(dir / "spec.toml", TinySpec(5));
  const fs::path out = dir / "out";
  ASSERT_EQ(Lemmalab({"run", (dir / "spec.toml").string(), "--out", out.string()}).exit_code, 0);
  fs::create_symlink(outside.dir / "precious.txt", out / "summary.csv.partial");
  fs::create_symlink(outside.dir / "precious.txt", out / "report.md.partial");
  fs::create_symlink(outside.dir, out / "plots.partial");
  const CommandResult r = Lemmalab({"report", out.string(), "--no-plots"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(out / "summary.csv")));
  outside.ExpectUntouched();
  // A plots link is refused by the next command that writes there, and report replaces it.
  fs::create_symlink(outside.dir, out / "plots");
  EXPECT_EQ(Lemmalab({"report", out.string()}).exit_code, 0);
  EXPECT_FALSE(fs::is_symlink(out / "plots"));
  outside.ExpectUntouched();
}

// Finding 4: a run into a sweep's folder exited 0 and the sweep's database was gone; a run into
// a check folder kept the old check.json beside the new run. A folder holds one kind of results.
TEST(ResultsFolder, ResultsOfAnotherKindAreNeverReplaced) {
  TempDir dir;
  WriteFile(dir / "spec.toml", TinySpec(5));
  WriteFile(dir / "check.toml", CheckSpec(5));
  WriteFile(dir / "sweep.toml", SweepSpec(5));
  const std::map<std::string, std::vector<std::string>> writers = {
      {"run", {"run", (dir / "spec.toml").string()}},
      {"check", {"check", (dir / "check.toml").string()}},
      {"sweep", {"sweep", (dir / "sweep.toml").string()}},
      {"trace", {"trace", (dir / "spec.toml").string()}}};
  for (const auto& [kind, command] : writers) {
    const fs::path out = dir / kind;
    std::vector<std::string> arguments = command;
    arguments.insert(arguments.end(), {"--out", out.string()});
    const CommandResult first = Lemmalab(arguments);
    ASSERT_EQ(first.exit_code, 0) << first.err;
    const auto before = Snapshot(out);
    // The same command again is welcome; every other one is refused and changes nothing.
    for (const auto& [other, other_command] : writers) {
      if (other == kind) continue;
      SCOPED_TRACE(other + " into a folder of a " + kind);
      arguments = other_command;
      arguments.insert(arguments.end(), {"--out", out.string()});
      const CommandResult r = Lemmalab(arguments);
      EXPECT_EQ(r.exit_code, 2) << r.err;
      EXPECT_THAT(r.err, HasSubstr("it holds the results of a lemmalab " + kind));
      EXPECT_EQ(Snapshot(out), before);
    }
  }
}

// A check stopped after it published its run but before its verdicts (check.json) left a folder
// that looked like a run's, so that the same check was refused there and a run was not. The
// database records the kind of command that wrote it.
TEST(ResultsFolder, AStoppedCheckIsStillACheckFolder) {
  TempDir dir;
  WriteFile(dir / "check.toml", CheckSpec(5));
  WriteFile(dir / "spec.toml", TinySpec(5));
  const fs::path out = dir / "out";
  ASSERT_EQ(Lemmalab({"check", (dir / "check.toml").string(), "--out", out.string()}).exit_code, 0);
  fs::remove(out / "check.json");
  fs::remove(out / "check.md");
  const CommandResult run = Lemmalab({"run", (dir / "spec.toml").string(), "--out", out.string()});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_THAT(run.err, HasSubstr("it holds the results of a lemmalab check"));
  const CommandResult again =
      Lemmalab({"check", (dir / "check.toml").string(), "--out", out.string()});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(fs::exists(out / "check.json"));
}

// Finding 4: a plain metrics.csv, runs.csv, params.npy or results.sqlite in --out was adopted as
// old results and later deleted without checking it was lemmalab's.
TEST(ResultsFolder, FilesItDidNotWriteAreNeverAdoptedOrDeleted) {
  TempDir dir;
  WriteFile(dir / "spec.toml", TinySpec(5));
  for (const std::string name : {"metrics.csv", "runs.csv", "params.npy", "results.sqlite"}) {
    SCOPED_TRACE(name);
    const fs::path out = dir / ("out-" + name);
    fs::create_directories(out);
    WriteFile(out / name, "the user's own " + name + "\n");
    const auto before = Snapshot(out);
    const CommandResult r = Lemmalab({"run", (dir / "spec.toml").string(), "--out", out.string()});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr((out / name).string()));
    EXPECT_THAT(r.err, HasSubstr("lemmalab replaces only results it wrote"));
    EXPECT_EQ(Snapshot(out), before);
  }
}

// Finding 4: after a new run, summary.csv, report.md and plots/ still described the old results.
TEST(ResultsFolder, DerivedFilesGoWithTheResultsTheyDescribe) {
  TempDir dir;
  WriteFile(dir / "spec.toml", TinySpec(5));
  const fs::path out = dir / "out";
  ASSERT_EQ(Lemmalab({"run", (dir / "spec.toml").string(), "--out", out.string()}).exit_code, 0);
  ASSERT_EQ(Lemmalab({"report", out.string(), "--no-plots"}).exit_code, 0);
  ASSERT_TRUE(fs::exists(out / "summary.csv"));
  ASSERT_TRUE(fs::exists(out / "report.md"));
  ASSERT_EQ(
      Lemmalab({"run", (dir / "spec.toml").string(), "--out", out.string(), "--set", "steps=7"})
          .exit_code,
      0);
  EXPECT_FALSE(fs::exists(out / "summary.csv"));
  EXPECT_FALSE(fs::exists(out / "report.md"));
}

// Finding 4: a spec named "...toml" sent the default folder to results/.. and replaced the
// user's own metrics.csv and runs.csv in the current folder.
TEST(ResultsFolder, NoSpecNameLeavesTheDefaultFolder) {
  TempDir dir;
  WriteFile(dir / "...toml", TinySpec(5));
  WriteFile(dir / "metrics.csv", "the user's own\n");
  const std::string cwd = fs::current_path().string();
  fs::current_path(dir.path());
  const CommandResult r = Lemmalab({"run", "...toml"});
  fs::current_path(cwd);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadFile(dir / "metrics.csv"), "the user's own\n");
  EXPECT_TRUE(fs::exists(dir / "results/spec/metrics.csv")) << r.out;
}

// Finding 7: ordinary file-system conditions were internal errors (exit 3).
TEST(ResultsFolder, FileSystemConditionsAreTheUsersToFix) {
  TempDir dir;
  WriteFile(dir / "spec.toml", TinySpec(5));
  fs::create_symlink("loop", dir / "loop");
  const std::string long_name(300, 'a');
  const std::vector<std::vector<std::string>> cases = {
      {"run", (dir / "loop").string()},
      {"run", (dir / (long_name + ".toml")).string()},
      {"run", (dir / "spec.toml").string(), "--out", (dir / "loop/out").string()},
      {"run", (dir / "spec.toml").string(), "--out", (dir / long_name).string()},
      {"report", (dir / "loop").string()},
  };
  for (const auto& arguments : cases) {
    SCOPED_TRACE(fmt::format("{}", fmt::join(arguments, " ")));
    const CommandResult r = Lemmalab(arguments);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, Not(HasSubstr("internal error")));
  }
  // A derived file that is a folder: the report says which.
  const fs::path out = dir / "out";
  ASSERT_EQ(Lemmalab({"run", (dir / "spec.toml").string(), "--out", out.string()}).exit_code, 0);
  fs::create_directories(out / "summary.csv/inside");
  const CommandResult r = Lemmalab({"report", out.string(), "--no-plots"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("summary.csv"));
}

// Finding 8: messages cut by a NUL or rewritten by escape sequences, values silently changed.
TEST(ResultsFolder, InputIsRefusedWholeRatherThanTruncated) {
  TempDir dir;
  const auto spec_with = [&](const std::string& name, const std::string& optimizer_line) {
    WriteFile(dir / name, "seed = 1\nsteps = 5\n[problem]\nname = \"quadratic\"\n[[optimizer]]\n" +
                              optimizer_line + "\nschedule = { name = \"constant\", lr = 0.1 }\n");
    return (dir / name).string();
  };
  struct Case {
    std::vector<std::string> arguments;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"run", spec_with("nul.toml", "name = \"a\\u0000b\"")}, "control character \\x00"},
      {{"run", spec_with("esc.toml", "name = \"\\u001b[31mred\"")}, "control character \\x1b"},
      {{"run", spec_with("tiny.toml", "name = \"sgd\"\nweight_decay = 1e-400")},
       "the number 1e-400 is too small for a double"},
      {{"run", spec_with("huge.toml", "name = \"sgd\"\nweight_decay = 1e400")},
       "'1e400' could not be interpreted as a value"},
      {{"run", spec_with("ok.toml", "name = \"sgd\""), "--set", "steps=5\nworkers=7"},
       "each --set is one PATH=VALUE on one line"},
      {{"run", spec_with("ok.toml", "name = \"sgd\""), "--max-memory", "0"},
       "must be a size above 0 bytes"},
      {{"run", spec_with("ok.toml", "name = \"sgd\""), "--max-memory", "-1"},
       "must be a size above 0 bytes"},
      {{"run", spec_with("ok.toml", "name = \"sgd\""), "--max-results", "0"},
       "must be a size above 0 bytes"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("{}", fmt::join(c.arguments, " ")));
    std::vector<std::string> arguments = c.arguments;
    arguments.insert(arguments.end(), {"--out", (dir / "out").string()});
    const CommandResult r = Lemmalab(arguments);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.says));
    EXPECT_EQ(r.err.find('\x1b'), std::string::npos);
    EXPECT_FALSE(fs::exists(dir / "out"));
  }
}

// Finding 8: SPAMS under allreduce was refused naming no file or line; finding 7: a sweep
// database whose sweep_axis_paths held non-strings was an internal error.
TEST(ResultsFolder, RefusalsNameTheFileTheyAreAbout) {
  TempDir dir;
  WriteFile(dir / "spams.toml",
            "seed = 1\nsteps = 5\nworkers = 2\n[communication]\nscheme = \"allreduce\"\n"
            "[problem]\nname = \"quadratic\"\n[[optimizer]]\nname = \"spams\"\n"
            "schedule = { name = \"constant\", lr = 0.1 }\n");
  const CommandResult spams =
      Lemmalab({"run", (dir / "spams.toml").string(), "--out", (dir / "a").string()});
  EXPECT_EQ(spams.exit_code, 2);
  EXPECT_THAT(spams.err, HasSubstr((dir / "spams.toml").string() +
                                   ":8:1: optimizer 'spams': it cannot run under scheme "
                                   "'allreduce'"));
  WriteFile(dir / "sweep.toml", SweepSpec(3));
  const fs::path out = dir / "sweep";
  ASSERT_EQ(Lemmalab({"sweep", (dir / "sweep.toml").string(), "--out", out.string()}).exit_code, 0);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((out / "results.sqlite").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE meta SET value = '[1, 2]' WHERE key = 'sweep_axis_paths'",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const CommandResult report = Lemmalab({"report", out.string(), "--no-plots"});
  EXPECT_EQ(report.exit_code, 2) << report.err;
  EXPECT_THAT(report.err, HasSubstr("meta 'sweep_axis_paths' is not a list of option paths"));
}

// Finding 8: a FIFO as the spec blocked forever; with nobody writing it reads as empty.
TEST(ResultsFolder, AFifoSpecDoesNotBlock) {
  TempDir dir;
  ASSERT_EQ(mkfifo((dir / "fifo.toml").c_str(), 0644), 0);
  const CommandResult r =
      Lemmalab({"run", (dir / "fifo.toml").string(), "--out", (dir / "out").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("fifo.toml"));
}

// Finding 8: stdout on /dev/full exited 0 with the table lost.
TEST(ResultsFolder, ALostTableIsAnError) {
  TempDir dir;
  WriteFile(dir / "spec.toml", TinySpec(5));
  const int pid =
      testing::SpawnLemmalab({"run", (dir / "spec.toml").string(), "--out", (dir / "out").string()},
                             "/dev/full", dir / "err");
  EXPECT_EQ(testing::WaitForExit(pid), 2);
  EXPECT_THAT(ReadFile(dir / "err"), HasSubstr("standard output: cannot write"));
}

// Finding 5: a sweep of 30 three-valued axes expanded 3^30 points (4.2 GB in 43 s) before any
// check; it is refused with its size before anything is expanded.
TEST(ResultsFolder, ASweepTooLargeIsRefusedBeforeItIsExpanded) {
  TempDir dir;
  std::string axes = "\n[sweep]\n";
  for (int k = 0; k < 30; ++k) axes += fmt::format("\"optimizer.x{}\" = [1, 2, 3]\n", k);
  WriteFile(dir / "sweep.toml", TinySpec(5, axes));
  const CommandResult r =
      Lemmalab({"sweep", (dir / "sweep.toml").string(), "--out", (dir / "out").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("points (3 x 3 x"));
  EXPECT_THAT(r.err, HasSubstr("a sweep runs at most 100000"));
}

// Finding 6: --max-memory was not an upper bound (peaks 1.15-1.60x the limit). Beyond the
// estimate, the run watches its resident set: past the limit by more than 10%, it stops.
// Finding 6: a check grew with its seeds (it keeps every experiment's evidence until it judges
// them), bounded by nothing. 4 000 seeds of 200 steps fit one at a time in 256 MiB, but not all
// their evidence: refused before the first run, which writes nothing; 4 seeds run.
TEST(ResultsFolder, ACheckWhoseEvidenceCannotFitIsRefusedBeforeItRuns) {
  TempDir dir;
  const auto spec = [](int seeds) {
    std::string list;
    for (int s = 1; s <= seeds; ++s) list += fmt::format("{}, ", s);
    return CheckSpec(200) + fmt::format("\n[check]\nseeds = [{}]\n", list);
  };
  WriteFile(dir / "many.toml", spec(4000));
  WriteFile(dir / "few.toml", spec(4));
  const fs::path out = dir / "out";
  const CommandResult many = Lemmalab(
      {"check", (dir / "many.toml").string(), "--out", out.string(), "--max-memory", "256MiB"});
  EXPECT_EQ(many.exit_code, 2) << many.err;
  EXPECT_THAT(many.err, HasSubstr("the evidence kept until the verdicts"));
  EXPECT_THAT(many.err, HasSubstr("4000 experiments ([check] seeds x workers)"));
  EXPECT_FALSE(fs::exists(out / "seed-1-workers-2"));
  const CommandResult few = Lemmalab(
      {"check", (dir / "few.toml").string(), "--out", out.string(), "--max-memory", "256MiB"});
  EXPECT_EQ(few.exit_code, 0) << few.err;
}

TEST(ResultsFolder, ARunPastItsMemoryLimitStops) {
  EXPECT_NO_THROW(RequireResidentWithin(MemoryLimit{1e15, "--max-memory 1 PiB"}, 16));
  EXPECT_THAT(testing::UserErrorOf([] {
                RequireResidentWithin(MemoryLimit{1 << 20, "--max-memory 1 MiB"}, 32);
              }),
              HasSubstr("at step 32, more than --max-memory 1 MiB allows (1.00 MiB) by over 10%"));
}

// The property: random sequences of run, check, sweep, trace and report into one folder, with
// links and foreign files planted between them. Nothing outside the folder ever changes; a
// refused command changes nothing inside it; a folder's published results are always whole (its
// database opens and its metrics.csv has a header and rows).
TEST(ResultsFolder, NoSequenceOfCommandsTouchesAnythingElse) {
  TempDir dir;
  const Outside outside(dir.path());
  WriteFile(dir / "spec.toml", TinySpec(4));
  WriteFile(dir / "spec6.toml", TinySpec(6));
  WriteFile(dir / "check.toml", CheckSpec(4));
  WriteFile(dir / "sweep.toml", SweepSpec(4));
  const fs::path out = dir / "out";
  const std::vector<std::vector<std::string>> commands = {
      {"run", (dir / "spec.toml").string(), "--out", out.string()},
      {"run", (dir / "spec6.toml").string(), "--out", out.string()},
      {"check", (dir / "check.toml").string(), "--out", out.string()},
      {"sweep", (dir / "sweep.toml").string(), "--out", out.string()},
      {"trace", (dir / "spec.toml").string(), "--out", out.string()},
      {"report", out.string(), "--no-plots"}};
  const std::vector<std::string> plantable = {
      ".lock",       ".results", "metrics.csv",       "runs.csv",
      "summary.csv", "plots",    "report.md.partial", "results.sqlite"};
  std::mt19937 random(20261127);
  int refused = 0, done = 0, planted = 0;
  for (int step = 0; step < 40; ++step) {
    const int what = static_cast<int>(random() % 10);
    if (what < 3) {
      // Plant a link to the outside (what 0, 1), or a foreign file (2), where nothing is yet. A
      // plain .lock is lemmalab's own name for its lock, taken over by design.
      std::vector<std::string> free;
      for (const std::string& name : plantable) {
        if (!fs::exists(fs::symlink_status(out / name)) && (what < 2 || name != ".lock")) {
          free.push_back(name);
        }
      }
      if (free.empty()) continue;
      const std::string name = free[random() % free.size()];
      fs::create_directories(out);
      if (what < 2) {
        fs::create_symlink(
            name == ".results" || name == "plots" ? outside.dir : outside.dir / "precious.txt",
            out / name);
      } else {
        WriteFile(out / name, "foreign\n");
      }
      ++planted;
      continue;
    }
    if (what == 3) {  // the user clears the folder
      fs::remove_all(out);
      continue;
    }
    const auto& command = commands[random() % commands.size()];
    SCOPED_TRACE(fmt::format("step {}: {}", step, fmt::join(command, " ")));
    const auto before = Snapshot(out);
    const CommandResult r = Lemmalab(command);
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.exit_code << " " << r.err;
    if (r.exit_code == 2) {
      ++refused;
      auto after = Snapshot(out);
      EXPECT_EQ(after, before) << r.err;
    } else {
      ++done;
      if (command.front() == "run" || command.front() == "check") {
        const std::string metrics = ReadFile(out / "metrics.csv");
        EXPECT_TRUE(metrics.starts_with("run,")) << metrics.substr(0, 40);
        EXPECT_GT(std::count(metrics.begin(), metrics.end(), '\n'), 1);
      }
    }
    outside.ExpectUntouched();
  }
  // The sequence exercised both outcomes and the planting.
  EXPECT_GT(refused, 0);
  EXPECT_GT(done, 0);
  EXPECT_GT(planted, 0);
}

}  // namespace
}  // namespace lemmalab
