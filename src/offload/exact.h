// The exact strategy (triggered-ops.md section 2): the minimum number of counters per
// rank, proven by the z3 SMT solver, to measure how far the optimized strategy is from
// optimal.
//
// It solves the same problem as the optimized strategy's passes 2 and 3, for each form of
// the rank's host_waits (whole, or split per counter; group_view): pass 1's relays and
// forced groups are kept, and each group is placed on one of K counters so that every
// operation triggered on a counter stays safe (the slack of every (op, parent) pair
// summed over the groups on that counter is positive). K counts up from a clique bound
// (groups that can never share a counter need one each); the first satisfiable K is the
// minimum. Each solver call has a deterministic resource budget
// (z3's rlimit, not wall time, so results do not depend on machine load); when one runs
// out the rank keeps the optimized placement and reports the lower bound it proved.
//
//   ExactResult r = assign_exact(dag, {.analysis = Analysis::local});
//   r.ranks[3].proven_minimum;  // true when counters[3] is optimal
#pragma once

#include <vector>

#include "offload/assignment.h"

namespace fabriclab::offload {

struct ExactOptions {
  Analysis analysis = Analysis::local;
  unsigned rlimit_per_check = 20'000'000;  // z3 resource units for each solver call (one per K)
  // For tests of the SAT encoding alone: K from 1 (every smaller K refuted by z3, not by
  // the clique bound), and the first fit (pass 2) as the upper bound, so that z3 has
  // placements to find where the search of pass 3 would have found them.
  bool clique_bound = true;
  bool from_first_fit = false;
};

struct ExactRank {
  std::int32_t counters = 0;     // what the schedule uses on this rank
  std::int32_t optimized = 0;    // what the optimized strategy uses (from_first_fit: the first fit)
  std::int32_t lower_bound = 0;  // proven: no assignment uses fewer
  bool proven_minimum = false;   // counters == lower_bound
};

struct ExactResult {
  Schedule schedule;
  std::vector<ExactRank> ranks;
  bool all_proven() const;
};

ExactResult assign_exact(const Schedule& dag, const ExactOptions& opt = {});

}  // namespace fabriclab::offload
