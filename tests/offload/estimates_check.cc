#include "estimates_check.h"

#include <gtest/gtest.h>

#include "offload/assignment.h"
#include "offload/estimates.h"

namespace fabriclab::offload {

void expect_estimate_equals_allocator(const AlgorithmInfo& a, const BuildOptions& o) {
  const Schedule dag = build_schedule(a.collective, a.algorithm, o);
  for (Strategy s : {Strategy::naive, Strategy::optimized}) {
    const auto got = assign_counters(dag, s, {.analysis = Analysis::local}).counter_summary();
    const auto est = estimate_counters(a.collective, a.algorithm, o, s);
    ASSERT_EQ(est.per_rank, got.per_rank)
        << a.collective << "/" << a.algorithm << " P=" << o.ranks << " root=" << o.root
        << " ordered=" << o.ordered_channels << " radix=" << o.radix << " " << to_string(s);
    EXPECT_EQ(est.max, got.max);
    EXPECT_EQ(est.total, got.total);
  }
}

}  // namespace fabriclab::offload
