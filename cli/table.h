// Plain-text tables as lemmalab prints them: columns padded to their widest cell, two spaces
// apart, each left- or right-aligned. Widths count UTF-8 code points, as fmt's padding does, so
// a cell holding "±" lines up.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace lemmalab {

struct TableColumn {
  std::string header;
  bool left_aligned = false;
};

std::string FormatTable(const std::vector<TableColumn>& columns,
                        const std::vector<std::vector<std::string>>& rows);

// The width a table printed to the console fits: the terminal's columns when standard output is
// one, else 100.
std::size_t ConsoleWidth();

// FormatTable within `width` code points per line, for the console: the first column's cells
// (the names) cut to at most half the width with "…" where they are longer, then as many of the
// other columns as fit, in order. The columns left out are named on a last line, with where the
// whole table is (`full_table`, "summary.csv"). Unchanged when the whole table fits.
std::string FormatTableWithin(const std::vector<TableColumn>& columns,
                              const std::vector<std::vector<std::string>>& rows, std::size_t width,
                              std::string_view full_table);

}  // namespace lemmalab
