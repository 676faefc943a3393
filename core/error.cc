#include "core/error.h"

#include <cerrno>
#include <cstring>

namespace lemmalab {

std::string Printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\n' && c != '\t') || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

UserError::UserError(std::string_view message) : std::runtime_error(Printable(message)) {}

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
