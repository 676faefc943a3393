// A run spec: the TOML file `lemmalab run` executes.
//
//   description = "..."          # optional, stored with the results
//   seed = 42                    # run seed: keys every Philox stream
//   steps = 300                  # T
//   workers = 8                  # n simulated workers
//   precision = "fp32"           # or "fp64"
//   eval_every = 1               # full-batch loss/accuracy every k steps (and at the last)
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
#include <string>
#include <vector>

#include "comm/scheme.h"
#include "core/options.h"
#include "core/types.h"

namespace lemmalab {

struct OptimizerSpec {
  std::string label;
  std::shared_ptr<OptionTable> options;   // the [[optimizer]] table: name and algorithm options
  std::shared_ptr<OptionTable> schedule;  // its own schedule table, or the spec's [schedule]
};

struct RunSpec {
  std::filesystem::path path;
  std::string text;  // the file as written, stored with the results
  std::string description;
  std::uint64_t seed = 0;
  std::int64_t steps = 0;
  int workers = 1;
  Precision precision = Precision::kFp32;
  std::int64_t eval_every = 1;
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
  std::shared_ptr<OptionTable> check;                 // [check], or null (read by lemmalab check)
  std::vector<std::shared_ptr<OptionTable>> asserts;  // [[assert]] (read by lemmalab check)
};

RunSpec LoadSpec(const std::filesystem::path& path);

// Parses a TOML table (e.g. a compressor's `name = "top-k"\nk = 5`) into an OptionTable named
// `context`, as if read from `file` (for tests and tools).
std::shared_ptr<OptionTable> ParseOptionTable(const std::string& text, const std::string& context,
                                              const std::string& file = "inline.toml");

// Parses spec text as if read from `path` (used by LoadSpec, and by tests).
RunSpec ParseSpec(const std::string& text, const std::filesystem::path& path);

}  // namespace lemmalab
