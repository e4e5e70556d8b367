// Markdown for the reports (report.md of the experiments and the offload grid).
//
//   md += markdown_table({"variant", "goodput (Gb/s)"}, {{"pfc-only", "41.2"}});
#pragma once

#include <string>
#include <vector>

namespace fabriclab::scenario {

// A markdown table: a header row, then rows of cells.
std::string markdown_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

}  // namespace fabriclab::scenario
