// The exhaustive comparison of the closed-form estimates with the allocator that the
// issue asks for: every P in 2..256 and spot values up to 4096. Labelled "slow": it runs
// in `make test` (release) but not under the sanitizers, where it would take most of the
// CI budget without exercising any code the fast suite does not.
#include <gtest/gtest.h>

#include "estimates_check.h"

namespace fabriclab::offload {
namespace {

TEST(EstimatesSweep, EqualTheAllocatorForEveryPFrom2To256) {
  for (const auto& a : algorithms())
    for (Rank p = 2; p <= 256; ++p) expect_estimate_equals_allocator(a, {.ranks = p, .root = a.uses_root ? p / 3 : 0});
}

TEST(EstimatesSweep, EqualTheAllocatorWithUncountedSendsUpTo128) {
  for (const auto& a : algorithms()) {
    if (a.algorithm == "rabenseifner") continue;  // no formula yet
    for (Rank p = 2; p <= 128; ++p) {
      BuildOptions o{.ranks = p, .root = a.uses_root ? p / 3 : 0};
      o.count_send_completions = false;
      expect_estimate_equals_allocator(a, o);
    }
  }
}

TEST(EstimatesSweep, EqualTheAllocatorAtSpotValuesUpTo4096) {
  for (const auto& a : algorithms()) {
    for (Rank p : {300, 511, 1000, 1024, 1500, 2048, 3000, 4095, 4096}) {
      // The algorithms with O(P^2) operations stop at 1024 (minutes beyond): their
      // formulas do not depend on the rank and were checked for every P up to 256.
      const bool quadratic = a.algorithm == "ring" || a.collective == "alltoall";
      if (quadratic && p > 1024) continue;
      expect_estimate_equals_allocator(a, {.ranks = p});
    }
  }
}

}  // namespace
}  // namespace fabriclab::offload
