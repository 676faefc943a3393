// Parallel loop over workers with OpenMP.
//
// Workers are the unit of parallelism: each iteration owns its worker's state and streams, so
// results do not depend on the thread count. An exception thrown by an iteration cannot cross
// the OpenMP region; the one from the lowest index is rethrown afterwards, so the error a user
// sees does not depend on scheduling either. With one thread no OpenMP region is opened at all.
#pragma once

#include <omp.h>

#include <algorithm>
#include <exception>
#include <vector>

namespace lemmalab {

// Runs body(0..n-1) on at most `threads` threads; returns the size of the team that ran.
template <typename F>
int ParallelFor(int n, int threads, F&& body) {
  threads = std::clamp(threads, 1, std::max(1, n));
  if (threads == 1) {
    for (int i = 0; i < n; ++i) body(i);
    return 1;
  }
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  int team = 1;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int i = 0; i < n; ++i) {
    if (i == 0) team = omp_get_num_threads();
    try {
      body(i);
    } catch (...) {
      errors[static_cast<std::size_t>(i)] = std::current_exception();
    }
  }
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return team;
}

}  // namespace lemmalab
