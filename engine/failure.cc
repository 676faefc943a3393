#include "engine/failure.h"

#include <fmt/format.h>

#include <cstring>
#include <exception>
#include <filesystem>
#include <new>

#include "core/error.h"

namespace lemmalab {

Failure CurrentFailure(int signal) {
  try {
    throw;
  } catch (const UserError& e) {
    return {fmt::format("error: {}", e.what()), kExitUserError};
  } catch (const std::bad_alloc&) {
    return {
        "error: out of memory: the spec asks for more than this machine has (data size, "
        "batch_size, workers)",
        kExitUserError};
  } catch (const std::filesystem::filesystem_error& e) {
    // A file-system condition met on a path the user gave (a link loop, a name too long, a file
    // where a folder must be): theirs to fix, not a bug.
    std::string paths = e.path1().string();
    if (!e.path2().empty()) paths += fmt::format(" -> {}", e.path2().string());
    return {Printable(
                fmt::format("error: {}: {}", paths.empty() ? "a path" : paths, e.code().message())),
            kExitUserError};
  } catch (const Interrupted& e) {
    if (e.signal() != 0) signal = e.signal();
    // A newline first: the progress line may be unfinished.
    return {fmt::format("\ninterrupted ({}): no results written", strsignal(signal)), 128 + signal};
  } catch (const std::exception& e) {
    return {fmt::format("internal error (please report): {}", e.what()), kExitInternalError};
  } catch (...) {
    return {"internal error (please report): an exception of unknown type", kExitInternalError};
  }
}

}  // namespace lemmalab
