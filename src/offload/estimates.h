// Closed-form counter counts (triggered-ops.md section 4): how many counters each rank
// needs for a collective under the naive and the optimized (local analysis) strategies,
// from P and the options alone -- no DAG is built, so a library can ask at
// communicator-creation time. Each formula is per rank (a rank's class: tree position,
// fold role) and is derived in docs/offload-model.md; tests compare it with the
// allocator for every P in 2..256 and spot values up to 4096.
//
//   Estimate e = estimate_counters("allreduce", "ring", {.ranks = 512}, Strategy::optimized);
//   e.max;  // 1022
#pragma once

#include <string_view>
#include <vector>

#include "offload/assignment.h"
#include "offload/collectives.h"

namespace fabriclab::offload {

struct Estimate {
  std::vector<std::int64_t> per_rank;
  std::int64_t max = 0;
  std::int64_t total = 0;
};

// Formulas exist for every collective and algorithm, naive and optimized under the local
// analysis, with or without ordered channels and counted send completions. Throws
// InputError for the exact strategy and for anything build_schedule would reject
// (except a DAG too large to build).
Estimate estimate_counters(std::string_view collective, std::string_view algorithm, const BuildOptions& options,
                           Strategy strategy);

// Whether the optimized (local) estimate also holds once atomics are split into segments
// (split_atomics, as exec does for a NIC's atomic size): the segments of one transfer have
// its dependences and are concurrent, so they join its group and its counter, and only
// thresholds rise -- for every collective and option but Rabenseifner's allreduce with
// uncounted sends, whose local reduce atomics, once split, need more. Checked against the allocator
// (tests/offload/estimates_test.cc). Naive counts grow with the segments: no closed form.
bool estimate_holds_segmented(std::string_view collective, std::string_view algorithm, const BuildOptions& options);

}  // namespace fabriclab::offload
