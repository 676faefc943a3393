// The `lemmalab` command line: list (cli/list.h), run (cli/experiment.h), check (cli/check.h),
// sweep (cli/sweep.h) and report (cli/summary.h); `lemmalab --version`.
#pragma once

#include <string>

namespace lemmalab {

inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;    // lemmalab check: a verdict is not the expected one
inline constexpr int kExitUserError = 2;      // bad spec, option, data file or command line
inline constexpr int kExitInternalError = 3;  // a bug in lemmalab
// Stopped by SIGINT, SIGTERM or SIGHUP: 128 + the signal number (130, 143, 129).

// What a command that ended with the exception being handled tells the user (one line for
// stderr) and exits with: a UserError or an exhausted memory 2, a stop 128 + its signal (the
// Interrupted's own, else `signal`), anything else 3. Call it inside a catch block.
struct Failure {
  std::string message;
  int exit_code;
};
Failure CurrentFailure(int signal);

// Runs the command line and returns the process exit code. Errors go to stderr.
int Main(int argc, char** argv);

}  // namespace lemmalab
