// The concurrency grid of an offload scenario (experiment.*, run by
// run_offload_experiment): its axes, one row per point as experiment.csv lists it, and
// report.md with its plots, written from the rows.
//
//   GridAxes axes = grid_axes(setup);  // InputError naming a bad list
//   ... one GridRow per point, simulated or not ...
//   write_grid_report(dir, scenario, setup.config, axes, rows);
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/units.h"
#include "scenario/offload/offload_scenario.h"

namespace fabriclab::scenario::offload_internal {

// The lists of experiment.*, in the order the grid walks them (kinds, ranks, strategies,
// then budgets, caches, policies, ks).
struct GridAxes {
  std::vector<std::int64_t> ks, ranks, budgets, caches;
  std::vector<std::string> strategies, policies, kinds;  // kinds: COLLECTIVE:ALGORITHM
  std::int64_t max_ops = 0;
};

// InputError naming where a list was set if it is empty, not positive integers, or names
// a policy other than stall and fallback.
GridAxes grid_axes(const OffloadSetup& setup);

struct GridRow {
  std::string collective, algorithm, strategy, policy;
  std::int64_t ranks = 0, counters = 0, cache = 0, k = 0;
  std::int64_t counters_per_nic = 0;  // one collective's most on a NIC
  bool simulated = false, never_fits = false;
  std::int64_t max_concurrent = 0, software = 0;
  Time makespan, stall, mean_completion;
  double hit_rate = 0;
};

// Microseconds with one decimal, as experiment.csv and report.md write them.
std::string us_text(Time t);

// report.md (what was varied and measured; how many run at once per budget; the stall and
// cache hits the optimized assignment saves; when falling back beats waiting) and the
// completion_KIND_P plots it shows, in `dir`.
void write_grid_report(const std::filesystem::path& dir, const std::string& scenario, const Config& cfg,
                       const GridAxes& axes, const std::vector<GridRow>& rows);

}  // namespace fabriclab::scenario::offload_internal
