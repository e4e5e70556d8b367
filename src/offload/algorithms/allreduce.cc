// Allreduce builders. Reductions are RMA atomics (SUM) into the receiver's buffer, so
// the NIC reduces with no host involvement (the scheme of Underwood et al., "Enabling
// flexible collective communication offload with triggered operations", HOTI 2011).
#include <vector>

#include "offload/algorithms/trees.h"

namespace fabriclab::offload {

using detail::ExchangeChain;
using detail::Pof2Fold;

namespace {

// The non-power-of-two pre-step of MPICH's recursive-doubling family: each even rank
// below 2*rem adds its whole vector into the odd rank above it. Returns, per rank, what
// its first exchange waits for.
std::vector<std::vector<OpId>> fold_in(DagBuilder& b, const Pof2Fold& f, OpKind kind,
                                       std::int64_t bytes) {
  std::vector<std::vector<OpId>> deps(static_cast<std::size_t>(b.ranks()));
  for (Rank r = 0; r < 2 * f.rem; r += 2) {
    const Transfer x = kind == OpKind::atomic ? b.atomic(r, r + 1, bytes, {})
                                              : b.put(r, r + 1, bytes, {});
    deps[static_cast<std::size_t>(r + 1)] = {x.arrival};
  }
  return deps;
}

// The post-step: each odd rank below 2*rem sends the result to the even rank below it.
void fold_out(DagBuilder& b, const Pof2Fold& f, std::int64_t bytes,
              const std::vector<std::vector<OpId>>& deps) {
  for (Rank r = 1; r < 2 * f.rem; r += 2) b.put(r, r - 1, bytes, deps[static_cast<std::size_t>(r)]);
}

}  // namespace

// MPICH MPIR_Allreduce_intra_recursive_doubling (Thakur, Rabenseifner, Gropp, IJHPCA
// 2005). Level i: each rank atomically adds its level-i buffer into its partner's
// level-(i+1) buffer and, by a local atomic, into its own; level i+1 starts when both
// have landed. The local atomic chains the levels, so no level waits on a send.
Schedule build_allreduce_recursive_doubling(const BuildOptions& o) {
  DagBuilder b("allreduce", "recursive_doubling", o);
  const Pof2Fold f(o.ranks);
  auto cur = fold_in(b, f, OpKind::atomic, o.bytes);
  for (Rank mask = 1; mask < f.pof2; mask <<= 1) {
    std::vector<std::vector<OpId>> next(static_cast<std::size_t>(o.ranks));
    for (Rank nr = 0; nr < f.pof2; ++nr) {
      const Rank r = f.real(nr), dst = f.real(nr ^ mask);
      const auto& deps = cur[static_cast<std::size_t>(r)];
      const Transfer x = b.atomic(r, dst, o.bytes, deps);
      const OpId self = b.local_atomic(r, o.bytes, deps);
      next[static_cast<std::size_t>(dst)].push_back(x.arrival);
      next[static_cast<std::size_t>(r)].push_back(self);
    }
    cur = std::move(next);
  }
  fold_out(b, f, o.bytes, cur);
  return b.finish();
}

// Ring allreduce (Patarasuk and Yuan, JPDC 2009; MPICH MPIR_Allreduce_intra_ring):
// P-1 reduce-scatter steps, rank r atomically adding chunk (r - s) mod P into rank r+1,
// then P-1 allgather steps putting chunk (r + 1 - t) mod P to rank r+1. Every step
// waits only for the arrival of the previous one.
Schedule build_allreduce_ring(const BuildOptions& o) {
  DagBuilder b("allreduce", "ring", o);
  const Rank p = o.ranks;
  auto chunk = [&](Rank c) { return chunk_bytes(o.bytes, o.datatype, p, ((c % p) + p) % p); };
  std::vector<OpId> prev(static_cast<std::size_t>(p), detail::kNoOp);
  auto deps_of = [&](Rank r) {
    const OpId d = prev[static_cast<std::size_t>(r)];
    return d == detail::kNoOp ? std::vector<OpId>{} : std::vector<OpId>{d};
  };
  for (Rank s = 0; s + 1 < p; ++s) {
    std::vector<OpId> next(static_cast<std::size_t>(p));
    for (Rank r = 0; r < p; ++r)
      next[static_cast<std::size_t>((r + 1) % p)] =
          b.atomic(r, (r + 1) % p, chunk(r - s), deps_of(r)).arrival;
    prev = std::move(next);
  }
  for (Rank t = 0; t + 1 < p; ++t) {
    std::vector<OpId> next(static_cast<std::size_t>(p));
    for (Rank r = 0; r < p; ++r)
      next[static_cast<std::size_t>((r + 1) % p)] =
          b.put(r, (r + 1) % p, chunk(r + 1 - t), deps_of(r)).arrival;
    prev = std::move(next);
  }
  return b.finish();
}

// Binomial reduce to the root followed by a binomial broadcast (MPICH's reduce+bcast
// allreduce; trees of MPIR_Reduce_intra_binomial and MPIR_Bcast_intra_binomial).
Schedule build_allreduce_binomial(const BuildOptions& o) {
  DagBuilder b("allreduce", "binomial", o);
  const auto t = detail::knomial_tree(o.ranks, o.root, 2);
  const auto in = detail::tree_reduce(b, t, OpKind::atomic, o.bytes);
  detail::tree_bcast(b, t, OpKind::put, o.bytes, in[static_cast<std::size_t>(o.root)]);
  return b.finish();
}

// Rabenseifner's algorithm (MPICH MPIR_Allreduce_intra_reduce_scatter_allgather):
// reduce-scatter by recursive halving (distance 1, 2, 4, ...), each rank atomically
// adding the half it gives away into its partner and, by a local atomic, the half it
// keeps into its next-level buffer; then an allgather by recursive doubling (distance
// pof2/2, ..., 1) with puts. Non-powers of two fold in and out as MPICH does.
Schedule build_allreduce_rabenseifner(const BuildOptions& o) {
  DagBuilder b("allreduce", "rabenseifner", o);
  const Pof2Fold f(o.ranks);
  auto range_bytes = [&](Rank lo, Rank hi) {
    std::int64_t n = 0;
    for (Rank c = lo; c < hi; ++c) n += chunk_bytes(o.bytes, o.datatype, f.pof2, c);
    return n;
  };
  auto cur = fold_in(b, f, OpKind::atomic, o.bytes);
  std::vector<Rank> lo(static_cast<std::size_t>(f.pof2), 0), hi(static_cast<std::size_t>(f.pof2), f.pof2);
  for (Rank mask = 1; mask < f.pof2; mask <<= 1) {
    std::vector<std::vector<OpId>> next(static_cast<std::size_t>(o.ranks));
    std::vector<Rank> nlo = lo, nhi = hi;
    for (Rank nr = 0; nr < f.pof2; ++nr) {
      const Rank r = f.real(nr), dst = f.real(nr ^ mask);
      const auto i = static_cast<std::size_t>(nr);
      const Rank mid = lo[i] + (hi[i] - lo[i]) / 2;
      const bool keep_low = nr < (nr ^ mask);
      const Rank send_lo = keep_low ? mid : lo[i], send_hi = keep_low ? hi[i] : mid;
      nlo[i] = keep_low ? lo[i] : mid;
      nhi[i] = keep_low ? mid : hi[i];
      const auto& deps = cur[static_cast<std::size_t>(r)];
      const Transfer x = b.atomic(r, dst, range_bytes(send_lo, send_hi), deps);
      const OpId self = b.local_atomic(r, range_bytes(nlo[i], nhi[i]), deps);
      next[static_cast<std::size_t>(dst)].push_back(x.arrival);
      next[static_cast<std::size_t>(r)].push_back(self);
    }
    cur = std::move(next);
    lo = std::move(nlo);
    hi = std::move(nhi);
  }
  ExchangeChain chain(b, o.ranks);
  for (Rank nr = 0; nr < f.pof2; ++nr) chain.seed(f.real(nr), cur[static_cast<std::size_t>(f.real(nr))]);
  for (Rank mask = f.pof2 >> 1; mask >= 1; mask >>= 1) {
    std::vector<Transfer> sent(static_cast<std::size_t>(f.pof2));
    for (Rank nr = 0; nr < f.pof2; ++nr) {
      const auto i = static_cast<std::size_t>(nr);
      sent[i] = b.put(f.real(nr), f.real(nr ^ mask), range_bytes(lo[i], hi[i]),
                      chain.deps(f.real(nr)));
    }
    std::vector<Rank> nlo = lo, nhi = hi;
    for (Rank nr = 0; nr < f.pof2; ++nr) {
      const auto i = static_cast<std::size_t>(nr), j = static_cast<std::size_t>(nr ^ mask);
      chain.advance(f.real(nr), sent[i].send, sent[j].arrival);
      nlo[i] = std::min(lo[i], lo[j]);
      nhi[i] = std::max(hi[i], hi[j]);
    }
    lo = std::move(nlo);
    hi = std::move(nhi);
  }
  std::vector<std::vector<OpId>> fin(static_cast<std::size_t>(o.ranks));
  for (Rank r = 1; r < 2 * f.rem; r += 2) {
    auto d = chain.deps(r);
    fin[static_cast<std::size_t>(r)].assign(d.begin(), d.end());
  }
  fold_out(b, f, o.bytes, fin);
  return b.finish();
}

}  // namespace fabriclab::offload
