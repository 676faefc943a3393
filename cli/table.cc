#include "cli/table.h"

#include <fmt/format.h>

#include <algorithm>

namespace lemmalab {
namespace {

std::size_t CodePoints(const std::string& s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

}  // namespace

std::string FormatTable(const std::vector<TableColumn>& columns,
                        const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(columns.size());
  for (std::size_t c = 0; c < columns.size(); ++c) {
    width[c] = CodePoints(columns[c].header);
    for (const auto& row : rows) width[c] = std::max(width[c], CodePoints(row[c]));
  }
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

}  // namespace lemmalab
