#include "core/error.h"

#include <cerrno>
#include <cstring>

namespace lemmalab {

UserError WriteFailed(const std::string& file) {
  // errno holds the failed write's reason: nothing runs between it and the caller's check.
  const int reason = errno;
  return UserError(
      fmt::format("{}: cannot write: {}", file,
                  reason != 0 ? std::strerror(reason) : "the stream reported failure"));
}

}  // namespace lemmalab

namespace lemmalab::internal {

void CheckFailed(const char* condition, const char* file, int line, const std::string& message) {
  throw InternalError(fmt::format("{}:{}: check failed: {}: {}", file, line, condition, message));
}

}  // namespace lemmalab::internal
