// Parallel loop over workers with OpenMP.
//
// Workers are the unit of parallelism: each iteration owns its worker's state and streams, so
// results do not depend on the thread count. An exception thrown by an iteration cannot cross
// the OpenMP region; the one from the lowest index is rethrown afterwards, so the error a user
// sees does not depend on scheduling either.
#pragma once

#include <exception>
#include <vector>

namespace lemmalab {

template <typename F>
void ParallelFor(int n, F&& body) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static)
  for (int i = 0; i < n; ++i) {
    try {
      body(i);
    } catch (...) {
      errors[static_cast<std::size_t>(i)] = std::current_exception();
    }
  }
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace lemmalab
