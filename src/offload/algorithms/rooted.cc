// Rooted collectives and barriers built on trees.
#include "offload/algorithms/trees.h"

namespace fabriclab::offload {

// Data layout of the rooted collectives: one vector of `bytes` at offset 0, in place.
//
// MPICH MPIR_Bcast_intra_binomial: the root's data travels down a binomial tree, each
// rank forwarding to its children as soon as its own copy has arrived.
Schedule build_bcast_binomial(const BuildOptions& o) {
  DagBuilder b("bcast", "binomial", o);
  b.set_layout(
      o.bytes, [](Rank) { return 0; }, [](Rank) { return 0; });
  detail::tree_bcast(b, detail::knomial_tree(o.ranks, o.root, 2), OpKind::put, o.bytes, {}, {});
  return b.finish();
}

// k-nomial broadcast (MPICH MPIR_Bcast_intra_tree with tree_type knomial_1, radix k):
// each rank forwards to up to k-1 children per level.
Schedule build_bcast_knomial(const BuildOptions& o) {
  DagBuilder b("bcast", "knomial", o);
  b.set_layout(
      o.bytes, [](Rank) { return 0; }, [](Rank) { return 0; });
  detail::tree_bcast(b, detail::knomial_tree(o.ranks, o.root, o.radix), OpKind::put, o.bytes, {}, {});
  return b.finish();
}

// MPICH MPIR_Reduce_intra_binomial with the reduction done by the NIC: each rank
// atomically adds its buffer into its parent's once all its children's atomics landed.
Schedule build_reduce_binomial(const BuildOptions& o) {
  DagBuilder b("reduce", "binomial", o);
  b.set_layout(
      o.bytes, [](Rank) { return 0; }, [](Rank) { return 0; });
  detail::tree_reduce(b, detail::knomial_tree(o.ranks, o.root, 2), OpKind::atomic, o.bytes, {});
  return b.finish();
}

// Binomial barrier: a zero-byte gather up a binomial tree to the root, then a
// zero-byte release broadcast down the same tree (the tree barrier of Hensgen, Finkel
// and Manber, IJPP 1988, on MPICH's binomial tree).
Schedule build_barrier_binomial(const BuildOptions& o) {
  DagBuilder b("barrier", "binomial", o);
  const auto t = detail::knomial_tree(o.ranks, o.root, 2);
  b.set_layout(
      0, [](Rank) { return 0; }, [](Rank) { return 0; });
  const auto in = detail::tree_reduce(b, t, OpKind::put, 0, {});
  detail::tree_bcast(b, t, OpKind::put, 0, {}, in[static_cast<std::size_t>(o.root)]);
  return b.finish();
}

}  // namespace fabriclab::offload
