#include "cli/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace lemmalab {

Progress::Progress(bool wanted) : enabled_(wanted && isatty(STDERR_FILENO) == 1) {}

void Progress::Start(std::string label, std::int64_t total) {
  label_ = std::move(label);
  total_ = total;
  last_draw_ = {};
  Update(0);
}

void Progress::Update(std::int64_t done) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done != total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  Draw(done);
}

void Progress::Draw(std::int64_t done) {
  constexpr int kWidth = 30;
  const int filled = total_ == 0 ? kWidth : static_cast<int>(kWidth * done / total_);
  fmt::print(stderr, "\r{:<16} [{}{}] {}/{}", label_, std::string(filled, '#'),
             std::string(kWidth - filled, '.'), done, total_);
  std::fflush(stderr);
}

void Progress::Finish() {
  if (!enabled_) return;
  fmt::print(stderr, "\r\033[K");
  std::fflush(stderr);
}

}  // namespace lemmalab
