// A one-line progress indicator on stderr, shown only when stderr is a terminal: runs piped
// to a file or driven by scripts stay quiet. It shows the time spent and, from the pace so far,
// about how long the rest will take.
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
  std::chrono::steady_clock::time_point started_;
  std::int64_t first_ = -1;  // the count of the first update (a resumed run starts past 0)
};

}  // namespace lemmalab
