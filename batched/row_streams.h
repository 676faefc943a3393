// The keyed Philox streams (core/rng.h) of a batch's rows, one per worker or sender, for the
// functors the GPU runs (batched/kernels.h, batched/gradient_kernels.h): row r's stream is the
// CPU's stream of (seed, purpose, step) for worker field first_field + r, word for word.
//
// nvcc compiles this header for the device: C++17, no standard containers.
#pragma once

#include <Random123/philox.h>

#include <cstdint>

#include "core/host_device.h"
#include "core/stream_words.h"

namespace lemmalab::batched {

// The Philox stream of core/rng.h for (seed, purpose, step) and the worker field `first_field +
// row`: word w is word w % 4 of Philox4x32-10(counter {w / 4, step, field, purpose}, key {seed}).
struct RowStreams {
  std::uint32_t seed_lo, seed_hi;
  std::uint32_t purpose;
  std::uint32_t step;
  std::uint32_t first_field;

  // Row `row`'s stream, from word 0.
  LEMMALAB_HOST_DEVICE StreamAt Row(std::int64_t row) const {
    return {{{seed_lo, seed_hi}},
            {{0, step, first_field + static_cast<std::uint32_t>(row), purpose}},
            0};
  }
  // The four words of block `block` of row `row`'s stream.
  LEMMALAB_HOST_DEVICE r123::Philox4x32::ctr_type Block(std::int64_t row,
                                                        std::uint64_t block) const {
    return Row(row).Block(block);
  }
  // Row `row`'s stream read in order from word 0.
  LEMMALAB_HOST_DEVICE StreamReader<StreamAt> Read(std::int64_t row) const { return {{Row(row)}}; }
};

// The step's streams of `purpose` (a core/rng.h Purpose) with row r in worker field first_field +
// r.
LEMMALAB_HOST_DEVICE inline RowStreams StepStreams(std::uint64_t seed, std::int64_t step,
                                                   std::uint32_t purpose,
                                                   std::uint32_t first_field) {
  return {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32), purpose,
          static_cast<std::uint32_t>(step), first_field};
}

}  // namespace lemmalab::batched
