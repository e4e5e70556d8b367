// Issue 26's first check: the optimized strategy uses exactly the proven minimum of the
// exact strategy on every rank, for every built-in collective with P = 2..16, counted and
// uncounted send completions, with and without ordered channels, under both analyses,
// and its schedule passes the verifier's rule. exact proves its minimum by lower bounds
// the search does not use (the clique bound, else z3 refuting every smaller K); both
// read the same placement requirements, which the verifier (independent of them) and
// exact_test's brute force over partitions check. Labelled "slow" (about 7 s of CPU); one
// test per algorithm, so that `ctest -j` spreads the grid over the cores.
#include <gtest/gtest.h>

#include <string>

#include "offload/assignment.h"
#include "offload/collectives.h"
#include "offload/exact.h"
#include "offload/verifier.h"
#include "test_util.h"

namespace fabriclab::offload {
namespace {

class OptimizedExactGrid : public ::testing::TestWithParam<AlgorithmInfo> {};

TEST_P(OptimizedExactGrid, OptimizedUsesTheProvenMinimumForEveryPUpTo16) {
  const AlgorithmInfo& a = GetParam();
  for (Rank p = 2; p <= 16; ++p)
    for (const bool ordered : {false, true})
      for (const bool counted : {true, false})
        for (const Analysis an : {Analysis::local, Analysis::global}) {
          BuildOptions o{.ranks = p, .root = a.uses_root ? p / 3 : 0, .ordered_channels = ordered};
          o.count_send_completions = counted;
          SCOPED_TRACE(::testing::Message() << "P=" << p << (ordered ? " ordered" : "") << (counted ? "" : " uncounted")
                                            << " " << to_string(an));
          const Schedule dag = build_schedule(a.collective, a.algorithm, o);
          const ExactResult exact = assign_exact(dag, {.analysis = an});
          ASSERT_TRUE(exact.all_proven());
          const Schedule optimized = assign_counters(dag, Strategy::optimized, {.analysis = an});
          const VerifyReport v = verify(optimized, {.analysis = an, .random_runs = 0, .exhaustive_state_limit = 0});
          ASSERT_TRUE(v.safe_by_rule && v.live_by_fixpoint);
          const CounterSummary got = optimized.counter_summary();
          for (Rank r = 0; r < p; ++r)
            ASSERT_EQ(got.per_rank[static_cast<std::size_t>(r)], exact.ranks[static_cast<std::size_t>(r)].counters)
                << "rank " << r;
        }
}

std::string test_name(const ::testing::TestParamInfo<AlgorithmInfo>& info) {
  return testing::algorithm_test_name(info.param);
}

INSTANTIATE_TEST_SUITE_P(Every, OptimizedExactGrid, ::testing::ValuesIn(algorithms()), test_name);

}  // namespace
}  // namespace fabriclab::offload
