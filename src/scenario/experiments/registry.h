// The standard fabric experiments (docs/experiments.md): each runs its shipped scenario
// (examples/NAME.toml) in a few variants -- congestion control, marking, load balancing --
// in parallel worker processes, then writes into DIR:
//   variants/LABEL/   each variant's run (summary.json, flows.csv, ports.csv)
//   results.csv       the measured numbers, one row per variant (or per variant and iteration)
//   results.json      the same, with the headline numbers
//   *.png, *.gp       plots, and the gnuplot scripts that drew them
//   report.md         what was varied, what was measured, the headline numbers, the plots
//
// Each experiment is a Definition in its own file beside this one (experiment.h).
//
//   ExperimentOutcome o = run_experiment({.name = "training", .out_dir = "results"});
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fabriclab::scenario {

struct ExperimentOptions {
  std::string name = {};
  std::string scenario = {};           // "" = examples/NAME.toml of the working directory, else of shipped
  std::string shipped = {};            // the project's examples folder
  std::string out_dir = {};            // "" = results/NAME
  std::vector<std::string> sets = {};  // key=value for every variant (a variant's own keys win)
  unsigned jobs = 2;
  bool progress = true;  // progress on stderr as variants finish
};

struct ExperimentOutcome {
  bool root = true;  // false on the MPI ranks other than 0, which only ran variants
  std::string dir;
  std::vector<std::string> headlines;
  nlohmann::ordered_json results;  // what results.json holds
  bool unsafe = false;             // some variant dropped on a lossless priority or deadlocked
};

const std::vector<std::string>& experiment_names();
// Throws InputError for an unknown name, a missing scenario or a failed variant.
ExperimentOutcome run_experiment(const ExperimentOptions& opt);

}  // namespace fabriclab::scenario
