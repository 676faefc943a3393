// CSV reader: zlib reads the file (plain or gzip, transparently), libcsv tokenizes it
// (RFC 4180 quoting), and each field must parse completely as a finite number. Fields are
// converted as libcsv delivers them, straight into the matrix the samples keep, which grows with
// the rows that arrive: the reader holds one field of text, the header's names and the numbers.
#include <csv.h>
#include <fmt/format.h>

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

constexpr double kMaxLabel = 1 << 20;

// A row (the header included) is at most 1 MiB, or 128 bytes per column in a wider table. A
// header of 1 MiB names over 60 000 columns of 15-character names, about as many as the widest
// real tables have (gene expression: one column per gene); 128 bytes is five times the longest
// text of a double (24 characters). The bound stops a binary file, a runaway quote or a hostile
// header at its first byte past it, and with it what libcsv buffers (one field of the row).
constexpr std::size_t kMaxRowBytes = std::size_t{1} << 20;
constexpr std::size_t kRowBytesPerColumn = 128;

// State shared with libcsv's C callbacks. Callbacks cannot throw through C frames, so the first
// error is recorded here and the parse loop stops on it.
struct CsvState {
  std::string file;
  std::string label_name;  // requested label column; empty: the last column
  const MemoryLimit* memory = nullptr;
  std::int64_t line = 1;  // line the parser is in (1-based)
  std::string error;

  // The header's names, one after another, and where each ends: a few bytes per column where a
  // std::string would take 32.
  bool have_header = false;
  std::string names;
  std::vector<std::uint32_t> name_ends;
  std::size_t label = 0;  // the label's column, once the header is read

  std::size_t field = 0;      // fields of the current row so far
  std::size_t row_bytes = 0;  // bytes of the current row fed to libcsv so far
  std::size_t max_row_bytes = kMaxRowBytes;
  RowMatrix<double> features;  // rows() is the capacity; the first `rows` are data
  Eigen::VectorXi labels;
  std::int64_t rows = 0;  // complete data rows

  std::size_t columns() const { return name_ends.size(); }
  std::string_view Name(std::size_t c) const {
    const std::uint32_t begin = c == 0 ? 0 : name_ends[c - 1];
    return std::string_view(names).substr(begin, name_ends[c] - begin);
  }
  // "a, b, y", or the first ten names and how many there are.
  std::string NameList() const {
    std::string list;
    for (std::size_t c = 0; c < std::min<std::size_t>(columns(), 10); ++c) {
      list += fmt::format("{}{}", c > 0 ? ", " : "", Name(c));
    }
    if (columns() > 10) list += fmt::format(", ... ({} columns)", columns());
    return list;
  }
};

// The header is read: checks it and sizes the data rows that follow.
void EndHeader(CsvState& state) {
  if (state.columns() < 2) {
    state.error = fmt::format("{}:{}: need at least one feature column and a label column",
                              state.file, state.line);
    return;
  }
  state.label = state.columns() - 1;
  if (!state.label_name.empty()) {
    std::size_t c = 0;
    while (c < state.columns() && state.Name(c) != state.label_name) ++c;
    if (c == state.columns()) {
      state.error = fmt::format("{}:{}: no column named '{}' for the label (columns: {})",
                                state.file, state.line, state.label_name, state.NameList());
      return;
    }
    state.label = c;
  }
  const auto features = static_cast<Eigen::Index>(state.columns() - 1);
  state.max_row_bytes = std::max(kMaxRowBytes, kRowBytesPerColumn * state.columns());
  state.features.resize(0, features);
  state.have_header = true;
}

// The first field of a data row: room for one more row, if the memory limit allows it (libcsv's
// callbacks cannot throw: the error waits in the state).
void StartRow(CsvState& state) {
  const std::int64_t rows = state.rows + 1;
  const auto features = static_cast<std::int64_t>(state.columns() - 1);
  try {
    ReserveSamples(
        state.features, state.labels, rows, 8.0 * static_cast<double>(features) + 4,
        *state.memory, [&] { return fmt::format("{}:{}: data row {}", state.file, state.line, rows); },
        [&] {
          return fmt::format("{} rows x ({} features x 8 bytes + a 4-byte label)", rows, features);
        });
  } catch (const UserError& e) {
    state.error = e.what();
  }
}

void OnField(void* text, std::size_t length, void* data) {
  auto* state = static_cast<CsvState*>(data);
  if (!state->error.empty()) return;
  const std::string_view field(static_cast<const char*>(text), length);
  if (!state->have_header) {
    state->names += Trim(field);
    state->name_ends.push_back(static_cast<std::uint32_t>(state->names.size()));
    return;
  }
  // Fields past the header's count are only counted: the row's end says how many there were.
  const std::size_t c = state->field++;
  if (c >= state->columns()) return;
  if (c == 0) {
    StartRow(*state);
    if (!state->error.empty()) return;
  }
  const std::optional<double> value = ParseFiniteNumber(Trim(field));
  if (!value) {
    state->error = fmt::format("{}:{}: field {} ('{}'): {} is not a finite number", state->file,
                               state->line, c + 1, state->Name(c), Excerpt(field));
    return;
  }
  if (c == state->label) {
    if (!(*value >= 0 && *value <= kMaxLabel && *value == std::floor(*value))) {
      state->error = fmt::format(
          "{}:{}: label column '{}' must hold class indices 0, 1, ... (at most {}), got {}",
          state->file, state->line, state->Name(c), kMaxLabel,
          field.size() <= kExcerptChars ? std::string(field) : Excerpt(field));
      return;
    }
    state->labels[state->rows] = static_cast<int>(*value);
  } else {
    state->features(state->rows, static_cast<Eigen::Index>(c < state->label ? c : c - 1)) = *value;
  }
}

void OnRow(int /*terminator*/, void* data) {
  auto* state = static_cast<CsvState*>(data);
  state->row_bytes = 0;
  if (!state->error.empty()) return;
  if (!state->have_header) {
    EndHeader(*state);
    return;
  }
  if (state->field != state->columns()) {
    state->error = fmt::format("{}:{}: expected {} fields as in the header, found {}", state->file,
                               state->line, state->columns(), state->field);
    return;
  }
  state->field = 0;
  ++state->rows;
}

// Where the current row may end: the error for a row that runs past state.max_row_bytes at
// uncompressed offset `offset`.
std::string RowTooLong(const CsvState& state, std::uint64_t offset) {
  if (!state.have_header) {
    return fmt::format(
        "{}:{}: the header row runs past {} at byte {} of the uncompressed stream; a header "
        "that long would name more columns than any real table has (is this a CSV file?)",
        state.file, state.line, FormatBytes(static_cast<double>(state.max_row_bytes)), offset);
  }
  return fmt::format(
      "{}:{}: the row runs past {} at byte {} of the uncompressed stream; the header's {} "
      "columns allow {} bytes per column or 1 MiB, far more than numbers take",
      state.file, state.line, FormatBytes(static_cast<double>(state.max_row_bytes)), offset,
      state.columns(), kRowBytesPerColumn);
}

}  // namespace

CsvTable ReadCsv(const std::filesystem::path& path, std::string_view label_column,
                 const MemoryLimit& memory) {
  const std::string file = path.string();
  GzipReader in(path);

  csv_parser parser;
  csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI);
  // GzipReader throws on corrupt data; the parser's buffers go with it.
  const std::unique_ptr<csv_parser, decltype(&csv_free)> free_parser(&parser, &csv_free);
  CsvState state;
  state.file = file;
  state.label_name = label_column;
  state.memory = &memory;

  // Each piece up to a line end (\n or \r) goes to libcsv on its own, so the line number is exact
  // when a row callback fires and the length of the row so far is known before libcsv buffers
  // it. NUL bytes mean a binary file, not a table with a strange field.
  std::vector<char> buffer(1 << 16);
  std::size_t got;
  while (state.error.empty() && (got = in.Read(buffer.data(), buffer.size())) > 0) {
    const char* p = buffer.data();
    const char* const end = p + got;
    while (p < end && state.error.empty()) {
      const char* const line_end =
          std::find_if(p, end, [](char c) { return c == '\n' || c == '\r'; });
      const char* const stop = line_end != end ? line_end + 1 : end;
      const auto length = static_cast<std::size_t>(stop - p);
      if (state.row_bytes + length > state.max_row_bytes) {
        const std::uint64_t here = in.offset() - static_cast<std::uint64_t>(end - p);
        state.error = RowTooLong(state, here + (state.max_row_bytes - state.row_bytes));
      } else if (std::memchr(p, '\0', length) != nullptr) {
        state.error = fmt::format("{}:{}: NUL byte: not a text CSV file", file, state.line);
      } else {
        state.row_bytes += length;
        if (csv_parse(&parser, p, length, OnField, OnRow, &state) != length) {
          state.error = fmt::format("{}:{}: malformed CSV: {}", file, state.line,
                                    csv_strerror(csv_error(&parser)));
        }
      }
      if (line_end != end && *line_end == '\n') ++state.line;
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
  if (!state.have_header) {
    throw UserError(fmt::format("{}: empty file, expected a header", file));
  }
  if (state.rows == 0) throw UserError(fmt::format("{}: no data rows after the header", file));

  CsvTable result;
  Samples& samples = result.samples;
  // Shrinking gives the unused capacity back in place.
  state.features.conservativeResize(state.rows, Eigen::NoChange);
  state.labels.conservativeResize(state.rows);
  samples.features = std::move(state.features);
  samples.labels = std::move(state.labels);
  for (std::size_t c = 0; c < state.columns(); ++c) {
    if (c != state.label) result.feature_names.emplace_back(state.Name(c));
  }
  return result;
}

}  // namespace lemmalab
