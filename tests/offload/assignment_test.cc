#include "offload/assignment.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "core/error.h"
#include "offload/assignment_detail.h"
#include "offload/collectives.h"
#include "offload/schedule_io.h"
#include "offload/verifier.h"
#include "test_util.h"

namespace fabriclab::offload {
namespace {

Schedule assigned(const std::string& c, const std::string& a, BuildOptions o, Strategy s,
                  Analysis an = Analysis::local) {
  return assign_counters(build_schedule(c, a, o), s, {.analysis = an});
}

// Known results of triggered-ops.md section 2, and ones derived by hand in
// docs/offload-model.md.
TEST(Assignment, TreesNeedOneCounterPerRankAfterOptimization) {
  for (Rank p = 2; p <= 70; ++p) {
    SCOPED_TRACE("P=" + std::to_string(p));
    for (auto [c, a] : {std::pair{"bcast", "binomial"}, {"bcast", "knomial"}, {"reduce", "binomial"}}) {
      const auto s = assigned(c, a, {.ranks = p, .root = p / 3}, Strategy::optimized);
      EXPECT_EQ(s.counter_summary().max, 1) << c << "/" << a;
      EXPECT_EQ(s.counter_summary().total, p) << c << "/" << a;
      EXPECT_EQ(s.relay_count(), 0u);
    }
  }
}

TEST(Assignment, NaiveBinomialBroadcastOnEightRanksByHand) {
  // Root 0 puts to 4, 2, 1: three completion counters plus a trigger counter for its
  // host_wait (3 relays). Rank 4: arrival and puts to 6, 5, plus a trigger counter
  // (2 relays). Ranks 2 and 6: arrival and one put, the host_wait waits on the put
  // alone. Ranks 1, 3, 5, 7: one arrival.
  const auto s = assigned("bcast", "binomial", {.ranks = 8}, Strategy::naive);
  EXPECT_EQ(s.counter_summary().per_rank, (std::vector<std::int64_t>{4, 1, 2, 1, 4, 1, 2, 1}));
  EXPECT_EQ(s.relay_count(), 5u);
}

TEST(Assignment, NaiveCountsAreIncrementersPlusMergePoints) {
  for (const auto& info : algorithms()) {
    for (Rank p : {2, 5, 8, 13}) {
      const Schedule dag = build_schedule(info.collective, info.algorithm, {.ranks = p});
      std::vector<std::int64_t> expect(static_cast<std::size_t>(p), 0);
      std::size_t relays = 0;
      for (std::size_t i = 0; i < dag.size(); ++i) {
        const Op& o = dag.op(static_cast<OpId>(i));
        const bool incrementer = o.kind == OpKind::arrival || (is_data_op(o.kind) && o.counted);
        const auto parents = o.kind == OpKind::arrival ? 0 : dag.deps(static_cast<OpId>(i)).size();
        expect[static_cast<std::size_t>(o.rank)] += (incrementer ? 1 : 0) + (parents >= 2 ? 1 : 0);
        if (parents >= 2) relays += parents;
      }
      const auto s = assign_counters(dag, Strategy::naive);
      EXPECT_EQ(s.counter_summary().per_rank, expect) << info.collective << "/" << info.algorithm;
      EXPECT_EQ(s.relay_count(), relays);
    }
  }
}

TEST(Assignment, RecursiveDoublingKeepsOneCounterPerLevel) {
  // Level j's partner may send before my level-i data lands (i < j), so no two levels
  // share a counter: log2 P counters, the last shared with the host's wait.
  for (int k = 1; k <= 7; ++k) {
    const Rank p = 1 << k;
    for (Analysis an : {Analysis::local, Analysis::global}) {
      if (an == Analysis::global && p > 64) continue;
      const auto s = assigned("allreduce", "recursive_doubling", {.ranks = p}, Strategy::optimized, an);
      EXPECT_EQ(s.counter_summary().max, k) << "P=" << p;
      EXPECT_EQ(s.counter_summary().total, k * p);
    }
  }
}

TEST(Assignment, OrderedChannelsLetRingShareOneCounter) {
  for (Rank p : {3, 4, 8, 17}) {
    BuildOptions o{.ranks = p, .ordered_channels = true};
    // In-order arrivals share one counter with cumulative thresholds; the counted sends
    // (concurrent with the arrivals) take a second one.
    EXPECT_EQ(assigned("allreduce", "ring", o, Strategy::optimized).counter_summary().max, 2);
    o.count_send_completions = false;
    EXPECT_EQ(assigned("allreduce", "ring", o, Strategy::optimized).counter_summary().max, 1);
    // Without ordering every arrival but the last needs its own counter (local analysis).
    BuildOptions plain{.ranks = p};
    plain.count_send_completions = false;
    EXPECT_EQ(assigned("allreduce", "ring", plain, Strategy::optimized).counter_summary().max, 2 * (p - 1));
  }
}

TEST(Assignment, AllAtOnceAlltoallPutsEverythingOnOneCounter) {
  const auto s = assigned("alltoall", "all_at_once", {.ranks = 9}, Strategy::optimized);
  EXPECT_EQ(s.counter_summary().max, 1);
  // Each host waits for 8 sends and 8 arrivals: threshold 16.
  int waits = 0;
  for (const Op& o : s.ops())
    if (o.kind == OpKind::host_wait) {
      EXPECT_EQ(o.threshold, 16);
      ++waits;
    }
  EXPECT_EQ(waits, 9);
}

TEST(Assignment, ThresholdsAreCumulativeCounts) {
  // Binomial bcast, P = 8: rank 4 receives from 0 and forwards to 6 and 5; its one
  // counter counts the arrival (1), then the two put completions (3).
  const auto s = assigned("bcast", "binomial", {.ranks = 8}, Strategy::optimized);
  int puts = 0, waits = 0;
  for (const Op& o : s.ops()) {
    if (o.rank != 4) continue;
    if (o.kind == OpKind::put) {
      EXPECT_EQ(o.threshold, 1);
      ++puts;
    }
    if (o.kind == OpKind::host_wait) {
      EXPECT_EQ(o.threshold, 3);
      ++waits;
    }
  }
  EXPECT_EQ(puts, 2);
  EXPECT_EQ(waits, 1);
}

TEST(Assignment, OptimizedNeverUsesMoreThanNaiveAndAlwaysVerifies) {
  for (const auto& info : algorithms()) {
    for (Rank p : {2, 3, 4, 5, 6, 7, 8, 11, 16, 24}) {
      for (bool counted : {true, false}) {
        BuildOptions o{.ranks = p};
        o.count_send_completions = counted;
        SCOPED_TRACE(info.collective + "/" + info.algorithm + " P=" + std::to_string(p));
        const Schedule dag = build_schedule(info.collective, info.algorithm, o);
        const auto naive = assign_counters(dag, Strategy::naive);
        for (Analysis an : {Analysis::local, Analysis::global}) {
          const auto opt = assign_counters(dag, Strategy::optimized, {.analysis = an});
          const auto cn = naive.counter_summary(), co = opt.counter_summary();
          for (Rank r = 0; r < p; ++r)
            EXPECT_LE(co.per_rank[static_cast<std::size_t>(r)], cn.per_rank[static_cast<std::size_t>(r)]);
          EXPECT_LE(opt.relay_count(), naive.relay_count());
          const auto rep = verify(opt, {.analysis = an, .random_runs = 4, .exhaustive_state_limit = 0});
          EXPECT_TRUE(rep.ok()) << (rep.violations.empty() ? "" : rep.violations[0].message);
        }
      }
    }
  }
}

TEST(Assignment, RankSymmetryCacheGivesWhatEachRankAloneGives) {
  // The local analysis solves each distinct rank structure once; solving every rank on
  // its own must give the same counters.
  for (auto [c, a] :
       {std::pair{"allreduce", "rabenseifner"}, {"allreduce", "binomial"}, {"allgather", "recursive_doubling"}}) {
    const Schedule dag = build_schedule(c, a, {.ranks = 11});
    const Schedule s = assign_counters(dag, Strategy::optimized);
    auto views = rank_views(dag);
    for (auto& v : views) {
      compute_local_order(v);
      EXPECT_EQ(assign_optimized(v).counters, s.counter_summary().per_rank[static_cast<std::size_t>(v.rank)])
          << c << "/" << a << " rank " << v.rank;
    }
  }
}

TEST(Assignment, IsDeterministic) {
  const Schedule dag = build_schedule("allreduce", "rabenseifner", {.ranks = 12});
  EXPECT_EQ(schedule_to_json(assign_counters(dag, Strategy::optimized)).dump(),
            schedule_to_json(assign_counters(dag, Strategy::optimized)).dump());
}

// ---------------------------------------------------------------------------------------
// The optimized assignment against its definition, on random ranks.

// Strict reachability of a graph given by predecessor lists: reach[x][y] iff y precedes x.
std::vector<std::vector<char>> ancestors_by_definition(const std::vector<std::vector<std::int32_t>>& pred) {
  const auto n = pred.size();
  std::vector<std::vector<char>> anc(n, std::vector<char>(n, 0));
  for (std::size_t x = 0; x < n; ++x) {
    std::vector<std::int32_t> todo(pred[x].begin(), pred[x].end());
    while (!todo.empty()) {
      const auto y = static_cast<std::size_t>(todo.back());
      todo.pop_back();
      if (anc[x][y]) continue;
      anc[x][y] = 1;
      todo.insert(todo.end(), pred[y].begin(), pred[y].end());
    }
  }
  return anc;
}

// Ancestors by definition of a rank's graph: its parents and, for the first ops, the
// transport orderings `after` (a view extended with relays has none for the relays).
std::vector<std::vector<char>> ancestors_by_definition(const RankView& v,
                                                       const std::vector<std::vector<std::int32_t>>& after) {
  std::vector<std::vector<std::int32_t>> pred(v.parents);
  for (std::size_t i = 0; i < after.size(); ++i) pred[i].insert(pred[i].end(), after[i].begin(), after[i].end());
  return ancestors_by_definition(pred);
}

// The view's anc/desc against a closure: anc[x][y] iff y precedes x.
::testing::AssertionResult order_is(const RankView& v, const std::vector<std::vector<char>>& anc) {
  for (std::size_t x = 0; x < v.ops.size(); ++x)
    for (std::size_t y = 0; y < v.ops.size(); ++y)
      if (v.anc[x].test(y) != (anc[x][y] != 0) || v.desc[y].test(x) != (anc[x][y] != 0))
        return ::testing::AssertionFailure() << "rank " << v.rank << ": op " << y << " before op " << x << " is "
                                             << (anc[x][y] != 0) << " in H, not in anc/desc";
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult same_assignment(const RankAssignment& got, const RankAssignment& want) {
  if (got.counters != want.counters)
    return ::testing::AssertionFailure() << got.counters << " counters, not " << want.counters;
  if (got.relays != want.relays) return ::testing::AssertionFailure() << "other relays";
  for (std::size_t i = 0; i < want.increments.size(); ++i)
    if (got.increments[i] != want.increments[i] || got.trigger[i] != want.trigger[i] ||
        got.threshold[i] != want.threshold[i])
      return ::testing::AssertionFailure()
             << "op " << i << ": increments " << got.increments[i] << " triggers on " << got.trigger[i] << " at "
             << got.threshold[i] << ", not " << want.increments[i] << ", " << want.trigger[i] << " at "
             << want.threshold[i];
  if (got.increments.size() != want.increments.size()) return ::testing::AssertionFailure() << "other sizes";
  return ::testing::AssertionSuccess();
}

// A random rank in issue order: arrivals (no local parents), counted puts, counter adds
// (weighing 1, or 1..3 when `heavy`) and host waits, each non-arrival with up to three
// earlier incrementers as parents (merges need relays), and now and then a transport
// ordering after an earlier op. `chain_like`: up to 200 ops, mostly each after the
// previous incrementer (cut points, so pairs retire), few arrivals, and sometimes a host
// wait over 65 to 80 of them (a group of more than 64 members).
RankView random_view(std::mt19937_64& rng, bool heavy, bool chain_like) {
  RankView v;
  const std::size_t n = chain_like ? 60 + rng() % 140 : 2 + rng() % 40;
  std::vector<std::int32_t> incrementers;
  for (std::size_t i = 0; i < n; ++i) {
    const auto r = rng() % 20;
    OpKind k = chain_like ? (r < 1    ? OpKind::arrival
                             : r < 5  ? OpKind::put
                             : r < 19 ? OpKind::cntr_add
                                      : OpKind::host_wait)
                          : (r < 6    ? OpKind::arrival
                             : r < 12 ? OpKind::put
                             : r < 16 ? OpKind::cntr_add
                                      : OpKind::host_wait);
    if (k == OpKind::host_wait && incrementers.empty()) k = OpKind::put;
    v.ops.push_back(static_cast<OpId>(i));
    v.kind.push_back(k);
    v.weight.push_back(k == OpKind::cntr_add && heavy ? static_cast<std::int64_t>(1 + rng() % 3) : 1);
    v.has_heavy_weights |= v.weight.back() != 1;
    v.incrementer.push_back(k != OpKind::host_wait);
    v.parents.emplace_back();
    v.after.emplace_back();
    auto& par = v.parents[i];
    const auto add_parent = [&](std::int32_t p) {
      if (std::find(par.begin(), par.end(), p) == par.end()) par.push_back(p);
    };
    if (k != OpKind::arrival && !incrementers.empty()) {
      if (chain_like) {
        if (rng() % 10 != 0) add_parent(incrementers.back());
        if (rng() % 10 == 0 || par.empty()) add_parent(incrementers[rng() % incrementers.size()]);
        if (k == OpKind::host_wait && incrementers.size() >= 80 && rng() % 3 == 0)
          for (std::size_t want = 65 + rng() % 16; par.size() < want;)
            add_parent(incrementers[rng() % incrementers.size()]);
      } else {
        const std::size_t want = k == OpKind::host_wait ? 1 + rng() % 3 : rng() % 3;
        for (std::size_t j = 0; j < want; ++j) add_parent(incrementers[rng() % incrementers.size()]);
      }
    }
    if (i > 0 && rng() % (chain_like ? 40 : 8) == 0) v.after[i].push_back(static_cast<std::int32_t>(rng() % i));
    if (v.incrementer[i]) incrementers.push_back(static_cast<std::int32_t>(i));
  }
  return v;
}

// slack(o, p) on a counter incremented by `inc`, by the definition (triggered-ops.md
// section 1): what must precede o and follows p, less what is neither.
std::int64_t slack_by_definition(const RankView& v, const std::vector<std::vector<char>>& anc, std::int32_t o,
                                 std::int32_t p, const std::vector<std::int32_t>& inc) {
  std::int64_t s = 0;
  for (auto x : inc) {
    const auto xi = static_cast<std::size_t>(x);
    const bool before_o = anc[static_cast<std::size_t>(o)][xi] != 0;
    const bool after_p = x == p || anc[xi][static_cast<std::size_t>(p)] != 0;
    if (before_o && after_p) s += v.weight[xi];
    if (!before_o && !after_p) s -= v.weight[xi];
  }
  return s;
}

// Whether every (op, parent) pair keeps positive slack with the groups placed on
// counters as `counter_of_group` says, recomputed from scratch.
bool safe_by_definition(const GroupedView& gv, const std::vector<std::vector<char>>& anc,
                        const std::vector<std::int32_t>& counter_of_group) {
  const RankView& v = gv.view;
  std::vector<std::vector<std::int32_t>> inc;  // per counter
  for (std::size_t g = 0; g < gv.groups.size(); ++g) {
    const auto k = static_cast<std::size_t>(counter_of_group[g]);
    if (k >= inc.size()) inc.resize(k + 1);
    inc[k].insert(inc[k].end(), gv.groups[g].begin(), gv.groups[g].end());
  }
  for (std::size_t g = 0; g < gv.groups.size(); ++g)
    for (auto o : gv.triggered[g])
      for (auto p : v.parents[static_cast<std::size_t>(o)])
        if (slack_by_definition(v, anc, o, p, inc[static_cast<std::size_t>(counter_of_group[g])]) <= 0) return false;
  return true;
}

// The counter of each group in an assignment.
std::vector<std::int32_t> placement_of(const GroupedView& gv, const RankAssignment& a) {
  std::vector<std::int32_t> out;
  for (const auto& g : gv.groups) out.push_back(a.increments[static_cast<std::size_t>(g[0])]);
  return out;
}

// The fewest counters by the definition: every partition of the groups onto counters,
// judged by safe_by_definition.
std::int32_t fewest_by_definition(const GroupedView& gv, const std::vector<std::vector<char>>& anc) {
  std::int32_t best = static_cast<std::int32_t>(gv.groups.size()) + 1;
  testing::for_each_partition(gv.groups.size(), [&](const std::vector<std::int32_t>& place) {
    const std::int32_t used = counters_used(place);
    if (used < best && safe_by_definition(gv, anc, place)) best = used;
  });
  return best;
}

// The enumeration the brute forces rely on: each partition once, so Bell(n) of them.
TEST(Assignment, PartitionsAreEnumeratedOnceEach) {
  const std::vector<std::size_t> bell = {1, 1, 2, 5, 15, 52, 203, 877};  // Bell numbers B(0)..B(7)
  for (std::size_t n = 0; n < bell.size(); ++n) {
    std::set<std::vector<std::int32_t>> seen;
    std::size_t calls = 0;
    testing::for_each_partition(n, [&](const std::vector<std::int32_t>& place) {
      ++calls;
      seen.insert(place);
      for (std::size_t i = 0; i < place.size(); ++i)
        EXPECT_LE(place[i], counters_used({place.begin(), place.begin() + static_cast<std::ptrdiff_t>(i)}));
    });
    EXPECT_EQ(calls, bell[n]) << "n = " << n;
    EXPECT_EQ(seen.size(), bell[n]) << "n = " << n;
  }
}

RankAssignment first_fit_by_definition(const GroupedView& gv, const std::vector<std::vector<char>>& anc) {
  const RankView& v = gv.view;
  const auto m = static_cast<std::size_t>(v.size());
  std::vector<std::vector<std::int32_t>> inc;    // per counter
  std::vector<std::vector<std::size_t>> groups;  // per counter
  std::vector<std::int32_t> counter_of_group(gv.groups.size(), -1);
  for (std::size_t gi = 0; gi < gv.groups.size(); ++gi) {
    std::size_t k = 0;
    for (; k < inc.size(); ++k) {
      auto with = inc[k];
      with.insert(with.end(), gv.groups[gi].begin(), gv.groups[gi].end());
      auto on_k = groups[k];
      on_k.push_back(gi);
      bool ok = true;
      for (auto h : on_k)
        for (auto o : gv.triggered[h])
          for (auto p : v.parents[static_cast<std::size_t>(o)]) ok = ok && slack_by_definition(v, anc, o, p, with) > 0;
      if (ok) break;
    }
    if (k == inc.size()) {
      inc.emplace_back();
      groups.emplace_back();
    }
    inc[k].insert(inc[k].end(), gv.groups[gi].begin(), gv.groups[gi].end());
    groups[k].push_back(gi);
    counter_of_group[gi] = static_cast<std::int32_t>(k);
  }
  RankAssignment a;
  a.counters = static_cast<std::int32_t>(inc.size());
  a.relays = gv.relays;
  a.increments.assign(m, -1);
  a.trigger.assign(m, -1);
  a.threshold.assign(m, 0);
  for (std::size_t gi = 0; gi < gv.groups.size(); ++gi) {
    for (auto x : gv.groups[gi]) a.increments[static_cast<std::size_t>(x)] = counter_of_group[gi];
    for (auto o : gv.triggered[gi]) {
      a.trigger[static_cast<std::size_t>(o)] = counter_of_group[gi];
      for (auto x : inc[static_cast<std::size_t>(counter_of_group[gi])])
        if (anc[static_cast<std::size_t>(o)][static_cast<std::size_t>(x)])
          a.threshold[static_cast<std::size_t>(o)] += v.weight[static_cast<std::size_t>(x)];
    }
  }
  return a;
}

RankAssignment first_fit(const GroupedView& gv) { return assignment_from_placement(gv, first_fit_placement(gv)); }

// The closure (compute_local_order, then the relays' extension) and the placement of
// pass 2 (retired pairs, slack by runs of ancestors) against their definitions.
TEST(Assignment, FirstFitIsFirstFitByTheDefinitionOnRandomRanks) {
  std::mt19937_64 rng(2026);
  int with_relays = 0, shared = 0, large_groups = 0;
  for (int round = 0; round < 400; ++round) {
    RankView v = random_view(rng, round % 3 == 0, round % 2 == 1);
    SCOPED_TRACE(::testing::Message() << "round " << round);
    compute_local_order(v);
    ASSERT_TRUE(order_is(v, ancestors_by_definition(v, v.after)));
    // Extended with relays: a relayed op's parents are its relays, each relay's its parent.
    const GroupedView gv = group_view(v);
    const auto anc = ancestors_by_definition(gv.view, v.after);
    ASSERT_TRUE(order_is(gv.view, anc));
    const RankAssignment got = first_fit(gv);
    EXPECT_TRUE(same_assignment(got, first_fit_by_definition(gv, anc)));
    with_relays += !gv.relays.empty();
    shared += got.counters < static_cast<std::int32_t>(gv.groups.size());
    for (const auto& g : gv.groups) large_groups += g.size() > 64;
  }
  // The draw covers what pass 1 relays, counters shared by several groups, and groups
  // weighed as bitsets (more than 64 members).
  EXPECT_GT(with_relays, 40);
  EXPECT_GT(shared, 200);
  EXPECT_GT(large_groups, 5);
}

// The placement under the global analysis, where local indices need not be a linear
// extension of H (arrivals placed before their first consumer, transport orderings):
// against first fit by the definition over the same order.
TEST(Assignment, FirstFitIsFirstFitByTheDefinitionUnderTheGlobalOrder) {
  for (const auto& info : algorithms())
    for (Rank p : {3, 5, 6})
      for (bool ordered : {false, true}) {
        const Schedule dag = build_schedule(info.collective, info.algorithm, {.ranks = p, .ordered_channels = ordered});
        auto views = rank_views(dag);
        compute_order(dag, Analysis::global, views);
        for (const auto& v : views) {
          SCOPED_TRACE(info.collective + "/" + info.algorithm + " P=" + std::to_string(p) + " rank " +
                       std::to_string(v.rank));
          const GroupedView gv = group_view(v);
          const auto m = static_cast<std::size_t>(gv.view.size());
          std::vector<std::vector<char>> anc(m, std::vector<char>(m, 0));
          for (std::size_t x = 0; x < m; ++x) gv.view.anc[x].for_each([&](std::size_t y) { anc[x][y] = 1; });
          ASSERT_TRUE(same_assignment(first_fit(gv), first_fit_by_definition(gv, anc)));
        }
      }
}

// A form of a rank (host_waits whole, or split into one wait per parent) with its
// closure by the definition, where every part of a split wait has the whole wait's
// ancestors: the union of its parts' own.
struct Form {
  GroupedView gv;
  std::vector<std::vector<char>> anc;
};
Form form_of(const RankView& v, bool split) {
  Form f{group_view(v, split), {}};
  f.anc = ancestors_by_definition(f.gv.view, v.after);
  const auto n = v.ops.size();
  const auto& waits = f.gv.waits;
  for (std::size_t j = 0; j < waits.size(); ++j)
    for (std::size_t y = 0; y < f.anc.size(); ++y)
      f.anc[static_cast<std::size_t>(waits[j].first)][y] |= f.anc[n + j][y];
  for (std::size_t j = 0; j < waits.size(); ++j) f.anc[n + j] = f.anc[static_cast<std::size_t>(waits[j].first)];
  return f;
}

// Pass 3 and the split host_waits against every partition of a rank's groups in both
// forms, judged by the definition: on random ranks of at most 9 groups the optimized
// strategy uses the fewest counters there are, and its placement is safe. The draw
// includes ranks where the first fit is not optimal, and ranks where only splitting a
// host_wait reaches the fewest.
TEST(Assignment, OptimizedUsesTheFewestCountersOnSmallRandomRanks) {
  std::mt19937_64 rng(26);
  int tried = 0, below_first_fit = 0, split = 0;
  for (int round = 0; round < 1500; ++round) {
    RankView v = random_view(rng, round % 3 == 0, false);
    compute_local_order(v);
    const Form whole = form_of(v, false);
    if (whole.gv.groups.size() > 9) continue;
    SCOPED_TRACE(::testing::Message() << "round " << round);
    ++tried;
    const RankAssignment got = assign_optimized(v);
    const Form chosen = form_of(v, !got.waits.empty());
    EXPECT_TRUE(safe_by_definition(chosen.gv, chosen.anc, placement_of(chosen.gv, got)));
    std::int32_t fewest = fewest_by_definition(whole.gv, whole.anc);
    if (has_split_waits(v)) {
      const Form parts = form_of(v, true);
      const std::int32_t fewest_split = fewest_by_definition(parts.gv, parts.anc);
      split += fewest_split < fewest;
      fewest = std::min(fewest, fewest_split);
    }
    EXPECT_EQ(got.counters, fewest);
    below_first_fit += got.counters < first_fit(whole.gv).counters;
  }
  EXPECT_GT(tried, 300);
  EXPECT_GT(below_first_fit, 5);
  EXPECT_GT(split, 5);
}

// On larger random ranks (up to 256 groups, where the search may stop at its budget): the
// placement is safe by the definition. (Never above the first fit holds by construction:
// the search starts from it and keeps only placements on fewer counters.)
TEST(Assignment, OptimizedIsSafeAndNeverAboveTheFirstFitOnRandomRanks) {
  std::mt19937_64 rng(262);
  int searched = 0;
  for (int round = 0; round < 300; ++round) {
    RankView v = random_view(rng, round % 3 == 0, round % 2 == 1);
    compute_local_order(v);
    SCOPED_TRACE(::testing::Message() << "round " << round);
    const RankAssignment got = assign_optimized(v);
    const Form chosen = form_of(v, !got.waits.empty());
    EXPECT_TRUE(safe_by_definition(chosen.gv, chosen.anc, placement_of(chosen.gv, got)));
    const auto groups = group_view(v).groups.size();
    searched += groups > 9 && groups <= kMaxSearchGroups;
  }
  EXPECT_GT(searched, 100);
}

// The global analysis's projection of H onto each rank against the closure of H itself.
TEST(Assignment, GlobalOrderIsTheClosureOfHappensBeforeOnEachRank) {
  for (auto [c, a, ordered] : {std::tuple{"allreduce", "rabenseifner", false},
                               {"allreduce", "ring", true},
                               {"alltoall", "pairwise", false},
                               {"bcast", "binomial", true}}) {
    const Schedule dag = build_schedule(c, a, {.ranks = 6, .ordered_channels = ordered});
    const auto succ = global_successors(dag);
    std::vector<std::vector<std::int32_t>> pred(succ.size());
    for (std::size_t x = 0; x < succ.size(); ++x)
      for (auto y : succ[x]) pred[static_cast<std::size_t>(y)].push_back(static_cast<std::int32_t>(x));
    const auto all = ancestors_by_definition(pred);
    auto views = rank_views(dag);
    compute_order(dag, Analysis::global, views);
    for (const auto& v : views) {
      const auto n = v.ops.size();
      std::vector<std::vector<char>> anc(n, std::vector<char>(n));
      for (std::size_t x = 0; x < n; ++x)
        for (std::size_t y = 0; y < n; ++y)
          anc[x][y] = all[static_cast<std::size_t>(v.ops[x])][static_cast<std::size_t>(v.ops[y])];
      ASSERT_TRUE(order_is(v, anc)) << c << "/" << a;
    }
  }
}

// One rank's chain of 100 000 counter adds, each triggered by the previous one: one
// counter, op i waiting for what its i predecessors add. Holding every pair of the chain
// (or two bitsets of n bits per op: 2.5 GB) made this quadratic. Then the same with an
// arrival nothing consumes issued last on the rank: unordered with the whole chain, it is
// harmful to every pair (no op of the chain is a cut point any more), and the pairs, all
// affected alike, still collapse to one. Adds of 1: the arrival's 1 would let op i + 1
// reach its threshold i + 1 without op i, so it needs a counter of its own. Adds of 2: op
// i + 1 waits for 2i + 2, and the arrival's 1 with every other add makes 2i + 1 at most,
// so it shares the chain's counter.
TEST(Assignment, ALongChainSharesOneCounterWithRisingThresholds) {
  const int n = 100000;
  for (auto [add, trailing_arrival] : {std::pair{1, false}, {2, false}, {1, true}, {2, true}}) {
    SCOPED_TRACE(::testing::Message() << "adds of " << add << (trailing_arrival ? ", an arrival last" : ""));
    Schedule dag(2);
    OpId prev = dag.add({.kind = OpKind::cntr_add, .rank = 0, .add = add});
    for (int i = 1; i < n; ++i) prev = dag.add({.kind = OpKind::cntr_add, .rank = 0, .add = add}, {prev});
    dag.add({.kind = OpKind::host_wait, .rank = 0}, {prev});
    if (trailing_arrival) {
      const OpId put = dag.add({.kind = OpKind::put, .rank = 1, .peer = 0, .bytes = 8});
      dag.add({.kind = OpKind::arrival, .rank = 0, .peer = 1, .bytes = 8}, {put});
    }
    const Schedule s = assign_counters(dag, Strategy::optimized, {.analysis = Analysis::local});
    EXPECT_EQ(s.counter_summary().per_rank[0], trailing_arrival && add == 1 ? 2 : 1);
    for (int i = 0; i <= n; ++i) {
      const Op& o = s.op(static_cast<OpId>(i));
      ASSERT_EQ(o.trigger, i == 0 ? kNoCounter : s.op(0).target) << i;
      ASSERT_EQ(o.threshold, add * static_cast<std::int64_t>(i)) << i;
    }
    EXPECT_TRUE(verify(s, {.analysis = Analysis::local, .random_runs = 1, .exhaustive_state_limit = 0}).ok());
  }
}

}  // namespace
}  // namespace fabriclab::offload

namespace fabriclab::offload {
namespace {

// Found by the schedule_json fuzz target (fuzz/regressions/schedule_json/): DAGs the
// reader accepts but no counters can realise. Each strategy refuses them by name instead
// of writing out of bounds (an uncounted parent had no counter group), throwing an
// internal error (a parent adding 0) or returning an unsafe or invalid schedule.
TEST(Assignment, RefusesDagsNoCounterCanRealiseFoundByFuzzing) {
  const std::string dir = std::string(FABRICLAB_SOURCE_DIR) + "/fuzz/regressions/schedule_json/";
  const std::pair<const char*, const char*> cases[] = {
      {"dep-on-uncounted-put.json",
       "operation 1 (put on rank 0): depends on operation 0 (put on rank 0), whose completion is not counted "
       "(completion null): no counter could trigger it"},
      {"dep-on-zero-add-cntr-add.json",
       "operation 1 (host_wait on rank 0): depends on operation 0 (cntr_add on rank 0), a cntr_add that adds 0: no "
       "counter could see it complete"},
      {"host-wait-without-deps.json",
       "operation 0 (host_wait on rank 1): a host_wait with no dependence has nothing to wait for"},
  };
  for (const auto& [file, message] : cases) {
    const Schedule dag = read_schedule_json(dir + file);
    for (Strategy st : {Strategy::naive, Strategy::optimized, Strategy::exact}) {
      try {
        (void)assign_counters(dag, st);
        ADD_FAILURE() << file << " " << to_string(st) << ": assigned";
      } catch (const InputError& e) {
        EXPECT_EQ(std::string(e.what()), message) << file << " " << to_string(st);
      }
    }
  }
}

}  // namespace
}  // namespace fabriclab::offload
