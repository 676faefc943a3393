// LIBSVM / SVMlight text reader for binary classification: one sample per line,
//   <label> <index>:<value> ... [# comment]
// with 1-based, strictly ascending indices (absent ones are 0). SVMlight's qid:<n> tokens are
// skipped. The samples are stored densely.
//
// The width of the dense matrix is the largest index, known only at the end of the file, so the
// pairs are held until then (16 bytes each, at most twice the dense size since indices ascend,
// and far less for the sparse files this format is for). The text streams through a tokenizer
// that keeps only a token cut by a read; every sample and every larger index are checked against
// the memory limit as they arrive, so an index of 50 000 000 on line 1 is refused on line 1.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>

#include "core/error.h"
#include "problems/data_reader.h"
#include "problems/data_sources.h"
#include "problems/dataset.h"

namespace lemmalab {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// The longest token read: a label, index:value or qid:n is a few dozen characters; 1 KiB is far
// beyond any, and keeps a token cut by a read buffer (the only text copied) small.
constexpr std::size_t kMaxTokenBytes = 1 << 10;

// Reads the text of one file chunk by chunk into the samples as (index, value) pairs, until the
// width of the dense matrix is known.
class LibsvmParser {
 public:
  // `features` > 0 fixes the width (larger indices are errors); `other` is another file of the
  // same data set, held while this one is read (the training set while the test set is read),
  // and given the same width.
  LibsvmParser(std::string file, std::int64_t features, const MemoryLimit& memory,
               const LibsvmParser* other)
      : file_(std::move(file)), features_(features), memory_(memory), other_(other) {}

  // The next bytes of the file.
  void Feed(std::string_view chunk) {
    std::size_t token_start = 0;  // where the token in progress starts in `chunk`
    for (std::size_t i = 0; i < chunk.size(); ++i) {
      const char c = chunk[i];
      if (c == '\0') Fail("NUL byte: not a text file");
      if (in_comment_ && c != '\n') continue;
      if (c != '\n' && c != '#' && !IsSpace(c)) {
        if (!in_token_) {
          in_token_ = true;
          token_start = i;
        }
        if (partial_.size() + (i - token_start) >= kMaxTokenBytes) {
          FailLongToken(partial_ + std::string(chunk.substr(token_start, kExcerptChars)));
        }
        continue;
      }
      if (in_token_) {
        EndToken(chunk.substr(token_start, i - token_start));
        in_token_ = false;
      }
      if (c == '#') in_comment_ = true;
      if (c == '\n') EndLine();
    }
    // A token cut by the end of the chunk waits for the rest (token_start is 0 when it began in
    // an earlier chunk).
    if (in_token_) partial_.append(chunk.substr(token_start));
  }

  // The end of the file: a last line without its newline.
  void End() {
    if (in_token_) EndToken({});
    in_token_ = false;
    EndLine();
  }

  // Lines read to their newline so far.
  std::int64_t lines() const { return line_ - 1; }

  // The width the dense matrices take: `features`, or the largest index of this file and the
  // other.
  std::int64_t Width() const {
    if (features_ > 0) return features_;
    return std::max(largest_, other_ != nullptr ? other_->largest_ : 0);
  }

  // The samples as a dense matrix of `width` >= Width() columns. Every sample and pair was
  // checked against the memory limit at the width of both files as it arrived (RequireFits), so
  // the matrices fit.
  Samples Finish(std::int64_t width) const {
    if (samples_ == 0) {
      throw UserError(fmt::format("{}: no samples (only blank or comment lines)", file_));
    }
    if (width == 0) {
      throw UserError(fmt::format("{}: no features: no line has an index:value pair", file_));
    }
    LEMMALAB_CHECK(width >= largest_, "width {} < largest index {}", width, largest_);
    Samples samples;
    samples.features = RowMatrix<double>::Zero(samples_, width);
    samples.labels = labels_.head(samples_);
    for (std::int64_t i = 0, k = 0; i < samples_; ++i) {
      for (; k < ends_[i]; ++k) samples.features(i, indices_[k] - 1) = values_[k];
    }
    return samples;
  }

 private:
  // Fails unless the samples of this file and the other fit the memory limit as dense matrices
  // of Width() columns, next to the pairs they hold until then; what() names the cause (called
  // only then: this runs for every pair).
  template <typename What>
  void RequireFits(What&& what) const {
    const std::int64_t width = Width();
    const std::int64_t other_samples = other_ != nullptr ? other_->samples_ : 0;
    const std::int64_t other_pairs = other_ != nullptr ? other_->pairs_ : 0;
    const double samples = static_cast<double>(samples_ + other_samples);
    const double held = HeldBytes() + (other_ != nullptr ? other_->HeldBytes() : 0);
    const double dense = samples * static_cast<double>(width) * 8;
    if (dense + held <= memory_.bytes) return;
    const std::string counted =
        other_ == nullptr ? fmt::format("{} samples", samples_)
                          : fmt::format("{} samples ({} here, {} in {})", samples_ + other_samples,
                                        samples_, other_samples, other_->file_);
    RequireWithin(memory_, dense + held, what(),
                  fmt::format("{} x {} features x 8 bytes as dense doubles, and {} for "
                              "the {} index:value pairs and {} labels held until the width is "
                              "known",
                              counted, width, FormatBytes(held), pairs_ + other_pairs,
                              samples_ + other_samples));
  }

  // Until the width is known: each pair's index and value (8 + 8 bytes), and each sample's label
  // and the end of its pairs (4 + 8 bytes).
  double HeldBytes() const {
    return 16 * static_cast<double>(pairs_) + 12 * static_cast<double>(samples_);
  }

  [[noreturn]] void Fail(std::string_view message) const {
    throw UserError(fmt::format("{}:{}: {}", file_, line_, message));
  }

  // `start` is the start of the token.
  [[noreturn]] void FailLongToken(std::string_view start) const {
    Fail(
        fmt::format("token '{}...' runs past {} bytes; labels and index:value pairs are a few "
                    "dozen characters (is this a LIBSVM text file?)",
                    start.substr(0, kExcerptChars), kMaxTokenBytes));
  }

  // A whole token: `tail` completes the part held from earlier chunks.
  void EndToken(std::string_view tail) {
    std::string_view token = tail;
    if (!partial_.empty()) {
      partial_.append(tail);
      token = partial_;
    }
    if (!row_open_) {
      Label(token);
      row_open_ = true;
      previous_ = 0;
    } else if (!token.starts_with("qid:")) {
      previous_ = Feature(token, previous_);
    }
    partial_.clear();
  }

  void EndLine() {
    if (row_open_) {
      ReserveRows(ends_, samples_);
      ends_[samples_ - 1] = pairs_;
      row_open_ = false;
    }
    in_comment_ = false;
    ++line_;
  }

  // -1/+1 or 0/1 for a whole file: the two conventions of binary LIBSVM files. A file mixing
  // -1 and 0 is most likely a multi-class file or two files glued together.
  void Label(std::string_view token) {
    const std::optional<double> value = ParseFiniteNumber(token);
    if (!value || (*value != -1 && *value != 0 && *value != 1)) {
      Fail(fmt::format("label {}: labels must all be -1/+1 or all 0/1 (binary classification)",
                       Excerpt(token)));
    }
    if (*value == -1) minus_one_line_ = minus_one_line_ ? minus_one_line_ : line_;
    if (*value == 0) zero_line_ = zero_line_ ? zero_line_ : line_;
    if (minus_one_line_ && zero_line_) {
      Fail(fmt::format(
          "label {} mixes conventions: label -1 on line {} and label 0 on line {}; labels must "
          "all be -1/+1 or all 0/1",
          Excerpt(token), *minus_one_line_, *zero_line_));
    }
    // One more sample: every dense matrix gains a row of the width known so far.
    ++samples_;
    RequireFits([&] { return fmt::format("{}:{}: sample {}", file_, line_, samples_); });
    ReserveRows(labels_, samples_);
    labels_[samples_ - 1] = *value == 1 ? 1 : 0;
  }

  // Returns the index of the `index:value` token, which must follow `previous`.
  std::int64_t Feature(std::string_view token, std::int64_t previous) {
    const std::size_t colon = token.find(':');
    if (colon == std::string_view::npos) {
      Fail(fmt::format("token {} is not index:value", Excerpt(token)));
    }
    const std::string_view index_text = token.substr(0, colon);
    const std::string_view value_text = token.substr(colon + 1);
    std::int64_t index = -1;
    const auto [end, ec] =
        std::from_chars(index_text.data(), index_text.data() + index_text.size(), index);
    if (index_text.empty() || ec != std::errc() || end != index_text.data() + index_text.size() ||
        index < 0) {
      Fail(fmt::format("token {}: index {} is not a positive integer", Excerpt(token),
                       Excerpt(index_text)));
    }
    if (index == 0) Fail(fmt::format("token {}: index 0; indices start at 1", Excerpt(token)));
    if (index <= previous) {
      Fail(fmt::format("token {}: index {} after index {}; indices must be strictly ascending",
                       Excerpt(token), index, previous));
    }
    if (features_ > 0 && index > features_) {
      Fail(fmt::format("token {}: index {} exceeds features = {}", Excerpt(token), index,
                       features_));
    }
    const std::optional<double> value = ParseFiniteNumber(value_text);
    if (!value) {
      Fail(fmt::format("token {}: value {} is not a finite number", Excerpt(token),
                       Excerpt(value_text)));
    }
    // A larger index widens every sample's dense row, and each pair is held: both are checked
    // before anything is stored.
    largest_ = std::max(largest_, index);
    ++pairs_;
    RequireFits([&] { return fmt::format("{}:{}: index {}", file_, line_, index); });
    ReserveRows(indices_, pairs_);
    ReserveRows(values_, pairs_);
    indices_[pairs_ - 1] = index;
    values_[pairs_ - 1] = *value;
    return index;
  }

  std::string file_;
  std::int64_t features_;  // 0: the largest index
  const MemoryLimit& memory_;
  const LibsvmParser* other_;  // may be null

  std::int64_t line_ = 1;                                   // 1-based number of the line being read
  std::int64_t largest_ = 0;                                // largest index seen
  std::optional<std::int64_t> minus_one_line_, zero_line_;  // first lines with these labels

  // The tokenizer's state between chunks.
  bool in_token_ = false;
  bool in_comment_ = false;
  bool row_open_ = false;      // this line's label is read
  std::int64_t previous_ = 0;  // the last index on this line
  std::string partial_;        // the start of a token cut by the end of a chunk

  // The samples, in storage that grows as they arrive (rows() is the capacity).
  std::int64_t samples_ = 0;
  std::int64_t pairs_ = 0;
  Eigen::VectorXi labels_;
  Eigen::Matrix<std::int64_t, Eigen::Dynamic, 1> ends_;  // sample i's pairs end at ends_[i]
  Eigen::Matrix<std::int64_t, Eigen::Dynamic, 1> indices_;
  Eigen::VectorXd values_;
};

void Parse(const std::filesystem::path& path, LibsvmParser& parser) {
  GzipReader in(path);
  std::vector<char> buffer(1 << 16);
  for (;;) {
    const std::size_t got = in.Read(buffer.data(), buffer.size());
    parser.Feed({buffer.data(), got});
    if (got < buffer.size()) break;
  }
  if (in.cut_off()) {
    in.FailTruncated(fmt::format("lines after line {} may be missing", parser.lines()));
  }
  parser.End();
}

}  // namespace

Samples ReadLibsvm(const std::filesystem::path& path, std::int64_t features,
                   const MemoryLimit& memory) {
  LEMMALAB_CHECK(features >= 0, "features = {} < 0", features);
  LibsvmParser parser(path.string(), features, memory, nullptr);
  Parse(path, parser);
  return parser.Finish(parser.Width());
}

Dataset LoadLibsvm(OptionTable& options, const DataContext& context) {
  // Every option first, then the files.
  const std::string given = options.RequireString("path");
  options.Describe("test_path", "a string: a LIBSVM file; default: no test set");
  const std::optional<std::string> test_given =
      options.Has("test_path") ? std::optional(options.RequireString("test_path")) : std::nullopt;
  options.Describe("features", "an integer >= 1; default: the widest sample of the files");
  const std::int64_t features =
      options.Has("features") ? options.RequireInt("features", 1, std::int64_t{1} << 40) : 0;
  if (context.options_only) return {};
  const std::filesystem::path path = ResolveDataPath(options, "path", given, context);
  std::optional<std::filesystem::path> test_path;
  if (test_given) test_path = ResolveDataPath(options, "test_path", *test_given, context);
  LibsvmParser train(path.string(), features, context.memory, nullptr);
  Parse(path, train);
  std::optional<LibsvmParser> test;
  if (test_path) {
    test.emplace(test_path->string(), features, context.memory, &train);
    Parse(*test_path, *test);
  }
  // Without `features`, the wider file sets the width of both, so that a model fits either; the
  // test set's parser checked both files' samples at that width.
  const std::int64_t width = test ? test->Width() : train.Width();
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
