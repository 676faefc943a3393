#include "engine/job.h"

#include <csignal>
#include <vector>

#include "core/error.h"
#include "engine/failure.h"

namespace lemmalab {

int Job::rank() const {
  if (transport_ == nullptr) return 0;
  for (int w = 0; w < transport_->workers(); ++w) {
    if (transport_->Runs(w)) return w;
  }
  return 0;
}

std::int64_t Job::processes() const { return transport_ == nullptr ? 1 : transport_->workers(); }

void Job::StopIfRequested() const {
  const bool stop = stop_ != nullptr && stop_->load();
  const int signal = stop && stop_signal_ != nullptr ? stop_signal_->load() : 0;
  if (transport_ == nullptr) {
    if (stop) throw Interrupted(signal);
    return;
  }
  // Per rank: 0, or 1 + its signal.
  std::vector<std::int64_t> ranks(static_cast<std::size_t>(transport_->workers()), 0);
  ranks[static_cast<std::size_t>(rank())] = stop ? 1 + signal : 0;
  transport_->Sum(ranks);
  for (const std::int64_t r : ranks) {
    if (r != 0) throw Interrupted(static_cast<int>(r - 1));
  }
}

void Job::Agreed(const std::function<void()>& f) const {
  if (transport_ == nullptr) {
    f();
    return;
  }
  Failure failure{"", kExitOk};
  try {
    f();
  } catch (...) {
    failure = CurrentFailure(stop_signal_ != nullptr ? stop_signal_->load() : SIGINT);
  }
  // One entry per rank (which runs one worker): its code, zeros elsewhere.
  std::vector<std::int64_t> codes(static_cast<std::size_t>(transport_->workers()), 0);
  const int own = rank();
  codes[static_cast<std::size_t>(own)] = failure.exit_code;
  transport_->Sum(codes);
  for (std::size_t w = 0; w < codes.size(); ++w) {
    if (codes[w] == 0) continue;
    throw SharedFailure(static_cast<int>(w) == own ? failure.message : std::string(),
                        static_cast<int>(codes[w]));
  }
}

}  // namespace lemmalab
