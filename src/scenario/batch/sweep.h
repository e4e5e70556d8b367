// Sweeps: one fabric scenario run at every point of a cartesian product of parameter
// values, in parallel worker processes, into one table.
//
//   fabriclab sweep incast.toml --vary switch.buffer=2MiB,4MiB --vary nic.congestion_control=none,dcqcn
//
// DIR/sweep.json   the scenario, the --vary and --set lists, and every point (its values, its seed)
// DIR/points/pNNNN the point's outputs (summary.json, flows.csv, ports.csv)
// DIR/sweep.csv    one row per point: point, the varied values, seed, status, then the
//                  first metrics (kFirstSweepColumns: goodput_gbps, FCTs, pauses, ...)
//                  and every other metric of its summary.json (flattened, "totals.drops";
//                  the echoed configuration left out -- the varied values are before)
// DIR/report.md    per varied key, a plot of one metric (goodput_gbps unless --metric)
//                  against its values, a line per combination of the other keys', and
//                  the table of the same numbers (sweep_report.h); written last
//
// Points are numbered in order, the first --vary changing slowest. Each point's seed is
// drawn from the scenario's sim.seed and the values in which the point differs from the
// scenario (so adding a value to a list, or a dimension that includes the scenario's own
// value, keeps the other points' seeds and results), unless sim.seed itself is varied. A point whose
// summary.json is complete is not run again: an interrupted sweep resumes where it
// stopped, naming the points that were running then (DIR/points.log); a directory
// holding a different sweep is refused.
//
// Launched by mpirun or srun, every rank runs `fabriclab sweep` with the same arguments:
// rank 0 hands the points out, the biggest first (hosts x bytes, roughly), to a free
// worker process of any rank (--jobs per rank) as it asks, and writes sweep.json,
// points.log and sweep.csv -- the same rows in the same order as on one machine. The
// points' directories must be on a file system every rank sees.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scenario/parameters.h"

namespace fabriclab::scenario {

// Runs `fabric_parameters()` scenarios: the file with each entry of `points` (a list of
// key=value overrides after `sets`) into dirs[i], `jobs` at a time, the biggest first
// (over MPI ranks too: run_across_ranks), progress per finished point on stderr when
// `progress`. Returns each point's status: 0 ok, 1 a lossless drop or a PFC deadlock, 2
// bad input (message on stderr), 3 internal error; on MPI ranks other than 0, nothing.
std::vector<int> run_scenario_points(const std::string& scenario, const std::vector<std::string>& sets,
                                     const std::vector<std::vector<std::string>>& points,
                                     const std::vector<std::string>& dirs, unsigned jobs, const std::string& label,
                                     bool progress);

// Whether a run's summary.json is there and whole (written last, so the run finished).
bool complete_summary(const std::filesystem::path& summary);

// summary.json flattened to "a.b" -> value text, in document order; `skip` names
// top-level or dotted keys to leave out.
std::vector<std::pair<std::string, std::string>> flatten_summary(const nlohmann::json& j,
                                                                 const std::vector<std::string>& skip);

// A metric's text (a summary's value, a weight or a bound a user typed) as a number: the
// whole text a finite number, else none ("", "null", "dcqcn", "1e999").
std::optional<double> metric_number(const std::string& text);

// The metrics derived from a run's flattened summary: goodput_gbps (data bytes arrived x
// 8 / the simulated end), when the summary has both. What sweep.csv's first columns and
// tune's objectives name beside summary.json's own.
std::vector<std::pair<std::string, double>> derived_metrics(const std::map<std::string, double>& summary);

// sweep.csv's first metric columns, after the point's values, seed and status: what a
// user asks of a sweep first. Every other metric of summary.json follows.
inline const std::vector<std::string> kFirstSweepColumns = {"goodput_gbps",
                                                            "flows.finished",
                                                            "flows.fct_ns_p50",
                                                            "flows.fct_ns_p99",
                                                            "flows.fct_ns_max",
                                                            "totals.pfc_pause_frames",
                                                            "totals.ecn_marks",
                                                            "congestion_control.cnps_sent",
                                                            "totals.lossless_drops",
                                                            "totals.drops",
                                                            "totals.max_switch_queue_bytes"};

struct SweepOptions {
  std::string scenario = {};
  std::vector<std::string> vary = {};  // "key=v1,v2,..."
  std::vector<std::string> sets = {};  // "key=value", applied to every point
  std::string out_dir = {};
  unsigned jobs = 2;
  bool progress = true;
  std::string metric = "goodput_gbps";  // report.md's: a column of sweep.csv
};

struct SweepOutcome {
  bool root = true;  // false on the MPI ranks other than 0, which write and report nothing
  std::size_t points = 0, ran = 0, skipped = 0;
  std::vector<std::string> failed;  // points whose run failed (bad input, internal error)
  std::vector<std::string> unsafe;  // points with a lossless drop or a PFC deadlock
  std::string csv;                  // DIR/sweep.csv
  std::string report;               // DIR/report.md
};

// Throws InputError for an unknown key, a value that does not parse (naming the --vary),
// or a directory holding another sweep; and, after writing sweep.csv, for a metric that
// is not one of its columns (the points are kept: the sweep run again only redraws).
SweepOutcome run_sweep(const SweepOptions& opt);

}  // namespace fabriclab::scenario
