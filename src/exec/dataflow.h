// An in-memory execution of a schedule's data movement, with no transport: every rank's
// window is a byte vector, and the operations run one event at a time in a random order
// that the execution model of shared/docs/triggered-ops.md section 1 allows. A put or
// atomic reads its source when it fires and writes (or adds into) the target when its
// arrival lands; its local completion is a separate event, unordered with the arrival.
// So an algorithm whose data layout has a race (a buffer overwritten while a transfer
// may still read it) gives wrong results under some seeds.
//
// It checks the builders' data layouts at any size in milliseconds; the libfabric
// runner (runner.h) checks the same layouts on a real transport.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "offload/schedule.h"

namespace fabriclab::exec {

// Runs `s` (a DAG or an assigned schedule; counters are ignored, dependences are not)
// on windows prepared for iteration `it` and returns the windows afterwards.
std::vector<std::vector<std::byte>> run_dataflow(const offload::Schedule& s, std::int64_t it, std::uint64_t seed);

}  // namespace fabriclab::exec
