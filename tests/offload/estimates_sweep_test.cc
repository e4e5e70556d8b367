// The exhaustive comparison of the closed-form estimates with the allocator that the
// issue asks for: every P in 2..256 (counted and uncounted send completions, with and
// without ordered channels) and spot values up to 4096. Labelled "slow": it runs
// in `make test` (release) but not under the sanitizers, where it would take most of the
// CI budget without exercising any code the fast suite does not. One test per algorithm,
// so that `ctest -j` spreads the sweep over the cores.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "estimates_check.h"
#include "test_util.h"

namespace fabriclab::offload {
namespace {

class EstimatesSweep : public ::testing::TestWithParam<AlgorithmInfo> {};

TEST_P(EstimatesSweep, EqualTheAllocatorForEveryPFrom2To256) {
  const AlgorithmInfo& a = GetParam();
  for (const bool ordered : {false, true})
    for (Rank p = 2; p <= 256; ++p)
      expect_estimate_equals_allocator(a, {.ranks = p, .root = a.uses_root ? p / 3 : 0, .ordered_channels = ordered});
}

class EstimatesSweepUncounted : public ::testing::TestWithParam<AlgorithmInfo> {};

TEST_P(EstimatesSweepUncounted, EqualTheAllocatorWithSendsUncountedForEveryPFrom2To256) {
  const AlgorithmInfo& a = GetParam();
  for (const bool ordered : {false, true})
    for (Rank p = 2; p <= 256; ++p) {
      BuildOptions o{.ranks = p, .root = a.uses_root ? p / 3 : 0, .ordered_channels = ordered};
      o.count_send_completions = false;
      expect_estimate_equals_allocator(a, o);
    }
}

TEST_P(EstimatesSweep, EqualTheAllocatorAtSpotValuesUpTo4096) {
  const AlgorithmInfo& a = GetParam();
  for (Rank p : {300, 511, 1000, 1024, 1500, 2048, 3000, 4095, 4096}) {
    // The algorithms with O(P^2) operations stop at 1024 (minutes beyond): their
    // formulas do not depend on the rank and were checked for every P up to 256.
    const bool quadratic = a.algorithm == "ring" || a.collective == "alltoall";
    if (quadratic && p > 1024) continue;
    expect_estimate_equals_allocator(a, {.ranks = p});
  }
}

std::string test_name(const ::testing::TestParamInfo<AlgorithmInfo>& info) {
  return testing::algorithm_test_name(info.param);
}

INSTANTIATE_TEST_SUITE_P(Every, EstimatesSweep, ::testing::ValuesIn(algorithms()), test_name);
INSTANTIATE_TEST_SUITE_P(Every, EstimatesSweepUncounted, ::testing::ValuesIn(algorithms()), test_name);

}  // namespace
}  // namespace fabriclab::offload
