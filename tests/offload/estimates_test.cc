#include "offload/estimates.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace fabriclab::offload {
namespace {

}  // namespace

// The formulas against the allocator, rank by rank (shared with the sweep test).
void expect_estimate_equals_allocator(const AlgorithmInfo& a, const BuildOptions& o) {
  const Schedule dag = build_schedule(a.collective, a.algorithm, o);
  for (Strategy s : {Strategy::naive, Strategy::optimized}) {
    const auto got = assign_counters(dag, s, {.analysis = Analysis::local}).counter_summary();
    const auto est = estimate_counters(a.collective, a.algorithm, o, s);
    ASSERT_EQ(est.per_rank, got.per_rank)
        << a.collective << "/" << a.algorithm << " P=" << o.ranks << " root=" << o.root
        << " ordered=" << o.ordered_channels << " " << to_string(s);
    EXPECT_EQ(est.max, got.max);
    EXPECT_EQ(est.total, got.total);
  }
}

namespace {

void expect_equal(const AlgorithmInfo& a, const BuildOptions& o) {
  expect_estimate_equals_allocator(a, o);
}

TEST(Estimates, EqualTheAllocatorForSmallP) {
  // The full sweep (every P in 2..256, spot values to 4096) is estimates_sweep_test.cc.
  for (const auto& a : algorithms())
    for (Rank p = 2; p <= 33; ++p) expect_equal(a, {.ranks = p, .root = a.uses_root ? p / 3 : 0});
}

TEST(Estimates, EqualTheAllocatorWithOrderedChannels) {
  for (const auto& a : algorithms())
    for (Rank p = 2; p <= 70; ++p)
      expect_equal(a, {.ranks = p, .root = 0, .ordered_channels = true});
}

TEST(Estimates, EqualTheAllocatorForOtherRadixes) {
  const AlgorithmInfo knomial{"bcast", "knomial", "", true};
  for (int k : {2, 3, 5, 8})
    for (Rank p = 2; p <= 100; ++p) expect_equal(knomial, {.ranks = p, .root = 1, .radix = k});
}

TEST(Estimates, HandValues) {
  // Recursive doubling on 8 = 2^3 ranks: 3 counters per rank, 5*3 - 1 = 14 naive.
  EXPECT_EQ(estimate_counters("allreduce", "recursive_doubling", {.ranks = 8}, Strategy::optimized).max, 3);
  EXPECT_EQ(estimate_counters("allreduce", "recursive_doubling", {.ranks = 8}, Strategy::naive).max, 14);
  // Ring on 512 ranks: 2(P-1) arrivals' counters.
  EXPECT_EQ(estimate_counters("allreduce", "ring", {.ranks = 512}, Strategy::optimized).total, 512 * 1022);
}

TEST(Estimates, SayWhenThereIsNoFormula) {
  BuildOptions o{.ranks = 8};
  o.count_send_completions = false;
  EXPECT_THROW(estimate_counters("allreduce", "ring", o, Strategy::optimized), InputError);
  EXPECT_THROW(estimate_counters("allreduce", "nope", {.ranks = 8}, Strategy::naive), InputError);
  EXPECT_THROW(estimate_counters("allreduce", "ring", {.ranks = 1}, Strategy::naive), InputError);
}

}  // namespace
}  // namespace fabriclab::offload
