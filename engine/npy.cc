#include "engine/npy.h"

#include <fmt/format.h>

#include <bit>
#include <cstdint>
#include <fstream>

#include "core/error.h"

namespace lemmalab {

void WriteNpy(const std::filesystem::path& path, const std::vector<Eigen::VectorXd>& rows,
              Precision precision) {
  static_assert(std::endian::native == std::endian::little);
  const Eigen::Index cols = rows.empty() ? 0 : rows.front().size();
  for (const auto& r : rows) LEMMALAB_CHECK(r.size() == cols, "ragged rows for {}", path.string());
  const bool fp64 = precision == Precision::kFp64;

  // The header is a Python dict literal, padded with spaces and ended by '\n' so that the data
  // starts at a multiple of 64 bytes (magic 6 + version 2 + length 2 + header).
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}, {}), }}",
                                   fp64 ? "<f8" : "<f4", rows.size(), cols);
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw UserError(fmt::format("{}: cannot open for writing", path.string()));
  const auto length = static_cast<std::uint16_t>(header.size());
  out.write("\x93NUMPY\x01\x00", 8);
  out.write(reinterpret_cast<const char*>(&length), sizeof(length));
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  for (const auto& row : rows) {
    if (fp64) {
      out.write(reinterpret_cast<const char*>(row.data()),
                static_cast<std::streamsize>(row.size() * sizeof(double)));
    } else {
      const Eigen::VectorXf f = row.cast<float>();
      out.write(reinterpret_cast<const char*>(f.data()),
                static_cast<std::streamsize>(f.size() * sizeof(float)));
    }
  }
  if (!out.flush()) throw WriteFailed(path.string());
}

}  // namespace lemmalab
