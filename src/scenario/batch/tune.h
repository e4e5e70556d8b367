// Tuning: a search over declared parameters of a fabric scenario for the settings that
// maximise an objective under constraints, with NLopt's ISRES.
//
//   fabriclab tune incast.toml --param switch.wred.green_min_threshold=20KB..400KB:log
//     --param nic.roce_rp.rpg_ai_rate=1..100:int --maximize goodput_gbps
//     --constraint totals.pfc_pause_frames<=0 --trials 60 --seeds 2 --out DIR
//
// Why ISRES (Runarsson and Yao's improved stochastic ranking evolution strategy): the
// objective is a simulation's output, noisy over seeds and piecewise constant in the
// integer and choice dimensions (rounded), so model-based local methods (COBYLA, BOBYQA,
// which fit linear or quadratic models) stall on its plateaus; ISRES needs no model or
// gradient, searches globally from a population, and handles inequality constraints
// itself by stochastic ranking instead of a penalty weight the user would have to pick.
// Its draws come from NLopt's generator, seeded by --seed: the same seed gives the same
// trials.
//
// Every dimension is searched on [0, 1] and mapped to its range (linearly, on a log
// scale, rounded to an integer, or to one of a list of choices). A value that maps to a
// point already run is not run again, so --trials counts distinct points. A trial runs the
// scenario once per seed (sim.seed, sim.seed + 1, ...: the same seeds for every trial, so
// that trials differ by their settings, not their luck); the objective is the mean over
// seeds, a constraint holds when it holds at every seed. With more than one worker, the
// new points of an ISRES generation and their seeds run together in worker processes
// (search(): a generation is drawn before its values are looked at); the trials are the
// same as one at a time.
//
// DIR/tune.json      the scenario, the options and the search space
// DIR/trials/tNNNN/sK  each run's outputs (summary.json, flows.csv, ports.csv)
// DIR/trials.csv     one row per trial: values, objective, every metric used, feasible
// DIR/best.toml      the best feasible settings, as scenario keys ready to paste
// DIR/report.md      the best point rerun on fresh seeds against the scenario as given
//                    and each preset of its congestion-control policy (DCQCN's for
//                    none and dcqcn)
//
// Resumable: the search is deterministic, so a rerun of the same command replays it and
// takes from disk every run that completed with the same settings (each trial directory
// says its settings in settings.txt; runs of other settings under that name are removed
// and run again, as after a change of --trials, which changes the population).
//
// Launched by mpirun or srun, every rank runs the same search: a batch's runs go to the
// free workers of every rank (--jobs per rank, run_scenario_points), every rank reads them
// back from DIR (a file system they all see), and rank 0 writes the outputs -- the same
// files as on one machine.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/params.h"

namespace fabriclab::scenario {

// One dimension of the search space.
struct TuneParam {
  enum class Scale : std::uint8_t { linear, log, integer, choice };
  std::string key;
  params::Kind kind = params::Kind::real;  // of the key: time (ps), bytes, rate (bps), integer or real
  Scale scale = Scale::linear;
  double lo = 0, hi = 1;  // in the kind's base unit (not for choice)
  // A rate or time key whose bare numbers are in a unit (the DCQCN rates, in Mb/s; the CNP
  // interval, in us): searched in whole units of it, as a device takes them (kind
  // integer, lo and hi in the unit).
  std::int64_t unit = 1;             // base units (bps, ps) per number
  std::string unit_name;             // "Mbps", "us"; "" for unit 1
  std::vector<std::string> choices;  // Scale::choice
  // The value at u in [0, 1], as the key's text ("40KB", "12", "0.25", "dcqcn").
  std::string value_at(double u) const;
  // A value of a range's key as a number in the kind's base unit (the inverse of value_at,
  // before the mapping); throws InputError when `text` does not parse.
  double number(const std::string& text) const;
};

// "key=LO..HI", "key=LO..HI:log", "key=LO..HI:int" or "key=A,B,C", checked against the
// key's declaration (kind, range, choices). Throws InputError naming the option.
TuneParam parse_tune_param(const std::string& text);

// A metric of a run's summary.json by its flattened name ("totals.drops"), or a derived
// one (goodput_gbps: bytes delivered x 8 / the simulated end).
struct ObjectiveTerm {
  double weight = 1;  // maximised: + for --maximize, - for --minimize
  std::string metric;
};
// "[W*]METRIC"; `sign` is +1 for --maximize, -1 for --minimize.
ObjectiveTerm parse_objective_term(const std::string& text, double sign);

struct TuneConstraint {
  std::string metric;
  bool at_most = true;  // METRIC <= bound, else METRIC >= bound
  double bound = 0;
  std::string text;  // as given
};
// "METRIC<=V" or "METRIC>=V".
TuneConstraint parse_tune_constraint(const std::string& text);

// What a trial measured: the objective (the mean over seeds), each constraint's worst
// excess over its bound (<= 0: holds), and whether every run finished safely.
struct TrialResult {
  double objective = 0;
  std::vector<double> excess;
  bool ok = true;  // false: a run failed or was unsafe; the trial is infeasible
};

struct Trial {
  std::vector<std::string> values;  // one per dimension
  TrialResult result;
  bool feasible() const;
};

// A point the search asks to be run: its trial index and its values.
struct TrialRequest {
  std::size_t index;
  std::vector<std::string> values;
};

// The search itself, on any evaluation (scenario runs, or a test's function): at most
// `trials` distinct points, ISRES seeded by `seed`. `evaluate` runs a batch of points
// (their results in the same order) and may throw (the search stops and rethrows).
//
// With `parallel`, a batch is the rest of an ISRES generation: ISRES draws a whole
// generation before it looks at any of its values, so the search is run ahead with
// stand-in values to learn the generation's points, they are evaluated together, and the
// search is replayed from its seed on the real values (each replay costs lookups, not
// runs). The replay checks every point against the values: a point asked that was not
// foreseen is simply run next, so the trials -- their points, order and indices -- are
// the same as one point at a time, whatever NLopt does inside; a foreseen point the
// replay never asks is run for nothing (never with ISRES as NLopt 2.7 has it).
// Without `parallel`, one point at a time, as the search asks.
std::vector<Trial> search(const std::vector<TuneParam>& space, std::size_t constraints, std::size_t trials,
                          std::uint64_t seed,
                          const std::function<std::vector<TrialResult>(const std::vector<TrialRequest>&)>& evaluate,
                          bool parallel);
// One point at a time: `evaluate` gets a trial's index and values.
std::vector<Trial> search(const std::vector<TuneParam>& space, std::size_t constraints, std::size_t trials,
                          std::uint64_t seed,
                          const std::function<TrialResult(std::size_t, const std::vector<std::string>&)>& evaluate);

// The best feasible trial (highest objective; the first among equals), or -1.
long best_trial(const std::vector<Trial>& trials);

struct TuneOptions {
  std::string scenario;
  std::string space;  // --space FILE: dimensions, objective and constraints from a file
  std::vector<std::string> params, maximize, minimize, constraints, sets;
  std::string out_dir;
  std::size_t trials = 40;
  unsigned seeds = 1;
  std::uint64_t seed = 1;
  unsigned jobs = 2;
  bool progress = true;
};

struct TuneOutcome {
  bool root = true;                 // false on the MPI ranks other than 0, which write nothing
  std::size_t trials = 0, ran = 0;  // trials in all, and those run now (the rest read back)
  long best = -1;                   // index into trials.csv, -1 when no trial was feasible
  std::string report;               // DIR/report.md
};

// `opt` with the search of its --space file (TOML) added to its own options:
//
//   maximize = ["goodput_gbps"]                 # each a string or a list of them,
//   minimize = ["0.001*totals.pfc_frames"]      # as the options of the same names
//   constraints = ["totals.lossless_drops<=0"]
//   [param]                                     # a dimension per key, as --param:
//   "switch.wred.green_min_threshold" = "5KB..100KB:log"
//   nic.roce_rp.rpg_ai_rate = "5..400:log"      # (dotted keys and nested tables alike)
//   nic.roce_np.cnp_scope = ["port", "qp"]      # choices
//
// Every entry is checked as its option is; an error names FILE:LINE:COLUMN and the key.
// Unchanged without a file.
TuneOptions with_space_file(TuneOptions opt);

// Throws InputError for a bad option or a directory holding another tuning.
TuneOutcome run_tune(const TuneOptions& opt);

}  // namespace fabriclab::scenario
