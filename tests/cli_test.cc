// The lemmalab executable: list, run, and every kind of bad input getting a clear message on
// stderr, exit code 2, and no results.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>
#include <tuple>

#include "core/error.h"
#include "engine/npy.h"
#include "optimizers/optimizer.h"
#include "tests/test_util.h"

namespace lemmalab {
namespace {

using testing::CommandResult;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::RunLemmalab;
using testing::TempDir;
using testing::WriteFile;

constexpr const char* kGoodSpec = R"toml(seed = 3
steps = 5
workers = 4
probes = ["ef-norm"]

[data]
source = "csv"
path = "table.csv"
label = "y"

[problem]
name = "logreg"
batch_size = 2

[schedule]
lr = 0.1

[[optimizer]]
name = "birder"
beta = 0.9

[[optimizer]]
name = "sgd"
)toml";

constexpr const char* kTable = "a,b,y\n1,2,1\n-1,0.5,0\n2,1,1\n-2,-1,0\n0.5,0.5,1\n-0.5,1,0\n";

// A folder with table.csv and spec.toml = kGoodSpec with `from` replaced by `to`.
struct Case {
  TempDir dir;
  Case(const std::string& from = "", const std::string& to = "") {
    std::string spec = kGoodSpec;
    if (!from.empty()) {
      const auto at = spec.find(from);
      EXPECT_NE(at, std::string::npos) << from;
      spec.replace(at, from.size(), to);
    }
    WriteFile(dir / "spec.toml", spec);
    WriteFile(dir / "table.csv", kTable);
  }
  CommandResult Run() const { return RunLemmalab(Arguments()); }
  std::vector<std::string> Arguments() const {
    return {"run", (dir / "spec.toml").string(), "--out", (dir / "out").string()};
  }
  bool WroteNothing() const { return !std::filesystem::exists(dir / "out"); }
};

TEST(Cli, ListNamesEveryRegistryAndSpeaksJson) {
  const CommandResult text = RunLemmalab({"list"});
  EXPECT_EQ(text.exit_code, 0);
  for (const char* name : {"birder", "adam", "sgd", "stochastic-binary", "identity", "logreg",
                           "csv", "ef-norm", "min-b", "q-domain", "inv-sqrt"}) {
    EXPECT_THAT(text.out, HasSubstr(name));
  }
  const CommandResult json = RunLemmalab({"list", "--json"});
  ASSERT_EQ(json.exit_code, 0);
  const auto doc = nlohmann::json::parse(json.out);
  std::vector<std::string> optimizers;
  for (const auto& o : doc.at("optimizers")) optimizers.push_back(o.at("name"));
  EXPECT_EQ(optimizers, Optimizers().names());
  for (const auto& o : doc.at("optimizers")) {
    EXPECT_FALSE(o.at("summary").get<std::string>().empty()) << o.at("name");
    EXPECT_FALSE(o.at("source").get<std::string>().empty()) << o.at("name");
  }
  // Options come with their rule and default, as the optimizer reads them.
  const auto& list = doc.at("optimizers");
  const auto birder_it = std::find_if(list.begin(), list.end(),
                                      [](const auto& o) { return o.at("name") == "birder"; });
  ASSERT_NE(birder_it, list.end());
  const auto& birder = *birder_it;
  EXPECT_EQ(birder.at("options")[0].at("key"), "beta");
  EXPECT_EQ(birder.at("options")[0].at("description"), "a number in [0, 1); default 0.95");
  EXPECT_THAT(text.out, HasSubstr("beta = a number in [0, 1); default 0.95"));
  for (const char* section : {"compressors", "problems", "data", "schedules", "probes"}) {
    EXPECT_FALSE(doc.at(section).empty()) << section;
  }
}

TEST(Cli, ListTakesAKindAndShowsEveryComponentsOptions) {
  const CommandResult compressors = RunLemmalab({"list", "compressors"});
  ASSERT_EQ(compressors.exit_code, 0) << compressors.err;
  EXPECT_THAT(compressors.out, HasSubstr("top-k"));
  EXPECT_THAT(compressors.out, Not(HasSubstr("optimizers")));
  // A compressor's, a schedule's, a problem's and an assertion's options, as their code reads
  // them.
  EXPECT_THAT(compressors.out, HasSubstr("      domain = "));
  EXPECT_THAT(RunLemmalab({"list", "schedules"}).out, HasSubstr("      lr = "));
  EXPECT_THAT(RunLemmalab({"list", "problems"}).out, HasSubstr("      dimension = "));
  EXPECT_THAT(RunLemmalab({"list", "assertions"}).out, HasSubstr("      tolerance = "));
  const CommandResult unknown = RunLemmalab({"list", "compresors"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("compressors"));  // the suggestion
}

// `list KIND NAME` shows one component, for every component of every kind; every problem lists
// its options, those that learn from data included (issue 36: logreg, mlp, ... showed none).
TEST(Cli, ListShowsEachComponentByNameAndEveryProblemsAndDataSourcesOptions) {
  const nlohmann::json all = nlohmann::json::parse(RunLemmalab({"list", "--json"}).out);
  for (const auto& [kind, items] : all.items()) {
    for (const auto& item : items) {
      const std::string name = item["name"];
      SCOPED_TRACE(kind + " " + name);
      const CommandResult one = RunLemmalab({"list", kind, name, "--json"});
      ASSERT_EQ(one.exit_code, 0) << one.err;
      const nlohmann::json listed = nlohmann::json::parse(one.out);
      ASSERT_EQ(listed.size(), 1u);
      ASSERT_EQ(listed[kind].size(), 1u);
      EXPECT_EQ(listed[kind][0], item);
      if (kind == "problems") {
        EXPECT_TRUE(item.contains("options"));
      }
      if (kind == "data") {
        // Every option, read before the loader opens a file (none exists here), and the ones
        // every source shares.
        std::set<std::string> keys;
        for (const auto& option : item.value("options", nlohmann::json::array())) {
          keys.insert(option["key"].get<std::string>());
        }
        EXPECT_TRUE(keys.contains("normalize"));
        EXPECT_TRUE(keys.contains("samples"));
        EXPECT_GE(keys.size(), 4u);
      }
    }
  }
  const CommandResult misspelt = RunLemmalab({"list", "problems", "mpl"});
  EXPECT_EQ(misspelt.exit_code, 2);
  EXPECT_THAT(misspelt.err, HasSubstr("unknown problem 'mpl' (did you mean 'mlp'?)"));
  EXPECT_THAT(RunLemmalab({"list", "problems", "mlp"}).out, HasSubstr("      hidden = "));
  EXPECT_THAT(RunLemmalab({"list", "data", "idx"}).out, HasSubstr("      train_labels = "));
}

TEST(Cli, VersionNamesTheCommitAndTheBuild) {
  const CommandResult version = RunLemmalab({"--version"});
  ASSERT_EQ(version.exit_code, 0) << version.err;
  EXPECT_THAT(version.out, HasSubstr("lemmalab 0.1.0\ncommit "));
  // The build type and compiler of this build (a sanitizer build is a Debug build, and the
  // ThreadSanitizer one is built by Clang), from tests/CMakeLists.txt.
  EXPECT_THAT(version.out, HasSubstr("\nbuild " LEMMALAB_BUILD_KIND " "));
}

TEST(Cli, RunPrintsTheTableAndStaysQuietOnStderrWhenNotATerminal) {
  Case c;
  const CommandResult r = c.Run();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");  // no progress indicator: stderr is a file
  EXPECT_THAT(r.out, HasSubstr("train loss"));
  EXPECT_THAT(r.out, HasSubstr("birder"));
  EXPECT_THAT(r.out, HasSubstr("ef-norm"));
  for (const char* file : {"results.sqlite", "metrics.csv", "runs.csv", "params.npy"}) {
    EXPECT_TRUE(std::filesystem::exists(c.dir / "out" / file)) << file;
  }
}

struct BadInput {
  const char* what;
  std::string from, to;
  std::string message;  // expected on stderr
};

void PrintTo(const BadInput& bad, std::ostream* os) { *os << bad.what; }

class CliBadInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliBadInput, ClearErrorExitCodeTwoAndNoResults) {
  const BadInput& bad = GetParam();
  Case c(bad.from, bad.to);
  const CommandResult r = c.Run();
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr(bad.message));
  EXPECT_THAT(r.err, HasSubstr("error: "));
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(c.WroteNothing());
}

INSTANTIATE_TEST_SUITE_P(
    Spec, CliBadInput,
    ::testing::Values(
        // Issue 21, finding 8: [optimizer] was read as an array of one table.
        BadInput{"SingleOptimizerTable",
                 "[[optimizer]]\nname = \"birder\"\nbeta = 0.9\n\n[[optimizer]]\nname = \"sgd\"",
                 "[optimizer]\nname = \"sgd\"",
                 "[optimizer] is a single table, but optimizer is an array of tables: write "
                 "[[optimizer]] (with two brackets), once per entry"},
        BadInput{"UnknownKeySuggestsClosest", "beta = 0.9", "bta = 0.9",
                 "spec.toml:20:1: optimizer 'birder': unknown key 'bta' (did you mean 'beta'?)"},
        BadInput{"UnknownTopLevelKey", "steps = 5", "steps = 5\nstpes = 4",
                 "run spec: unknown key 'stpes' (did you mean 'steps'?)"},
        BadInput{"UnknownOptimizerSuggestsClosest", "name = \"birder\"", "name = \"bider\"",
                 "spec.toml:19:1: optimizer 'bider': unknown optimizer 'bider' (did you mean "
                 "'birder'?)"},
        BadInput{"BetaOutsideUnitInterval", "beta = 0.9", "beta = 1.2",
                 "spec.toml:20:1: optimizer 'birder': beta must be in [0, 1), got 1.2"},
        BadInput{"NegativeBeta", "beta = 0.9", "beta = -0.1", "beta must be in [0, 1), got -0.1"},
        BadInput{"ZeroLearningRate", "lr = 0.1", "lr = 0",
                 "spec.toml:16:1: [schedule]: lr must be > 0, got 0"},
        BadInput{"NegativeLearningRate", "lr = 0.1", "lr = -0.5", "lr must be > 0, got -0.5"},
        BadInput{"InfiniteLearningRate", "lr = 0.1", "lr = inf", "lr must be > 0, got inf"},
        BadInput{"DuplicateProbe", "[\"ef-norm\"]", "[\"ef-norm\", \"ef-norm\"]",
                 "probe 'ef-norm' is listed twice"},
        BadInput{"OptimizerWithoutName", "name = \"sgd\"", "label = \"plain\"",
                 "[[optimizer]] #2: missing required key 'name'"},
        BadInput{"CompressorWithoutName", "beta = 0.9", "compressor = { domain = \"clip\" }",
                 "optimizer 'birder': compressor: missing required key 'name'"},
        BadInput{"MissingDataFile", "path = \"table.csv\"", "path = \"nope.csv\"",
                 "spec.toml:8:1: [data]: data file 'nope.csv' not found"},
        BadInput{"UnknownCompressor", "beta = 0.9", "beta = 0.9\ncompressor = \"sing\"",
                 "unknown compressor 'sing' (did you mean 'sign'?)"},
        BadInput{"UnknownProbe", "[\"ef-norm\"]", "[\"ef-nrom\"]",
                 "unknown probe 'ef-nrom' (did you mean 'ef-norm'?)"},
        BadInput{"WrongType", "workers = 4", "workers = \"four\"",
                 "workers must be an integer, got a string 'four'"},
        BadInput{"DuplicateLabels", "name = \"sgd\"", "name = \"sgd\"\nlabel = \"birder\"",
                 "two optimizers are labelled 'birder'"},
        BadInput{"InvalidToml", "steps = 5", "steps = = 5", "spec.toml:2:9: invalid TOML"},
        BadInput{"NoLearningRate", "[schedule]\nlr = 0.1", "",
                 "optimizer 'birder' has no learning rate"},
        BadInput{"MoreWorkersThanSamples", "workers = 4", "workers = 7",
                 "6 training samples cannot be split across 7 workers"},
        BadInput{"DirichletWithoutAlpha", "batch_size = 2",
                 "batch_size = 2\nshards = { name = \"dirichlet\" }", "alpha"},
        BadInput{"DirichletAlphaTooSmall", "batch_size = 2",
                 "batch_size = 2\nshards = { name = \"dirichlet\", alpha = 1e-300 }",
                 "spec.toml:14:32: problem 'logreg': shards: Dirichlet label skew with alpha = "
                 "1e-300 left some of the 4 workers without samples"},
        BadInput{"UnknownShardRule", "batch_size = 2", "batch_size = 2\nshards = \"skewed\"",
                 "spec.toml:14:1: problem 'logreg': shards: name must be one of iid, contiguous, "
                 "sorted, dirichlet; got 'skewed'"},
        BadInput{"MissingDataFolder", "source = \"csv\"\npath = \"table.csv\"\nlabel = \"y\"",
                 "source = \"idx\"\ndir = \"nowhere\"",
                 "spec.toml:8:1: [data]: data folder 'nowhere' not found"},
        BadInput{"UnknownNormalization", "label = \"y\"", "label = \"y\"\nnormalize = \"zscore\"",
                 "spec.toml:10:1: [data]: normalize must be one of none, standardize, pixels; got "
                 "'zscore'"},
        BadInput{"BinaryProblemOnManyClasses", "label = \"y\"", "label = \"y\"\nclasses = 3",
                 "problem 'logreg' is binary, but the data has 3 classes; use multinomial-logreg "
                 "or mlp"}),
    [](const auto& test) { return std::string(test.param.what); });

// Every key and table of a spec given misspelt (its middle letter replaced) gets the key it
// stands for suggested, whether it is required (named where it is missed) or not (an unknown
// key): issue 36 found `[[optimiser]]` answered only by "no [[optimizer]] table".
TEST(Cli, EveryMisspeltSpecKeyIsSuggested) {
  for (const std::string key :
       {"seed", "steps", "workers", "probes", "data", "source", "path", "label", "problem", "name",
        "batch_size", "schedule", "lr", "optimizer", "beta"}) {
    std::string typo = key;
    typo[typo.size() / 2] = 'q';
    SCOPED_TRACE(typo);
    Case c(key, typo);
    const CommandResult r = c.Run();
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, HasSubstr(fmt::format("did you mean '{}'?", key)));
    EXPECT_TRUE(c.WroteNothing());
  }
}

// A misspelt command or option of a command gets the closest one suggested.
TEST(Cli, MisspeltCommandsAndOptionsAreSuggested) {
  const CommandResult command = RunLemmalab({"chek"});
  EXPECT_EQ(command.exit_code, 2);
  EXPECT_THAT(command.err, HasSubstr("unknown command 'chek' (did you mean 'check'?)"));
  Case c;
  std::vector<std::string> arguments = c.Arguments();
  arguments.push_back("--treads");
  arguments.push_back("2");
  const CommandResult option = RunLemmalab(arguments);
  EXPECT_EQ(option.exit_code, 2);
  EXPECT_THAT(option.err, HasSubstr("'--treads': did you mean '--threads'?"));
  EXPECT_TRUE(c.WroteNothing());
}

// Issue 21, finding 3: two runs into one --out both "succeeded" with a mix of each other's files,
// and the second, starting, deleted the first's staged results. The second is now refused at the
// folder's lock before it touches anything there; the first keeps its staged files.
TEST(Cli, ASecondRunIntoAFolderInUseIsRefusedAndTouchesNothingThere) {
  Case first("steps = 5",
             "steps = 4000000000\nmetrics_every = 1000000000\neval_every = 1000000000\n"
             "probe_every = 1000000000");
  const int pid =
      testing::SpawnLemmalab(first.Arguments(), first.dir / "stdout", first.dir / "stderr");
  const std::filesystem::path staged = first.dir / "out/.results/next/results.sqlite";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!std::filesystem::exists(staged) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(std::filesystem::exists(staged));
  struct stat before {};
  ASSERT_EQ(stat(staged.c_str(), &before), 0);

  Case second("seed = 3", "seed = 4");
  std::vector<std::string> arguments = second.Arguments();
  arguments.back() = (first.dir / "out").string();  // the same --out
  const CommandResult refused = RunLemmalab(arguments);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_THAT(refused.err,
              HasSubstr(fmt::format("--out {}: another lemmalab process (lemmalab run, pid {}) "
                                    "is writing its results there",
                                    (first.dir / "out").string(), pid)));
  struct stat after {};
  ASSERT_EQ(stat(staged.c_str(), &after), 0) << "the refused run removed the first one's results";
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_FALSE(std::filesystem::exists(first.dir / "out/results.sqlite"));

  // The first run is still running and stops cleanly; then the folder is free for the second.
  ASSERT_EQ(kill(pid, 0), 0) << "the first run ended: " << testing::ReadFile(first.dir / "stderr");
  kill(pid, SIGINT);
  EXPECT_EQ(testing::WaitForExit(pid), 130);
  const CommandResult later = RunLemmalab(arguments);
  ASSERT_EQ(later.exit_code, 0) << later.err;
}

TEST(Cli, MalformedCsvLineNamesFileAndLine) {
  Case c;
  WriteFile(c.dir / "table.csv", "a,b,y\n1,2,1\n-1,0.5,0\n2,x1,1\n");
  const CommandResult r = c.Run();
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("table.csv:4: field 2 ('b'): 'x1' is not a finite number"));
  EXPECT_TRUE(c.WroteNothing());
}

TEST(Cli, StopSignalsEndTheRunWithNoResults) {
  for (const auto& [signal, exit_code, name] :
       {std::tuple{SIGINT, 130, "Interrupt"}, std::tuple{SIGTERM, 143, "Terminated"}}) {
    // Steps without end, recorded rarely enough that the results fit (the estimate before the
    // first step refuses a run whose results would not).
    Case c("steps = 5",
           "steps = 4000000000\nmetrics_every = 1000000000\neval_every = 1000000000\n"
           "probe_every = 1000000000");
    const int pid = testing::SpawnLemmalab(c.Arguments(), c.dir / "stdout", c.dir / "stderr");
    // Staged results exist only once the handlers are installed and steps are running.
    const std::filesystem::path staged = c.dir / "out/.results/next/results.sqlite";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!std::filesystem::exists(staged) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(std::filesystem::exists(staged));
    kill(pid, signal);
    EXPECT_EQ(testing::WaitForExit(pid), exit_code) << name;
    EXPECT_THAT(testing::ReadFile(c.dir / "stderr"),
                HasSubstr(fmt::format("interrupted ({}): no results written", name)));
    EXPECT_FALSE(std::filesystem::exists(c.dir / "out")) << name;  // not even an empty folder
  }
}

// Issue 21, finding 7: an option error in [problem] or [[optimizer]] surfaced only after the data
// loaded. Checked now before the data load: with a data file that cannot be read, the option's
// error is the one reported.
TEST(Cli, OptionErrorsAreReportedBeforeTheDataLoad) {
  for (const auto& [from, to, message] :
       {std::tuple{"beta = 0.9", "bta = 0.9",
                   "spec.toml:20:1: optimizer 'birder': unknown key 'bta' (did you mean 'beta'?)"},
        std::tuple{"beta = 0.9", "beta = 1.5", "optimizer 'birder': beta must be in [0, 1)"},
        std::tuple{"batch_size = 2", "batch_size = 2\nl3 = 0.1",
                   "problem 'logreg': unknown key 'l3' (did you mean 'l2'?)"},
        std::tuple{"batch_size = 2", "batch_size = 2\nshards = { name = 'dirichlet' }",
                   "missing required key 'alpha'"}}) {
    Case c(from, to);
    WriteFile(c.dir / "table.csv", "a,b,y\n1,2,1\n-1,garbled\n");
    const CommandResult r = c.Run();
    EXPECT_EQ(r.exit_code, 2) << to;
    EXPECT_THAT(r.err, HasSubstr(message)) << to;
    EXPECT_THAT(r.err, Not(HasSubstr("table.csv"))) << to;
    EXPECT_TRUE(c.WroteNothing());
  }
}

// Issue 21, finding 6: specs that exhausted memory or disk with no estimate up front are refused
// before step 1, with the parts of the estimate and the options that drive them. The limits are
// given (--max-memory, --max-results), so the verdicts do not depend on the machine.
TEST(Cli, EstimatesBeforeTheFirstStepRefuseWhatCannotFit) {
  TempDir dir;
  const auto run = [&](const std::string& spec, const std::vector<std::string>& extra) {
    WriteFile(dir / "spec.toml", spec);
    std::vector<std::string> arguments = {"run", (dir / "spec.toml").string(), "--out",
                                          (dir / "out").string()};
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    return RunLemmalab(arguments);
  };
  const std::string mlp = R"toml(seed = 1
steps = 10
workers = 8
[data]
source = "synthetic-logistic"
samples = 256
features = 784
[problem]
name = "mlp"
hidden = {hidden}
[[optimizer]]
name = "adam"
schedule = { name = "constant", lr = 0.01 }
)toml";
  const auto with_hidden = [&](const std::string& hidden) {
    std::string text = mlp;
    return text.replace(text.find("{hidden}"), 8, hidden);
  };
  std::string forty = "[4096";
  for (int l = 1; l < 40; ++l) forty += ", 4096";
  forty += "]";
  std::string many_workers = with_hidden("[4096]");
  many_workers.replace(many_workers.find("workers = 8"), 11, "workers = 256");
  for (const auto& [spec, message] :
       {std::pair{with_hidden("[65536]"), "problem 'mlp' with hidden = [65536] on 784 features"},
        std::pair{with_hidden(forty),
                  "problem 'mlp' with hidden = [4096, 4096, 4096, 4096, ... (40 values)]"},
        std::pair{many_workers, "workers = 256 x d = 3223554 parameters of problem 'mlp'"}}) {
    const CommandResult r = run(spec, {"--max-memory", "4GiB"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr("the estimated memory"));
    EXPECT_THAT(r.err, HasSubstr("is more than --max-memory"));
    EXPECT_THAT(r.err, HasSubstr(message));
    EXPECT_FALSE(std::filesystem::exists(dir / "out"));
  }
  // A minibatch of 2^24 samples per worker.
  std::string batch = with_hidden("[16]");
  batch.replace(batch.find("[problem]"), 9, "[problem]\nbatch_size = 16777216");
  CommandResult r = run(batch, {"--max-memory", "4GiB"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("the minibatches 392 GiB (8 workers x batch_size = 16777216 x "
                               "784 features x 4 bytes)"));
  // A million workers on a quadratic whose workers each shift its minimiser: refused while the
  // problem is built, before the shifts are allocated.
  r = run(R"toml(seed = 1
steps = 10
workers = 1048576
[problem]
name = "quadratic"
dimension = 1000
heterogeneity = 0.5
[[optimizer]]
name = "sgd"
schedule = { name = "constant", lr = 0.01 }
)toml",
          {"--max-memory", "4GiB"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("the estimated memory of problem 'quadratic' 11.7 GiB is more than "
                               "--max-memory 4.00 GiB allows; the largest parts: the workers' "
                               "shifts 11.7 GiB (dimension = 1000 x workers = 1048576)"));
  // steps = 2^32 - 1, every step recorded: refused for the results' size, naming the recording
  // periods; recorded rarely, the same steps pass the estimate.
  const std::string endless = R"toml(seed = 1
steps = 4294967295
workers = 2
probes = ["ef-norm"]
[problem]
name = "quadratic"
dimension = 8
[[optimizer]]
name = "birder"
schedule = { name = "constant", lr = 0.01 }
)toml";
  r = run(endless, {"--max-results", "1TiB"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("the estimated results size"));
  EXPECT_THAT(r.err, HasSubstr("is more than --max-results 1.00 TiB allows"));
  EXPECT_THAT(r.err, HasSubstr("steps = 4294967295 / metrics_every = 1 x 8 metrics x 1 runs"));
  EXPECT_THAT(r.err, HasSubstr("steps = 4294967295 / probe_every = 1 x 1 probes x 3 senders"));
  // A small run fits the default limits and a generous given one, not a tiny one. (The limit
  // bounds the whole process, which a sanitizer's runtime makes 100 MiB or more.)
  const std::string small = R"toml(seed = 1
steps = 20
workers = 2
[problem]
name = "quadratic"
dimension = 8
[[optimizer]]
name = "sgd"
schedule = { name = "constant", lr = 0.01 }
)toml";
  EXPECT_EQ(run(small, {}).exit_code, 0);
  EXPECT_EQ(run(small, {"--max-memory", "1GiB", "--max-results", "10MiB"}).exit_code, 0);
  r = run(small, {"--max-results", "1KiB"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("is more than --max-results 1.00 KiB allows"));
  r = run(small, {"--max-memory", "not-a-size"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--max-memory"));
}

// A hostile spec is refused with exit 2 before it can exhaust the stack or memory: dotted keys
// and table headers tens of thousands of parts deep (they overflowed the stack, SIGSEGV), an
// option path as deep in --set, an endless input and a folder given as the spec.
TEST(Cli, HostileSpecsAreRefusedNotCrashedOn) {
  const auto deep = [](std::size_t parts, const std::string& separator) {
    std::string text;
    for (std::size_t i = 0; i < parts; ++i) text += (i > 0 ? separator : "") + std::string("a");
    return text;
  };
  for (const std::size_t parts : {std::size_t{14'000}, std::size_t{40'000}}) {
    Case key("steps = 5", "steps = 5\n" + deep(parts, ".") + " = 1");
    CommandResult r = key.Run();
    EXPECT_EQ(r.exit_code, 2) << parts;
    EXPECT_THAT(r.err, HasSubstr("spec.toml:3:129: run spec: tables and arrays nest more than 64"));
    EXPECT_TRUE(key.WroteNothing());
    Case header("seed = 3", "seed = 3\n[" + deep(parts / 2, ".") + "]");
    r = header.Run();
    EXPECT_EQ(r.exit_code, 2) << parts;
    EXPECT_THAT(r.err, HasSubstr("spec.toml:2:1: run spec: tables and arrays nest more than 64"));
  }
  Case c;
  std::vector<std::string> arguments = c.Arguments();
  arguments.push_back("--set");
  arguments.push_back(deep(60'000, ".") + "=1");
  CommandResult r = RunLemmalab(arguments);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("(120001 characters): the option path has 60000 parts"));

  Case big("seed = 3", "seed = 3\n# " + std::string(300 << 10, 'x'));
  r = big.Run();
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("spec.toml: a run spec is at most 256 KiB of text"));
  r = RunLemmalab({"run", "/dev/zero", "--out", (c.dir / "out").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("/dev/zero: a run spec is at most 256 KiB of text"));
  r = RunLemmalab({"run", c.dir.path().string(), "--out", (c.dir / "out").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(": is a folder; give the run spec's .toml file"));
  EXPECT_TRUE(c.WroteNothing());
}

// Compressors whose messages cannot be cut into chunks (top-k, random-k, PowerSGD) under the
// chunked all-reduce: at d <= 64 there is one chunk, nothing to cut, and the run works (it was
// an internal error, "a top-k message did not split"); at d = 65 the refusal names the file,
// the optimizer and the rule (it said "k = 1 is larger than the dimension d = 1").
TEST(Cli, UnsplittableCompressorsUnderAllreduce) {
  for (const char* optimizer : {"birder", "ef-sgd", "dist-spams"}) {
    for (const char* compressor : {"{ name = \"top-k\", k = 1 }", "{ name = \"random-k\", k = 1 }",
                                   "{ name = \"powersgd\", rank = 1 }"}) {
      for (const int d : {1, 64, 65}) {
        SCOPED_TRACE(fmt::format("{} with {}, d = {}", optimizer, compressor, d));
        TempDir dir;
        WriteFile(dir / "spec.toml",
                  fmt::format("seed = 1\nsteps = 2\nworkers = 2\n[problem]\nname = "
                              "\"quadratic\"\ndimension = {}\n[communication]\nscheme = "
                              "\"allreduce\"\n[[optimizer]]\nname = \"{}\"\ncompressor = "
                              "{}\nschedule = {{ name = \"constant\", lr = 0.1 }}\n",
                              d, optimizer, compressor));
        const CommandResult r =
            RunLemmalab({"run", (dir / "spec.toml").string(), "--out", (dir / "out").string()});
        if (d <= 64) {
          EXPECT_EQ(r.exit_code, 0) << r.err;
        } else {
          EXPECT_EQ(r.exit_code, 2) << r.err;
          EXPECT_THAT(r.err, HasSubstr(fmt::format("spec.toml:9:1: optimizer '{}': compressor '",
                                                   optimizer)));
          EXPECT_THAT(r.err, HasSubstr("' cannot run under a chunked scheme"));
        }
      }
    }
  }
}

// A [data] table on a problem that makes its own data was silently ignored; it is refused before
// anything loads, as is a problem that learns from data without one.
TEST(Cli, DataTableMustMatchTheProblem) {
  TempDir dir;
  WriteFile(dir / "table.csv", kTable);
  const auto run = [&](const std::string& problem, bool data) {
    WriteFile(dir / "spec.toml",
              fmt::format("seed = 1\nsteps = 2\n{}[problem]\nname = \"{}\"\n[[optimizer]]\n"
                          "name = \"sgd\"\nschedule = {{ name = \"constant\", lr = 0.1 }}\n",
                          data ? "[data]\nsource = \"csv\"\npath = \"table.csv\"\nlabel = "
                                 "\"y\"\n"
                               : "",
                          problem));
    return RunLemmalab({"run", (dir / "spec.toml").string(), "--out", (dir / "out").string()});
  };
  const CommandResult extra = run("quadratic", true);
  EXPECT_EQ(extra.exit_code, 2);
  EXPECT_THAT(extra.err, HasSubstr("spec.toml:3:2: run spec: problem 'quadratic' makes its own "
                                   "data and reads no [data] table"));
  const CommandResult missing = run("logreg", false);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("spec.toml:4:1: [problem]: problem 'logreg' learns from "
                                     "data: add a [data] table"));
  EXPECT_FALSE(std::filesystem::exists(dir / "out"));
}

// A full disk was reported as "write failed"; the message now gives the system's reason.
// /dev/full answers every write with ENOSPC.
TEST(Cli, AFullDiskIsSaidSo) {
  ASSERT_TRUE(std::filesystem::exists("/dev/full"));
  const std::vector<Eigen::VectorXd> rows(4, Eigen::VectorXd::Ones(100000));
  try {
    WriteNpy("/dev/full", rows, Precision::kFp64);
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "/dev/full: cannot write: No space left on device");
  }
}

TEST(Cli, MissingSpecFileAndBadCommandLine) {
  const CommandResult missing = RunLemmalab({"run", "/nonexistent/spec.toml"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(
      missing.err,
      HasSubstr("/nonexistent/spec.toml: cannot read the run spec: No such file or directory"));
  EXPECT_EQ(RunLemmalab({"run"}).exit_code, 2);
  const CommandResult unknown = RunLemmalab({"frobnicate"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("error: unknown command 'frobnicate'; the commands are list, "
                                     "run, check, trace, sweep, report"));
  EXPECT_THAT(RunLemmalab({"spec.toml"}).err,
              HasSubstr("unknown command 'spec.toml'; to run a spec: lemmalab run spec.toml"));
  for (const auto& [command, option] :
       {std::pair{"run", "--out"}, std::pair{"check", "--out"}, std::pair{"sweep", "--out"},
        std::pair{"trace", "--out"}, std::pair{"check", "--from"}}) {
    const CommandResult empty = RunLemmalab({command, "x.toml", option, ""});
    EXPECT_EQ(empty.exit_code, 2) << command << " " << option;
    EXPECT_THAT(empty.err, HasSubstr(fmt::format("{}: an empty path names no folder", option)));
  }
  EXPECT_THAT(RunLemmalab({"report", ""}).err, HasSubstr("DIR: an empty path names no folder"));
  EXPECT_EQ(RunLemmalab({"run", "x.toml", "--threads", "0"}).exit_code, 2);
  EXPECT_EQ(RunLemmalab({"run", "x.toml", "--threads", "100000"}).exit_code, 2);
  EXPECT_EQ(RunLemmalab({"run", "x.toml", "--threads", "abc"}).exit_code, 2);
  EXPECT_EQ(RunLemmalab({"--help"}).exit_code, 0);
}

}  // namespace
}  // namespace lemmalab
