// Helpers shared by the tests: temporary folders, files, and running the lemmalab binary.
#pragma once

#include <gtest/gtest.h>

#include <Eigen/Core>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace lemmalab::testing {

// A fresh folder under the system temp directory, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

std::string ReadFile(const std::filesystem::path& path);
void WriteFile(const std::filesystem::path& path, const std::string& text);
// Writes `bytes` gzip-compressed through zlib.
void WriteGzipFile(const std::filesystem::path& path, const std::string& bytes);

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `lemmalab <arguments...>` to completion with stdout and stderr captured in files, so
// neither is a terminal.
CommandResult RunLemmalab(const std::vector<std::string>& arguments);

// The message of the UserError `f` throws, or "(no error)".
std::string UserErrorOf(const std::function<void()>& f);

// Starts `lemmalab <arguments...>` without waiting, stdout and stderr into the given files;
// returns its pid.
int SpawnLemmalab(const std::vector<std::string>& arguments, const std::filesystem::path& out,
                  const std::filesystem::path& err);

// Waits for `pid` and returns its exit code (-1 when it was killed by a signal).
int WaitForExit(int pid);

// A Birder run on an 8-dimensional noisy quadratic, 2 workers, with the ef-norm probe: a spec
// whose runs take milliseconds (sweep and report tests); `tail` is appended (a [sweep] table,
// more [[optimizer]] tables).
std::string TinySpec(int steps, const std::string& tail = "");

// The repository root, for runs/ and data/.
std::filesystem::path SourceDir();

// A registry name as a GoogleTest parameter name ("onebit-adam" -> "onebit_adam"), for suites
// instantiated over a registry's names.
std::string RegistryTestName(const ::testing::TestParamInfo<std::string>& info);

// d independent standard normal values from a Philox stream keyed by `seed`.
Eigen::VectorXd GaussianVector(Eigen::Index d, std::uint64_t seed);

}  // namespace lemmalab::testing
