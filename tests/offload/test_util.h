// Helpers shared by the offload tests.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include "core/bitset.h"
#include "offload/collectives.h"
#include "offload/schedule.h"

namespace fabriclab::offload::testing {

// For every op, the set of ranks whose data can have reached it along the DAG's data
// flow (deps, including an arrival's dep on its remote initiator): computed from the
// raw edges, independently of the analyses under test.
inline std::vector<DynBitset> ranks_reaching(const Schedule& s) {
  std::vector<DynBitset> from(s.size(), DynBitset(static_cast<std::size_t>(s.ranks())));
  // Builders emit ops in topological order; assert it here.
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto id = static_cast<OpId>(i);
    from[i].set(static_cast<std::size_t>(s.op(id).rank));
    for (OpId d : s.deps(id)) {
      if (static_cast<std::size_t>(d) >= i) throw std::logic_error("not topological");
      from[i] |= from[static_cast<std::size_t>(d)];
    }
  }
  return from;
}

inline std::vector<OpId> host_waits(const Schedule& s, Rank r) {
  std::vector<OpId> out;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s.op(static_cast<OpId>(i)).rank == r && s.op(static_cast<OpId>(i)).kind == OpKind::host_wait)
      out.push_back(static_cast<OpId>(i));
  return out;
}

// Calls f(place) once for every partition of n items into blocks numbered by first use
// (restricted growth strings: place[0] = 0, place[i] <= 1 + max(place[0..i-1])): every
// placement of n groups on counters, each up to renaming the counters.
template <class F>
void for_each_partition(std::size_t n, F&& f) {
  std::vector<std::int32_t> place(n, 0), prefix_max(n, 0);  // prefix_max[i]: max of place[0..i-1]
  while (true) {
    f(static_cast<const std::vector<std::int32_t>&>(place));
    std::size_t i = n;  // the last item that can grow is i - 1
    while (i > 1 && place[i - 1] > prefix_max[i - 1]) --i;
    if (i <= 1) return;
    ++place[i - 1];
    for (std::size_t j = i; j < n; ++j) {
      place[j] = 0;
      prefix_max[j] = std::max(prefix_max[j - 1], place[j - 1]);
    }
  }
}

// A gtest name for a parameter that is a built-in algorithm: "allreduce_ring".
inline std::string algorithm_test_name(const AlgorithmInfo& a) {
  std::string name = a.collective + "_" + a.algorithm;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

}  // namespace fabriclab::offload::testing
