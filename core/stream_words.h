// A keyed Philox stream (core/rng.h) read word by word where PhiloxStream cannot go: in code that
// nvcc compiles for the device too. The caller says how block b of its stream is made (its key and
// counter words); this computes one block per four consecutive words, as PhiloxStream does.
//
// nvcc compiles this header for the device: C++17, no standard containers.
#pragma once

#include <Random123/philox.h>

#include <cstdint>

#include "core/host_device.h"

namespace lemmalab {

// A place in a keyed Philox stream for code that generates the stream's words itself: the
// cipher's key and counter words (counter[0], the block index, is set per block) and the index
// of a word (PhiloxStream::At gives one).
struct StreamAt {
  r123::Philox4x32::key_type key{};
  r123::Philox4x32::ctr_type counter{};
  std::uint64_t first = 0;  // the index of the word the user starts from

  // Block b of the stream: its words 4b .. 4b + 3.
  LEMMALAB_HOST_DEVICE r123::Philox4x32::ctr_type Block(std::uint64_t b) const {
    r123::Philox4x32::ctr_type c = counter;
    c[0] = static_cast<std::uint32_t>(b);
    return r123::Philox4x32()(c, key);
  }
  LEMMALAB_HOST_DEVICE r123::Philox4x32::ctr_type operator()(std::uint64_t b) const {
    return Block(b);
  }
};

// Word p of a stream from word `first` on, where blocks(b) is Philox4x32-10 block b of the
// stream: word w of the stream is word w % 4 of block w / 4.
template <typename Blocks>
struct StreamWords {
  Blocks blocks;
  std::uint64_t first = 0;
  std::uint64_t block = ~std::uint64_t{0};
  r123::Philox4x32::ctr_type words = {};

  LEMMALAB_HOST_DEVICE std::uint32_t operator()(std::uint64_t p) {
    const std::uint64_t position = first + p;
    if (position / 4 != block) {
      block = position / 4;
      words = blocks(block);
    }
    return words[position % 4];
  }
};

// The words of a stream one after another, from word `first`: for draws that take as many words
// as they need (a rejection method), next() returns the word after the last one returned.
template <typename Blocks>
struct StreamReader {
  StreamWords<Blocks> words;
  std::uint64_t read = 0;

  LEMMALAB_HOST_DEVICE std::uint32_t operator()() { return words(read++); }
};

}  // namespace lemmalab
