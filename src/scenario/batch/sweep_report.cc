#include "scenario/batch/sweep_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "core/error.h"
#include "scenario/report/files.h"
#include "scenario/report/gnuplot.h"
#include "scenario/report/markdown.h"

namespace fabriclab::scenario {

namespace fs = std::filesystem;

std::string sweep_plot_stem(const std::string& key) {
  std::string stem = "vary-" + key;
  for (char& c : stem)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  return stem;
}

namespace {

// A metric as the report writes it: whole numbers from 1000 on, four significant digits below.
std::string metric_text(double x) { return std::fabs(x) >= 1000 ? fmt::format("{:.0f}", x) : fmt::format("{:.4g}", x); }

// A text inside gnuplot's single quotes (a quote is written twice).
std::string gp_quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

// The combinations of the values of every key but `k`, first key slowest: each is the
// index of a value per key (k's left at 0).
std::vector<std::vector<std::size_t>> other_combinations(const SweepTable& t, std::size_t k) {
  std::vector<std::vector<std::size_t>> combos{std::vector<std::size_t>(t.keys.size(), 0)};
  for (std::size_t j = 0; j < t.keys.size(); ++j) {
    if (j == k) continue;
    std::vector<std::vector<std::size_t>> next;
    for (const auto& c : combos)
      for (std::size_t v = 0; v < t.values[j].size(); ++v) {
        next.push_back(c);
        next.back()[j] = v;
      }
    combos = std::move(next);
  }
  return combos;
}

// "switch.buffer=2MiB, nic.congestion_control=dcqcn": a combination of the other keys.
std::string combination_title(const SweepTable& t, std::size_t k, const std::vector<std::size_t>& combo) {
  std::string title;
  for (std::size_t j = 0; j < t.keys.size(); ++j)
    if (j != k) title += (title.empty() ? "" : ", ") + t.keys[j] + "=" + t.values[j][combo[j]];
  return title.empty() ? t.metric : title;
}

// A point's cell in a table: its metric, and what went wrong where something did.
std::string cell(const SweepTable::Row* r) {
  if (!r) return "";
  if (r->status.rfind("failed", 0) == 0) return r->status;
  std::string text = r->metric ? metric_text(*r->metric) : "-";
  if (r->status != "ok") text += " (" + r->status + ")";
  return text;
}

// The section of key k: the plot (when a point has the metric) and its numbers.
std::string key_section(const fs::path& dir, const SweepTable& t, std::size_t k,
                        const std::map<std::vector<std::size_t>, const SweepTable::Row*>& row_at) {
  const auto combos = other_combinations(t, k);
  const auto row = [&](std::vector<std::size_t> idx, std::size_t v) -> const SweepTable::Row* {
    idx[k] = v;
    const auto it = row_at.find(idx);
    return it == row_at.end() ? nullptr : it->second;
  };
  const std::string& key = t.keys[k];
  std::string md = fmt::format("\n## {} against {}\n\n", t.metric, key);

  std::string dat = fmt::format("# {} against {}: value index, value, then one column per line\n", t.metric, key);
  bool any = false;
  for (std::size_t v = 0; v < t.values[k].size(); ++v) {
    std::string label = t.values[k][v];
    std::replace(label.begin(), label.end(), '"', '\'');
    dat += fmt::format("{} \"{}\"", v, label);
    for (const auto& c : combos) {
      const SweepTable::Row* r = row(c, v);
      const bool has = r && r->metric && r->status.rfind("failed", 0) != 0;
      any = any || has;
      dat += has ? fmt::format(" {:.17g}", *r->metric) : std::string(" ?");
    }
    dat += "\n";
  }
  const std::string stem = sweep_plot_stem(key);
  if (any) {
    write_file(dir / (stem + ".dat"), dat);
    std::string plot = "plot ";
    for (std::size_t i = 0; i < combos.size(); ++i)
      plot += fmt::format("{}{} using 1:{}{} with linespoints pointsize 1.5 title {}", i ? ", " : "",
                          i ? "''" : gp_quoted(stem + ".dat"), i + 3, i ? "" : ":xtic(2)",
                          gp_quoted(combination_title(t, k, combos[i])));
    draw_plot(dir, stem,
              fmt::format("set title {}\nset xlabel {}\nset ylabel {}\nset datafile missing '?'\n"
                          "set key outside right top\nset grid ytics\nset xrange [-0.5:{}]\n"
                          "set offsets 0, 0, graph 0.05, graph 0.05\n{}",
                          gp_quoted(t.metric + " against " + key), gp_quoted(key), gp_quoted(t.metric),
                          static_cast<double>(t.values[k].size()) - 0.5, plot));
    md += fmt::format("![{} against {}]({}.png)\n\n", t.metric, key, stem);
  } else {
    md += "No point has the metric: nothing to plot.\n\n";
  }
  std::vector<std::string> header{key};
  for (const auto& c : combos) header.push_back(combination_title(t, k, c));
  std::vector<std::vector<std::string>> rows;
  for (std::size_t v = 0; v < t.values[k].size(); ++v) {
    rows.push_back({t.values[k][v]});
    for (const auto& c : combos) rows.back().push_back(cell(row(c, v)));
  }
  return md + markdown_table(header, rows);
}

}  // namespace

void write_sweep_report(const fs::path& dir, const SweepTable& t) {
  std::map<std::vector<std::size_t>, const SweepTable::Row*> row_at;
  for (const auto& r : t.rows) row_at[r.at] = &r;

  std::string md = fmt::format("# Sweep of {}\n\n{} points over {} key{}:", fs::path(t.scenario).filename().string(),
                               t.rows.size(), t.keys.size(), t.keys.size() == 1 ? "" : "s");
  for (std::size_t k = 0; k < t.keys.size(); ++k) {
    std::string values;
    for (const auto& v : t.values[k]) values += (values.empty() ? "" : ", ") + v;
    md += fmt::format("{} `{}` ({})", k ? "," : "", t.keys[k], values);
  }
  md += ".";
  if (!t.sets.empty()) {
    std::string sets;
    for (const auto& s : t.sets) sets += (sets.empty() ? "" : ", ") + fmt::format("`{}`", s);
    md += " Every point with " + sets + ".";
  }
  md += fmt::format(
      "\nEach point's row, with every metric of its summary, is in `sweep.csv`; its outputs in `points/PNNNN/`.\n\n"
      "Shown: `{}` (`--metric` names another column of `sweep.csv`), against each key, one line per combination "
      "of the other keys' values.\n",
      t.metric);
  std::string unsafe, failed;
  for (const auto& r : t.rows) {
    if (r.status.rfind("failed", 0) == 0) failed += fmt::format("{}{}", failed.empty() ? "" : ", ", r.id);
    else if (r.status != "ok") unsafe += fmt::format("{}{} ({})", unsafe.empty() ? "" : ", ", r.id, r.status);
  }
  if (!unsafe.empty()) md += "\n**Lossless drops or a PFC deadlock** at " + unsafe + ".\n";
  if (!failed.empty()) md += "\n**Failed** (rerun the sweep to retry them): " + failed + ".\n";
  for (std::size_t k = 0; k < t.keys.size(); ++k) md += key_section(dir, t, k, row_at);
  write_file(dir / "report.md", md);
}

}  // namespace fabriclab::scenario
