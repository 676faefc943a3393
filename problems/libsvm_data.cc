// LIBSVM / SVMlight text reader for binary classification: one sample per line,
//   <label> <index>:<value> ... [# comment]
// with 1-based, strictly ascending indices (absent ones are 0). SVMlight's qid:<n> tokens are
// skipped. The samples are stored densely.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>

#include "core/error.h"
#include "problems/data_reader.h"
#include "problems/data_sources.h"
#include "problems/dataset.h"

namespace lemmalab {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// The samples as rows of (index, value) pairs until the width of the dense matrix is known.
class LibsvmParser {
 public:
  LibsvmParser(std::string file, std::int64_t features)
      : file_(std::move(file)), features_(features) {}

  void ParseLine(std::string_view line) {
    ++line_;
    if (std::memchr(line.data(), '\0', line.size()) != nullptr) Fail("NUL byte: not a text file");
    line = line.substr(0, line.find('#'));
    bool first = true;
    std::int64_t previous = 0;
    while (true) {
      while (!line.empty() && IsSpace(line.front())) line.remove_prefix(1);
      if (line.empty()) break;
      std::size_t length = 0;
      while (length < line.size() && !IsSpace(line[length])) ++length;
      const std::string_view token = line.substr(0, length);
      line.remove_prefix(length);
      if (first) {
        Label(token);
        first = false;
      } else if (!token.starts_with("qid:")) {
        previous = Feature(token, previous);
      }
    }
    if (!first) starts_.push_back(static_cast<std::int64_t>(indices_.size()));
  }

  std::int64_t lines() const { return line_; }

  std::int64_t largest() const { return largest_; }

  // The samples as a dense matrix of `width` >= largest() columns.
  Samples Finish(std::int64_t width) const {
    const auto n = static_cast<std::int64_t>(labels_.size());
    if (n == 0) throw UserError(fmt::format("{}: no samples (only blank or comment lines)", file_));
    if (width == 0) {
      throw UserError(fmt::format("{}: no features: no line has an index:value pair", file_));
    }
    LEMMALAB_CHECK(width >= largest_, "width {} < largest index {}", width, largest_);
    CheckDenseSize(file_, n, width);
    Samples samples;
    samples.features = RowMatrix<double>::Zero(n, width);
    samples.labels = Eigen::Map<const Eigen::VectorXi>(labels_.data(), n);
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t k = starts_[i]; k < starts_[i + 1]; ++k) {
        samples.features(i, indices_[k] - 1) = values_[k];
      }
    }
    return samples;
  }

 private:
  [[noreturn]] void Fail(std::string_view message) const {
    throw UserError(fmt::format("{}:{}: {}", file_, line_, message));
  }

  // -1/+1 or 0/1 for a whole file: the two conventions of binary LIBSVM files. A file mixing
  // -1 and 0 is most likely a multi-class file or two files glued together.
  void Label(std::string_view token) {
    const std::optional<double> value = ParseFiniteNumber(token);
    if (!value || (*value != -1 && *value != 0 && *value != 1)) {
      Fail(fmt::format("label '{}': labels must all be -1/+1 or all 0/1 (binary classification)",
                       token));
    }
    if (*value == -1) minus_one_line_ = minus_one_line_ ? minus_one_line_ : line_;
    if (*value == 0) zero_line_ = zero_line_ ? zero_line_ : line_;
    if (minus_one_line_ && zero_line_) {
      Fail(fmt::format(
          "label '{}' mixes conventions: label -1 on line {} and label 0 on line {}; labels must "
          "all be -1/+1 or all 0/1",
          token, *minus_one_line_, *zero_line_));
    }
    labels_.push_back(*value == 1 ? 1 : 0);
  }

  // Returns the index of the `index:value` token, which must follow `previous`.
  std::int64_t Feature(std::string_view token, std::int64_t previous) {
    const std::size_t colon = token.find(':');
    if (colon == std::string_view::npos) {
      Fail(fmt::format("token '{}' is not index:value", token));
    }
    const std::string_view index_text = token.substr(0, colon);
    const std::string_view value_text = token.substr(colon + 1);
    std::int64_t index = -1;
    const auto [end, ec] =
        std::from_chars(index_text.data(), index_text.data() + index_text.size(), index);
    if (index_text.empty() || ec != std::errc() || end != index_text.data() + index_text.size() ||
        index < 0) {
      Fail(fmt::format("token '{}': index '{}' is not a positive integer", token, index_text));
    }
    if (index == 0) Fail(fmt::format("token '{}': index 0; indices start at 1", token));
    if (index <= previous) {
      Fail(fmt::format("token '{}': index {} after index {}; indices must be strictly ascending",
                       token, index, previous));
    }
    if (features_ > 0 && index > features_) {
      Fail(fmt::format("token '{}': index {} exceeds features = {}", token, index, features_));
    }
    const std::optional<double> value = ParseFiniteNumber(value_text);
    if (!value) {
      Fail(fmt::format("token '{}': value '{}' is not a finite number", token, value_text));
    }
    indices_.push_back(index);
    values_.push_back(*value);
    largest_ = std::max(largest_, index);
    return index;
  }

  std::string file_;
  std::int64_t features_;     // 0: the largest index
  std::int64_t line_ = 0;     // 1-based number of the line being parsed
  std::int64_t largest_ = 0;  // largest index seen
  std::optional<std::int64_t> minus_one_line_, zero_line_;  // first lines with these labels
  std::vector<int> labels_;
  std::vector<std::int64_t> starts_ = {0};  // sample i's pairs are [starts_[i], starts_[i + 1])
  std::vector<std::int64_t> indices_;
  std::vector<double> values_;
};

LibsvmParser Parse(const std::filesystem::path& path, std::int64_t features) {
  GzipReader in(path);
  LibsvmParser parser(in.file(), features);
  // Lines are parsed in place in the read buffer; only a line that straddles two reads is
  // copied into `partial`.
  std::vector<char> buffer(1 << 20);
  std::string partial;
  for (;;) {
    const std::size_t got = in.Read(buffer.data(), buffer.size());
    const char* p = buffer.data();
    const char* const end = p + got;
    while (p < end) {
      const auto* newline = static_cast<const char*>(std::memchr(p, '\n', end - p));
      if (newline == nullptr) {
        partial.append(p, end);
        break;
      }
      if (partial.empty()) {
        parser.ParseLine({p, newline});
      } else {
        partial.append(p, newline);
        parser.ParseLine(partial);
        partial.clear();
      }
      p = newline + 1;
    }
    if (got < buffer.size()) break;
  }
  if (in.cut_off()) {
    in.FailTruncated(fmt::format("lines after line {} may be missing", parser.lines()));
  }
  if (!partial.empty()) parser.ParseLine(partial);  // a last line without its newline
  return parser;
}

}  // namespace

Samples ReadLibsvm(const std::filesystem::path& path, std::int64_t features) {
  LEMMALAB_CHECK(features >= 0, "features = {} < 0", features);
  const LibsvmParser parser = Parse(path, features);
  return parser.Finish(features > 0 ? features : parser.largest());
}

Dataset LoadLibsvm(OptionTable& options, const DataContext& context) {
  const std::filesystem::path path = ResolveDataFile(options, "path", context);
  std::optional<std::filesystem::path> test_path;
  if (options.Has("test_path")) test_path = ResolveDataFile(options, "test_path", context);
  const std::int64_t features =
      options.Has("features") ? options.RequireInt("features", 1, std::int64_t{1} << 40) : 0;
  const LibsvmParser train = Parse(path, features);
  std::optional<LibsvmParser> test;
  if (test_path) test = Parse(*test_path, features);
  // Without `features`, the wider file sets the width of both, so that a model fits either.
  const std::int64_t width =
      features > 0 ? features : std::max(train.largest(), test ? test->largest() : 0);
  Dataset data;
  data.classes = 2;
  data.train = train.Finish(width);
  if (test) data.test = test->Finish(width);
  data.description = fmt::format("{} (libsvm: {} samples x {} features", path.filename().string(),
                                 data.train.size(), width);
  if (data.test) data.description += fmt::format(", {} test samples", data.test->size());
  data.description += ")";
  return data;
}

}  // namespace lemmalab
