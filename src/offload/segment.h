// Splitting transfers that a transport cannot issue as one operation.
//
// A NIC bounds the size of one atomic (libfabric's fi_atomicvalid count: 512 elements on
// the sockets provider), so an atomic SUM of a larger vector is issued as several. The
// split is a DAG transformation, done before counter assignment: each segment keeps the
// original's dependences and gets its own arrival, and everything that depended on the
// original (or its arrival) depends on all segments. Counters and thresholds then come
// out of the assignment as for any other DAG.
#pragma once

#include <cstdint>

#include "offload/schedule.h"

namespace fabriclab::offload {

// Returns `dag` with every atomic of more than `max_bytes` split into consecutive
// segments of at most `max_bytes` (a multiple of the element size the caller chose).
// Requires an unassigned DAG (no counters). max_bytes must be positive.
Schedule split_atomics(const Schedule& dag, std::int64_t max_bytes);

}  // namespace fabriclab::offload
