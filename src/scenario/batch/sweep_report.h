// A sweep's report: DIR/report.md with, for every varied key, a plot of one metric
// against the key's values -- one line per combination of the other keys' values -- and
// the same numbers as a table, like the experiments' reports.
//
//   write_sweep_report(dir, table);   // DIR/report.md, DIR/vary-switch.buffer.{dat,gp,png}, ...
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace fabriclab::scenario {

// What the report shows: the varied keys and their values (in --vary order), and per
// point (in sweep.csv's order) the index of its value of each key, its status and the
// metric (none where the point failed or its summary has no such number).
struct SweepTable {
  std::string scenario;
  std::vector<std::string> sets;  // --set, applied to every point
  std::vector<std::string> keys;
  std::vector<std::vector<std::string>> values;  // per key
  std::string metric;                            // a sweep.csv column, e.g. goodput_gbps
  struct Row {
    std::string id;                // p0000
    std::vector<std::size_t> at;   // per key, the index of the point's value
    std::string status;            // ok, lossless_drops, deadlock, failed (exit N)
    std::optional<double> metric;  // the point's metric
  };
  std::vector<Row> rows;
};

// The file stem of a key's plot: "vary-" and the key, characters other than letters,
// digits, '.', '_' and '-' as '_'.
std::string sweep_plot_stem(const std::string& key);

// Writes DIR/report.md (last) and, per key, DIR/STEM.dat, STEM.gp and STEM.png
// (sweep_plot_stem). Throws InputError if a file cannot be written or gnuplot fails.
void write_sweep_report(const std::filesystem::path& dir, const SweepTable& t);

}  // namespace fabriclab::scenario
