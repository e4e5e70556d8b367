// One standard fabric experiment (docs/experiments.md) is a Definition: the variants of
// its shipped scenario (a label, a line for the report, the --set overrides of each) and
// the analysis of their runs, which fills a Report and writes results.csv and plots.
// registry.cc lists them and runs one; each experiment has its own file. Also the
// formatting and plotting helpers the analyses share.
//
//   Definition training();  // training.cc: {name, title, variants, analyze}
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "scenario/parameters.h"
#include "scenario/report/csv_table.h"

namespace fabriclab::scenario::experiments {

struct Variant {
  std::string label;  // a directory name and a plot label: no spaces
  std::string what;   // one line for the report
  std::vector<std::string> sets;
};

// A variant's finished run: its directory and its outputs, read back.
struct Ran {
  Variant v;
  std::filesystem::path dir;
  nlohmann::json summary;
  CsvTable flows, ports;
};

// What an analysis finds; registry.cc writes report.md and results.json from it.
struct Report {
  std::string title;
  std::string varied, measured;  // markdown paragraphs
  std::vector<std::string> headlines;
  std::string body;  // markdown sections: tables, plots
  nlohmann::ordered_json results;
};

struct Definition {
  std::string name, title;
  std::function<std::vector<Variant>(const Config&)> variants;
  // (the scenario's configuration, the runs in variant order, the output directory, the report)
  std::function<void(const Config&, const std::vector<Ran>&, const std::filesystem::path&, Report&)> analyze;
};

// The experiments, in the order `fabriclab experiment` lists them.
Definition training();              // training.cc
Definition congestion_spreading();  // congestion_spreading.cc
Definition ecn_cnp_pfc();           // ecn_cnp_pfc.cc
Definition ecmp_vs_spray();         // ecmp_vs_spray.cc
Definition reorder();               // reorder.cc
Definition collectives();           // collectives.cc
Definition transports();            // transports.cc
Definition spraying();              // spraying.cc
Definition fct_slowdown();          // fct_slowdown.cc

// Numbers as the reports show them: one or two decimals, a share in percent.
std::string f1(double x);
std::string f2(double x);
std::string pct(double x);
double us_of_ns(double ns);

// Gb/s of `bytes` over `ns`.
double gbps(double bytes, double ns);

// A run's flows from the first start to the last finish, and the bytes they carried
// (flows.csv; an unfinished flow counts its bytes and no finish).
struct FlowSpan {
  double first_ns = 0, last_ns = 0, bytes = 0;
  double ns() const { return last_ns - first_ns; }
};
FlowSpan flow_span(const CsvTable& flows);

// A run's flows as the reports give them: how many, how many finished, FCT p50/p99/max
// (us), and when all finished the makespan (us, first start to last finish) and the
// goodput over it (Gb/s of payload into all receivers); NaN for those otherwise.
struct FlowStats {
  double flows = 0, finished = 0, p50 = 0, p99 = 0, max = 0, makespan = 0, goodput = 0;
};
FlowStats flow_stats(const Ran& run);

// The index of host "hN".
std::uint32_t host_index(const std::string& name);

// summary[section][key] as a number (our summaries write times as strings); NaN for a
// null (none in the run, such as the completion times when no flow finished).
double metric(const nlohmann::json& summary, const char* section, const char* key);

// A clustered bar chart of `dat` (first column: labels; then one column per series).
std::string histogram(const std::string& title, const std::string& ylabel, const std::string& dat,
                      const std::vector<std::string>& series, std::size_t rows, const std::string& extra = "");

// A markdown image line for report.md.
std::string plot_line(const std::string& img, const std::string& caption);

}  // namespace fabriclab::scenario::experiments
