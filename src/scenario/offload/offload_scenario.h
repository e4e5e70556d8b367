// An offload scenario: the timed NIC model (nicmodel/model.h) on a stream of non-blocking
// collectives, from a TOML file of declared parameters (`fabriclab offload --parameters`).
// The workload is generated -- `workload.count` collectives cycling through
// `workload.collectives` on `workload.ranks` ranks (rank r on NIC r), issued k at a time
// (`arrival = "in_flight"`: the next when one completes) or with Poisson gaps -- or read
// from a CSV file. Outputs in DIR:
//   collectives.csv  name,collective,algorithm,ranks,bytes,issue_ns,start_ns,done_ns,
//                    stall_ns,completion_ns,path,counters_max_per_nic
//   usage.csv        time_ns,counters_in_use,max_counters_on_a_nic,slots_in_use
//   usage.png, completion.png  those two, plotted (gnuplot; scripts beside them)
//   summary.json     resolved configuration, completion and stall statistics, offloaded
//                    and software counts, peak and mean counters in use, cache hit rate,
//                    makespan
#pragma once

#include <cstdint>
#include <string>

#include "core/units.h"
#include "nicmodel/model.h"
#include "nicmodel/params.h"
#include "offload/assignment.h"
#include "offload/options.h"
#include "scenario/parameters.h"

namespace fabriclab::scenario {

// Everything an offload scenario sets. The model's keys are declared in nicmodel/params.h;
// the workload's in offload_scenario.cc, the grid's too (the grid runs in grid.cc).
struct OffloadScenario {
  std::uint64_t seed = 1;  // sim.seed
  nicmodel::NicParams nic;
  nicmodel::Policy policy = nicmodel::Policy::stall;
  offload::Strategy strategy = offload::kDefaultStrategy;
  struct Workload {
    std::int64_t ranks = 64;
    std::string collectives = "allreduce:ring,allreduce:recursive_doubling,bcast:binomial";
    Bytes bytes = Bytes::from_count(64 << 10);
    std::int64_t count = 16;
    std::string arrival = "in_flight";  // in_flight, poisson, file
    std::int64_t in_flight = 4;
    Time mean_gap = Time::from_ps(10'000'000);  // 10 us
    std::string file;
  } workload;
  // The grid of `experiment` (lists, comma-separated; concurrency "" = no grid).
  struct Grid {
    std::string concurrency, ranks = "64", counters = "16,128,2048", cache_entries = "8,64,256",
                             strategies = "naive,optimized", policies = "stall,fallback",
                             collectives = "allreduce:recursive_doubling,allreduce:ring,bcast:binomial";
    std::int64_t max_ops = 4'000'000;
  } experiment;
};
using OffloadSetup = Resolved<OffloadScenario>;

const Parameters<OffloadScenario>& offload_parameters();

struct OffloadOutcome {
  std::size_t collectives = 0, offloaded = 0, software = 0;
  Time makespan, total_stall, completion_p50, completion_p99, completion_max;
  std::int64_t peak_counters_on_a_nic = 0;
  double cache_hit_rate = 0;
  double wall_seconds = 0;
};

// Writes the outputs when `out_dir` is not empty.
OffloadOutcome run_offload(const OffloadSetup& setup, const std::string& scenario, const std::string& out_dir);

// The grid of experiment.* (when experiment.concurrency is set): every point issues k
// copies of one collective at once; writes experiment.csv (one row per point) and
// report.md (how many run at once per budget, the stall and cache hits the optimized
// assignment saves, when falling back beats waiting) and completion_KIND_P.png (mean
// completion against collectives at once, per budget and policy). Returns the number of
// points. The points run in up to `jobs` worker processes (the outputs do not depend on
// how many).
std::size_t run_offload_experiment(const OffloadSetup& setup, const std::string& scenario, const std::string& out_dir,
                                   unsigned jobs = 2, bool quiet = false);

}  // namespace fabriclab::scenario
