#include "offload/estimates.h"

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
    if (a.algorithm == "rabenseifner") continue;  // no formula (SayWhenThereIsNoFormula)
    for (bool ordered : {false, true})
      for (Rank p = 2; p <= 40; ++p) {
        BuildOptions o{.ranks = p, .root = a.uses_root ? p / 3 : 0, .ordered_channels = ordered};
        o.count_send_completions = false;
        expect_estimate_equals_allocator(a, o);
      }
  }
}

TEST(Estimates, SayWhenThereIsNoFormula) {
  BuildOptions o{.ranks = 8};
  o.count_send_completions = false;
  EXPECT_THROW(estimate_counters("allreduce", "rabenseifner", o, Strategy::optimized), InputError);
  EXPECT_THROW(estimate_counters("allreduce", "nope", {.ranks = 8}, Strategy::naive), InputError);
  EXPECT_THROW(estimate_counters("allreduce", "ring", {.ranks = 1}, Strategy::naive), InputError);
}

}  // namespace
}  // namespace fabriclab::offload
