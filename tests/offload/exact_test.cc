#include "offload/exact.h"

#include <gtest/gtest.h>

#include "offload/assignment_detail.h"
#include "offload/collectives.h"
#include "offload/verifier.h"

namespace fabriclab::offload {
namespace {

TEST(Exact, ProvesTheKnownMinima) {
  for (Analysis an : {Analysis::local, Analysis::global}) {
    for (Rank p : {4, 8}) {
      const auto bc = assign_exact(build_schedule("bcast", "binomial", {.ranks = p}), {.analysis = an});
      EXPECT_TRUE(bc.all_proven());
      EXPECT_EQ(bc.schedule.counter_summary().max, 1);
      // One counter per recursive-doubling level cannot be beaten.
      const auto rd = assign_exact(build_schedule("allreduce", "recursive_doubling", {.ranks = p}), {.analysis = an});
      EXPECT_TRUE(rd.all_proven());
      EXPECT_EQ(rd.schedule.counter_summary().max, p == 4 ? 2 : 3);
    }
  }
}

TEST(Exact, FindsWhereTheFirstFitIsNotOptimal) {
  // Rabenseifner on 8 ranks, global analysis: the first fit opens a fifth counter per
  // rank that a different packing avoids.
  const auto r = assign_exact(build_schedule("allreduce", "rabenseifner", {.ranks = 8}),
                              {.analysis = Analysis::global});
  ASSERT_TRUE(r.all_proven());
  for (const auto& k : r.ranks) {
    EXPECT_EQ(k.counters, 4);
    EXPECT_EQ(k.optimized, 5);
  }
  EXPECT_TRUE(verify(r.schedule, {.analysis = Analysis::global, .random_runs = 8}).ok());
}

TEST(Exact, NeverAboveOptimizedAndAlwaysVerified) {
  for (const auto& a : algorithms()) {
    for (Rank p : {2, 3, 5, 6}) {
      for (Analysis an : {Analysis::local, Analysis::global}) {
        const Schedule dag = build_schedule(a.collective, a.algorithm, {.ranks = p});
        const auto r = assign_exact(dag, {.analysis = an});
        EXPECT_TRUE(r.all_proven()) << a.collective << "/" << a.algorithm << " P=" << p;
        for (const auto& k : r.ranks) EXPECT_LE(k.counters, k.optimized);
        EXPECT_TRUE(verify(r.schedule, {.analysis = an, .random_runs = 4, .exhaustive_state_limit = 2000}).ok())
            << a.collective << "/" << a.algorithm << " P=" << p;
      }
    }
  }
}

// The minimum for rank 0 by brute force: every partition of its groups onto counters,
// judged by the verifier on the whole schedule (the other ranks keep the optimized
// placement). Independent of the SAT encoding.
std::int32_t brute_force_rank0(const Schedule& dag, Analysis an) {
  auto views = rank_views(dag);
  auto sol = solve_per_rank(dag, views, an, assign_optimized);
  auto views0 = rank_views(dag);
  compute_order(dag, an, views0);
  const GroupedView gv = group_view(views0[0]);
  const std::size_t n = gv.groups.size();
  std::int32_t best = INT32_MAX;
  std::vector<std::int32_t> place(n, 0);
  // Restricted growth strings enumerate set partitions once each.
  while (true) {
    std::int32_t used = 0;
    for (auto c : place) used = std::max(used, c + 1);
    if (used < best) {
      sol[0] = assignment_from_placement(gv, place);
      const Schedule s = emit_schedule(dag, views, sol, "brute");
      if (verify(s, {.analysis = an, .random_runs = 0, .exhaustive_state_limit = 0}).safe_by_rule) best = used;
    }
    std::size_t i = n;
    while (i-- > 1) {
      std::int32_t prefix_max = 0;
      for (std::size_t j = 0; j < i; ++j) prefix_max = std::max(prefix_max, place[j]);
      if (place[i] <= prefix_max) {
        ++place[i];
        for (std::size_t j = i + 1; j < n; ++j) place[j] = 0;
        break;
      }
    }
    if (i == 0 || i > n) break;
  }
  return best;
}

TEST(Exact, AgreesWithBruteForceOnSmallRanks) {
  struct Case {
    const char *c, *a;
    Rank p;
    Analysis an;
  };
  for (const Case& k :
       {Case{"allreduce", "ring", 4, Analysis::global}, Case{"allreduce", "rabenseifner", 4, Analysis::global},
        Case{"allreduce", "binomial", 6, Analysis::local}, Case{"alltoall", "pairwise", 4, Analysis::global}}) {
    const Schedule dag = build_schedule(k.c, k.a, {.ranks = k.p});
    const auto r = assign_exact(dag, {.analysis = k.an});
    ASSERT_TRUE(r.ranks[0].proven_minimum);
    EXPECT_EQ(brute_force_rank0(dag, k.an), r.ranks[0].counters) << k.c << "/" << k.a;
  }
}

}  // namespace
}  // namespace fabriclab::offload
