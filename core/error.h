// The two kinds of failure lemmalab distinguishes, and the stop it honours.
//
// UserError: bad input (a spec, an option, a data file). Its message names the file or option,
// the value and the rule it broke; the CLI prints it and exits with code 2.
// InternalError: a broken invariant, i.e. a bug in lemmalab. Raised by LEMMALAB_CHECK.
// Interrupted: a stop was requested (SIGINT, SIGTERM) and the work in progress gave up; the CLI
// writes no results and exits with 128 + the signal.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace lemmalab {

class UserError : public std::runtime_error {
 public:
  // The message is kept whole and printable: control characters that came from user input (a
  // NUL, a terminal escape sequence) are shown as \xNN (Printable), so that no input can cut a
  // message short or rewrite the terminal that shows it.
  explicit UserError(std::string_view message);
};

// `text` with every control character other than a newline or tab written as \xNN. Idempotent.
std::string Printable(std::string_view text);

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

class Interrupted : public std::runtime_error {
 public:
  // `signal`: the signal that asked for the stop when the work knows it (an MPI rank that was
  // not signalled itself learns it from the rank that was), 0 otherwise.
  explicit Interrupted(int signal = 0) : std::runtime_error("interrupted"), signal_(signal) {}
  int signal() const { return signal_; }

 private:
  int signal_;
};

// The error for a write to `file` that failed (after a stream's flush or close), with the
// system's reason: "results/x/metrics.csv.partial: cannot write: No space left on device".
UserError WriteFailed(const std::string& file);

namespace internal {
[[noreturn]] void CheckFailed(const char* condition, const char* file, int line,
                              const std::string& message);
}  // namespace internal

}  // namespace lemmalab

// Hard check of an internal invariant (always on, also in release builds).
#define LEMMALAB_CHECK(condition, ...)                                  \
  do {                                                                  \
    if (!(condition)) [[unlikely]] {                                    \
      ::lemmalab::internal::CheckFailed(#condition, __FILE__, __LINE__, \
                                        ::fmt::format(__VA_ARGS__));    \
    }                                                                   \
  } while (false)
