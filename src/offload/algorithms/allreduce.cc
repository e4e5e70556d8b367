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
// below 2*rem adds its whole vector (level buffer 0, offset 0) into the odd rank above
// it. Returns, per rank, what its first exchange waits for.
std::vector<std::vector<OpId>> fold_in(DagBuilder& b, const Pof2Fold& f, std::int64_t bytes) {
  std::vector<std::vector<OpId>> deps(static_cast<std::size_t>(b.ranks()));
  for (Rank r = 0; r < 2 * f.rem; r += 2)
    deps[static_cast<std::size_t>(r + 1)] = {b.atomic(r, r + 1, bytes, {0, 0}, {}).arrival};
  return deps;
}

// The post-step: each odd rank below 2*rem puts the result (at `result`) into the same
// place of the even rank below it.
void fold_out(DagBuilder& b, const Pof2Fold& f, std::int64_t bytes, std::int64_t result,
              const std::vector<std::vector<OpId>>& deps) {
  for (Rank r = 1; r < 2 * f.rem; r += 2) b.put(r, r - 1, bytes, {result, result}, deps[static_cast<std::size_t>(r)]);
}

}  // namespace

// MPICH MPIR_Allreduce_intra_recursive_doubling (Thakur, Rabenseifner, Gropp, IJHPCA
// 2005). Level i: each rank atomically adds its level-i buffer into its partner's
// level-(i+1) buffer and, by a local atomic, into its own; level i+1 starts when both
// have landed. The local atomic chains the levels, so no level waits on a send.
// Layout: log2(pof2)+1 level buffers of `bytes`, level i at i*bytes; the input is level
// 0, the result the last level (zero-initialised, so the two atomics build it).
Schedule build_allreduce_recursive_doubling(const BuildOptions& o) {
  DagBuilder b("allreduce", "recursive_doubling", o);
  const Pof2Fold f(o.ranks);
  const std::int64_t result = f.levels() * o.bytes;
  b.set_layout(
      result + o.bytes, [](Rank) { return 0; }, [&](Rank) { return result; });
  auto cur = fold_in(b, f, o.bytes);
  std::int64_t level = 0;
  for (Rank mask = 1; mask < f.pof2; mask <<= 1, level += o.bytes) {
    std::vector<std::vector<OpId>> next(static_cast<std::size_t>(o.ranks));
    const Place up{level, level + o.bytes};
    for (Rank nr = 0; nr < f.pof2; ++nr) {
      const Rank r = f.real(nr), dst = f.real(nr ^ mask);
      const auto& deps = cur[static_cast<std::size_t>(r)];
      const Transfer x = b.atomic(r, dst, o.bytes, up, deps);
      const OpId self = b.local_atomic(r, o.bytes, up, deps);
      next[static_cast<std::size_t>(dst)].push_back(x.arrival);
      next[static_cast<std::size_t>(r)].push_back(self);
    }
    cur = std::move(next);
  }
  fold_out(b, f, o.bytes, result, cur);
  return b.finish();
}

// Ring allreduce (Patarasuk and Yuan, JPDC 2009; MPICH MPIR_Allreduce_intra_ring):
// P-1 reduce-scatter steps, rank r atomically adding chunk (r - s) mod P into rank r+1,
// then P-1 allgather steps putting chunk (r + 1 - t) mod P to rank r+1. Every step
// waits only for the arrival of the previous one. Layout: one vector, in place; chunk c
// at the same offset on every rank.
Schedule build_allreduce_ring(const BuildOptions& o) {
  DagBuilder b("allreduce", "ring", o);
  const Rank p = o.ranks;
  b.set_layout(
      chunk_offset(o.bytes, o.datatype, p, p), [](Rank) { return 0; }, [](Rank) { return 0; });
  auto chunk = [&](Rank c) { return chunk_bytes(o.bytes, o.datatype, p, ((c % p) + p) % p); };
  auto at = [&](Rank c) {
    const std::int64_t off = chunk_offset(o.bytes, o.datatype, p, ((c % p) + p) % p);
    return Place{off, off};
  };
  std::vector<OpId> prev(static_cast<std::size_t>(p), detail::kNoOp);
  auto deps_of = [&](Rank r) {
    const OpId d = prev[static_cast<std::size_t>(r)];
    return d == detail::kNoOp ? std::vector<OpId>{} : std::vector<OpId>{d};
  };
  for (Rank s = 0; s + 1 < p; ++s) {
    std::vector<OpId> next(static_cast<std::size_t>(p));
    for (Rank r = 0; r < p; ++r)
      next[static_cast<std::size_t>((r + 1) % p)] =
          b.atomic(r, (r + 1) % p, chunk(r - s), at(r - s), deps_of(r)).arrival;
    prev = std::move(next);
  }
  for (Rank t = 0; t + 1 < p; ++t) {
    std::vector<OpId> next(static_cast<std::size_t>(p));
    for (Rank r = 0; r < p; ++r)
      next[static_cast<std::size_t>((r + 1) % p)] =
          b.put(r, (r + 1) % p, chunk(r + 1 - t), at(r + 1 - t), deps_of(r)).arrival;
    prev = std::move(next);
  }
  return b.finish();
}

// Binomial reduce to the root followed by a binomial broadcast (MPICH's reduce+bcast
// allreduce; trees of MPIR_Reduce_intra_binomial and MPIR_Bcast_intra_binomial).
Schedule build_allreduce_binomial(const BuildOptions& o) {
  DagBuilder b("allreduce", "binomial", o);
  b.set_layout(
      o.bytes, [](Rank) { return 0; }, [](Rank) { return 0; });  // in place
  const auto t = detail::knomial_tree(o.ranks, o.root, 2);
  const auto in = detail::tree_reduce(b, t, OpKind::atomic, o.bytes, {});
  detail::tree_bcast(b, t, OpKind::put, o.bytes, {}, in[static_cast<std::size_t>(o.root)]);
  return b.finish();
}

// Rabenseifner's algorithm (MPICH MPIR_Allreduce_intra_reduce_scatter_allgather):
// reduce-scatter by recursive halving (distance 1, 2, 4, ...), each rank atomically
// adding the half it gives away into its partner and, by a local atomic, the half it
// keeps into its next-level buffer; then an allgather by recursive doubling (distance
// pof2/2, ..., 1) with puts. Non-powers of two fold in and out as MPICH does.
// Layout: level buffers as in recursive doubling (the vector split in pof2 chunks); the
// allgather works in the last level, where the reduce-scatter leaves each chunk.
Schedule build_allreduce_rabenseifner(const BuildOptions& o) {
  DagBuilder b("allreduce", "rabenseifner", o);
  const Pof2Fold f(o.ranks);
  auto offset = [&](Rank c) { return chunk_offset(o.bytes, o.datatype, f.pof2, c); };
  auto range_bytes = [&](Rank lo, Rank hi) { return offset(hi) - offset(lo); };
  const std::int64_t stride = offset(f.pof2);
  const std::int64_t result = f.levels() * stride;
  b.set_layout(
      result + stride, [](Rank) { return 0; }, [&](Rank) { return result; });
  auto cur = fold_in(b, f, o.bytes);
  std::int64_t level = 0;
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
      const Transfer x = b.atomic(r, dst, range_bytes(send_lo, send_hi),
                                  {level + offset(send_lo), level + stride + offset(send_lo)}, deps);
      const OpId self = b.local_atomic(r, range_bytes(nlo[i], nhi[i]),
                                       {level + offset(nlo[i]), level + stride + offset(nlo[i])}, deps);
      next[static_cast<std::size_t>(dst)].push_back(x.arrival);
      next[static_cast<std::size_t>(r)].push_back(self);
    }
    cur = std::move(next);
    lo = std::move(nlo);
    hi = std::move(nhi);
    level += stride;
  }
  ExchangeChain chain(b, o.ranks);
  for (Rank nr = 0; nr < f.pof2; ++nr) chain.seed(f.real(nr), cur[static_cast<std::size_t>(f.real(nr))]);
  for (Rank mask = f.pof2 >> 1; mask >= 1; mask >>= 1) {
    std::vector<Transfer> sent(static_cast<std::size_t>(f.pof2));
    for (Rank nr = 0; nr < f.pof2; ++nr) {
      const auto i = static_cast<std::size_t>(nr);
      sent[i] = b.put(f.real(nr), f.real(nr ^ mask), range_bytes(lo[i], hi[i]),
                      {result + offset(lo[i]), result + offset(lo[i])}, chain.deps(f.real(nr)));
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
  fold_out(b, f, o.bytes, result, fin);
  return b.finish();
}

}  // namespace fabriclab::offload
