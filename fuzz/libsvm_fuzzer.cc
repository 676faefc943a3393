// libFuzzer target: the LIBSVM reader (problems/libsvm_data.cc) through the libsvm source, plain
// or gzip, with a test set and a fixed width as the input's flags choose (fuzz/fuzz_input.h).
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_input.h"

namespace lemmalab::fuzz {

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static FuzzFiles files;
  const FuzzInput input = SplitInput(data, size);
  files.Write(input);
  OptionTable table = DataTable("libsvm");
  SetString(table, "path", files.first.path());
  if (input.two_files) SetString(table, "test_path", files.second.path());
  if (input.option(2)) SetInt(table, "features", 1 + input.parameter);
  if (input.option(3)) SetString(table, "normalize", "standardize");
  if (input.option(4)) SetInt(table, "samples", 1 + input.parameter % 8);
  Load(table, input);
  return 0;
}

}  // namespace lemmalab::fuzz
