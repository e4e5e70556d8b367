#include "scenario/report/csv_table.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <utility>

#include "core/csv.h"
#include "core/error.h"

namespace fabriclab::scenario {

CsvTable read_csv(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read", p.string()));
  CsvTable t;
  t.path_ = p.string();
  csv::Reader reader(in, t.path_);
  t.header_ = reader.read_header();
  for (csv::Row row; reader.next(row);) {
    t.lines_.push_back(row.line);
    t.cells_.push_back(std::move(row.fields));
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
    if (std::isnan(empty_as)) throw InputError(fmt::format("{}:{}: column {} is empty", path_, lines_.at(row), col));
    return empty_as;
  }
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size())
    throw InputError(fmt::format("{}:{}: column {}: '{}' is not a number", path_, lines_.at(row), col, s));
  return v;
}

}  // namespace fabriclab::scenario
