// Collectives built from rounds of pairwise exchanges.
#include "offload/algorithms/trees.h"

namespace fabriclab::offload {

using detail::ExchangeChain;

// Dissemination barrier (Hensgen, Finkel and Manber, IJPP 1988; MPICH
// MPIR_Barrier_intra_dissemination): in round k rank r notifies r + 2^k and waits for
// r - 2^k, ceil(log2 P) rounds.
Schedule build_barrier_dissemination(const BuildOptions& o) {
  DagBuilder b("barrier", "dissemination", o);
  const Rank p = o.ranks;
  b.set_layout(
      0, [](Rank) { return 0; }, [](Rank) { return 0; });
  ExchangeChain chain(b, p);
  for (Rank dist = 1; dist < p; dist *= 2) {
    std::vector<Transfer> sent(static_cast<std::size_t>(p));
    for (Rank r = 0; r < p; ++r) sent[static_cast<std::size_t>(r)] = b.put(r, (r + dist) % p, 0, {}, chain.deps(r));
    for (Rank r = 0; r < p; ++r)
      chain.advance(r, sent[static_cast<std::size_t>(r)].send,
                    sent[static_cast<std::size_t>((r - dist + p) % p)].arrival);
  }
  return b.finish();
}

// Ring allgather (MPICH MPIR_Allgather_intra_ring): in step s rank r forwards block
// (r - s) mod P, the one it received in step s-1, to rank r+1. Layout: the P blocks of
// the result in rank order, a rank's own block (its input) at r*bytes.
Schedule build_allgather_ring(const BuildOptions& o) {
  DagBuilder b("allgather", "ring", o);
  const Rank p = o.ranks;
  b.set_layout(
      p * o.bytes, [&](Rank r) { return r * o.bytes; }, [](Rank) { return 0; });
  std::vector<std::vector<OpId>> deps(static_cast<std::size_t>(p));
  for (Rank s = 0; s + 1 < p; ++s) {
    std::vector<std::vector<OpId>> next(static_cast<std::size_t>(p));
    for (Rank r = 0; r < p; ++r) {
      const std::int64_t block = ((r - s) % p + p) % p * o.bytes;
      next[static_cast<std::size_t>((r + 1) % p)] = {
          b.put(r, (r + 1) % p, o.bytes, {block, block}, deps[static_cast<std::size_t>(r)]).arrival};
    }
    deps = std::move(next);
  }
  return b.finish();
}

// Recursive-doubling allgather (Thakur, Rabenseifner, Gropp 2005): at distance
// 1, 2, 4, ... partners exchange everything they hold. For P not a power of two, the
// fold of MPICH's recursive-doubling allreduce: even ranks below 2*rem first hand their
// block to the odd rank above, which finally returns the whole result. Layout as the
// ring's: blocks in rank order, each rank's own at r*bytes.
Schedule build_allgather_recursive_doubling(const BuildOptions& o) {
  DagBuilder b("allgather", "recursive_doubling", o);
  const detail::Pof2Fold f(o.ranks);
  b.set_layout(
      o.ranks * o.bytes, [&](Rank r) { return r * o.bytes; }, [](Rank) { return 0; });
  ExchangeChain chain(b, o.ranks);
  for (Rank r = 0; r < 2 * f.rem; r += 2) {
    const OpId a = b.put(r, r + 1, o.bytes, {r * o.bytes, r * o.bytes}, {}).arrival;
    chain.seed(r + 1, std::span<const OpId>(&a, 1));
  }
  for (Rank mask = 1; mask < f.pof2; mask <<= 1) {
    std::vector<Transfer> sent(static_cast<std::size_t>(f.pof2));
    for (Rank nr = 0; nr < f.pof2; ++nr) {
      // The ranks whose blocks nr holds: its aligned group of `mask` new ranks.
      std::int64_t blocks = 0;
      const Rank base = nr & ~(mask - 1);
      for (Rank v = base; v < base + mask; ++v) blocks += f.real_ranks_in(v);
      const std::int64_t first = f.first_real(base) * o.bytes;
      sent[static_cast<std::size_t>(nr)] = b.put(f.real(nr), f.real(nr ^ mask), blocks * o.bytes, {first, first},
                                                 chain.deps(f.real(nr)));
    }
    for (Rank nr = 0; nr < f.pof2; ++nr)
      chain.advance(f.real(nr), sent[static_cast<std::size_t>(nr)].send,
                    sent[static_cast<std::size_t>(nr ^ mask)].arrival);
  }
  for (Rank r = 1; r < 2 * f.rem; r += 2) b.put(r, r - 1, o.ranks * o.bytes, {}, chain.deps(r));
  return b.finish();
}

// Ring reduce-scatter (MPICH MPIR_Reduce_scatter_intra_ring, the first half of ring
// allreduce): in step s rank r atomically adds block (r - s - 1) mod P into rank r+1,
// so that after P-1 steps rank r holds block r fully reduced. Layout: the whole vector in
// place; rank r's result is its block r.
Schedule build_reduce_scatter_ring(const BuildOptions& o) {
  DagBuilder b("reduce_scatter", "ring", o);
  const Rank p = o.ranks;
  b.set_layout(
      chunk_offset(o.bytes, o.datatype, p, p), [](Rank) { return 0; },
      [&](Rank r) { return chunk_offset(o.bytes, o.datatype, p, r); });
  std::vector<std::vector<OpId>> deps(static_cast<std::size_t>(p));
  for (Rank s = 0; s + 1 < p; ++s) {
    std::vector<std::vector<OpId>> next(static_cast<std::size_t>(p));
    for (Rank r = 0; r < p; ++r) {
      const Rank block = ((r - s - 1) % p + p) % p;
      next[static_cast<std::size_t>((r + 1) % p)] = {
          b.atomic(r, (r + 1) % p, chunk_bytes(o.bytes, o.datatype, p, block),
                   {chunk_offset(o.bytes, o.datatype, p, block), chunk_offset(o.bytes, o.datatype, p, block)},
                   deps[static_cast<std::size_t>(r)])
              .arrival};
    }
    deps = std::move(next);
  }
  return b.finish();
}

// Pairwise-exchange all-to-all (MPICH MPIR_Alltoall_intra_pairwise): P-1 steps; in step
// i rank r sends to r XOR i (P a power of two) or r + i and receives from r XOR i or
// r - i. Each step starts when the previous one has completed (its arrival and, when
// counted, its send), as a sendrecv loop does.
Schedule build_alltoall_pairwise(const BuildOptions& o) {
  DagBuilder b("alltoall", "pairwise", o);
  const Rank p = o.ranks;
  const auto at = detail::alltoall_layout(b);
  const bool pof2 = (p & (p - 1)) == 0;
  std::vector<std::vector<OpId>> deps(static_cast<std::size_t>(p));
  for (Rank i = 1; i < p; ++i) {
    std::vector<Transfer> sent(static_cast<std::size_t>(p));
    for (Rank r = 0; r < p; ++r)
      sent[static_cast<std::size_t>(r)] = b.put(r, pof2 ? (r ^ i) : (r + i) % p, o.bytes,
                                                at(r, pof2 ? (r ^ i) : (r + i) % p), deps[static_cast<std::size_t>(r)]);
    for (Rank r = 0; r < p; ++r) {
      const Rank src = pof2 ? (r ^ i) : (r - i + p) % p;
      auto& d = deps[static_cast<std::size_t>(r)];
      d = {sent[static_cast<std::size_t>(src)].arrival};
      if (b.sends_counted()) d.push_back(sent[static_cast<std::size_t>(r)].send);
    }
  }
  return b.finish();
}

// All-at-once all-to-all (MPICH MPIR_Alltoall_intra_scattered with an unbounded
// window): every rank posts all P-1 puts at start.
Schedule build_alltoall_all_at_once(const BuildOptions& o) {
  DagBuilder b("alltoall", "all_at_once", o);
  const auto at = detail::alltoall_layout(b);
  for (Rank r = 0; r < o.ranks; ++r)
    for (Rank i = 1; i < o.ranks; ++i) {
      const Rank to = (r + i) % o.ranks;
      b.put(r, to, o.bytes, at(r, to), {});
    }
  return b.finish();
}

}  // namespace fabriclab::offload
