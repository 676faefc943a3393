// libFuzzer target: the run spec parser (ParseSpec, engine/spec.h) on arbitrary text. Lines
// "#set PATH=VALUE" (TOML comments, so the text parses the same) are also applied as --set
// arguments, which reaches ParseSetting and SetSpecOption. A UserError that says where is the
// expected answer to a bad spec; anything else (another exception, a crash, a sanitizer report,
// a hang, an allocation of more than -malloc_limit_mb, a message that names no place) is a
// finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "engine/spec.h"

namespace lemmalab {

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // ReadSpecText refuses larger specs before they are parsed.
  if (size > kMaxSpecBytes) return -1;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> settings;
  constexpr std::string_view kSet = "#set ";
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view line = std::string_view(text).substr(start, end - start);
    if (line.starts_with(kSet)) settings.emplace_back(line.substr(kSet.size()));
    start = end + 1;
  }
  try {
    ParseSpec(text, "fuzz.toml", settings);
  } catch (const UserError& e) {
    // Every refusal says where: the spec's file:line:column, or the --set argument.
    const std::string_view message = e.what();
    if (message.find("fuzz.toml") == std::string_view::npos &&
        message.find("--set ") == std::string_view::npos) {
      std::fprintf(stderr, "fuzz finding: a message that names no place: %s\n", e.what());
      std::abort();
    }
  }
  return 0;
}

}  // namespace lemmalab
