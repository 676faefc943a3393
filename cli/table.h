// Plain-text tables as lemmalab prints them: columns padded to their widest cell, two spaces
// apart, each left- or right-aligned. Widths count UTF-8 code points, as fmt's padding does, so
// a cell holding "±" lines up.
#pragma once

#include <string>
#include <vector>

namespace lemmalab {

struct TableColumn {
  std::string header;
  bool left_aligned = false;
};

std::string FormatTable(const std::vector<TableColumn>& columns,
                        const std::vector<std::vector<std::string>>& rows);

}  // namespace lemmalab
