// How a run ends when it does not complete, and the exit code each ending means. The engine
// throws (core/error.h: UserError, Interrupted); whoever drives it turns the exception into one
// line for the user and an exit code through CurrentFailure.
#pragma once

#include <stdexcept>
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

// Under MPI, a failure before the first step, which every rank learns of together (the spec,
// the data, the results folder are every rank's alike): the lowest rank that met it carries its
// message ("error: ..."), every other rank an empty one, and every rank exits with the same
// code without aborting the job, so the job prints the message once (engine/job.h).
class SharedFailure : public std::runtime_error {
 public:
  SharedFailure(std::string message, int exit_code)
      : std::runtime_error(std::move(message)), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

}  // namespace lemmalab
