// Reading and writing result files: our own CSV tables (header row, comma-separated, no
// quoting -- what flows.csv, ports.csv and the others are), JSON, markdown tables for
// reports, and plots drawn by gnuplot (a script beside each PNG, so a plot can be
// restyled and redrawn by hand).
//
//   CsvTable flows = read_csv(dir / "flows.csv");
//   for (std::size_t r = 0; r < flows.rows(); ++r) double g = flows.number(r, "goodput_gbps");
//   draw_plot(dir, "busbw", "plot 'busbw.dat' using 2:xtic(1) with boxes");
#pragma once

#include <cstddef>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/units.h"

namespace fabriclab::scenario {

// Throws InputError naming the file when it cannot be written (or read).
void write_file(const std::filesystem::path& p, const std::string& text);
std::string read_text(const std::filesystem::path& p);

// A time as our CSV and JSON outputs write it: nanoseconds with three decimals ("1671.680").
std::string ns_text(Time t);

class CsvTable {
 public:
  std::size_t rows() const { return cells_.size(); }
  const std::vector<std::string>& header() const { return header_; }
  // The column's index; InputError naming the file and the column if it has none.
  std::size_t column(const std::string& name) const;
  const std::string& text(std::size_t row, const std::string& col) const { return cells_.at(row).at(column(col)); }
  // The cell as a number; InputError naming file, line and column if it is not one (an
  // empty cell is `empty_as`, or an error when that is NaN).
  double number(std::size_t row, const std::string& col, double empty_as = std::numeric_limits<double>::quiet_NaN()) const;

 private:
  friend CsvTable read_csv(const std::filesystem::path& p);
  std::string path_;
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> cells_;
};

// InputError naming the file (and line) if it is missing or a row has the wrong width.
CsvTable read_csv(const std::filesystem::path& p);
nlohmann::json read_json(const std::filesystem::path& p);

// A markdown table: a header row, then rows of cells.
std::string markdown_table(const std::vector<std::string>& header,
                           const std::vector<std::vector<std::string>>& rows);

// Writes DIR/STEM.gp -- a PNG terminal, `set output "STEM.png"`, then `body` -- and runs
// gnuplot on it in DIR. Throws InputError if gnuplot is missing or fails (its message
// names the script).
void draw_plot(const std::filesystem::path& dir, const std::string& stem, const std::string& body);

}  // namespace fabriclab::scenario
