#include "offload/assignment.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <functional>
#include <limits>
#include <map>
#include <unordered_map>

#include "core/error.h"
#include "offload/assignment_detail.h"
#include "offload/exact.h"

namespace fabriclab::offload {

std::string_view to_string(Strategy s) { return params::name_of(kStrategyNames, s); }

RankAssignment assign_naive(const RankView& v) {
  const auto n = v.size();
  RankAssignment a;
  a.increments.assign(static_cast<std::size_t>(n), -1);
  for (std::int32_t i = 0; i < n; ++i)
    if (v.incrementer[static_cast<std::size_t>(i)]) a.increments[static_cast<std::size_t>(i)] = a.counters++;
  a.trigger.assign(static_cast<std::size_t>(n), -1);
  a.threshold.assign(static_cast<std::size_t>(n), 0);
  for (std::int32_t i = 0; i < n; ++i) {
    const auto& par = v.parents[static_cast<std::size_t>(i)];
    if (par.size() == 1) {
      const auto p = static_cast<std::size_t>(par[0]);
      a.trigger[static_cast<std::size_t>(i)] = a.increments[p];
      a.threshold[static_cast<std::size_t>(i)] = v.weight[p];
    } else if (par.size() >= 2) {
      const std::int32_t t = a.counters++;
      a.trigger[static_cast<std::size_t>(i)] = t;
      a.threshold[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(par.size());
      for (auto p : par) {
        a.relays.emplace_back(i, p);
        a.increments.push_back(t);
        a.trigger.push_back(a.increments[static_cast<std::size_t>(p)]);
        a.threshold.push_back(v.weight[static_cast<std::size_t>(p)]);
      }
    }
  }
  return a;
}

namespace {

struct UnionFind {
  std::vector<std::int32_t> up;
  explicit UnionFind(std::int32_t n) : up(static_cast<std::size_t>(n)) { std::iota(up.begin(), up.end(), 0); }
  std::int32_t find(std::int32_t x) {
    while (up[static_cast<std::size_t>(x)] != x) {
      up[static_cast<std::size_t>(x)] = up[static_cast<std::size_t>(up[static_cast<std::size_t>(x)])];
      x = up[static_cast<std::size_t>(x)];
    }
    return x;
  }
  void unite(std::int32_t a, std::int32_t b) {
    a = find(a);
    b = find(b);
    if (a != b) up[static_cast<std::size_t>(std::max(a, b))] = std::min(a, b);
  }
};

}  // namespace

namespace {

// w(I ∩ a ∩ b) and w(I \ a \ b) for the incrementers I = inc of a counter. When a and
// b are both runs: over the segments where both are on or both off (a chain's pair has
// none: the op's ancestors and its parent's descendants cover the rank). When one is a
// bitset: over the other's runs, and w(I \ a \ b) = w(I) - w(I ∩ a) - w(I ∩ b) + w(I ∩ a ∩ b).
// Both bitsets: word by word.
std::pair<std::int64_t, std::int64_t> weigh_both_neither(const RankView& v, const IndexSet& a, const IndexSet& b,
                                                         const DynBitset& inc) {
  const bool unit = !v.has_heavy_weights;
  const auto weigh = [&](std::size_t lo, std::size_t hi) -> std::int64_t {
    if (unit) return static_cast<std::int64_t>(inc.count_range(lo, hi));
    std::int64_t w = 0;
    inc.for_each_in(lo, hi, [&](std::size_t x) { w += v.weight[x]; });
    return w;
  };
  std::int64_t both = 0, neither = 0;
  if (a.dense() && b.dense()) {
    const DynBitset &da = a.bits(), &db = b.bits();
    if (unit)
      return {static_cast<std::int64_t>(inc.count_and(da, db)), static_cast<std::int64_t>(inc.count_and_not(da, db))};
    inc.for_each([&](std::size_t x) {
      const bool ia = da.test(x), ib = db.test(x);
      if (ia && ib) both += v.weight[x];
      if (!ia && !ib) neither += v.weight[x];
    });
    return {both, neither};
  }
  if (a.dense() || b.dense()) {
    const IndexSet& runs = a.dense() ? b : a;
    const DynBitset& bits = a.dense() ? a.bits() : b.bits();
    std::int64_t total = 0, in_runs = 0, in_bits = 0;
    if (unit) {
      total = static_cast<std::int64_t>(inc.count());
      in_bits = static_cast<std::int64_t>(inc.count_and(bits));
    } else {
      inc.for_each([&](std::size_t x) {
        total += v.weight[x];
        if (bits.test(x)) in_bits += v.weight[x];
      });
    }
    for (const auto& r : runs.runs()) {
      in_runs += weigh(r.lo, r.hi);
      if (unit) {
        both += static_cast<std::int64_t>(inc.count_and_range(bits, r.lo, r.hi));
      } else {
        inc.for_each_in(r.lo, r.hi, [&](std::size_t x) {
          if (bits.test(x)) both += v.weight[x];
        });
      }
    }
    return {both, total - in_runs - in_bits + both};
  }
  const std::size_t m = inc.size();
  auto ra = a.runs().begin(), rb = b.runs().begin();
  const auto ea = a.runs().end(), eb = b.runs().end();
  for (std::size_t pos = 0; pos < m;) {
    while (ra != ea && ra->hi <= pos) ++ra;
    while (rb != eb && rb->hi <= pos) ++rb;
    const bool in_a = ra != ea && ra->lo <= pos, in_b = rb != eb && rb->lo <= pos;
    const std::size_t next_a = ra == ea ? m : (in_a ? ra->hi : ra->lo);
    const std::size_t next_b = rb == eb ? m : (in_b ? rb->hi : rb->lo);
    const std::size_t end = std::min(next_a, next_b);
    if (in_a && in_b) both += weigh(pos, end);
    else if (!in_a && !in_b) neither += weigh(pos, end);
    pos = end;
  }
  return {both, neither};
}

}  // namespace

// pair_slack(v, p, I) = w(I ∩ Anc(v) ∩ Up(p)) - w(I \ Anc(v) \ Up(p)); the exact rule of
// triggered-ops.md section 1 holds for (v, p) on a counter incremented by I iff
// slack > 0 (subtract w(I ∩ Anc(v)) from both sides of "w(I \ Up(p)) < th(v)"). p is a
// parent of v, so in Anc(v) and in neither term but its own.
std::int64_t pair_slack(const RankView& v, std::int32_t op, std::int32_t p, const DynBitset& inc) {
  const auto pi = static_cast<std::size_t>(p);
  const auto [both, neither] = weigh_both_neither(v, v.anc[static_cast<std::size_t>(op)], v.desc[pi], inc);
  return (inc.test(pi) ? v.weight[pi] : 0) + both - neither;
}

namespace {

// slack(v, op, p, G) for a group given as a member list: O(|G|) membership tests instead
// of a walk over the whole rank, for the common case of a small group.
std::int64_t slack_of_members(const RankView& v, std::int32_t op, std::int32_t p, const std::vector<std::int32_t>& g) {
  const auto& anc = v.anc[static_cast<std::size_t>(op)];
  const auto& desc = v.desc[static_cast<std::size_t>(p)];
  std::int64_t s = 0;
  for (auto x : g) {
    const auto xi = static_cast<std::size_t>(x);
    const bool in_anc = anc.test(xi), in_desc = desc.test(xi);
    if (x == p || (in_anc && in_desc)) s += v.weight[xi];
    else if (!in_anc && !in_desc) s -= v.weight[xi];
  }
  return s;
}

// The slack of a relay of parent p triggered on a counter incremented by `inc`: the
// relay needs p alone, so its ancestors are p's own. slack > 0 iff the incrementers that
// are neither before nor after p weigh less than p (p itself is neither).
std::int64_t relay_slack(const RankView& v, std::int32_t p, const DynBitset& inc) {
  const auto pi = static_cast<std::size_t>(p);
  const std::int64_t own = inc.test(pi) ? v.weight[pi] : 0;
  const std::int64_t neither = weigh_both_neither(v, v.anc[pi], v.desc[pi], inc).second;
  return own - (neither - own);
}

// s with a universe of m >= its own.
IndexSet widened(const IndexSet& s, std::size_t m) {
  IndexSet w(m);
  s.for_each_run([&](std::size_t lo, std::size_t hi) { w.push_back_run(lo, hi); });
  return w;
}

// A view's operations and parents, without their order in H (anc, desc) or the `after`
// edges that generated it: what a derived view (relays, split waits) is built from.
// Derived views are neither keyed nor ordered again, so they carry no `after` edges.
RankView operations_of(const RankView& v) {
  RankView x;
  x.rank = v.rank;
  x.ops = v.ops;
  x.kind = v.kind;
  x.weight = v.weight;
  x.incrementer = v.incrementer;
  x.parents = v.parents;
  x.has_heavy_weights = v.has_heavy_weights;
  return x;
}

// Extends the view with relay operations: relay k (local index n + k) relays parent p
// to op o; o's parents become its relays. Order in H is derived from the old one:
// Anc(relay) = {p} ∪ Anc(p), Desc(relay) = {o} ∪ Desc(o) among the old ops, and relay r1
// precedes relay r2 iff r1's op is r2's parent or one of its ancestors.
RankView with_relays(const RankView& v, const std::vector<std::pair<std::int32_t, std::int32_t>>& relays) {
  const auto n = static_cast<std::size_t>(v.size());
  const auto m = n + relays.size();
  RankView x = operations_of(v);
  std::vector<char> relayed(n, 0);
  for (const auto& r : relays) relayed[static_cast<std::size_t>(r.first)] = 1;
  for (std::size_t i = 0; i < n; ++i)
    if (relayed[i]) x.parents[i].clear();
  // The relays whose op (side 0) or parent (side 1) is y or in s, appended in order.
  const auto add_relays = [&](IndexSet& out, int side, std::size_t y, const IndexSet& s) {
    for (std::size_t k = 0; k < relays.size(); ++k) {
      const auto z = static_cast<std::size_t>(side == 0 ? relays[k].first : relays[k].second);
      if (z == y || s.test(z)) out.push_back(n + k);
    }
    out.shrink_to_fit();
  };
  x.anc.reserve(m);
  x.desc.reserve(m);
  for (std::size_t i = 0; i < n; ++i) {
    // A relay precedes i iff its op is i or an ancestor; follows i iff its parent is i or a descendant.
    x.anc.push_back(widened(v.anc[i], m));
    add_relays(x.anc.back(), 0, i, v.anc[i]);
    x.desc.push_back(widened(v.desc[i], m));
    add_relays(x.desc.back(), 1, i, v.desc[i]);
  }
  for (std::size_t k = 0; k < relays.size(); ++k) {
    const auto [o, p] = relays[k];
    const auto oi = static_cast<std::size_t>(o), pi = static_cast<std::size_t>(p);
    x.ops.push_back(-1);
    x.kind.push_back(OpKind::cntr_add);
    x.weight.push_back(1);
    x.incrementer.push_back(1);
    x.parents.push_back({p});
    x.parents[oi].push_back(static_cast<std::int32_t>(n + k));
    x.anc.push_back(widened(v.anc[pi], m));
    x.anc.back().insert(pi);
    add_relays(x.anc.back(), 0, pi, v.anc[pi]);
    x.desc.push_back(widened(v.desc[oi], m));
    x.desc.back().insert(oi);
    add_relays(x.desc.back(), 1, oi, v.desc[oi]);
  }
  return x;
}

// Pass 1: the groups of incrementers that must share a counter, and the operations
// whose parents must be relayed to keep every group safe.
std::vector<std::pair<std::int32_t, std::int32_t>> pass1_relays(const RankView& v) {
  const auto n = v.size();
  std::vector<std::vector<std::int32_t>> children(static_cast<std::size_t>(n));
  std::vector<std::int32_t> merges;  // ops with two or more parents, not relayed
  for (std::int32_t i = 0; i < n; ++i) {
    for (auto p : v.parents[static_cast<std::size_t>(i)]) children[static_cast<std::size_t>(p)].push_back(i);
    if (v.parents[static_cast<std::size_t>(i)].size() >= 2) merges.push_back(i);
  }
  std::vector<char> relayed(static_cast<std::size_t>(n), 0);
  UnionFind uf(n);
  for (auto o : merges)
    for (auto p : v.parents[static_cast<std::size_t>(o)]) uf.unite(v.parents[static_cast<std::size_t>(o)][0], p);

  std::vector<std::int32_t> parents_all;
  for (std::int32_t i = 0; i < n; ++i)
    if (!children[static_cast<std::size_t>(i)].empty()) parents_all.push_back(i);
  std::unordered_map<std::int32_t, std::vector<std::int32_t>> groups;
  for (auto x : parents_all) groups[uf.find(x)].push_back(x);
  std::vector<std::vector<std::int32_t>> work;
  for (auto x : parents_all)
    if (uf.find(x) == x) work.push_back(std::move(groups[x]));

  std::vector<std::pair<std::int32_t, std::int32_t>> relays;
  while (!work.empty()) {
    std::vector<std::int32_t> g = std::move(work.back());
    work.pop_back();
    if (g.size() < 2) continue;  // a lone counter is always safe
    DynBitset inc(static_cast<std::size_t>(n));
    for (auto x : g) inc.set(static_cast<std::size_t>(x));
    // Find a failing (op, parent) pair. A relayed op's parent p is checked as its relay
    // would be: the relay's ancestors are p's, so only what p itself needs is excused.
    std::int32_t bad_parent = -1;
    const IndexSet* bad_anc = nullptr;
    for (auto p : g) {
      for (auto o : children[static_cast<std::size_t>(p)]) {
        const auto& a = relayed[static_cast<std::size_t>(o)] ? v.anc[static_cast<std::size_t>(p)]
                                                             : v.anc[static_cast<std::size_t>(o)];
        const bool bad = relayed[static_cast<std::size_t>(o)] ? relay_slack(v, p, inc) <= 0
                                                              : pair_slack(v, o, p, inc) <= 0;
        if (bad) {
          bad_parent = p;
          bad_anc = &a;
          break;
        }
      }
      if (bad_parent >= 0) break;
    }
    if (bad_parent < 0) continue;
    // The harmful incrementers are neither needed by the failing op nor after its
    // parent; relay the merging op with most parents among those that brought one into
    // the group.
    const auto& desc = v.desc[static_cast<std::size_t>(bad_parent)];
    std::int32_t culprit = -1;
    std::size_t best = 0;
    for (auto o : merges) {
      if (relayed[static_cast<std::size_t>(o)]) continue;
      const auto& par = v.parents[static_cast<std::size_t>(o)];
      if (uf.find(par[0]) != uf.find(g[0])) continue;
      bool brings_harm = false;
      for (auto q : par)
        if (q != bad_parent && !bad_anc->test(static_cast<std::size_t>(q)) && !desc.test(static_cast<std::size_t>(q)))
          brings_harm = true;
      if (brings_harm && par.size() >= best) best = par.size(), culprit = o;
    }
    if (culprit < 0)
      throw std::logic_error(fmt::format("optimized assignment: no culprit in an unsafe group "
                                         "on rank {}",
                                         v.rank));
    relayed[static_cast<std::size_t>(culprit)] = 1;
    for (auto q : v.parents[static_cast<std::size_t>(culprit)]) relays.emplace_back(culprit, q);
    // Re-form the group without the culprit's merge.
    for (auto x : g) uf.up[static_cast<std::size_t>(x)] = x;
    for (auto o : merges) {
      if (relayed[static_cast<std::size_t>(o)]) continue;
      const auto& par = v.parents[static_cast<std::size_t>(o)];
      if (std::find(g.begin(), g.end(), par[0]) == g.end()) continue;
      for (auto q : par) uf.unite(par[0], q);
    }
    std::unordered_map<std::int32_t, std::vector<std::int32_t>> sub;
    for (auto x : g) sub[uf.find(x)].push_back(x);
    for (auto x : g)
      if (uf.find(x) == x) work.push_back(std::move(sub[x]));
  }
  // Relays in the order of their ops (deterministic).
  std::stable_sort(relays.begin(), relays.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return relays;
}

}  // namespace

namespace {

// A host_wait of two or more parents that nothing is ordered after (a transport
// ordering after the whole wait would have no one wait to follow).
bool splits(const RankView& v, std::size_t i) {
  return v.kind[i] == OpKind::host_wait && v.parents[i].size() >= 2 && v.desc[i].count() == 0;
}

}  // namespace

bool has_split_waits(const RankView& v) {
  for (std::size_t i = 0; i < v.ops.size(); ++i)
    if (splits(v, i)) return true;
  return false;
}

namespace {

// The view with every host_wait that splits split into one wait per parent:
// the op keeps its first parent, and wait j, appended as local index n + j, takes parent
// waits[j].second of op waits[j].first. Every part keeps the whole wait's ancestors, so
// it waits for the cumulative count of everything before the wait on its counter, and
// its parents need not share one: the host waits on each counter in turn.
RankView with_split_waits(const RankView& v, std::vector<std::pair<std::int32_t, std::int32_t>>& waits) {
  const auto n = static_cast<std::size_t>(v.size());
  waits.clear();
  std::vector<char> split(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    if ((split[i] = splits(v, i)))
      for (std::size_t k = 1; k < v.parents[i].size(); ++k)
        waits.emplace_back(static_cast<std::int32_t>(i), v.parents[i][k]);
  const auto m = n + waits.size();
  RankView x = operations_of(v);
  x.anc.reserve(m);
  x.desc.reserve(m);
  for (std::size_t i = 0; i < n; ++i) {
    if (split[i]) x.parents[i].resize(1);
    x.anc.push_back(widened(v.anc[i], m));
    x.desc.push_back(widened(v.desc[i], m));
  }
  for (const auto& [o, p] : waits) {
    const auto oi = static_cast<std::size_t>(o);
    x.ops.push_back(v.ops[oi]);
    x.kind.push_back(OpKind::host_wait);
    x.weight.push_back(v.weight[oi]);
    x.incrementer.push_back(0);
    x.parents.push_back({p});
    x.anc.push_back(widened(v.anc[oi], m));
    x.desc.emplace_back(m);  // nothing follows a host_wait
  }
  // Each part follows the whole wait's ancestors (parts in increasing index: appends).
  for (std::size_t j = 0; j < waits.size(); ++j)
    v.anc[static_cast<std::size_t>(waits[j].first)].for_each([&](std::size_t y) { x.desc[y].push_back(n + j); });
  return x;
}

}  // namespace

GroupedView group_view(const RankView& v_in, bool split_waits) {
  GroupedView gv;
  RankView split;
  if (split_waits) split = with_split_waits(v_in, gv.waits);
  const RankView& v0 = split_waits ? split : v_in;
  gv.relays = pass1_relays(v0);
  gv.view = gv.relays.empty() ? v0 : with_relays(v0, gv.relays);
  const RankView& v = gv.view;
  const auto n0 = v0.size();
  const auto m = v.size();

  // Groups: parent sets unioned (safe by pass 1), plus every lone incrementer.
  UnionFind uf(m);
  for (std::int32_t i = 0; i < m; ++i) {
    const auto& par = v.parents[static_cast<std::size_t>(i)];
    for (auto p : par) uf.unite(par[0], p);
  }
  gv.originals = n0;
  const auto key = [&](std::int32_t x) { return gv.key(x); };
  std::unordered_map<std::int32_t, std::vector<std::int32_t>> members;
  for (std::int32_t i = 0; i < m; ++i)
    if (v.incrementer[static_cast<std::size_t>(i)]) members[uf.find(i)].push_back(i);
  for (auto& [root, g] : members) gv.groups.push_back(std::move(g));
  for (auto& g : gv.groups) std::sort(g.begin(), g.end(), [&](auto a, auto b) { return key(a) < key(b); });
  std::sort(gv.groups.begin(), gv.groups.end(), [&](const auto& a, const auto& b) { return key(a[0]) < key(b[0]); });

  // Ops triggered by each group: the ops whose parents are in it.
  std::vector<std::int32_t> group_of_root(static_cast<std::size_t>(m), -1);
  for (std::size_t g = 0; g < gv.groups.size(); ++g)
    group_of_root[static_cast<std::size_t>(uf.find(gv.groups[g][0]))] = static_cast<std::int32_t>(g);
  gv.triggered.resize(gv.groups.size());
  for (std::int32_t i = 0; i < m; ++i) {
    const auto& par = v.parents[static_cast<std::size_t>(i)];
    if (par.empty()) continue;
    const auto g = group_of_root[static_cast<std::size_t>(uf.find(par[0]))];
    gv.triggered[static_cast<std::size_t>(g)].push_back(i);
  }
  return gv;
}

RankAssignment assignment_from_placement(const GroupedView& gv, const std::vector<std::int32_t>& counter_of_group) {
  const RankView& v = gv.view;
  const auto m = static_cast<std::size_t>(v.size());
  RankAssignment a;
  a.relays = gv.relays;
  a.waits = gv.waits;
  a.increments.assign(m, -1);
  a.trigger.assign(m, -1);
  a.threshold.assign(m, 0);
  // Each counter's incrementers in index order, with the weight before each of them.
  std::vector<std::vector<std::int32_t>> members;
  for (std::size_t g = 0; g < gv.groups.size(); ++g) {
    const auto k = static_cast<std::size_t>(counter_of_group[g]);
    if (k >= members.size()) members.resize(k + 1);
    for (auto x : gv.groups[g]) {
      a.increments[static_cast<std::size_t>(x)] = static_cast<std::int32_t>(k);
      members[k].push_back(x);
    }
    for (auto o : gv.triggered[g]) a.trigger[static_cast<std::size_t>(o)] = static_cast<std::int32_t>(k);
  }
  a.counters = static_cast<std::int32_t>(members.size());
  std::vector<std::vector<std::int64_t>> before(members.size());
  for (std::size_t k = 0; k < members.size(); ++k) {
    std::sort(members[k].begin(), members[k].end());
    before[k].assign(members[k].size() + 1, 0);
    for (std::size_t j = 0; j < members[k].size(); ++j)
      before[k][j + 1] = before[k][j] + v.weight[static_cast<std::size_t>(members[k][j])];
  }
  std::vector<DynBitset> bits(members.size());
  for (std::size_t o = 0; o < m; ++o) {
    if (a.trigger[o] < 0) continue;
    // The cumulative count: everything on the counter that must precede o.
    const auto t = static_cast<std::size_t>(a.trigger[o]);
    const auto& mem = members[t];
    const auto& anc = v.anc[o];
    std::int64_t th = 0;
    if (anc.dense()) {
      // A counter with many members is read as a bitset (built once), else member by member.
      if (!v.has_heavy_weights && mem.size() > m / 64) {
        if (bits[t].size() == 0) {
          bits[t] = DynBitset(m);
          for (auto x : mem) bits[t].set(static_cast<std::size_t>(x));
        }
        th = static_cast<std::int64_t>(bits[t].count_and(anc.bits()));
      } else {
        for (auto x : mem)
          if (anc.bits().test(static_cast<std::size_t>(x))) th += v.weight[static_cast<std::size_t>(x)];
      }
    } else {
      for (const auto& r : anc.runs()) {
        const auto lo = std::lower_bound(mem.begin(), mem.end(), static_cast<std::int32_t>(r.lo)) - mem.begin();
        const auto hi = std::lower_bound(mem.begin(), mem.end(), static_cast<std::int32_t>(r.hi)) - mem.begin();
        th += before[t][static_cast<std::size_t>(hi)] - before[t][static_cast<std::size_t>(lo)];
      }
    }
    a.threshold[o] = th;
  }
  return a;
}

namespace {

// What ops issued after original op o can do to pairs (o, parent). Every later op that
// descends from o changes their slack by exactly 0 (it needs o, hence the parent, and is
// not an ancestor of o). `cut`: every later op descends from o. Otherwise `unordered`
// lists the later incrementers that do not (by issue key: later originals, then the
// relays feeding them) when there are at most kMaxUnordered of them and the walk that
// finds them is short; `many` when not.
struct Later {
  static constexpr std::size_t kMaxUnordered = 8;
  static constexpr std::size_t kMaxWalk = 64;
  bool cut = false;
  bool many = true;
  std::vector<std::int32_t> unordered;
};

// Later for each original op, computed the first time a pair of the op is made (most
// ops trigger nothing).
class LaterOps {
 public:
  explicit LaterOps(const GroupedView& gv)
      : gv_(gv), done_(static_cast<std::size_t>(gv.originals), 0), later_(static_cast<std::size_t>(gv.originals)) {}

  const Later& of(std::int32_t op) {
    const auto o = static_cast<std::size_t>(op);
    if (!done_[o]) {
      compute(o);
      done_[o] = 1;
    }
    return later_[o];
  }

 private:
  void compute(std::size_t o) {
    const RankView& v = gv_.view;
    const auto n0 = static_cast<std::size_t>(gv_.originals);
    const auto m = static_cast<std::size_t>(v.size());
    // The relays after o: those feeding a later op (relays are in the order of their op).
    const auto k0 = static_cast<std::size_t>(
        std::upper_bound(gv_.relays.begin(), gv_.relays.end(), static_cast<std::int32_t>(o),
                         [](std::int32_t x, const auto& r) { return x < r.first; }) -
        gv_.relays.begin());
    const auto& d = v.desc[o];
    Later& l = later_[o];
    l.cut = d.count_range(o + 1, n0) == n0 - o - 1 && d.count_range(n0 + k0, m) == m - n0 - k0;
    if (l.cut || d.dense()) return;
    std::size_t budget = Later::kMaxWalk;
    const auto outside = [&](std::size_t lo, std::size_t hi) {  // [lo, hi) \ d
      auto r = d.runs().begin();
      for (std::size_t x = lo; x < hi && budget > 0 && l.unordered.size() <= Later::kMaxUnordered;) {
        while (r != d.runs().end() && r->hi <= x) ++r;
        if (r != d.runs().end() && r->lo <= x) {
          x = r->hi;
          continue;
        }
        --budget;
        if (v.incrementer[x]) l.unordered.push_back(static_cast<std::int32_t>(x));
        ++x;
      }
    };
    outside(o + 1, n0);
    outside(n0 + k0, m);
    l.many = budget == 0 || l.unordered.size() > Later::kMaxUnordered;
    if (l.many) l.unordered = {};
  }

  const GroupedView& gv_;
  std::vector<char> done_;
  std::vector<Later> later_;
};

}  // namespace

// First fit of the groups in issue order. Each counter keeps its (op, parent) pairs with
// their slack, updated by each group placed on it (slack is additive over disjoint
// incrementer sets). Once the groups being placed start after a pair's op, only the later
// incrementers unordered with the op can still change its slack (`Later`, with the change
// each would make: its effects). A pair retires when none of those still to be placed
// would lower it, and of pairs on one counter whose remaining effects are the same only
// the one with the least slack stays (it fails whenever another would). On a chain every
// op is a cut point, so a counter holds O(1) pairs, not the whole chain; an op issued
// after the chain and unordered with it (an arrival nothing consumes) affects every pair
// alike, so they still collapse to one.
std::vector<std::int32_t> first_fit_placement(const GroupedView& gv) {
  const RankView& v = gv.view;
  const auto m = static_cast<std::size_t>(v.size());
  LaterOps later(gv);
  std::vector<std::int32_t> group_of(m, -1);
  for (std::size_t g = 0; g < gv.groups.size(); ++g)
    for (auto x : gv.groups[g]) group_of[static_cast<std::size_t>(x)] = static_cast<std::int32_t>(g);

  struct Pair {
    std::int32_t op, parent;
    std::int64_t slack;
    std::int32_t effects;  // index into `effects`, or -1
  };
  struct Counter {
    DynBitset inc;
    std::vector<Pair> pairs;  // pairs prune never drops
    std::vector<Pair> loose;  // pairs of cut points, or with effects known
    // The least key of an op in `loose`: before groups start past it, pruning finds nothing.
    std::int64_t prunable = std::numeric_limits<std::int64_t>::max();
  };
  // Per pair with a short Later list: (x, the change x makes to its slack), x ascending.
  using Effects = std::vector<std::pair<std::int32_t, std::int64_t>>;
  std::vector<Effects> effects;
  const auto new_pair = [&](std::int32_t o, std::int32_t p, std::int64_t slack) {
    Pair pr{o, p, slack, -1};
    if (o >= gv.originals) return pr;
    const Later& l = later.of(o);
    if (l.cut || l.many) return pr;
    Effects e;
    for (auto x : l.unordered) {
      const auto xi = static_cast<std::size_t>(x);
      const bool before_o = v.anc[static_cast<std::size_t>(o)].test(xi);
      const bool after_p = x == p || v.desc[static_cast<std::size_t>(p)].test(xi);
      if (before_o && after_p) e.emplace_back(x, v.weight[xi]);
      if (!before_o && !after_p) e.emplace_back(x, -v.weight[xi]);
    }
    pr.effects = static_cast<std::int32_t>(effects.size());
    effects.push_back(std::move(e));
    return pr;
  };
  const auto may_drop = [&](const Pair& pr) {
    return pr.op < gv.originals && (pr.effects >= 0 || later.of(pr.op).cut);
  };
  const auto add_pair = [&](Counter& c, const Pair& pr) {
    if (!may_drop(pr)) return c.pairs.push_back(pr);
    c.loose.push_back(pr);
    c.prunable = std::min(c.prunable, gv.key(pr.op));
  };
  // Drops the loose pairs of c that can no longer decide anything, before group gi
  // (starting at key `start`) is tried on it: a survivor per list of remaining effects.
  std::map<Effects, std::size_t> survivor;  // remaining effects -> index in c.loose
  std::vector<char> drop;
  const auto prune = [&](Counter& c, std::size_t gi, std::int64_t start) {
    if (start <= c.prunable) return;
    auto& pairs = c.loose;
    survivor.clear();
    drop.assign(pairs.size(), 0);
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      const Pair& pr = pairs[i];
      if (gv.key(pr.op) >= start) continue;
      if (pr.effects < 0) {  // a cut point: nothing later changes the pair
        drop[i] = 1;
        continue;
      }
      Effects rest;  // the effects of ops not placed yet
      for (const auto& e : effects[static_cast<std::size_t>(pr.effects)])
        if (group_of[static_cast<std::size_t>(e.first)] >= static_cast<std::int32_t>(gi)) rest.push_back(e);
      if (std::none_of(rest.begin(), rest.end(), [](const auto& e) { return e.second < 0; })) {
        drop[i] = 1;
        continue;
      }
      const auto [it, first] = survivor.try_emplace(std::move(rest), i);
      if (first) continue;
      // Alike: the one with less slack fails whenever the other would (ties: the earlier).
      std::size_t& kept = it->second;
      if (pr.slack < pairs[kept].slack) {
        drop[kept] = 1;
        kept = i;
      } else {
        drop[i] = 1;
      }
    }
    std::size_t w = 0;
    c.prunable = std::numeric_limits<std::int64_t>::max();
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      if (drop[i]) {
        if (pairs[i].effects >= 0) effects[static_cast<std::size_t>(pairs[i].effects)] = {};
        continue;
      }
      pairs[w++] = pairs[i];
      c.prunable = std::min(c.prunable, gv.key(pairs[i].op));
    }
    pairs.resize(w);
  };

  std::vector<Counter> counters;
  std::vector<std::int32_t> counter_of_group(gv.groups.size(), -1);
  std::vector<Pair> own;
  std::vector<std::int64_t> updated;  // the slacks of a counter's pairs with the group
  // slack(op, parent, G) for the group being placed.
  DynBitset gset;
  const auto group_slack = [&](const std::vector<std::int32_t>& g, std::int32_t op, std::int32_t p) {
    return g.size() <= 64 ? slack_of_members(v, op, p, g) : pair_slack(v, op, p, gset);
  };
  for (std::size_t gi = 0; gi < gv.groups.size(); ++gi) {
    const auto& g = gv.groups[gi];
    if (g.size() > 64) {
      gset = DynBitset(m);
      for (auto x : g) gset.set(static_cast<std::size_t>(x));
    }
    const std::int64_t start = gv.key(g[0]);
    const auto& trig = gv.triggered[gi];
    std::int32_t placed = -1;
    for (std::size_t k = 0; k < counters.size() && placed < 0; ++k) {
      Counter& c = counters[k];
      prune(c, gi, start);
      bool ok = true;
      updated.clear();
      for (const auto* list : {&c.pairs, &c.loose}) {
        for (const Pair& pr : *list) {
          const std::int64_t s = pr.slack + group_slack(g, pr.op, pr.parent);
          if (s <= 0) {
            ok = false;
            break;
          }
          updated.push_back(s);
        }
        if (!ok) break;
      }
      if (!ok) continue;
      own.clear();
      for (auto o : trig) {
        for (auto p : v.parents[static_cast<std::size_t>(o)]) {
          const std::int64_t s = pair_slack(v, o, p, c.inc) + group_slack(g, o, p);
          if (s <= 0) {
            ok = false;
            break;
          }
          own.push_back({o, p, s, -1});
        }
        if (!ok) break;
      }
      if (!ok) continue;
      for (auto x : g) c.inc.set(static_cast<std::size_t>(x));
      std::size_t u = 0;
      for (auto* list : {&c.pairs, &c.loose})
        for (Pair& pr : *list) pr.slack = updated[u++];
      for (const Pair& pr : own) add_pair(c, new_pair(pr.op, pr.parent, pr.slack));
      placed = static_cast<std::int32_t>(k);
    }
    if (placed < 0) {
      Counter c{DynBitset(m), {}, {}};
      for (auto x : g) c.inc.set(static_cast<std::size_t>(x));
      for (auto o : trig)
        for (auto p : v.parents[static_cast<std::size_t>(o)]) {
          const std::int64_t s = group_slack(g, o, p);
          if (s <= 0)
            throw std::logic_error(
                fmt::format("optimized assignment: group of rank {} unsafe on its own counter", v.rank));
          add_pair(c, new_pair(o, p, s));
        }
      counters.push_back(std::move(c));
      placed = static_cast<std::int32_t>(counters.size() - 1);
    }
    counter_of_group[gi] = placed;
  }
  return counter_of_group;
}

std::vector<Requirement> placement_requirements(const GroupedView& gv) {
  const RankView& v = gv.view;
  std::vector<Requirement> reqs;
  for (std::size_t t = 0; t < gv.groups.size(); ++t)
    for (auto o : gv.triggered[t])
      for (auto p : v.parents[static_cast<std::size_t>(o)]) {
        Requirement r{t, {}};
        for (std::size_t g = 0; g < gv.groups.size(); ++g)
          if (const auto c = slack_of_members(v, o, p, gv.groups[g]); c != 0) r.terms.emplace_back(g, c);
        reqs.push_back(std::move(r));
      }
  return reqs;
}

namespace {

// Depth-first search for a placement of the groups on at most k counters that meets
// every requirement, groups in issue order, each on a counter already used or the next
// one (counters are interchangeable). A partial placement is cut as soon as some
// requirement whose triggering group is placed cannot reach 1 even if every group still
// to place that would raise it joined its counter.
class PlacementSearch {
 public:
  PlacementSearch(std::size_t groups, std::vector<Requirement> reqs, std::size_t budget)
      : reqs_(std::move(reqs)), involved_(groups), place_(groups, -1), budget_(budget) {
    for (std::size_t r = 0; r < reqs_.size(); ++r) {
      // Checked once the later of the triggering group and each term's group is placed.
      const std::size_t t = reqs_[r].group;
      involved_[t].push_back(r);
      for (const auto& term : reqs_[r].terms)
        if (term.first > t) involved_[term.first].push_back(r);
    }
  }

  // A placement on at most k counters, or empty when there is none (exhausted() false)
  // or the budget ran out first (exhausted() true).
  std::vector<std::int32_t> find(std::int32_t k) {
    k_ = k;
    std::fill(place_.begin(), place_.end(), -1);
    if (place(0, 0)) return place_;
    return {};
  }
  bool exhausted() const { return work_ > budget_; }
  std::size_t work() const { return work_; }

 private:
  bool place(std::size_t g, std::int32_t used) {
    if (g == place_.size()) return true;
    for (std::int32_t c = 0; c < std::min(used + 1, k_); ++c) {
      place_[g] = c;
      if (consistent(g) && place(g + 1, std::max(used, c + 1))) return true;
      if (exhausted()) return false;
    }
    place_[g] = -1;
    return false;
  }

  // The requirements decided (or bounded) by placing group g.
  bool consistent(std::size_t g) {
    for (auto r : involved_[g]) {
      const Requirement& q = reqs_[r];
      const std::int32_t on = place_[q.group];
      std::int64_t best = 0;  // what the requirement can still reach
      for (const auto& [h, coeff] : q.terms) {
        if (h <= g) {
          if (place_[h] == on) best += coeff;
        } else if (coeff > 0) {
          best += coeff;
        }
      }
      work_ += q.terms.size() + 1;
      if (best < 1) return false;
    }
    return ++work_ <= budget_;
  }

  std::vector<Requirement> reqs_;
  std::vector<std::vector<std::size_t>> involved_;
  std::vector<std::int32_t> place_;
  std::size_t budget_;
  std::size_t work_ = 0;
  std::int32_t k_ = 0;
};

}  // namespace

std::int32_t counters_used(const std::vector<std::int32_t>& placement) {
  std::int32_t k = 0;
  for (auto c : placement) k = std::max(k, c + 1);
  return k;
}

std::int32_t clique_bound(std::size_t n, const std::vector<Requirement>& reqs) {
  if (n == 0) return 0;
  const std::size_t words = (n + 63) / 64;
  std::vector<std::uint64_t> apart(n * words, 0);  // row g: the groups that cannot share with g
  const auto set = [&](std::size_t g, std::size_t h) { apart[g * words + h / 64] |= std::uint64_t{1} << (h % 64); };
  for (const auto& r : reqs) {
    std::int64_t pos = 0, own = 0;
    for (const auto& [g, c] : r.terms) {
      pos += std::max<std::int64_t>(c, 0);
      if (g == r.group) own = std::min<std::int64_t>(c, 0);
    }
    for (const auto& [h, c] : r.terms)
      if (h != r.group && pos + own + std::min<std::int64_t>(c, 0) < 1) {
        set(r.group, h);
        set(h, r.group);
      }
  }
  // Greedy from each group: add, in index order, every group apart from all so far (a
  // bitset AND).
  std::int32_t best = 1;
  std::vector<std::uint64_t> common(words);
  for (std::size_t start = 0; start < n; ++start) {
    std::copy_n(apart.begin() + static_cast<std::ptrdiff_t>(start * words), words, common.begin());
    std::int32_t size = 1;
    for (std::size_t h = 0; h < n; ++h) {
      if (!(common[h / 64] >> (h % 64) & 1)) continue;
      ++size;
      for (std::size_t w = 0; w < words; ++w) common[w] &= apart[h * words + w];
    }
    best = std::max(best, size);
  }
  return best;
}

std::vector<std::int32_t> search_placement(const GroupedView& gv, std::vector<std::int32_t> placement,
                                           std::size_t& budget, std::int32_t beat) {
  const std::int32_t target = std::min(beat, counters_used(placement)) - 1;  // the most counters worth having
  if (gv.groups.size() > kMaxSearchGroups || target < 1) return placement;
  // Building the requirements reads every member of every group for each (op, parent)
  // pair, and the clique bound each pair of groups: that work counts against the budget.
  std::size_t pairs = 0;
  for (const auto& t : gv.triggered)
    for (auto o : t) pairs += gv.view.parents[static_cast<std::size_t>(o)].size();
  const std::size_t setup = pairs * static_cast<std::size_t>(gv.view.size()) + gv.groups.size() * gv.groups.size();
  if (setup > budget) return placement;
  budget -= setup;
  std::vector<Requirement> reqs = placement_requirements(gv);
  const std::int32_t bound = clique_bound(gv.groups.size(), reqs);
  PlacementSearch search(gv.groups.size(), std::move(reqs), budget);
  for (std::int32_t k = target; k >= bound; k = counters_used(placement) - 1) {
    auto fewer = search.find(k);
    if (fewer.empty()) break;
    placement = std::move(fewer);
  }
  budget -= std::min(budget, search.work());
  return placement;
}

RankAssignment assign_optimized(const RankView& v0) {
  std::size_t budget = kSearchBudget;  // for the rank, both forms
  const GroupedView whole = group_view(v0);
  RankAssignment a = assignment_from_placement(whole, search_placement(whole, first_fit_placement(whole), budget));
  // The host waiting per counter, kept where it needs fewer counters: a second solve of
  // the rank, for ranks small enough for the search (a ring at P = 1024 has thousands
  // of groups, and its one wait costs no counter).
  if (a.counters <= 1 || whole.groups.size() > kMaxSearchGroups || !has_split_waits(v0)) return a;
  const GroupedView split = group_view(v0, true);
  const auto placement = search_placement(split, first_fit_placement(split), budget, a.counters);
  return counters_used(placement) < a.counters ? assignment_from_placement(split, placement) : a;
}

namespace {

// Key of a rank's local problem: two ranks with equal keys have the same solution.
std::vector<std::int64_t> problem_key(const RankView& v) {
  std::vector<std::int64_t> k;
  k.reserve(v.ops.size() * 4);
  k.push_back(v.size());
  for (std::size_t i = 0; i < v.ops.size(); ++i) {
    k.push_back(static_cast<std::int64_t>(v.kind[i]) | (v.incrementer[i] ? 0x100 : 0));
    k.push_back(v.weight[i]);
    k.push_back(static_cast<std::int64_t>(v.parents[i].size()));
    k.insert(k.end(), v.parents[i].begin(), v.parents[i].end());
    k.push_back(static_cast<std::int64_t>(v.after[i].size()));
    k.insert(k.end(), v.after[i].begin(), v.after[i].end());
  }
  return k;
}

struct KeyHash {
  std::size_t operator()(const std::vector<std::int64_t>& k) const {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (auto x : k) h = (h ^ static_cast<std::uint64_t>(x)) * 0x100000001b3ull;
    return static_cast<std::size_t>(h);
  }
};

}  // namespace

std::vector<RankAssignment> solve_per_rank(const Schedule& dag, std::vector<RankView>& views, Analysis analysis,
                                           const std::function<RankAssignment(const RankView&)>& solve) {
  std::vector<RankAssignment> sol(views.size());
  if (analysis == Analysis::global) {
    compute_order(dag, Analysis::global, views);
    for (std::size_t r = 0; r < views.size(); ++r) sol[r] = solve(views[r]);
    return sol;
  }
  // Ranks with the same local structure (every rank of a ring, most of a tree) have the
  // same local problem: solve each distinct one once.
  std::unordered_map<std::vector<std::int64_t>, std::size_t, KeyHash> seen;
  for (std::size_t r = 0; r < views.size(); ++r) {
    auto key = problem_key(views[r]);
    auto it = seen.find(key);
    if (it != seen.end()) {
      sol[r] = sol[it->second];
      continue;
    }
    compute_local_order(views[r]);
    sol[r] = solve(views[r]);
    views[r].anc.clear();
    views[r].desc.clear();
    seen.emplace(std::move(key), r);
  }
  return sol;
}

void check_assignable(const Schedule& dag) {
  for (std::size_t i = 0; i < dag.size(); ++i) {
    const auto id = static_cast<OpId>(i);
    const Op& o = dag.op(id);
    const auto name = [&](OpId x) {
      return fmt::format("operation {} ({} on rank {})", x, to_string(dag.op(x).kind), dag.op(x).rank);
    };
    if (o.kind == OpKind::host_wait && dag.deps(id).empty())
      throw InputError(fmt::format("{}: a host_wait with no dependence has nothing to wait for", name(id)));
    if (o.kind == OpKind::arrival) continue;
    for (OpId d : dag.deps(id)) {
      const Op& p = dag.op(d);
      if (is_data_op(p.kind) && !p.counted)
        throw InputError(fmt::format("{}: depends on {}, whose completion is not counted (completion null): no "
                                     "counter could trigger it",
                                     name(id), name(d)));
      if (p.kind == OpKind::cntr_add && p.add == 0)
        throw InputError(fmt::format("{}: depends on {}, a cntr_add that adds 0: no counter could see it complete",
                                     name(id), name(d)));
    }
  }
}

Schedule assign_counters(const Schedule& dag, Strategy strategy, const AssignOptions& opt) {
  check_assignable(dag);
  if (strategy == Strategy::exact) return assign_exact(dag, {.analysis = opt.analysis}).schedule;
  auto views = rank_views(dag);
  std::vector<RankAssignment> sol(views.size());
  if (strategy == Strategy::naive) {
    for (std::size_t r = 0; r < views.size(); ++r) sol[r] = assign_naive(views[r]);
  } else {
    sol = solve_per_rank(dag, views, opt.analysis, assign_optimized);
  }
  return emit_schedule(dag, views, sol, std::string(to_string(strategy)));
}

Schedule emit_schedule(const Schedule& dag, const std::vector<RankView>& views, const std::vector<RankAssignment>& sol,
                       const std::string& strategy) {
  // Emit: counters numbered rank by rank; relays just before the op they feed; a split
  // host_wait as one host_wait per counter its parts wait on.
  Schedule out(dag.ranks());
  out.copy_metadata(dag);
  out.strategy = strategy;
  std::vector<CounterId> counter_base(views.size());
  std::vector<Rank> owners;
  for (std::size_t r = 0; r < views.size(); ++r) {
    counter_base[r] = static_cast<CounterId>(owners.size());
    owners.insert(owners.end(), static_cast<std::size_t>(sol[r].counters), static_cast<Rank>(r));
  }
  out.set_counter_owners(std::move(owners));

  // Local index of every op, and relays per op.
  std::vector<std::int32_t> local(dag.size());
  for (const auto& v : views)
    for (std::size_t i = 0; i < v.ops.size(); ++i)
      local[static_cast<std::size_t>(v.ops[i])] = static_cast<std::int32_t>(i);
  // The parts of each split host_wait on each counter: (counter, local parents), in the
  // order of first use; one host_wait each.
  struct Part {
    std::int32_t counter;
    std::int64_t threshold;
    std::vector<std::int32_t> parents;
  };
  std::vector<std::unordered_map<std::int32_t, std::vector<Part>>> parts(views.size());
  for (std::size_t r = 0; r < views.size(); ++r) {
    const auto& s = sol[r];
    const auto n = views[r].ops.size();
    const auto add_part = [&](std::int32_t op, std::size_t x, std::int32_t parent) {
      auto& list = parts[r][op];
      const auto c = s.trigger[x];
      auto it = std::find_if(list.begin(), list.end(), [&](const Part& q) { return q.counter == c; });
      if (it == list.end()) it = list.insert(list.end(), Part{c, s.threshold[x], {}});
      if (it->threshold != s.threshold[x])
        throw std::logic_error(fmt::format("rank {}: parts of one host_wait on one counter with two thresholds", r));
      it->parents.push_back(parent);
    };
    for (std::size_t j = 0; j < s.waits.size(); ++j) {
      const auto [op, parent] = s.waits[j];
      if (!parts[r].contains(op))
        add_part(op, static_cast<std::size_t>(op), views[r].parents[static_cast<std::size_t>(op)][0]);
      add_part(op, n + j, parent);
    }
  }
  const auto parts_of = [&](std::size_t r, std::size_t li) -> const std::vector<Part>* {
    if (parts[r].empty()) return nullptr;
    const auto it = parts[r].find(static_cast<std::int32_t>(li));
    return it == parts[r].end() ? nullptr : &it->second;
  };

  // New ids: first pass.
  std::vector<OpId> new_id(dag.size());
  std::vector<std::vector<std::vector<std::int32_t>>> feed(views.size());
  for (std::size_t r = 0; r < views.size(); ++r) {
    feed[r].assign(views[r].ops.size(), {});
    for (std::size_t k = 0; k < sol[r].relays.size(); ++k)
      feed[r][static_cast<std::size_t>(sol[r].relays[k].first)].push_back(static_cast<std::int32_t>(k));
  }
  OpId emitted = 0;  // the next new id; after the loop, how many ops the schedule gets
  for (std::size_t i = 0; i < dag.size(); ++i) {
    const Op& o = dag.op(static_cast<OpId>(i));
    const auto r = static_cast<std::size_t>(o.rank);
    const auto li = static_cast<std::size_t>(local[i]);
    emitted += static_cast<OpId>(feed[r][li].size());
    new_id[i] = emitted++;
    if (const auto* ps = parts_of(r, li)) emitted += static_cast<OpId>(ps->size() - 1);
  }
  // Room for all: the DAG's lists, and a relay's one parent (a split host_wait's parts
  // may take a little more).
  std::size_t relays = 0;
  for (const auto& s : sol) relays += s.relays.size();
  out.reserve(static_cast<std::size_t>(emitted), dag.list_entries() + relays);
  auto cid = [&](std::size_t r, std::int32_t c) { return c < 0 ? kNoCounter : counter_base[r] + c; };
  std::vector<OpId> deps, after;
  for (std::size_t i = 0; i < dag.size(); ++i) {
    const Op& o = dag.op(static_cast<OpId>(i));
    const auto r = static_cast<std::size_t>(o.rank);
    const auto li = static_cast<std::size_t>(local[i]);
    const auto& s = sol[r];
    const auto n = views[r].ops.size();
    after.clear();
    for (OpId d : dag.after(static_cast<OpId>(i))) after.push_back(new_id[static_cast<std::size_t>(d)]);
    if (const auto* ps = parts_of(r, li)) {
      for (const Part& part : *ps) {
        Op w = o;
        w.trigger = cid(r, part.counter);
        w.threshold = part.threshold;
        deps.clear();
        for (auto p : part.parents)
          deps.push_back(new_id[static_cast<std::size_t>(views[r].ops[static_cast<std::size_t>(p)])]);
        out.add(w, deps, after);
      }
      continue;
    }
    const auto relay0 = n + s.waits.size();  // the local index of relay 0
    std::vector<OpId> relay_ids;
    for (auto k : feed[r][li]) {
      const auto [target, parent] = s.relays[static_cast<std::size_t>(k)];
      Op rl{.kind = OpKind::cntr_add, .rank = o.rank, .add = 1};
      rl.relay = true;
      rl.trigger = cid(r, s.trigger[relay0 + static_cast<std::size_t>(k)]);
      rl.threshold = s.threshold[relay0 + static_cast<std::size_t>(k)];
      rl.target = cid(r, s.increments[relay0 + static_cast<std::size_t>(k)]);
      const OpId pid = new_id[static_cast<std::size_t>(views[r].ops[static_cast<std::size_t>(parent)])];
      relay_ids.push_back(out.add(rl, std::span<const OpId>(&pid, 1)));
    }
    Op no = o;
    no.trigger = cid(r, s.trigger[li]);
    no.threshold = s.threshold[li];
    no.completion = kNoCounter;
    no.target = kNoCounter;
    if (o.kind == OpKind::cntr_add) no.target = cid(r, s.increments[li]);
    else no.completion = cid(r, s.increments[li]);
    deps.clear();
    if (!relay_ids.empty()) {
      deps = relay_ids;
    } else {
      for (OpId d : dag.deps(static_cast<OpId>(i))) deps.push_back(new_id[static_cast<std::size_t>(d)]);
    }
    out.add(no, deps, after);
  }
  return out;
}

}  // namespace fabriclab::offload
