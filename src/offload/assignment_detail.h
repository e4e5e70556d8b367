// The pieces of the optimized assignment that the exact one reuses: pass 1 (relays and
// forced groups), placement bookkeeping, the per-rank solve with its symmetry cache, and
// the emission of a schedule. Internal to src/offload.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "offload/assignment.h"

namespace fabriclab::offload {

// A rank's view after pass 1: relays inserted, incrementers grouped (the members of a
// group must share a counter), groups in issue order, and the ops each group triggers.
struct GroupedView {
  RankView view;
  std::int32_t originals = 0;  // the ops before relays: 0..originals-1
  std::vector<std::pair<std::int32_t, std::int32_t>> relays;
  std::vector<std::vector<std::int32_t>> groups;  // members and groups sorted by key
  std::vector<std::vector<std::int32_t>> triggered;

  // Issue-order key: original op x is 2x + 1; a relay sits just before the op it feeds.
  std::int64_t key(std::int32_t x) const {
    if (x < originals) return 2 * static_cast<std::int64_t>(x) + 1;
    return 2 * static_cast<std::int64_t>(relays[static_cast<std::size_t>(x - originals)].first);
  }
};
GroupedView group_view(const RankView& v);

// slack(op, parent) on a counter incremented by `inc` (> 0 iff safe); additive over
// disjoint incrementer sets.
std::int64_t pair_slack(const RankView& v, std::int32_t op, std::int32_t parent, const DynBitset& inc);

// Counters numbered 0..k-1 per group -> the rank's assignment with cumulative thresholds.
RankAssignment assignment_from_placement(const GroupedView& gv, const std::vector<std::int32_t>& counter_of_group);

// Solves every rank (global: each; local: each distinct structure once).
std::vector<RankAssignment> solve_per_rank(const Schedule& dag, std::vector<RankView>& views, Analysis analysis,
                                           const std::function<RankAssignment(const RankView&)>& solve);

Schedule emit_schedule(const Schedule& dag, const std::vector<RankView>& views, const std::vector<RankAssignment>& sol,
                       const std::string& strategy);

}  // namespace fabriclab::offload
