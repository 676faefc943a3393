// The `lemmalab` command line: list (cli/list.h), run (engine/experiment.h), check (cli/check.h),
// sweep (cli/sweep.h) and report (cli/report.h); `lemmalab --version`.
#pragma once

#include "engine/failure.h"

namespace lemmalab {

// Runs the command line and returns the process exit code. Errors go to stderr.
int Main(int argc, char** argv);

}  // namespace lemmalab
