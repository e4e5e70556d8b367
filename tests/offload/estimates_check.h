// The closed-form estimates against the allocator, rank by rank, for both strategies
// (shared by the fast estimates test and the slow sweep).
#pragma once

#include "offload/collectives.h"

namespace fabriclab::offload {
void expect_estimate_equals_allocator(const AlgorithmInfo& a, const BuildOptions& o);
}
