#include "offload/happens_before.h"

#include <fmt/format.h>

#include "core/error.h"

namespace fabriclab::offload {

std::string_view to_string(Analysis a) { return params::name_of(kAnalysisNames, a); }

Analysis parse_analysis(std::string_view s) { return params::parse_enum(kAnalysisNames, s, "analysis"); }

std::int64_t RankView::weight_of(const DynBitset& s) const {
  if (!has_heavy_weights) return static_cast<std::int64_t>(s.count());
  std::int64_t w = 0;
  s.for_each([&](std::size_t i) { w += weight[i]; });
  return w;
}

std::int64_t RankView::weight_of_and(const DynBitset& a, const DynBitset& b) const {
  if (!has_heavy_weights) return static_cast<std::int64_t>(a.count_and(b));
  std::int64_t w = 0;
  a.for_each([&](std::size_t i) {
    if (b.test(i)) w += weight[i];
  });
  return w;
}

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

// Strict descendants of every node of a DAG given by successor lists, by OR-ing
// successors' sets in reverse topological order.
std::vector<DynBitset> descendants(const std::vector<std::vector<std::int32_t>>& succ) {
  const auto n = succ.size();
  const auto order = topological_order(succ);
  std::vector<DynBitset> desc(n, DynBitset(n));
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    auto& d = desc[static_cast<std::size_t>(*it)];
    for (auto v : succ[static_cast<std::size_t>(*it)]) {
      d.set(static_cast<std::size_t>(v));
      d |= desc[static_cast<std::size_t>(v)];
    }
  }
  return desc;
}

void fill_anc(RankView& v) {
  const auto n = v.ops.size();
  v.anc.assign(n, DynBitset(n));
  for (std::size_t x = 0; x < n; ++x) v.desc[x].for_each([&](std::size_t y) { v.anc[y].set(x); });
}

}  // namespace

void compute_local_order(RankView& v) {
  v.desc = descendants(local_successors(v));
  fill_anc(v);
}

void compute_order(const Schedule& s, Analysis a, std::vector<RankView>& views) {
  if (a == Analysis::local) {
    for (auto& v : views) compute_local_order(v);
    return;
  }
  if (s.size() > kMaxGlobalOps)
    throw InputError(fmt::format("global analysis of {} operations exceeds its limit of {}; use the local analysis",
                                 s.size(), kMaxGlobalOps));
  const auto desc = descendants(global_successors(s));
  for (auto& v : views) {
    const auto n = v.ops.size();
    v.desc.assign(n, DynBitset(n));
    for (std::size_t x = 0; x < n; ++x)
      for (std::size_t y = 0; y < n; ++y)
        if (desc[static_cast<std::size_t>(v.ops[x])].test(static_cast<std::size_t>(v.ops[y]))) v.desc[x].set(y);
    fill_anc(v);
  }
}

}  // namespace fabriclab::offload
