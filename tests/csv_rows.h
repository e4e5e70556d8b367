// A CSV file's rows after its header, cells split at commas (the outputs fabriclab writes
// quote nothing): for tests that read qps.csv, queues.csv and the like.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fabriclab::testing {

inline std::vector<std::vector<std::string>> csv_rows(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
    rows.push_back(std::move(cells));
  }
  return rows;
}

}  // namespace fabriclab::testing
