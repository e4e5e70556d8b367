#include "offload/assignment.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "offload/collectives.h"
#include "offload/schedule_io.h"
#include "offload/verifier.h"

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
