// Counter assignment: realises a dependence DAG on per-rank hardware counters
// (triggered-ops.md section 2).
//
// - naive: one completion counter per operation; an operation with two or more parents
//   gets its own trigger counter fed by one cntr_add relay per parent.
// - optimized: dependence-aware, three passes. Pass 1 unions the parent set of every
//   operation into groups that must share a completion counter; a group that fails the
//   exact safety rule is split by relaying (cntr_add) one of the operations that forced
//   it, chosen as the one with most parents. Pass 2 walks the groups in issue order and
//   puts each on the first existing counter of its rank on which every operation
//   triggered there stays safe, else on a new counter. Thresholds are the cumulative
//   counts. Pass 3, for a rank of at most 256 groups: a depth-first search for a
//   placement on fewer counters, within a fixed budget of work (assignment_detail.h).
//   Such a rank is also solved with its closing host_wait split into one wait per
//   counter (RankAssignment::waits), kept where that needs fewer counters.
//   Never uses more counters (or relays) than naive.
// - exact: the minimum for the same relays and groups, proven by SAT (exact.h).
//
//   Schedule dag = build_schedule("allreduce", "ring", {.ranks = 8});
//   Schedule s = assign_counters(dag, Strategy::optimized, {.analysis = Analysis::local});
#pragma once

#include <string_view>

#include "core/params.h"
#include "offload/happens_before.h"
#include "offload/schedule.h"

namespace fabriclab::offload {

enum class Strategy : std::uint8_t { naive, optimized, exact };
inline constexpr params::EnumNames<Strategy, 3> kStrategyNames{
    {{Strategy::naive, "naive"}, {Strategy::optimized, "optimized"}, {Strategy::exact, "exact"}}};
std::string_view to_string(Strategy s);  // parsing: offload/options.h, by use

struct AssignOptions {
  Analysis analysis = Analysis::local;
};

// The DAG must validate (validate(dag, false)); its counters, if any, are ignored.
// Throws InputError (check_assignable) for a DAG no counters can realise.
Schedule assign_counters(const Schedule& dag, Strategy strategy, const AssignOptions& opt = {});

// What a DAG needs beyond validate(dag, false) to be assigned counters: every dependence
// observable (not an uncounted put/get/atomic, not a cntr_add of 0) and every host_wait
// waiting for something. Throws InputError naming the operations.
void check_assignable(const Schedule& dag);

// The solution for one rank, in the rank's local indices (n operations). A host_wait of
// several parents may be split into one wait per counter: part j is the extra local
// operation n + j, a part of host_wait `waits[j].first` waiting for its parent
// `waits[j].second` (the op itself keeps its first parent); parts on one counter are
// emitted as one host_wait. Relay k is the extra local operation n + waits.size() + k;
// it relays `relays[k].second` (a parent) to `relays[k].first`.
struct RankAssignment {
  std::int32_t counters = 0;
  std::vector<std::pair<std::int32_t, std::int32_t>> waits;
  std::vector<std::pair<std::int32_t, std::int32_t>> relays;
  std::vector<std::int32_t> increments;  // per op (and relay): counter, or -1
  std::vector<std::int32_t> trigger;     // per op (and relay): counter, or -1
  std::vector<std::int64_t> threshold;
  // exact only: whether `counters` is a proven minimum, the best lower bound proven, and
  // what the optimized strategy uses (the upper bound the search starts from).
  bool proven_minimum = false;
  std::int32_t lower_bound = 0;
  std::int32_t optimized = 0;
};

RankAssignment assign_naive(const RankView& v);
// `v` must carry anc/desc (compute_order).
RankAssignment assign_optimized(const RankView& v);

}  // namespace fabriclab::offload
