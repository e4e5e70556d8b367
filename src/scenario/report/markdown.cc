#include "scenario/report/markdown.h"

namespace fabriclab::scenario {

std::string markdown_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::string md = "|";
  for (const auto& h : header) md += " " + h + " |";
  md += "\n|";
  for (std::size_t i = 0; i < header.size(); ++i) md += "---|";
  md += "\n";
  for (const auto& r : rows) {
    md += "|";
    for (const auto& c : r) md += " " + c + " |";
    md += "\n";
  }
  return md;
}

}  // namespace fabriclab::scenario
