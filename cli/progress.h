// A one-line progress indicator on stderr, shown only when stderr is a terminal: runs piped
// to a file or driven by scripts stay quiet.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace lemmalab {

class Progress {
 public:
  // Shown when `wanted` and stderr is a terminal.
  explicit Progress(bool wanted);

  void Start(std::string label, std::int64_t total);
  void Update(std::int64_t done);
  void Finish();

 private:
  void Draw(std::int64_t done);

  bool enabled_;
  std::string label_;
  std::int64_t total_ = 0;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace lemmalab
