#include "offload/collectives.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "offload/dag_builder.h"

namespace fabriclab::offload {

std::string_view to_string(Datatype d) { return params::name_of(kDatatypeNames, d); }

Datatype parse_datatype(std::string_view s) { return params::parse_enum(kDatatypeNames, s, "datatype"); }

std::int64_t datatype_size(Datatype d) { return d == Datatype::float32 ? 4 : 8; }

namespace {

struct Entry {
  AlgorithmInfo info;
  Schedule (*build)(const BuildOptions&);
};

const std::vector<Entry>& registry() {
  static const std::vector<Entry> entries = {
      {{"allreduce", "recursive_doubling", "Thakur, Rabenseifner, Gropp 2005 (MPICH)", false},
       build_allreduce_recursive_doubling},
      {{"allreduce", "ring", "Patarasuk and Yuan 2009 (MPICH ring)", false}, build_allreduce_ring},
      {{"allreduce", "binomial", "binomial reduce + binomial bcast (MPICH)", true}, build_allreduce_binomial},
      {{"allreduce", "rabenseifner", "Rabenseifner 2004; Thakur et al. 2005 (MPICH)", false},
       build_allreduce_rabenseifner},
      {{"bcast", "binomial", "MPICH MPIR_Bcast_intra_binomial", true}, build_bcast_binomial},
      {{"bcast", "knomial", "MPICH k-nomial tree bcast", true}, build_bcast_knomial},
      {{"reduce", "binomial", "MPICH MPIR_Reduce_intra_binomial", true}, build_reduce_binomial},
      {{"barrier", "dissemination", "Hensgen, Finkel, Manber 1988 (MPICH)", false}, build_barrier_dissemination},
      {{"barrier", "binomial", "binomial gather + release (Hensgen et al. 1988)", true}, build_barrier_binomial},
      {{"allgather", "ring", "MPICH MPIR_Allgather_intra_ring", false}, build_allgather_ring},
      {{"allgather", "recursive_doubling", "Thakur, Rabenseifner, Gropp 2005 (MPICH)", false},
       build_allgather_recursive_doubling},
      {{"reduce_scatter", "ring", "MPICH MPIR_Reduce_scatter_intra_ring", false}, build_reduce_scatter_ring},
      {{"alltoall", "pairwise", "MPICH MPIR_Alltoall_intra_pairwise", false}, build_alltoall_pairwise},
      {{"alltoall", "all_at_once", "MPICH scattered alltoall, unbounded window", false}, build_alltoall_all_at_once},
  };
  return entries;
}

}  // namespace

const std::vector<AlgorithmInfo>& algorithms() {
  static const std::vector<AlgorithmInfo> infos = [] {
    std::vector<AlgorithmInfo> v;
    for (const auto& e : registry()) v.push_back(e.info);
    return v;
  }();
  return infos;
}

namespace {

// The registry entry for (collective, algorithm), or an InputError listing the names.
const Entry& find_entry(std::string_view collective, std::string_view algorithm) {
  std::string names;
  for (const auto& e : registry())
    if (e.info.collective == collective) names += (names.empty() ? "" : ", ") + e.info.algorithm;
  if (names.empty()) {
    std::vector<std::string> seen;
    std::string all;
    for (const auto& e : registry()) {
      if (std::find(seen.begin(), seen.end(), e.info.collective) != seen.end()) continue;
      seen.push_back(e.info.collective);
      all += (all.empty() ? "" : ", ") + e.info.collective;
    }
    throw InputError(fmt::format("unknown collective '{}' (expected one of: {})", collective, all));
  }
  for (const auto& e : registry())
    if (e.info.collective == collective && e.info.algorithm == algorithm) return e;
  throw InputError(fmt::format("unknown algorithm '{}' for {} (expected one of: {})", algorithm, collective, names));
}

}  // namespace

void check_algorithm(std::string_view collective, std::string_view algorithm) {
  (void)find_entry(collective, algorithm);
}

namespace {

// Operations the DAG will hold, from the algorithm's shape: rings and all-to-all are
// quadratic in P, the rest O(P log P). An upper bound for the others.
std::int64_t projected_ops(const AlgorithmInfo& a, std::int64_t p) {
  if (a.collective == "allreduce" && a.algorithm == "ring") return 4 * p * (p - 1) + p;
  if (a.algorithm == "ring" || a.collective == "alltoall") return 2 * p * (p - 1) + p;
  std::int64_t log = 1;
  while ((std::int64_t{1} << log) < p) ++log;
  return 8 * p * (log + 2);
}

}  // namespace

std::int64_t projected_ops(std::string_view collective, std::string_view algorithm, std::int64_t ranks) {
  for (const auto& e : registry())
    if (e.info.collective == collective && e.info.algorithm == algorithm) return projected_ops(e.info, ranks);
  return 0;
}

void check_build_options(std::string_view collective, std::string_view algorithm, const BuildOptions& o,
                         bool check_size) {
  const Entry& e = find_entry(collective, algorithm);
  if (o.ranks < 2) throw InputError(fmt::format("ranks must be at least 2 (got {})", o.ranks));
  if (o.ranks > kMaxBuildRanks)
    throw InputError(fmt::format("ranks must be at most {} (got {})", kMaxBuildRanks, o.ranks));
  if (o.bytes < 0 || o.bytes > kMaxBuildBytes)
    throw InputError(fmt::format("bytes must be in 0..{} (1 TiB; got {})", kMaxBuildBytes, o.bytes));
  if (o.root < 0 || o.root >= o.ranks) throw InputError(fmt::format("root {} is outside 0..{}", o.root, o.ranks - 1));
  if (o.radix < 2) throw InputError(fmt::format("radix must be at least 2 (got {})", o.radix));
  if (!e.info.uses_root && o.root != 0)
    throw InputError(fmt::format("{} {} has no root; --root does not apply", collective, algorithm));
  if (const auto n = projected_ops(e.info, o.ranks); check_size && n > kMaxBuildOps)
    throw InputError(fmt::format("{} {} on {} ranks would have about {} operations, more than the {} this tool builds "
                                 "(the closed-form estimates have no such limit)",
                                 collective, algorithm, o.ranks, n, kMaxBuildOps));
}

Schedule build_schedule(std::string_view collective, std::string_view algorithm, const BuildOptions& o) {
  check_build_options(collective, algorithm, o);
  return find_entry(collective, algorithm).build(o);
}

}  // namespace fabriclab::offload
