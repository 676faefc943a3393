#include "tests/test_util.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <zlib.h>

#include <boost/random/normal_distribution.hpp>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/error.h"
#include "core/rng.h"

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

void WriteGzipFile(const std::filesystem::path& path, const std::string& bytes) {
  gzFile out = gzopen(path.string().c_str(), "wb");
  if (out == nullptr) throw std::runtime_error("cannot write " + path.string());
  const int written = gzwrite(out, bytes.data(), static_cast<unsigned>(bytes.size()));
  if (gzclose(out) != Z_OK || written != static_cast<int>(bytes.size())) {
    throw std::runtime_error("cannot write " + path.string());
  }
}

int SpawnLemmalab(const std::vector<std::string>& arguments, const std::filesystem::path& out,
                  const std::filesystem::path& err) {
  std::vector<std::string> args = {LEMMALAB_BINARY};
  args.insert(args.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("posix_spawn failed");
  return pid;
}

int WaitForExit(int pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

CommandResult RunLemmalab(const std::vector<std::string>& arguments) {
  TempDir capture;
  CommandResult result;
  result.exit_code = WaitForExit(SpawnLemmalab(arguments, capture / "out", capture / "err"));
  result.out = ReadFile(capture / "out");
  result.err = ReadFile(capture / "err");
  return result;
}

std::string UserErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string TinySpec(int steps, const std::string& tail) {
  return fmt::format(R"toml(seed = 1
steps = {}
workers = 2
probes = ["ef-norm"]

[problem]
name = "quadratic"
dimension = 8
noise = "sphere"
sigma = 0.1

[schedule]
lr = 0.05

[[optimizer]]
name = "birder"
{})toml",
                     steps, tail);
}

std::filesystem::path SourceDir() { return LEMMALAB_SOURCE_DIR; }

Eigen::VectorXd GaussianVector(Eigen::Index d, std::uint64_t seed) {
  PhiloxStream s({seed, Purpose::kDataSynthesis, kGlobalStream, 0});
  boost::random::normal_distribution<double> normal;
  Eigen::VectorXd x(d);
  for (Eigen::Index j = 0; j < d; ++j) x[j] = normal(s);
  return x;
}

std::string RegistryTestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
}

}  // namespace lemmalab::testing
