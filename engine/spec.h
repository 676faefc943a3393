// A run spec: the TOML file `lemmalab run` executes.
//
//   description = "..."          # optional, stored with the results
//   seed = 42                    # run seed: keys every Philox stream
//   steps = 300                  # T
//   workers = 8                  # n simulated workers
//   precision = "fp32"           # or "fp64"
//   device = "cpu"               # or "cuda": the optimizers on one NVIDIA GPU (engine/device.h)
//   eval_every = 1               # full-batch loss/accuracy every k steps (and at the last)
//   metrics_every = 1            # per-step metrics recorded every k steps (engine/experiment.h);
//   probe_every = 1              # probe series likewise (default: 1; a sweep: steps / 100)
//   checkpoint_every = 1000      # save the whole state every k steps (`lemmalab run` only;
//                                # `--resume DIR` continues the last one; engine/checkpoint.h)
//   reference = false            # estimate f* (Ceres L-BFGS) and L (power iteration) where
//                                # the problem does not know them; adds optimality_gap
//   reference_iterations = 10000 # L-BFGS iterations at most (each is a full-batch gradient)
//   probes = ["ef-norm", ...]    # attached to every optimizer that exposes what they read
//   [data]      source = "csv", path = "...", ...      (see problems/dataset.h)
//   [problem]   name = "logreg", ...
//   [schedule]  name = "constant", lr = 0.01           (default for every optimizer)
//   [communication] scheme = "parameter-server", nodes = 2, workers_per_node = 4
//                                (comm/scheme.h; default: parameter server, a node per worker)
//   [network]   inter = "10GbE", intra = "nvlink"      (comm/network.h: projected step time)
//   [sweep]     optimizer.beta = [0.9, 0.99], seed = [1, 2, 3]
//                                (`lemmalab sweep` only: the grid of points it runs, cli/sweep.h)
//   [check]     seeds = [1, 2, 3], workers = [2, 4, 8], confidence = 0.99
//                                (`lemmalab check` only: the sweep it runs, cli/check.h)
//   [[assert]]  assertion = "ef-norm", runs = ["birder"], expect = "holds", ...
//                                (`lemmalab check` only: the claims it judges)
//   [[optimizer]]
//   name = "birder"              # registry name
//   label = "birder-b09"         # optional, unique; defaults to the name
//   schedule = { ... }           # optional, replaces [schedule] for this optimizer
//   beta = 0.9                   # the optimizer's own options
//
// LoadSpec checks the top level; each component checks its own table when it is built, before
// any step runs. Every error names the file, line and column of the offending value.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "comm/scheme.h"
#include "core/options.h"
#include "core/types.h"
#include "engine/device.h"

namespace lemmalab {

struct OptimizerSpec {
  std::string label;
  std::shared_ptr<OptionTable> options;   // the [[optimizer]] table: name and algorithm options
  std::shared_ptr<OptionTable> schedule;  // its own schedule table, or the spec's [schedule]

  // A fresh copy of `options` (nothing read yet) without the keys the spec reads itself (label,
  // schedule), for building the algorithm once more: the memory estimate's trial optimizers, the
  // device check.
  std::shared_ptr<OptionTable> AlgorithmOptions() const;
};

struct RunSpec {
  std::filesystem::path path;
  std::string text;                   // the file as written, stored with the results
  std::vector<std::string> settings;  // the --set arguments applied to it, in order
  std::string description;
  std::uint64_t seed = 0;
  std::int64_t steps = 0;
  int workers = 1;
  Precision precision = Precision::kFp32;
  Device device = Device::kCpu;
  std::int64_t eval_every = 1;
  // Every how many steps the per-step metrics and the probe series are recorded; 0: the
  // command's default (every step for run and check, about 100 points per series for sweep).
  std::int64_t metrics_every = 0;
  std::int64_t probe_every = 0;
  // Save the run's state every this many steps so that --resume can continue it
  // (engine/checkpoint.h); 0: no checkpoints.
  std::int64_t checkpoint_every = 0;
  bool reference = false;
  int reference_iterations = 10000;
  std::vector<std::string> probes;
  // Probes `lemmalab check` attaches for its assertions: to every optimizer they apply to, and
  // no error where they apply to none (the verdict then says what is missing).
  std::vector<std::string> check_probes;
  std::shared_ptr<OptionTable> data;  // null when the spec has no [data]
  std::shared_ptr<OptionTable> problem;
  std::vector<OptimizerSpec> optimizers;
  CommSpec comm;                                      // [communication], validated
  std::shared_ptr<OptionTable> network;               // [network], or null
  std::shared_ptr<OptionTable> sweep;                 // [sweep], or null (read by lemmalab sweep)
  std::shared_ptr<OptionTable> check;                 // [check], or null (read by lemmalab check)
  std::vector<std::shared_ptr<OptionTable>> asserts;  // [[assert]] (read by lemmalab check)
};

// The spec at `path` with `settings` applied ("steps=10", "optimizer.beta=0.9": ApplySettings).
RunSpec LoadSpec(const std::filesystem::path& path, const std::vector<std::string>& settings = {});

// Sets an option by its path in a spec's top-level table, as a [sweep] axis or --set names it: a
// top-level key (`seed`), a key of a table (`problem.batch_size`, `network.inter`), or an
// optimizer's option (`optimizer.beta` on every [[optimizer]], `optimizer.<label>.beta` on the
// one with that label). Tables on the way are made; a component given by name
// (`compressor = "sign"`) becomes a table with that name. UserError when the path runs into a
// value that is not a table, or names an optimizer where the spec has none.
void SetSpecOption(OptionTable& root, std::string_view path, const OptionValue& value);

// Which optimizers an option path reaches and the option it names there, given the spec's
// optimizer labels: `optimizer.beta` -> every optimizer, "beta"; `optimizer.<label>.beta` ->
// that label, "beta". nullopt for a path outside [[optimizer]] (`seed`, `problem.l2`).
struct OptimizerOption {
  std::optional<std::string> label;  // empty: every optimizer
  std::string key;                   // "beta", "compressor.k"
};
std::optional<OptimizerOption> ResolveOptimizerPath(std::string_view path,
                                                    const std::vector<std::string>& labels);

// An option path's parts: "optimizer.compressor.k" -> optimizer, compressor, k.
std::vector<std::string> SplitPath(std::string_view path);

// `--set PATH=VALUE` arguments applied to a spec's top-level table; VALUE is TOML, or a bare word
// read as a string. Messages about a set value name the --set argument.
std::pair<std::string, OptionValue> ParseSetting(std::string_view assignment);
std::shared_ptr<OptionTable> ApplySettings(std::shared_ptr<OptionTable> root,
                                           const std::vector<std::string>& settings);

// Parses a TOML table (e.g. a compressor's `name = "top-k"\nk = 5`) into an OptionTable named
// `context`, as if read from `file` (for tests and tools).
std::shared_ptr<OptionTable> ParseOptionTable(const std::string& text, const std::string& context,
                                              const std::string& file = "inline.toml");

// Parses spec text as if read from `path`, with `settings` applied (LoadSpec, the Python
// bindings, tests).
RunSpec ParseSpec(const std::string& text, const std::filesystem::path& path,
                  const std::vector<std::string>& settings = {});

// The two halves of ParseSpec: the TOML text as its top-level table (syntax errors located, no
// key read yet), and the spec read from such a table (a sweep point reads its edited copy).
std::shared_ptr<OptionTable> ParseSpecTable(const std::string& text,
                                            const std::filesystem::path& path);
RunSpec SpecFromTable(std::shared_ptr<OptionTable> root, const std::filesystem::path& path,
                      std::string text);

// An option value in one line, as labels, sweep exclusions and data keys compare it: 0.9, sign,
// top-k(fraction=0.1), [1,2].
std::string ShowValue(const OptionValue& value);

// The settings two spec texts give differently, each "path: A then, B now" ("(absent)" where one
// lacks it; arrays of tables by index, optimizer[1].beta), sorted by path; [sweep] left out when
// `outside_sweep`. Empty when either text does not parse (what a refusal to resume names).
std::vector<std::string> SpecDifferences(const std::string& then, const std::string& now,
                                         bool outside_sweep = false);
// The first five of them joined by "; ", and how many more there are.
std::string ListDifferences(const std::vector<std::string>& differences);

// The spec file's text (UserError naming the file when it cannot be read).
std::string ReadSpecText(const std::filesystem::path& path);
// The largest run spec lemmalab reads: far beyond any real one (a few KiB), and small enough that
// a hostile one cannot exhaust memory or the parser's stack.
inline constexpr std::size_t kMaxSpecBytes = std::size_t{256} << 10;

}  // namespace lemmalab
