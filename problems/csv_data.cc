// CSV reader: zlib reads the file (plain or gzip, transparently), libcsv tokenizes it
// (RFC 4180 quoting), and each field must parse completely as a finite number.
#include <csv.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>

#include "core/error.h"
#include "problems/data_reader.h"
#include "problems/dataset.h"

namespace lemmalab {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// State shared with libcsv's C callbacks. Callbacks cannot throw through C frames, so the first
// error is recorded here and the parse loop stops on it.
constexpr double kMaxLabel = 1 << 20;

struct CsvState {
  std::string file;
  std::string label_name;  // requested label column; empty: the last column
  std::size_t label = 0;   // its index, once the header is read
  std::int64_t line = 0;   // line the parser is in (1-based)
  std::vector<std::string> header;
  std::vector<std::string> fields;
  std::vector<double> values;  // row-major data rows
  std::int64_t rows = 0;
  std::string error;
};

void OnField(void* text, std::size_t length, void* data) {
  auto* state = static_cast<CsvState*>(data);
  state->fields.emplace_back(static_cast<const char*>(text), length);
}

void OnRow(int /*terminator*/, void* data) {
  auto* state = static_cast<CsvState*>(data);
  std::vector<std::string> fields = std::move(state->fields);
  state->fields.clear();
  if (!state->error.empty()) return;
  if (state->header.empty()) {
    for (std::string& f : fields) f = std::string(Trim(f));
    state->header = std::move(fields);
    if (state->header.size() < 2) {
      state->error = fmt::format("{}:{}: need at least one feature column and a label column",
                                 state->file, state->line);
      return;
    }
    state->label = state->header.size() - 1;
    if (!state->label_name.empty()) {
      const auto it = std::find(state->header.begin(), state->header.end(), state->label_name);
      if (it == state->header.end()) {
        state->error =
            fmt::format("{}:{}: no column named '{}' for the label (columns: {})", state->file,
                        state->line, state->label_name, fmt::join(state->header, ", "));
        return;
      }
      state->label = static_cast<std::size_t>(it - state->header.begin());
    }
    return;
  }
  if (fields.size() != state->header.size()) {
    state->error = fmt::format("{}:{}: expected {} fields as in the header, found {}", state->file,
                               state->line, state->header.size(), fields.size());
    return;
  }
  for (std::size_t c = 0; c < fields.size(); ++c) {
    const std::optional<double> value = ParseFiniteNumber(Trim(fields[c]));
    if (!value) {
      state->error = fmt::format("{}:{}: field {} ('{}'): '{}' is not a finite number", state->file,
                                 state->line, c + 1, state->header[c], fields[c]);
      return;
    }
    if (c == state->label &&
        !(*value >= 0 && *value <= kMaxLabel && *value == std::floor(*value))) {
      state->error = fmt::format(
          "{}:{}: label column '{}' must hold class indices 0, 1, ... (at most {}), got {}",
          state->file, state->line, state->header[c], kMaxLabel, fields[c]);
      return;
    }
    state->values.push_back(*value);
  }
  ++state->rows;
}

}  // namespace

CsvTable ReadCsv(const std::filesystem::path& path, std::string_view label_column) {
  const std::string file = path.string();
  GzipReader in(path);

  csv_parser parser;
  csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI);
  // GzipReader throws on corrupt data; the parser's buffers go with it.
  const std::unique_ptr<csv_parser, decltype(&csv_free)> free_parser(&parser, &csv_free);
  CsvState state;
  state.file = file;
  state.label_name = label_column;

  // Each newline-terminated piece goes to libcsv on its own, so the line number is exact when
  // a row callback fires. NUL bytes mean a binary file, not a table with a strange field.
  std::vector<char> buffer(1 << 16);
  state.line = 1;
  std::size_t got;
  while (state.error.empty() && (got = in.Read(buffer.data(), buffer.size())) > 0) {
    const char* p = buffer.data();
    const char* const end = p + got;
    while (p < end && state.error.empty()) {
      const auto* newline = static_cast<const char*>(std::memchr(p, '\n', end - p));
      const char* const stop = newline != nullptr ? newline + 1 : end;
      const auto length = static_cast<std::size_t>(stop - p);
      if (std::memchr(p, '\0', length) != nullptr) {
        state.error = fmt::format("{}:{}: NUL byte: not a text CSV file", file, state.line);
      } else if (csv_parse(&parser, p, length, OnField, OnRow, &state) != length) {
        state.error = fmt::format("{}:{}: malformed CSV: {}", file, state.line,
                                  csv_strerror(csv_error(&parser)));
      }
      if (newline != nullptr) ++state.line;
      p = stop;
    }
  }
  if (state.error.empty() && in.cut_off()) {
    state.error = fmt::format(
        "{}:{}: read error: unexpected end of file (truncated or corrupt file?)", file, state.line);
  }
  if (state.error.empty() && csv_fini(&parser, OnField, OnRow, &state) != 0) {
    state.error = fmt::format("{}:{}: malformed CSV at end of file: {}", file, state.line,
                              csv_strerror(csv_error(&parser)));
  }
  if (!state.error.empty()) throw UserError(state.error);
  if (state.header.empty()) throw UserError(fmt::format("{}: empty file, expected a header", file));
  if (state.rows == 0) throw UserError(fmt::format("{}: no data rows after the header", file));
  const auto columns = static_cast<std::int64_t>(state.header.size());
  const auto label = static_cast<std::int64_t>(state.label);

  const Eigen::Map<const RowMatrix<double>> table(state.values.data(), state.rows, columns);
  CsvTable result;
  Samples& samples = result.samples;
  samples.features.resize(state.rows, columns - 1);
  samples.labels = table.col(label).cast<int>();
  for (std::int64_t c = 0, f = 0; c < columns; ++c) {
    if (c == label) continue;
    samples.features.col(f++) = table.col(c);
    result.feature_names.push_back(state.header[static_cast<std::size_t>(c)]);
  }
  return result;
}

}  // namespace lemmalab
