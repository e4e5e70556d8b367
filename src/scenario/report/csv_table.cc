#include "scenario/report/csv_table.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <fstream>

#include "core/error.h"

namespace fabriclab::scenario {

namespace {
std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  for (;;) {
    const auto comma = line.find(',', pos);
    out.push_back(line.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    if (comma == std::string::npos) return out;
    pos = comma + 1;
  }
}
}  // namespace

CsvTable read_csv(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read", p.string()));
  CsvTable t;
  t.path_ = p.string();
  std::string line;
  if (!std::getline(in, line)) throw InputError(fmt::format("{}: empty (expected a header row)", t.path_));
  t.header_ = split(line);
  for (std::size_t n = 2; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    auto cells = split(line);
    if (cells.size() != t.header_.size())
      throw InputError(fmt::format("{}:{}: {} cells, the header has {}", t.path_, n, cells.size(), t.header_.size()));
    t.cells_.push_back(std::move(cells));
  }
  return t;
}

std::size_t CsvTable::column(const std::string& name) const {
  for (std::size_t i = 0; i < header_.size(); ++i)
    if (header_[i] == name) return i;
  throw InputError(fmt::format("{}: no column '{}'", path_, name));
}

double CsvTable::number(std::size_t row, const std::string& col, double empty_as) const {
  const std::string& s = text(row, col);
  if (s.empty()) {
    if (std::isnan(empty_as)) throw InputError(fmt::format("{}:{}: column {} is empty", path_, row + 2, col));
    return empty_as;
  }
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size())
    throw InputError(fmt::format("{}:{}: column {}: '{}' is not a number", path_, row + 2, col, s));
  return v;
}

}  // namespace fabriclab::scenario
