// Helpers shared by the offload tests.
#pragma once

#include <cctype>
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

// A gtest name for a parameter that is a built-in algorithm: "allreduce_ring".
inline std::string algorithm_test_name(const AlgorithmInfo& a) {
  std::string name = a.collective + "_" + a.algorithm;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

}  // namespace fabriclab::offload::testing
