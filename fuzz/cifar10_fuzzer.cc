// libFuzzer target: the CIFAR-10 reader (problems/cifar_data.cc) through the cifar10 source: one
// or two batch files, each plain or gzip, the second read as more training data or as the test
// set as the input's flags choose (fuzz/fuzz_input.h).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_input.h"

namespace lemmalab::fuzz {

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static FuzzFiles files;
  const FuzzInput input = SplitInput(data, size);
  files.Write(input);
  OptionTable table = DataTable("cifar10");
  std::vector<std::string> train = {files.first.path()};
  if (input.two_files) {
    if (input.option(2)) {
      const std::vector<std::string> test = {files.second.path()};
      SetStrings(table, "test", test);
    } else {
      train.push_back(files.second.path());
    }
  }
  SetStrings(table, "train", train);
  if (input.option(3)) SetString(table, "normalize", "pixels");
  if (input.option(4)) SetString(table, "normalize", "standardize");
  if (input.option(5)) SetInt(table, "samples", 1 + input.parameter % 8);
  Load(table, input);
  return 0;
}

}  // namespace lemmalab::fuzz
