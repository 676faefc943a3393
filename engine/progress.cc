#include "engine/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace lemmalab {

Progress::Progress(bool wanted) : enabled_(wanted && isatty(STDERR_FILENO) == 1) {}

void Progress::Start(std::string label, std::int64_t total) {
  label_ = std::move(label);
  total_ = total;
  last_draw_ = {};
  first_ = -1;
  Update(0);
}

void Progress::Update(std::int64_t done) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (first_ < 0 || done < first_) {
    first_ = done;
    started_ = now;
  }
  if (done != total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  Draw(done);
}

void Progress::Draw(std::int64_t done) {
  constexpr int kWidth = 30;
  const int filled = total_ == 0 ? kWidth : static_cast<int>(kWidth * done / total_);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  std::string pace = fmt::format("{:.0f} s", elapsed);
  if (done > first_ && done < total_) {
    const double left =
        elapsed / static_cast<double>(done - first_) * static_cast<double>(total_ - done);
    if (left < 120) {
      pace += fmt::format(", about {:.0f} s left", left);
    } else if (left < 7200) {
      pace += fmt::format(", about {:.0f} min left", left / 60);
    } else {
      pace += fmt::format(", about {:.1f} h left", left / 3600);
    }
  }
  fmt::print(stderr, "\r{:<16} [{}{}] {}/{} ({})\033[K", label_, std::string(filled, '#'),
             std::string(kWidth - filled, '.'), done, total_, pace);
  std::fflush(stderr);
}

void Progress::Finish() {
  if (!enabled_) return;
  fmt::print(stderr, "\r\033[K");
  std::fflush(stderr);
}

}  // namespace lemmalab
