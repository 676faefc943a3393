#include "tests/test_util.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace lemmalab::testing {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "lemmalab-test-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
}

CommandResult RunLemmalab(const std::string& arguments) {
  TempDir capture;
  const std::string command =
      fmt::format("'{}' {} >'{}' 2>'{}' </dev/null", LEMMALAB_BINARY, arguments,
                  (capture / "out").string(), (capture / "err").string());
  const int status = std::system(command.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = ReadFile(capture / "out");
  result.err = ReadFile(capture / "err");
  return result;
}

std::filesystem::path SourceDir() { return LEMMALAB_SOURCE_DIR; }

}  // namespace lemmalab::testing
