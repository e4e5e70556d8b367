// Tree shapes and rank folding shared by the algorithm builders. Internal.
#pragma once

#include <vector>

#include "offload/dag_builder.h"

namespace fabriclab::offload::detail {

// k-nomial tree rooted at `root` over ranks 0..P-1 (k = 2: the binomial tree of
// MPICH's MPIR_Bcast_intra_binomial / MPIR_Reduce_intra_binomial). Children are listed
// largest subtree first, the order in which a broadcast serves them.
struct Tree {
  Rank root = 0;
  std::vector<Rank> parent;                 // kNoRank for the root
  std::vector<std::vector<Rank>> children;  // real ranks
  std::vector<Rank> order;                  // ranks by relative rank 0..P-1 (root first)
};
Tree knomial_tree(Rank ranks, Rank root, int k);

// Broadcast down `t`: each rank forwards to its children once its own `at[r]` deps
// are met (the root's deps are `root_deps`). Returns each rank's arrival (kNoOp at root).
// Every transfer moves [at.src, +bytes) to [at.dst, +bytes).
std::vector<OpId> tree_bcast(DagBuilder& b, const Tree& t, OpKind kind, std::int64_t bytes, Place at,
                             std::span<const OpId> root_deps);
inline constexpr OpId kNoOp = -1;

// Reduce (or gather) up `t`: each rank sends to its parent once all its children's
// arrivals are in. Returns, per rank, the arrivals it received from its children.
std::vector<std::vector<OpId>> tree_reduce(DagBuilder& b, const Tree& t, OpKind kind, std::int64_t bytes, Place at);

// The fold of MPICH's recursive-doubling algorithms for P that is not a power of two:
// with pof2 the largest power of two <= P and rem = P - pof2, each even rank below
// 2*rem hands its data to the odd rank above it and sits out; the others take part
// under a new rank.
struct Pof2Fold {
  Rank pof2, rem;
  explicit Pof2Fold(Rank p);
  Rank newrank(Rank r) const { return r < 2 * rem ? (r % 2 ? r / 2 : kNoRank) : r - rem; }
  Rank real(Rank nr) const { return nr < rem ? 2 * nr + 1 : nr + rem; }
  Rank real_ranks_in(Rank nr) const { return nr < rem ? 2 : 1; }
  // The lowest real rank whose data new rank nr holds (its real ranks are consecutive).
  Rank first_real(Rank nr) const { return nr < rem ? 2 * nr : nr + rem; }
  // log2(pof2): the number of recursive-doubling levels.
  int levels() const {
    int l = 0;
    while ((Rank{1} << l) < pof2) ++l;
    return l;
  }
};

// What the next step of a sequence of pairwise exchanges waits for on each rank. With
// counted send completions a step waits for the data it received and for its own
// previous send (whose firing implies every earlier step); otherwise for every arrival
// so far, which carries the same ordering without send completions.
class ExchangeChain {
 public:
  ExchangeChain(const DagBuilder& b, Rank ranks)
      : counted_(b.sends_counted()), deps_(static_cast<std::size_t>(ranks)) {}
  std::span<const OpId> deps(Rank r) const { return deps_[static_cast<std::size_t>(r)]; }
  void seed(Rank r, std::span<const OpId> ids) {
    auto& d = deps_[static_cast<std::size_t>(r)];
    d.assign(ids.begin(), ids.end());
  }
  // Rank r sent `sent` and received `arrived` in this step.
  void advance(Rank r, OpId sent, OpId arrived) {
    auto& d = deps_[static_cast<std::size_t>(r)];
    if (counted_) {
      d = {arrived, sent};
    } else {
      d.push_back(arrived);
    }
  }

 private:
  bool counted_;
  std::vector<std::vector<OpId>> deps_;
};

// The all-to-all layout: P send blocks (block j for rank j) then P receive blocks (block j
// from rank j); the host copies a rank's own block across (as MPICH's local copy does).
// Returns where a transfer from `from` to `to` reads and writes.
inline std::function<Place(Rank, Rank)> alltoall_layout(DagBuilder& b) {
  const Rank p = b.ranks();
  const std::int64_t n = b.options().bytes;
  b.set_layout(
      2 * p * n, [](Rank) { return 0; }, [=](Rank) { return p * n; });
  for (Rank r = 0; r < p; ++r) b.add_prologue({.rank = r, .src_offset = r * n, .dst_offset = (p + r) * n, .bytes = n});
  return [=](Rank from, Rank to) { return Place{to * n, (p + from) * n}; };
}

}  // namespace fabriclab::offload::detail
