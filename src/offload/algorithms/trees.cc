#include "offload/algorithms/trees.h"

#include <deque>

namespace fabriclab::offload::detail {

Tree knomial_tree(Rank p, Rank root, int k) {
  Tree t;
  t.root = root;
  t.parent.assign(static_cast<std::size_t>(p), kNoRank);
  t.children.assign(static_cast<std::size_t>(p), {});
  auto real = [&](Rank vr) { return (vr + root) % p; };
  for (Rank vr = 0; vr < p; ++vr) {
    t.order.push_back(real(vr));
    // The parent clears the lowest non-zero base-k digit of vr.
    std::int64_t mask = 1;
    while (mask < p) {
      const std::int64_t digit = vr % (k * mask);
      if (digit != 0) {
        t.parent[static_cast<std::size_t>(real(vr))] = real(static_cast<Rank>(vr - digit));
        break;
      }
      mask *= k;
    }
    // Children: vr + j*m for m = mask/k, mask/k^2, ..., 1 (largest subtree first).
    for (std::int64_t m = mask / k; m >= 1; m /= k)
      for (std::int64_t j = 1; j < k && vr + j * m < p; ++j)
        t.children[static_cast<std::size_t>(real(vr))].push_back(real(static_cast<Rank>(vr + j * m)));
  }
  return t;
}

std::vector<OpId> tree_bcast(DagBuilder& b, const Tree& t, OpKind kind, std::int64_t bytes, Place at,
                             std::span<const OpId> root_deps) {
  std::vector<OpId> arrival(t.parent.size(), kNoOp);
  std::deque<Rank> queue{t.root};
  while (!queue.empty()) {
    const Rank u = queue.front();
    queue.pop_front();
    std::vector<OpId> deps;
    if (u == t.root) deps.assign(root_deps.begin(), root_deps.end());
    else deps = {arrival[static_cast<std::size_t>(u)]};
    for (Rank c : t.children[static_cast<std::size_t>(u)]) {
      const Transfer x = kind == OpKind::atomic ? b.atomic(u, c, bytes, at, deps) : b.put(u, c, bytes, at, deps);
      arrival[static_cast<std::size_t>(c)] = x.arrival;
      queue.push_back(c);
    }
  }
  return arrival;
}

std::vector<std::vector<OpId>> tree_reduce(DagBuilder& b, const Tree& t, OpKind kind, std::int64_t bytes, Place at) {
  std::vector<std::vector<OpId>> arrivals(t.parent.size());
  // Children have larger relative ranks than their parent: walk from the leaves up.
  for (auto it = t.order.rbegin(); it != t.order.rend(); ++it) {
    const Rank r = *it;
    if (r == t.root) continue;
    const Rank parent = t.parent[static_cast<std::size_t>(r)];
    const auto& deps = arrivals[static_cast<std::size_t>(r)];
    const Transfer x = kind == OpKind::atomic ? b.atomic(r, parent, bytes, at, deps)
                                              : b.put(r, parent, bytes, at, deps);
    arrivals[static_cast<std::size_t>(parent)].push_back(x.arrival);
  }
  return arrivals;
}

Pof2Fold::Pof2Fold(Rank p) : pof2(1) {
  while (pof2 * 2 <= p) pof2 *= 2;
  rem = p - pof2;
}

}  // namespace fabriclab::offload::detail
