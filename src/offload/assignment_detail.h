// The pieces of the optimized assignment that the exact one reuses: pass 1 (relays and
// forced groups), placement bookkeeping, the per-rank solve with its symmetry cache, and
// the emission of a schedule. Internal to src/offload.
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "offload/assignment.h"

namespace fabriclab::offload {

// A rank's view after pass 1: relays inserted, incrementers grouped (the members of a
// group must share a counter), groups in issue order, and the ops each group triggers.
struct GroupedView {
  RankView view;
  std::int32_t originals = 0;  // the ops before relays (split waits' parts included): 0..originals-1
  std::vector<std::pair<std::int32_t, std::int32_t>> waits;  // split host_waits (RankAssignment::waits)
  std::vector<std::pair<std::int32_t, std::int32_t>> relays;
  std::vector<std::vector<std::int32_t>> groups;  // members and groups sorted by key
  std::vector<std::vector<std::int32_t>> triggered;

  // Issue-order key: original op x is 2x + 1; a relay sits just before the op it feeds.
  std::int64_t key(std::int32_t x) const {
    if (x < originals) return 2 * static_cast<std::int64_t>(x) + 1;
    return 2 * static_cast<std::int64_t>(relays[static_cast<std::size_t>(x - originals)].first);
  }
};
// `split_waits`: every host_wait of two or more parents that nothing is ordered after is
// first split into one wait per parent (RankAssignment::waits), so that its parents need
// not share a counter.
GroupedView group_view(const RankView& v, bool split_waits = false);
// Whether the view has a host_wait that group_view(v, true) would split.
bool has_split_waits(const RankView& v);

// slack(op, parent) on a counter incremented by `inc` (> 0 iff safe); additive over
// disjoint incrementer sets.
std::int64_t pair_slack(const RankView& v, std::int32_t op, std::int32_t parent, const DynBitset& inc);

// Pass 2: the first fit of the groups, in issue order, on the counters in creation order
// (a group goes on the first counter where every pair triggered there stays safe with
// the groups placed so far). Counter of each group, numbered by first use.
std::vector<std::int32_t> first_fit_placement(const GroupedView& gv);

// One (op, parent) safety requirement of a placement: summed over the groups on the
// counter of `group` (the group whose counter triggers the op), the slack contributions
// `terms` (group, pair_slack of the group's members; non-zero ones only) must reach 1.
struct Requirement {
  std::size_t group;
  std::vector<std::pair<std::size_t, std::int64_t>> terms;
};
std::vector<Requirement> placement_requirements(const GroupedView& gv);

// A lower bound on the counters of any placement: groups that pairwise can never share
// a counter need one each. Groups t and h can never share one when a requirement r
// triggered by t fails even with every other group that would raise it joining them:
// pos(r) + min(c_t, 0) + min(c_h, 0) < 1, pos(r) the sum of r's positive terms. The
// largest clique of that graph found greedily from each group in turn is the bound.
std::int32_t clique_bound(std::size_t groups, const std::vector<Requirement>& reqs);

// Pass 3: for a rank of at most kMaxSearchGroups groups, a depth-first search for a
// placement on fewer counters than both `placement` and `beat`, with one fewer each time
// one is found, down to the clique bound, within the work left in `budget` (building the
// requirements: (op, parent) pairs x operations, and groups^2; searching: requirement
// terms read), which it lowers by the work done -- deterministic, not timed. Returns the
// best placement found (`placement` when none has fewer counters than both).
// assign_optimized gives each rank kSearchBudget for both forms of its host_waits.
inline constexpr std::size_t kMaxSearchGroups = 256;
inline constexpr std::size_t kSearchBudget = std::size_t{1} << 22;
std::vector<std::int32_t> search_placement(const GroupedView& gv, std::vector<std::int32_t> placement,
                                           std::size_t& budget,
                                           std::int32_t beat = std::numeric_limits<std::int32_t>::max());

// The counters a placement uses (counters numbered 0..k-1 per group): k.
std::int32_t counters_used(const std::vector<std::int32_t>& placement);

// Counters numbered 0..k-1 per group -> the rank's assignment with cumulative thresholds.
RankAssignment assignment_from_placement(const GroupedView& gv, const std::vector<std::int32_t>& counter_of_group);

// Solves every rank (global: each; local: each distinct structure once).
std::vector<RankAssignment> solve_per_rank(const Schedule& dag, std::vector<RankView>& views, Analysis analysis,
                                           const std::function<RankAssignment(const RankView&)>& solve);

Schedule emit_schedule(const Schedule& dag, const std::vector<RankView>& views, const std::vector<RankAssignment>& sol,
                       const std::string& strategy);

}  // namespace fabriclab::offload
