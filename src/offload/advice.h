// Offload-or-fallback advice (triggered-ops.md section 4): given the free counters and
// triggered-operation slots of each NIC and a list of collectives to start, in order,
// say which are offloaded now, which must wait for counters or slots held by collectives
// offloaded before them, and which can only run in software (they need more than a NIC
// has at all).
//
//   auto advice = advise({.counters = 16, .slots = 256},
//                        {{"allreduce", "ring", {.ranks = 8}}, {"bcast", "binomial", {.ranks = 8}}});
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "offload/assignment.h"
#include "offload/collectives.h"

namespace fabriclab::offload {

struct NicBudget {
  std::int64_t counters = 16;  // free counters per NIC
  std::int64_t slots = std::numeric_limits<std::int64_t>::max();  // free triggered-op slots
  bool allow_wait = true;      // false: a collective that does not fit now runs in software
};

struct CollectiveRequest {
  std::string collective, algorithm;
  BuildOptions options;
};

struct Advice {
  enum class Decision { offload, wait, software } decision;
  std::int64_t counters_max = 0, counters_naive_max = 0;  // per NIC
  std::int64_t slots_max = 0;                             // per NIC
  std::vector<std::size_t> waits_for;  // indices of earlier offloaded collectives
  std::string reason;
};

std::string_view to_string(Advice::Decision d);

// Each collective spans ranks 0..P-1, rank r on NIC r. Throws InputError on a bad
// request or budget.
std::vector<Advice> advise(const NicBudget& budget, const std::vector<CollectiveRequest>& requests,
                           Strategy strategy = Strategy::optimized);

}  // namespace fabriclab::offload
