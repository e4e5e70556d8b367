#include "offload/estimates.h"
#include "offload/segment.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "estimates_check.h"

namespace fabriclab::offload {
namespace {

TEST(Estimates, EqualTheAllocatorForSmallP) {
  // The full sweep (every P in 2..256, spot values to 4096) is estimates_sweep_test.cc.
  for (const auto& a : algorithms())
    for (Rank p = 2; p <= 33; ++p) expect_estimate_equals_allocator(a, {.ranks = p, .root = a.uses_root ? p / 3 : 0});
}

TEST(Estimates, EqualTheAllocatorWithOrderedChannels) {
  for (const auto& a : algorithms())
    for (Rank p = 2; p <= 70; ++p)
      expect_estimate_equals_allocator(a, {.ranks = p, .root = 0, .ordered_channels = true});
}

TEST(Estimates, EqualTheAllocatorForOtherRadixes) {
  const AlgorithmInfo knomial{"bcast", "knomial", "", true};
  for (int k : {2, 3, 5, 8})
    for (Rank p = 2; p <= 100; ++p) expect_estimate_equals_allocator(knomial, {.ranks = p, .root = 1, .radix = k});
}

TEST(Estimates, HandValues) {
  // Recursive doubling on 8 = 2^3 ranks: 3 counters per rank, 5*3 - 1 = 14 naive.
  EXPECT_EQ(estimate_counters("allreduce", "recursive_doubling", {.ranks = 8}, Strategy::optimized).max, 3);
  EXPECT_EQ(estimate_counters("allreduce", "recursive_doubling", {.ranks = 8}, Strategy::naive).max, 14);
  // Ring on 512 ranks: 2(P-1) arrivals' counters.
  EXPECT_EQ(estimate_counters("allreduce", "ring", {.ranks = 512}, Strategy::optimized).total, 512 * 1022);
}

TEST(Estimates, EqualTheAllocatorWithUncountedSends) {
  for (const auto& a : algorithms()) {
    for (bool ordered : {false, true})
      for (Rank p = 2; p <= 40; ++p) {
        BuildOptions o{.ranks = p, .root = a.uses_root ? p / 3 : 0, .ordered_channels = ordered};
        o.count_send_completions = false;
        expect_estimate_equals_allocator(a, o);
      }
  }
}

// Rabenseifner with uncounted sends, worked by hand from its DAG at P = 10 (k = 3, the
// fold's ranks 0..3). Rank 5, a power-of-two rank, naive: 6 arrivals (3 rounds of the
// reduce-scatter, 3 of the allgather), 3 local reduce atomics, and a trigger counter for
// each of the 7 ops waiting on two or more (2 in each of the reduce-scatter's rounds 2
// and 3, the 3 allgather puts): 16 = 6k - 2. The fold's odd rank 1 adds its partner's
// arrival and the put back to it (which waits on five): 18 = 6k. Its even rank 0 waits
// on one arrival: 1.
TEST(Estimates, RabenseifnerWithUncountedSendsByHand) {
  BuildOptions o{.ranks = 10};
  o.count_send_completions = false;
  const Estimate naive = estimate_counters("allreduce", "rabenseifner", o, Strategy::naive);
  EXPECT_EQ(naive.per_rank, (std::vector<std::int64_t>{1, 18, 1, 18, 16, 16, 16, 16, 16, 16}));
}

// Split into segments as exec splits atomics for a NIC, a schedule keeps its optimized
// (local) count -- the closed form of the unsegmented collective -- for every collective
// and option except Rabenseifner with uncounted sends, where the split local atomics need
// more counters (so the exception is needed, not a guess).
TEST(Estimates, SegmentsKeepTheOptimizedCount) {
  std::size_t exception_differs = 0;
  for (const auto& a : algorithms())
    for (const bool ordered : {false, true})
      for (const bool counted : {false, true})
        for (Rank p = 2; p <= 12; ++p) {
          BuildOptions o{.ranks = p, .root = a.uses_root ? p / 3 : 0, .ordered_channels = ordered};
          o.count_send_completions = counted;
          o.bytes = 8 * 12;  // 12 doubles: segments of 6, 4, 2 and 1
          const Schedule dag = build_schedule(a.collective, a.algorithm, o);
          const Estimate e = estimate_counters(a.collective, a.algorithm, o, Strategy::optimized);
          for (const std::int64_t seg : {48, 32, 16, 8}) {
            const auto got = assign_counters(split_atomics(dag, seg), Strategy::optimized,
                                             {.analysis = Analysis::local})
                                 .counter_summary();
            if (estimate_holds_segmented(a.collective, a.algorithm, o))
              EXPECT_EQ(got.per_rank, e.per_rank) << a.collective << "/" << a.algorithm << " P=" << p
                                                  << " ordered=" << ordered << " counted=" << counted << " seg=" << seg;
            else exception_differs += got.per_rank != e.per_rank;
          }
        }
  EXPECT_GT(exception_differs, 0u);
}

TEST(Estimates, RefuseWhatCannotBeBuilt) {
  EXPECT_THROW(estimate_counters("allreduce", "nope", {.ranks = 8}, Strategy::naive), InputError);
  EXPECT_THROW(estimate_counters("allreduce", "ring", {.ranks = 1}, Strategy::naive), InputError);
}

}  // namespace
}  // namespace fabriclab::offload
