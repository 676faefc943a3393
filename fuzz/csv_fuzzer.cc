// libFuzzer target: the CSV reader (problems/csv_data.cc) through the csv source, plain or gzip,
// with a test set and the source's options as the input's flags choose (fuzz/fuzz_input.h).
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_input.h"

namespace lemmalab::fuzz {

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static FuzzFiles files;
  const FuzzInput input = SplitInput(data, size);
  files.Write(input);
  OptionTable table = DataTable("csv");
  SetString(table, "path", files.first.path());
  if (input.two_files) SetString(table, "test_path", files.second.path());
  if (input.option(2)) SetString(table, "label", "y");
  if (input.option(3)) SetString(table, "normalize", "standardize");
  if (input.option(4)) SetInt(table, "samples", 1 + input.parameter % 8);
  if (input.option(5)) SetInt(table, "classes", 2 + input.parameter);
  Load(table, input);
  return 0;
}

}  // namespace lemmalab::fuzz
