#include "cli/table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>

namespace lemmalab {
namespace {

std::size_t CodePoints(const std::string& s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// The first `count` code points of s, with "…" in place of the rest when there is more.
std::string Cut(const std::string& s, std::size_t count) {
  if (CodePoints(s) <= count) return s;
  std::size_t kept = 0, end = 0;
  while (end < s.size() && kept < count - 1) {
    ++end;
    while (end < s.size() && (s[end] & 0xC0) == 0x80) ++end;  // the rest of a code point
    ++kept;
  }
  return s.substr(0, end) + "…";
}

std::size_t Widest(const TableColumn& column, const std::vector<std::vector<std::string>>& rows,
                   std::size_t c) {
  std::size_t width = CodePoints(column.header);
  for (const auto& row : rows) width = std::max(width, CodePoints(row[c]));
  return width;
}

}  // namespace

std::string FormatTable(const std::vector<TableColumn>& columns,
                        const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(columns.size());
  for (std::size_t c = 0; c < columns.size(); ++c) width[c] = Widest(columns[c], rows, c);
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      s += columns[c].left_aligned ? fmt::format("{:<{}}", cells[c], width[c])
                                   : fmt::format("{:>{}}", cells[c], width[c]);
      s += "  ";
    }
    // No padding at the end of a line (a left-aligned last column, or empty cells).
    s.erase(s.find_last_not_of(' ') + 1);
    return s + "\n";
  };
  std::vector<std::string> header;
  for (const TableColumn& c : columns) header.push_back(c.header);
  std::string out = line(header);
  for (const auto& row : rows) out += line(row);
  return out;
}

std::size_t ConsoleWidth() {
  winsize size{};
  if (isatty(STDOUT_FILENO) != 0 && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 &&
      size.ws_col > 0) {
    return size.ws_col;
  }
  return 100;
}

std::string FormatTableWithin(const std::vector<TableColumn>& columns,
                              const std::vector<std::vector<std::string>>& rows, std::size_t width,
                              std::string_view full_table) {
  if (columns.empty()) return FormatTable(columns, rows);
  std::vector<std::size_t> widths(columns.size());
  std::size_t total = 0;
  for (std::size_t c = 0; c < columns.size(); ++c) {
    widths[c] = Widest(columns[c], rows, c);
    total += widths[c] + (c > 0 ? 2 : 0);
  }
  if (total <= width) return FormatTable(columns, rows);
  // The names cut to half the width at most, then the columns that fit after them.
  const std::size_t names = std::min(widths[0], std::max<std::size_t>(width / 2, 8));
  std::vector<std::size_t> shown = {0};
  std::size_t used = names;
  std::vector<std::string> left_out;
  for (std::size_t c = 1; c < columns.size(); ++c) {
    if (left_out.empty() && used + 2 + widths[c] <= width) {
      shown.push_back(c);
      used += 2 + widths[c];
    } else {
      left_out.push_back(columns[c].header);
    }
  }
  std::vector<TableColumn> kept_columns;
  for (const std::size_t c : shown) kept_columns.push_back(columns[c]);
  kept_columns[0].header = Cut(kept_columns[0].header, names);
  std::vector<std::vector<std::string>> kept_rows;
  for (const auto& row : rows) {
    std::vector<std::string>& kept = kept_rows.emplace_back();
    for (const std::size_t c : shown) kept.push_back(c == 0 ? Cut(row[c], names) : row[c]);
  }
  std::string out = FormatTable(kept_columns, kept_rows);
  if (!left_out.empty()) {
    out += fmt::format("({} more column{} in {}: {})\n", left_out.size(),
                       left_out.size() == 1 ? "" : "s", full_table, fmt::join(left_out, ", "));
  }
  return out;
}

}  // namespace lemmalab
