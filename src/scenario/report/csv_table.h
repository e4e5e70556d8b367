// Our own CSV outputs read back (flows.csv, ports.csv, reorder.csv and the others): a
// header row, then rows of comma-separated cells, no quoting (read by core/csv.h). The
// experiments analyze their runs through it.
//
//   CsvTable flows = read_csv(dir / "flows.csv");
//   for (std::size_t r = 0; r < flows.rows(); ++r) double g = flows.number(r, "goodput_gbps");
#pragma once

#include <cstddef>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

namespace fabriclab::scenario {

class CsvTable {
 public:
  std::size_t rows() const { return cells_.size(); }
  const std::vector<std::string>& header() const { return header_; }
  // The column's index; InputError naming the file and the column if it has none.
  std::size_t column(const std::string& name) const;
  const std::string& text(std::size_t row, const std::string& col) const { return cells_.at(row).at(column(col)); }
  // The cell as a number; InputError naming file, line and column if it is not one (an
  // empty cell is `empty_as`, or an error when that is NaN).
  double number(std::size_t row, const std::string& col,
                double empty_as = std::numeric_limits<double>::quiet_NaN()) const;

 private:
  friend CsvTable read_csv(const std::filesystem::path& p);
  std::string path_;
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> cells_;
  std::vector<std::size_t> lines_;  // each row's line in the file
};

// InputError naming the file (and line) if it is missing or a row has the wrong width.
CsvTable read_csv(const std::filesystem::path& p);

}  // namespace fabriclab::scenario
