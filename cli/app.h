// The `lemmalab` command line: `lemmalab list [--json]` and `lemmalab run SPEC.toml [--out DIR]`.
#pragma once

#include <string>

namespace lemmalab {

inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;  // lemmalab check: a verdict is not the expected one
inline constexpr int kExitUserError = 2;      // bad spec, option, data file or command line
inline constexpr int kExitInternalError = 3;  // a bug in lemmalab
// Stopped by SIGINT, SIGTERM or SIGHUP: 128 + the signal number (130, 143, 129).

// Runs the command line and returns the process exit code. Errors go to stderr.
int Main(int argc, char** argv);

// What `lemmalab list` prints: every registered optimizer, compressor, problem, data source,
// schedule and probe with its one-line summary; as JSON when `json`.
std::string ListRegistries(bool json);

}  // namespace lemmalab
