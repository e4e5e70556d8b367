// Builders of triggered-operation DAGs for collective algorithms, and the registry that
// names them. A builder emits the dependence DAG only (no counters); a counter
// assignment (assignment.h) realises it on counters.
//
//   BuildOptions o{.ranks = 8, .bytes = 1 << 20};
//   Schedule dag = build_schedule("allreduce", "ring", o);
//
// Conventions shared by every builder (docs/offload-model.md explains them):
// - `bytes` is the whole vector for allreduce, reduce, bcast and reduce_scatter, and the
//   block each rank contributes (allgather) or sends to each peer (alltoall).
// - A transfer is an initiator op (put or atomic SUM) plus an arrival op on the target.
// - Every rank ends with one host_wait on everything it must observe: its sinks.
// - With count_send_completions = false, puts/atomics to other ranks get no completion
//   counter; builders then express every ordering through arrivals or local ops.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/params.h"
#include "offload/schedule.h"

namespace fabriclab::offload {

enum class Datatype : std::uint8_t { int64, float64, float32 };
inline constexpr params::EnumNames<Datatype, 3> kDatatypeNames{
    {{Datatype::int64, "int64"}, {Datatype::float64, "double"}, {Datatype::float32, "float"}}};
std::string_view to_string(Datatype d);       // "int64", "double", "float"
Datatype parse_datatype(std::string_view s);  // throws InputError
std::int64_t datatype_size(Datatype d);

struct BuildOptions {
  Rank ranks = 2;
  std::int64_t bytes = 8;
  Rank root = 0;
  Datatype datatype = Datatype::float64;
  int radix = 4;                       // knomial bcast
  bool ordered_channels = false;       // in-order delivery per (sender, receiver) pair
  bool count_send_completions = true;  // false: sends' local completions are not counted
};

struct AlgorithmInfo {
  std::string collective;
  std::string algorithm;
  std::string reference;  // the published algorithm the builder follows
  bool uses_root;
};

// Every (collective, algorithm) pair the planner builds, in a stable order.
const std::vector<AlgorithmInfo>& algorithms();
// InputError listing the names when (collective, algorithm) is not a built-in one.
void check_algorithm(std::string_view collective, std::string_view algorithm);

// Limits of what the builders build: P up to 2^20, 1 TiB messages, and 2^25 operations
// (about P = 2900 for ring allreduce; the analyses need a few hundred bytes per op).
inline constexpr Rank kMaxBuildRanks = 1 << 20;
inline constexpr std::int64_t kMaxBuildBytes = std::int64_t{1} << 40;
inline constexpr std::int64_t kMaxBuildOps = std::int64_t{1} << 25;
// The operations a collective's DAG will hold on `ranks` ranks, from the algorithm's
// shape (a builder reserves room for them; kMaxBuildOps limits them); 0 for an unknown pair.
std::int64_t projected_ops(std::string_view collective, std::string_view algorithm, std::int64_t ranks);

// Throws InputError for an unknown collective/algorithm, ranks outside 2..2^20, a root
// outside 0..P-1 (or given to a collective without one), radix < 2, bytes outside
// 0..1 TiB, or (with check_size) a DAG larger than kMaxBuildOps.
void check_build_options(std::string_view collective, std::string_view algorithm, const BuildOptions& options,
                         bool check_size = true);
Schedule build_schedule(std::string_view collective, std::string_view algorithm, const BuildOptions& options);

}  // namespace fabriclab::offload
