#include "offload/happens_before.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace fabriclab::offload {

std::string_view to_string(Analysis a) { return params::name_of(kAnalysisNames, a); }

Analysis parse_analysis(std::string_view s) { return params::parse_enum(kAnalysisNames, s, "analysis"); }

namespace {

// A rank's operations in canonical issue order: non-arrivals in schedule order, each
// arrival just before its first local consumer (arrivals nothing consumes last). An
// arrival's creation time says nothing about the rank (it is when its sender was
// built), so without this two ranks of a ring would differ only in where their arrivals
// were created -- and the rank-symmetry cache of the assignment would miss.
std::vector<std::vector<OpId>> canonical_order(const Schedule& s) {
  const auto by_rank = s.ops_by_rank();
  std::vector<OpId> first_consumer(s.size(), -1);
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto id = static_cast<OpId>(i);
    if (s.op(id).kind == OpKind::arrival) continue;
    for (OpId d : s.deps(id)) {
      auto& f = first_consumer[static_cast<std::size_t>(d)];
      if (f < 0 || id < f) f = id;
    }
  }
  std::vector<std::vector<OpId>> out(by_rank.size());
  std::vector<std::vector<OpId>> waiting(s.size());  // consumer -> arrivals placed before it
  for (std::size_t r = 0; r < by_rank.size(); ++r) {
    std::vector<OpId> unconsumed;
    for (OpId id : by_rank[r]) {
      if (s.op(id).kind != OpKind::arrival) continue;
      const OpId f = first_consumer[static_cast<std::size_t>(id)];
      (f < 0 ? unconsumed : waiting[static_cast<std::size_t>(f)]).push_back(id);
    }
    for (OpId id : by_rank[r]) {
      if (s.op(id).kind == OpKind::arrival) continue;
      auto& w = waiting[static_cast<std::size_t>(id)];
      out[r].insert(out[r].end(), w.begin(), w.end());
      out[r].push_back(id);
    }
    out[r].insert(out[r].end(), unconsumed.begin(), unconsumed.end());
  }
  return out;
}

}  // namespace

std::vector<RankView> rank_views(const Schedule& s) {
  const auto order = canonical_order(s);
  std::vector<std::int32_t> local(s.size(), -1);
  std::vector<RankView> views(static_cast<std::size_t>(s.ranks()));
  for (Rank r = 0; r < s.ranks(); ++r) {
    RankView& v = views[static_cast<std::size_t>(r)];
    v.rank = r;
    v.ops = order[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < v.ops.size(); ++i)
      local[static_cast<std::size_t>(v.ops[i])] = static_cast<std::int32_t>(i);
    const auto n = v.ops.size();
    v.kind.resize(n);
    v.weight.resize(n);
    v.incrementer.resize(n);
    v.parents.resize(n);
    v.after.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const OpId id = v.ops[i];
      const Op& o = s.op(id);
      v.kind[i] = o.kind;
      v.weight[i] = o.weight();
      v.has_heavy_weights |= o.weight() != 1;
      v.incrementer[i] = o.kind == OpKind::arrival || o.kind == OpKind::cntr_add || (is_data_op(o.kind) && o.counted);
      if (o.kind != OpKind::arrival)
        for (OpId d : s.deps(id)) v.parents[i].push_back(local[static_cast<std::size_t>(d)]);
      for (OpId d : s.after(id)) v.after[i].push_back(local[static_cast<std::size_t>(d)]);
    }
  }
  return views;
}

std::vector<std::int32_t> topological_order(const std::vector<std::vector<std::int32_t>>& succ) {
  const auto n = succ.size();
  std::vector<std::int32_t> indeg(n, 0), order;
  order.reserve(n);
  for (const auto& s : succ)
    for (auto v : s) ++indeg[static_cast<std::size_t>(v)];
  for (std::size_t i = 0; i < n; ++i)
    if (indeg[i] == 0) order.push_back(static_cast<std::int32_t>(i));
  for (std::size_t k = 0; k < order.size(); ++k)
    for (auto v : succ[static_cast<std::size_t>(order[k])])
      if (--indeg[static_cast<std::size_t>(v)] == 0) order.push_back(v);
  if (order.size() != n) throw InputError("the happens-before graph has a cycle");
  return order;
}

std::vector<std::vector<std::int32_t>> local_successors(const RankView& v) {
  std::vector<std::vector<std::int32_t>> succ(v.ops.size());
  for (std::size_t i = 0; i < v.ops.size(); ++i) {
    for (auto p : v.parents[i]) succ[static_cast<std::size_t>(p)].push_back(static_cast<std::int32_t>(i));
    for (auto p : v.after[i]) succ[static_cast<std::size_t>(p)].push_back(static_cast<std::int32_t>(i));
  }
  return succ;
}

std::vector<std::vector<std::int32_t>> global_successors(const Schedule& s) {
  // Edges of H: local dependences; p -> a for every parent p of an arrival's initiator;
  // transport orderings.
  std::vector<std::vector<std::int32_t>> succ(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto id = static_cast<OpId>(i);
    const Op& o = s.op(id);
    if (o.kind == OpKind::arrival) {
      for (OpId p : s.deps(s.deps(id)[0])) succ[static_cast<std::size_t>(p)].push_back(id);
    } else {
      for (OpId p : s.deps(id)) succ[static_cast<std::size_t>(p)].push_back(id);
    }
    for (OpId p : s.after(id)) succ[static_cast<std::size_t>(p)].push_back(id);
  }
  return succ;
}

namespace {

// Strict reach of every node over `next` (successors or predecessors), visiting nodes in
// `order` so that each node's neighbours come first: set(x) = ∪ {y} ∪ set(y), y in next(x).
// nullopt once the work of the unions (runs merged; a bitset counts n/64) passes `budget`.
template <class It>
std::optional<std::vector<IndexSet>> reach(const std::vector<std::vector<std::int32_t>>& next, It begin, It end,
                                           std::size_t budget = std::numeric_limits<std::size_t>::max()) {
  const auto n = next.size();
  std::vector<IndexSet> set(n, IndexSet(n));
  const auto size = [&](const IndexSet& x) { return x.dense() ? n / 64 + 1 : x.runs().size(); };
  std::size_t work = 0;
  for (It it = begin; it != end; ++it) {
    auto& s = set[static_cast<std::size_t>(*it)];
    for (auto y : next[static_cast<std::size_t>(*it)]) {
      const auto& sy = set[static_cast<std::size_t>(y)];
      work += size(s) + size(sy) + 1;
      if (work > budget) return std::nullopt;
      s.unite(sy);
      s.insert(static_cast<std::size_t>(y));
    }
  }
  return set;
}

// Predecessor lists from successor lists.
std::vector<std::vector<std::int32_t>> reversed(const std::vector<std::vector<std::int32_t>>& succ) {
  std::vector<std::vector<std::int32_t>> pred(succ.size());
  for (std::size_t x = 0; x < succ.size(); ++x)
    for (auto y : succ[x]) pred[static_cast<std::size_t>(y)].push_back(static_cast<std::int32_t>(x));
  return pred;
}

// The sets over all operations, restricted to the view's and renumbered to local indices.
// A bitset is read by testing each of the view's ops (the rank's own n^2 bits, not the
// whole schedule's); runs by the view's ops inside each, taken a stretch at a time where
// ids and local indices advance together (a chain's ancestors stay one run, at the cost
// of a binary search).
std::vector<IndexSet> project(const std::vector<IndexSet>& all, const RankView& v) {
  const auto n = v.ops.size();
  std::vector<std::pair<OpId, std::int32_t>> by_id;  // (op id, local index), by id
  by_id.reserve(n);
  for (std::size_t i = 0; i < n; ++i) by_id.emplace_back(v.ops[i], static_cast<std::int32_t>(i));
  std::sort(by_id.begin(), by_id.end());
  std::vector<std::size_t> stretch_end(n);  // by_id[k ..  stretch_end[k]) are local indices +1 apart
  for (std::size_t k = n; k-- > 0;)
    stretch_end[k] = k + 1 < n && by_id[k + 1].second == by_id[k].second + 1 ? stretch_end[k + 1] : k + 1;
  std::vector<IndexSet> out(n, IndexSet(n));
  std::vector<IndexSet::Run> local;
  for (std::size_t x = 0; x < n; ++x) {
    const IndexSet& s = all[static_cast<std::size_t>(v.ops[x])];
    if (s.dense()) {
      for (std::size_t i = 0; i < n; ++i)
        if (s.bits().test(static_cast<std::size_t>(v.ops[i]))) out[x].push_back(i);
      out[x].shrink_to_fit();
      continue;
    }
    local.clear();
    const auto add = [&](std::size_t a, std::size_t b) {  // by_id[a, b)
      for (std::size_t k = a; k < b;) {
        const std::size_t e = std::min(stretch_end[k], b);
        const auto lo = static_cast<std::uint32_t>(by_id[k].second);
        local.push_back({lo, lo + static_cast<std::uint32_t>(e - k)});
        k = e;
      }
    };
    if (s.runs().size() * 8 > n) {  // many runs: one merged walk, O(runs + n)
      std::size_t k = 0;
      for (const auto& r : s.runs()) {
        while (k < n && static_cast<std::size_t>(by_id[k].first) < r.lo) ++k;
        std::size_t e = k;
        while (e < n && static_cast<std::size_t>(by_id[e].first) < r.hi) ++e;
        add(k, e);
        k = e;
      }
    } else {
      const auto at = [&](std::size_t id) {
        return static_cast<std::size_t>(
            std::lower_bound(by_id.begin(), by_id.end(), std::pair{static_cast<OpId>(id), std::int32_t{-1}}) -
            by_id.begin());
      };
      for (const auto& r : s.runs()) add(at(r.lo), at(r.hi));
    }
    std::sort(local.begin(), local.end(), [](const auto& a, const auto& b) { return a.lo < b.lo; });
    for (const auto& r : local) out[x].push_back_run(r.lo, r.hi);
    out[x].shrink_to_fit();
  }
  return out;
}

}  // namespace

std::optional<std::vector<IndexSet>> descendants_within(const std::vector<std::vector<std::int32_t>>& succ,
                                                        std::size_t budget) {
  const auto order = topological_order(succ);
  return reach(succ, order.rbegin(), order.rend(), budget);
}

void compute_local_order(RankView& v) {
  const auto succ = local_successors(v);
  const auto order = topological_order(succ);
  v.desc = *reach(succ, order.rbegin(), order.rend());
  v.anc = *reach(reversed(succ), order.begin(), order.end());
}

void compute_order(const Schedule& s, Analysis a, std::vector<RankView>& views) {
  if (a == Analysis::local) {
    for (auto& v : views) compute_local_order(v);
    return;
  }
  if (s.size() > kMaxGlobalOps)
    throw InputError(fmt::format("global analysis of {} operations exceeds its limit of {}; use the local analysis",
                                 s.size(), kMaxGlobalOps));
  // One direction at a time: the sets over the whole schedule are the peak of memory.
  const auto succ = global_successors(s);
  const auto order = topological_order(succ);
  {
    const auto desc = *reach(succ, order.rbegin(), order.rend());
    for (auto& v : views) v.desc = project(desc, v);
  }
  const auto anc = *reach(reversed(succ), order.begin(), order.end());
  for (auto& v : views) v.anc = project(anc, v);
}

}  // namespace fabriclab::offload
