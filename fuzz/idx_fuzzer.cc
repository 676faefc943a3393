// libFuzzer target: the IDX reader (problems/idx_data.cc) through the idx source: the first file
// holds the images and the second the labels, each plain or gzip; the parameter byte gives the
// class count, and a flag reads the same pair again as the test set (fuzz/fuzz_input.h).
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_input.h"

namespace lemmalab::fuzz {

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static FuzzFiles files;
  const FuzzInput input = SplitInput(data, size, /*two_files=*/true);
  files.Write(input);
  OptionTable table = DataTable("idx");
  SetString(table, "train_images", files.first.path());
  SetString(table, "train_labels", files.second.path());
  if (input.option(2)) {
    SetString(table, "test_images", files.first.path());
    SetString(table, "test_labels", files.second.path());
  }
  SetInt(table, "classes", 2 + input.parameter % 255);
  if (input.option(3)) SetString(table, "normalize", "pixels");
  if (input.option(4)) SetString(table, "normalize", "standardize");
  if (input.option(5)) SetInt(table, "samples", 1 + input.parameter % 8);
  Load(table, input);
  return 0;
}

}  // namespace lemmalab::fuzz
