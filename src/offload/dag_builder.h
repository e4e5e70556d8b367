// The small toolkit the algorithm builders share: transfers (initiator op + arrival),
// local atomics, ordered-channel bookkeeping, and the closing host_wait of every rank.
// Internal to src/offload/algorithms.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

#include "offload/collectives.h"
#include "offload/schedule.h"

namespace fabriclab::offload {

// Where a transfer reads (in the sender's window) and writes (in the receiver's).
struct Place {
  std::int64_t src = 0;
  std::int64_t dst = 0;
};

struct Transfer {
  OpId send;     // put/atomic on the sender
  OpId arrival;  // arrival on the receiver
};

class DagBuilder {
 public:
  DagBuilder(std::string_view collective, std::string_view algorithm, const BuildOptions& o);

  const BuildOptions& options() const { return o_; }
  Rank ranks() const { return o_.ranks; }

  // A put (or atomic SUM) of `bytes` from rank `from`'s window at `at.src` into `to`'s
  // window at `at.dst`, issued once `deps` (ops of `from`) have completed.
  Transfer put(Rank from, Rank to, std::int64_t bytes, Place at, std::span<const OpId> deps);
  Transfer atomic(Rank from, Rank to, std::int64_t bytes, Place at, std::span<const OpId> deps);
  // An atomic SUM from one part of `r`'s window into another: no arrival; its
  // completion is counted.
  OpId local_atomic(Rank r, std::int64_t bytes, Place at, std::span<const OpId> deps);

  // The data layout (schedule.h DataLayout): every builder sets it; finish() checks that
  // every transfer stays inside the window.
  void set_layout(std::int64_t window_bytes, const std::function<std::int64_t(Rank)>& input,
                  const std::function<std::int64_t(Rank)>& output);
  void add_prologue(HostCopy c) { s_.layout.prologue.push_back(c); }

  // The ordering "after sending `t`, continue": the send's completion when send
  // completions are counted, else nothing (returns an empty list, and the caller's
  // other deps must carry the ordering).
  bool sends_counted() const { return o_.count_send_completions; }

  // Adds, on every rank, a host_wait on that rank's sinks (counted ops nothing local
  // depends on) and returns the schedule.
  Schedule finish();

 private:
  Transfer transfer(OpKind kind, Rank from, Rank to, std::int64_t bytes, Place at, std::span<const OpId> deps);
  void check_local_deps(Rank r, std::span<const OpId> deps) const;

  BuildOptions o_;
  Schedule s_;
  std::vector<char> has_local_child_;
  std::unordered_map<std::uint64_t, OpId> last_arrival_;  // (from, to) -> arrival
};

// The byte offset of chunk c in that split (the sum of chunks 0..c-1).
std::int64_t chunk_offset(std::int64_t bytes, Datatype dt, std::int64_t parts, std::int64_t c);

// Chunk c of `bytes` split into `parts` pieces on element boundaries (the first
// `elements % parts` chunks get one extra element; a vector smaller than an element
// is one element).
std::int64_t chunk_bytes(std::int64_t bytes, Datatype dt, std::int64_t parts, std::int64_t c);

// The builders, one per algorithm, and the published algorithm each follows (the
// definitions in algorithms/*.cc say how it maps onto triggered operations).
// Thakur, Rabenseifner, Gropp, IJHPCA 2005; MPICH MPIR_Allreduce_intra_recursive_doubling.
Schedule build_allreduce_recursive_doubling(const BuildOptions& o);
// Patarasuk and Yuan, JPDC 2009; MPICH MPIR_Allreduce_intra_ring.
Schedule build_allreduce_ring(const BuildOptions& o);
// MPICH binomial reduce (MPIR_Reduce_intra_binomial) then binomial bcast.
Schedule build_allreduce_binomial(const BuildOptions& o);
// Rabenseifner 2004; MPICH MPIR_Allreduce_intra_reduce_scatter_allgather.
Schedule build_allreduce_rabenseifner(const BuildOptions& o);
// MPICH MPIR_Bcast_intra_binomial.
Schedule build_bcast_binomial(const BuildOptions& o);
// MPICH MPIR_Bcast_intra_tree, k-nomial tree of radix k.
Schedule build_bcast_knomial(const BuildOptions& o);
// MPICH MPIR_Reduce_intra_binomial, reductions as NIC atomics (Underwood et al. 2011).
Schedule build_reduce_binomial(const BuildOptions& o);
// Hensgen, Finkel, Manber, IJPP 1988; MPICH MPIR_Barrier_intra_dissemination.
Schedule build_barrier_dissemination(const BuildOptions& o);
// Binomial gather + release, Hensgen et al. 1988, on MPICH's binomial tree.
Schedule build_barrier_binomial(const BuildOptions& o);
// MPICH MPIR_Allgather_intra_ring.
Schedule build_allgather_ring(const BuildOptions& o);
// Thakur, Rabenseifner, Gropp 2005; MPICH MPIR_Allgather_intra_recursive_doubling
// (non-powers of two by the recursive-doubling allreduce fold).
Schedule build_allgather_recursive_doubling(const BuildOptions& o);
// MPICH MPIR_Reduce_scatter_intra_ring.
Schedule build_reduce_scatter_ring(const BuildOptions& o);
// MPICH MPIR_Alltoall_intra_pairwise.
Schedule build_alltoall_pairwise(const BuildOptions& o);
// MPICH MPIR_Alltoall_intra_scattered with an unbounded window.
Schedule build_alltoall_all_at_once(const BuildOptions& o);

}  // namespace fabriclab::offload
