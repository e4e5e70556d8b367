#include "offload/verifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <exception>
#include <span>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "core/random.h"

namespace fabriclab::offload {

namespace {

constexpr std::size_t kMaxViolationsPerMethod = 5;

std::string name_op(const Schedule& s, OpId id) {
  const Op& o = s.op(id);
  return fmt::format("op {} ({} on rank {})", id, to_string(o.kind), o.rank);
}

std::string list_ops(const std::vector<OpId>& ids, std::size_t limit = 12) {
  std::string out;
  for (std::size_t i = 0; i < ids.size() && i < limit; ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  if (ids.size() > limit) out += fmt::format(", ... ({} in all)", ids.size());
  return "[" + out + "]";
}

// ---------------------------------------------------------------------------------------
// Method 1: the exact rule.
//
// An op waiting on counter K with local parent p can fire before p completes exactly
// when the incrementers of K that do not need p, I(K) \ Up(p) with Up(p) = p and its
// descendants, weigh at least its threshold. The rule is checked on the graph itself,
// not on anc/desc (n^2 bits for a rank of n operations: 2.5 GB at 100 000): for each
// counter, one bitset over I(K) per node, OR-ed from successors in reverse topological
// order, only between the first queried parent and the last incrementer (nothing outside
// that span lies on a path from one to the other), each freed once its last predecessor
// in the span has read it. The cost is the span's edges times |I(K)|/64 words, counter
// by counter: linear when counters are used locally, n^2/64 word operations at worst
// (one counter over the whole of a chain), and a chain holds a few sets at a time.

// A DAG as successor lists with a topological order, and the scratch of the walks. The
// sets live in one arena of words, kept from counter to counter (no allocation per set).
class UpSets {
 public:
  explicit UpSets(std::vector<std::vector<std::int32_t>> succ)
      : succ_(std::move(succ)),
        order_(topological_order(succ_)),
        pos_(succ_.size()),
        member_(succ_.size(), -1),
        slot_(succ_.size(), -1),
        pending_(succ_.size(), 0),
        query_(succ_.size(), 0),
        weight_(succ_.size(), 0),
        edges_before_(succ_.size() + 1, 0) {
    for (std::size_t k = 0; k < order_.size(); ++k) {
      pos_[at(order_[k])] = static_cast<std::int32_t>(k);
      edges_before_[k + 1] = edges_before_[k] + succ_[at(order_[k])].size();
    }
  }

  // The members form groups (group g: bits [bits[g], bits[g + 1]) of the sets, members
  // in that order), one per counter walked at once. For every query node q (distinct),
  // of group query_group[k], weight(q) becomes the weight of the members of its group
  // that q reaches, q itself included; member j weighs `common`, or weight_of_member(j)
  // when bit j of `odd` is set (so a walk whose members mostly weigh the same is weighed
  // by population counts, plus a correction for the few others).
  template <class F>
  void weigh(std::span<const std::int32_t> members, std::span<const std::size_t> bits,
             std::span<const std::int32_t> queries, std::span<const std::int32_t> query_group, std::int64_t common,
             std::span<const std::uint64_t> odd, F&& weight_of_member) {
    words_per_set_ = (members.size() + 63) / 64;
    arena_.clear();
    sets_ = 0;
    free_.clear();
    std::int32_t lo = std::numeric_limits<std::int32_t>::max(), hi = -1;
    for (std::size_t k = 0; k < queries.size(); ++k) {
      const auto q = at(queries[k]);
      lo = std::min(lo, pos_[q]);
      query_[q] = query_group[k] + 1;
      weight_[q] = 0;  // stays 0 for a query after every member
    }
    for (std::size_t j = 0; j < members.size(); ++j) {
      hi = std::max(hi, pos_[at(members[j])]);
      member_[at(members[j])] = static_cast<std::int32_t>(j);
    }
    for (auto k = lo; k <= hi; ++k)
      for (auto c : succ_[at(order_[at(k)])])
        if (pos_[at(c)] <= hi) ++pending_[at(c)];
    for (auto k = hi; k >= lo; --k) {
      const auto x = order_[at(k)];
      std::int32_t set = -1;
      for (auto c : succ_[at(x)]) {
        if (pos_[at(c)] > hi) continue;
        const auto cs = slot_[at(c)];
        if (cs >= 0) {
          if (set < 0) set = take();
          std::uint64_t* to = words(set);
          const std::uint64_t* from = words(cs);
          for (std::size_t w = 0; w < words_per_set_; ++w) to[w] |= from[w];
        }
        if (--pending_[at(c)] == 0 && cs >= 0) {
          free_.push_back(cs);
          slot_[at(c)] = -1;
        }
      }
      if (const auto j = member_[at(x)]; j >= 0) {
        if (set < 0) set = take();
        words(set)[at(j) / 64] |= std::uint64_t{1} << (at(j) % 64);
      }
      if (const auto g = query_[at(x)]; g > 0 && set >= 0)
        weight_[at(x)] = weight_in(words(set), bits[at(g - 1)], bits[at(g)], common, odd, weight_of_member);
      if (pending_[at(x)] == 0) {
        if (set >= 0) free_.push_back(set);
      } else {
        slot_[at(x)] = set;
      }
    }
    for (auto q : queries) query_[at(q)] = 0;
    for (auto y : members) member_[at(y)] = -1;
  }
  // What a walk over [lo, hi] of the topological order costs, in node and edge visits.
  std::size_t span_cost(std::int32_t lo, std::int32_t hi) const {
    return lo > hi ? 0 : at(hi - lo + 1) + edges_before_[at(hi) + 1] - edges_before_[at(lo)];
  }
  std::int32_t position(std::int32_t node) const { return pos_[at(node)]; }
  std::int64_t weight(std::int32_t q) const { return weight_[at(q)]; }

  // Which of `members` node q reaches (q included), by a walk bounded like weigh's: for
  // the witness of a violation, so only a few times per run.
  std::vector<char> reached(std::int32_t q, std::span<const std::int32_t> members) const {
    std::int32_t hi = -1;
    for (auto y : members) hi = std::max(hi, pos_[at(y)]);
    std::vector<char> seen(succ_.size(), 0);
    std::vector<std::int32_t> stack;
    if (pos_[at(q)] <= hi) {
      seen[at(q)] = 1;
      stack.push_back(q);
    }
    while (!stack.empty()) {
      const auto x = stack.back();
      stack.pop_back();
      for (auto c : succ_[at(x)])
        if (pos_[at(c)] <= hi && !seen[at(c)]) {
          seen[at(c)] = 1;
          stack.push_back(c);
        }
    }
    std::vector<char> out(members.size());
    for (std::size_t j = 0; j < members.size(); ++j) out[j] = seen[at(members[j])];
    return out;
  }

 private:
  static std::size_t at(std::int32_t i) { return static_cast<std::size_t>(i); }
  std::uint64_t* words(std::int32_t set) { return arena_.data() + at(set) * words_per_set_; }
  // The weight of the bits [begin, end) of a set.
  template <class F>
  static std::int64_t weight_in(const std::uint64_t* set, std::size_t begin, std::size_t end, std::int64_t common,
                                std::span<const std::uint64_t> odd, F& weight_of_member) {
    std::int64_t w = 0;
    for (std::size_t k = begin / 64; k * 64 < end; ++k) {
      std::uint64_t bits = set[k];
      if (k * 64 < begin) bits &= ~std::uint64_t{0} << (begin % 64);
      if (end < k * 64 + 64) bits &= (std::uint64_t{1} << (end % 64)) - 1;
      w += common * std::popcount(bits);
      for (bits &= odd[k]; bits; bits &= bits - 1)
        w += weight_of_member(k * 64 + static_cast<std::size_t>(std::countr_zero(bits))) - common;
    }
    return w;
  }
  // A cleared set.
  std::int32_t take() {
    std::int32_t s;
    if (free_.empty()) {
      s = sets_++;
      arena_.resize(at(sets_) * words_per_set_);
    } else {
      s = free_.back();
      free_.pop_back();
    }
    std::fill_n(words(s), words_per_set_, 0);
    return s;
  }

  std::vector<std::vector<std::int32_t>> succ_;
  std::vector<std::int32_t> order_, pos_;
  std::vector<std::int32_t> member_, slot_, pending_;
  std::vector<std::int32_t> query_;  // 1 + the group of a query node, 0 for others
  std::vector<std::int64_t> weight_;
  std::vector<std::size_t> edges_before_;  // edges out of order_[0 .. k)
  std::vector<std::uint64_t> arena_;
  std::size_t words_per_set_ = 0;
  std::int32_t sets_ = 0;
  std::vector<std::int32_t> free_;
};

// Checks every triggered operation of one rank. `graph` holds the analysis' graph, whose
// nodes are op ids (global) or the rank's local indices (local).
void check_rule_rank(const Schedule& s, Analysis a, const RankView& v, UpSets& graph, const std::vector<IndexSet>* desc,
                     std::size_t& reported, VerifyReport& rep) {
  const auto node = [&](std::size_t i) { return a == Analysis::global ? v.ops[i] : static_cast<std::int32_t>(i); };
  const auto op_of = [&](std::int32_t x) { return a == Analysis::global ? x : v.ops[static_cast<std::size_t>(x)]; };
  // I(K) of each counter of the rank (graph nodes), and the ops waiting on it.
  std::unordered_map<CounterId, std::size_t> counter_index;
  std::vector<std::vector<std::int32_t>> members, waiters;
  const auto index_of = [&](CounterId c) {
    const auto [it, added] = counter_index.try_emplace(c, members.size());
    if (added) {
      members.emplace_back();
      waiters.emplace_back();
    }
    return it->second;
  };
  std::vector<std::size_t> first(v.ops.size() + 1, 0);  // op i's parents: weights at [first[i], first[i+1])
  for (std::size_t i = 0; i < v.ops.size(); ++i) {
    const Op& o = s.op(v.ops[i]);
    if (const CounterId c = o.increments(); c != kNoCounter) members[index_of(c)].push_back(node(i));
    first[i + 1] = first[i];
    if (o.trigger == kNoCounter || v.parents[i].empty()) continue;
    waiters[index_of(o.trigger)].push_back(static_cast<std::int32_t>(i));
    first[i + 1] += v.parents[i].size();
  }
  // The counters to check, with their queried parents (distinct graph nodes) and the
  // span of the topological order a walk for them covers.
  std::vector<std::int64_t> total(members.size(), 0), weight_up(first.back(), 0);
  std::vector<std::size_t> checked;
  std::vector<std::vector<std::int32_t>> queries(members.size());
  std::int32_t lo_all = std::numeric_limits<std::int32_t>::max(), hi_all = -1;
  std::size_t separate = 0, members_all = 0;  // costs of one walk per counter / one for all
  for (std::size_t l = 0; l < members.size(); ++l) {
    if (waiters[l].empty()) continue;
    checked.push_back(l);
    auto& q = queries[l];
    for (auto i : waiters[l])
      for (auto p : v.parents[static_cast<std::size_t>(i)]) q.push_back(node(static_cast<std::size_t>(p)));
    std::sort(q.begin(), q.end());
    q.erase(std::unique(q.begin(), q.end()), q.end());
    std::int32_t lo = std::numeric_limits<std::int32_t>::max(), hi = -1;
    for (auto x : q) lo = std::min(lo, graph.position(x));
    for (auto y : members[l]) hi = std::max(hi, graph.position(y));
    separate += graph.span_cost(lo, hi) * std::max<std::size_t>(1, (members[l].size() + 63) / 64);
    lo_all = std::min(lo_all, lo);
    hi_all = std::max(hi_all, hi);
    members_all += members[l].size();
  }
  const bool at_once = graph.span_cost(lo_all, hi_all) * std::max<std::size_t>(1, (members_all + 63) / 64) < separate;
  // One walk for every counter when that costs less (counters that all span the rank, as
  // in a collective), else one per counter (counters used locally, as along a chain). A
  // queried parent increments the counter its child waits on (validate), so it belongs
  // to one group.
  std::vector<std::int32_t> walk_members, walk_queries, walk_group;
  std::vector<std::uint64_t> odd;  // walk members not weighing `common`
  std::unordered_map<std::int64_t, std::size_t> weight_count;
  std::vector<std::size_t> bits;
  const auto walk = [&](std::span<const std::size_t> ls) {
    walk_members.clear();
    walk_queries.clear();
    walk_group.clear();
    bits.assign(1, 0);
    for (std::size_t g = 0; g < ls.size(); ++g) {
      const auto l = ls[g];
      walk_members.insert(walk_members.end(), members[l].begin(), members[l].end());
      bits.push_back(walk_members.size());
      for (auto x : queries[l]) {
        walk_queries.push_back(x);
        walk_group.push_back(static_cast<std::int32_t>(g));
      }
    }
    // Members weigh 1 unless counter adds of another amount are in the walk: the weight
    // most of them have is counted by population counts, the others one by one.
    const auto weight_of = [&](std::size_t j) { return s.op(op_of(walk_members[j])).weight(); };
    weight_count.clear();
    for (std::size_t j = 0; j < walk_members.size(); ++j) ++weight_count[weight_of(j)];
    std::int64_t common = 1;
    std::size_t most = 0;
    for (const auto& [w, c] : weight_count)
      if (c > most || (c == most && w < common)) common = w, most = c;
    odd.assign((walk_members.size() + 63) / 64, 0);
    for (std::size_t j = 0; j < walk_members.size(); ++j)
      if (weight_of(j) != common) odd[j / 64] |= std::uint64_t{1} << (j % 64);
    graph.weigh(walk_members, bits, walk_queries, walk_group, common, odd, weight_of);
  };
  for (auto l : checked)
    for (auto y : members[l]) total[l] += s.op(op_of(y)).weight();
  if (desc != nullptr) {
    // By the runs of each parent's descendants, over the counter's members sorted by node
    // with the weight before each: O(runs x log members) per parent.
    std::vector<std::pair<std::int32_t, std::int64_t>> sorted;  // (node, weight)
    std::vector<std::int64_t> before;
    for (auto l : checked) {
      sorted.clear();
      for (auto y : members[l]) sorted.emplace_back(y, s.op(op_of(y)).weight());
      std::sort(sorted.begin(), sorted.end());
      before.assign(sorted.size() + 1, 0);
      for (std::size_t j = 0; j < sorted.size(); ++j) before[j + 1] = before[j] + sorted[j].second;
      const auto at = [&](std::size_t x) {
        return static_cast<std::size_t>(
            std::lower_bound(sorted.begin(), sorted.end(), std::pair{static_cast<std::int32_t>(x), std::int64_t{-1}},
                             [](const auto& e, const auto& k) { return e.first < k.first; }) -
            sorted.begin());
      };
      for (auto i : waiters[l]) {
        const auto& ps = v.parents[static_cast<std::size_t>(i)];
        for (std::size_t k = 0; k < ps.size(); ++k) {
          const auto q = static_cast<std::size_t>(node(static_cast<std::size_t>(ps[k])));
          std::int64_t w = 0;
          const auto j = at(q);
          if (j < sorted.size() && static_cast<std::size_t>(sorted[j].first) == q) w += sorted[j].second;
          (*desc)[q].for_each_run([&](std::size_t lo, std::size_t hi) { w += before[at(hi)] - before[at(lo)]; });
          weight_up[first[static_cast<std::size_t>(i)] + k] = w;
        }
      }
    }
  } else {
    if (at_once) walk(checked);
    for (auto l : checked) {
      if (!at_once) walk(std::span<const std::size_t>(&l, 1));
      for (auto i : waiters[l]) {
        const auto& ps = v.parents[static_cast<std::size_t>(i)];
        for (std::size_t k = 0; k < ps.size(); ++k)
          weight_up[first[static_cast<std::size_t>(i)] + k] = graph.weight(node(static_cast<std::size_t>(ps[k])));
      }
    }
  }
  // Reported in op order, then parent order.
  for (std::size_t i = 0; i < v.ops.size(); ++i) {
    const Op& o = s.op(v.ops[i]);
    if (o.trigger == kNoCounter || v.parents[i].empty()) continue;
    const auto l = counter_index.at(o.trigger);
    for (std::size_t k = 0; k < v.parents[i].size(); ++k) {
      const auto p = v.parents[i][k];
      const std::int64_t without_p = total[l] - weight_up[first[i] + k];
      if (without_p < o.threshold) continue;
      rep.safe_by_rule = false;
      if (reported++ >= kMaxViolationsPerMethod) continue;
      std::vector<OpId> witness;
      const auto& I = members[l];
      const auto reached = graph.reached(node(static_cast<std::size_t>(p)), I);
      for (std::size_t j = 0; j < I.size(); ++j)
        if (!reached[j]) witness.push_back(op_of(I[j]));
      rep.violations.push_back(
          {Violation::Kind::early, "rule", v.ops[i],
           fmt::format("{} can fire before its parent op {}: it waits for {} >= {}, "
                       "and the incrementers {} that do not need op {} can complete first "
                       "and bring the counter to {} ({} analysis)",
                       name_op(s, v.ops[i]), v.ops[static_cast<std::size_t>(p)], s.counter_label(o.trigger),
                       o.threshold, list_ops(witness), v.ops[static_cast<std::size_t>(p)], without_p, to_string(a))});
    }
  }
}

// Descendant runs for the rule when they stay small (see RuleWeighing): the work of
// their unions (and so their room) within 16 times the graph's size or 4 M runs (32 MB),
// else the walk, whose room does not grow with the graph.
std::optional<std::vector<IndexSet>> rule_runs(const std::vector<std::vector<std::int32_t>>& succ,
                                               VerifyOptions::RuleWeighing how) {
  if (how == VerifyOptions::RuleWeighing::walk) return std::nullopt;
  std::size_t edges = 0;
  for (const auto& x : succ) edges += x.size();
  const std::size_t budget = how == VerifyOptions::RuleWeighing::runs
                                 ? std::numeric_limits<std::size_t>::max()
                                 : 16 * (succ.size() + edges) + (std::size_t{1} << 22);
  return descendants_within(succ, budget);
}

void check_rule(const Schedule& s, Analysis a, VerifyOptions::RuleWeighing how, VerifyReport& rep) {
  const auto views = rank_views(s);
  std::size_t reported = 0;
  if (a == Analysis::global) {
    auto succ = global_successors(s);
    const auto desc = rule_runs(succ, how);
    UpSets graph(std::move(succ));
    for (const auto& v : views) check_rule_rank(s, a, v, graph, desc ? &*desc : nullptr, reported, rep);
    return;
  }
  for (const auto& v : views) {
    auto succ = local_successors(v);
    const auto desc = rule_runs(succ, how);
    UpSets graph(std::move(succ));
    check_rule_rank(s, a, v, graph, desc ? &*desc : nullptr, reported, rep);
  }
}

// ---------------------------------------------------------------------------------------
// The executor shared by the fixpoint and the adversary.

// Lists of operations per key, in one array (compressed rows): millions of small lists
// without a heap block each. Built in two passes over the pairs: count(key) for each,
// then, after allocate(), fill(key, op) for each in the same order (a list keeps it).
class OpLists {
 public:
  explicit OpLists(std::size_t keys) : begin_(keys + 1, 0) {}
  void count(std::size_t key) { ++begin_[key + 1]; }
  void allocate() {
    for (std::size_t k = 1; k < begin_.size(); ++k) begin_[k] += begin_[k - 1];
    next_.assign(begin_.begin(), begin_.end() - 1);
    items_.resize(begin_.back());
  }
  void fill(std::size_t key, OpId op) { items_[next_[key]++] = op; }
  // Once every fill is done: the fill cursors go (8 bytes a key).
  void finish() { std::vector<std::size_t>().swap(next_); }
  std::span<const OpId> operator[](std::size_t key) const {
    return {items_.data() + begin_[key], begin_[key + 1] - begin_[key]};
  }
  std::span<OpId> mutable_list(std::size_t key) { return {items_.data() + begin_[key], begin_[key + 1] - begin_[key]}; }
  std::size_t keys() const { return begin_.size() - 1; }

 private:
  std::vector<std::size_t> begin_, next_;
  std::vector<OpId> items_;
};

// What the executor looks up, built once per schedule and shared by every copy of the
// executor state (the exhaustive search copies states, not this).
struct ExecIndex {
  explicit ExecIndex(const Schedule& sched)
      : s(&sched), waiters(sched.counter_count()), arrivals_of(sched.size()), after_children(sched.size()) {
    const auto n = sched.size();
    for (const bool filling : {false, true}) {
      if (filling)
        for (OpLists* lists : {&waiters, &arrivals_of, &after_children}) lists->allocate();
      for (std::size_t i = 0; i < n; ++i) {
        const auto id = static_cast<OpId>(i);
        const Op& o = sched.op(id);
        const auto add = [&](OpLists& lists, std::size_t key) {
          if (filling) lists.fill(key, id);
          else lists.count(key);
        };
        if (o.kind == OpKind::arrival) add(arrivals_of, static_cast<std::size_t>(sched.deps(id)[0]));
        if (o.trigger != kNoCounter) add(waiters, static_cast<std::size_t>(o.trigger));
        for (OpId b : sched.after(id)) add(after_children, static_cast<std::size_t>(b));
      }
    }
    for (OpLists* lists : {&waiters, &arrivals_of, &after_children}) lists->finish();
    // Released in threshold order, then issue order.
    for (std::size_t c = 0; c < waiters.keys(); ++c) {
      const auto w = waiters.mutable_list(c);
      std::stable_sort(w.begin(), w.end(),
                       [&](OpId a, OpId b) { return sched.op(a).threshold < sched.op(b).threshold; });
    }
  }
  const Schedule* s;
  OpLists waiters, arrivals_of, after_children;
};

// Executes a schedule the way a NIC does: an operation fires the instant its counter
// reaches its threshold; which pending completion or arrival happens next is chosen
// from outside (complete_at), by the adversary.
class Executor {
 public:
  explicit Executor(const ExecIndex& x) : x_(&x), s_(x.s) {
    const auto n = s_->size();
    value_.assign(s_->counter_count(), 0);
    cursor_.assign(s_->counter_count(), 0);
    fired_.assign(n, 0);
    completed_.assign(n, 0);
    source_fired_.assign(n, 0);
    after_pending_.resize(n);
    for (std::size_t i = 0; i < n; ++i)
      after_pending_[i] = static_cast<std::int32_t>(s_->after(static_cast<OpId>(i)).size());
  }

  // Posts the schedule: fires every untriggered op, and every op whose threshold its
  // counter already meets (a NIC fires those at posting). Returns false on an early
  // firing (see violation()).
  bool start() {
    for (std::size_t i = 0; i < s_->size(); ++i) {
      const Op& o = s_->op(static_cast<OpId>(i));
      if (o.kind != OpKind::arrival && o.fires_at_start()) ready_.push_back(static_cast<OpId>(i));
    }
    for (std::size_t c = 0; c < value_.size(); ++c) release(c);
    return settle();
  }

  // The fixpoint keeps executing past an early firing (recorded once) so that liveness
  // is still decided; the adversary stops at the first one.
  void keep_going_after_violations() { stop_on_violation_ = false; }
  bool violated() const { return !violation_.empty(); }

  // Events the adversary may pick: fired data ops not completed, and arrivals whose
  // initiator fired and whose transport predecessors have landed.
  const std::vector<OpId>& enabled() const { return enabled_; }

  // Completes the k-th enabled event.
  bool complete_at(std::size_t k) {
    const OpId id = enabled_[k];
    enabled_[k] = enabled_.back();
    enabled_.pop_back();
    trace_.push_back(id);
    finish(id);
    return settle();
  }

  std::int64_t value(CounterId c) const { return value_[static_cast<std::size_t>(c)]; }
  const std::string& violation() const { return violation_; }
  OpId violating_op() const { return violating_op_; }
  const std::vector<char>& completed_set() const { return completed_; }

  // Ops that never completed (fired, for host_wait), with why.
  std::vector<std::string> hangs(std::vector<OpId>* ids) const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < s_->size(); ++i) {
      if (completed_[i]) continue;
      const auto id = static_cast<OpId>(i);
      const Op& o = s_->op(id);
      if (o.kind == OpKind::arrival) {
        if (fired_[static_cast<std::size_t>(s_->deps(id)[0])]) continue;  // its source is reported
        ids->push_back(id);
        out.push_back(
            fmt::format("{} never landed: its initiator op {} never fired", name_op(*s_, id), s_->deps(id)[0]));
      } else if (!fired_[i]) {
        ids->push_back(id);
        out.push_back(fmt::format("{} never fired: {} stopped at {} < threshold {}", name_op(*s_, id),
                                  s_->counter_label(o.trigger), value(o.trigger), o.threshold));
      }
    }
    return out;
  }

 private:
  // Fires everything made ready, breadth first (counter adds may cascade: no
  // recursion, so chains of any length are fine).
  bool settle() {
    while (head_ < ready_.size()) {
      if (!fire(ready_[head_++]) && stop_on_violation_) return false;
    }
    ready_.clear();
    head_ = 0;
    return true;
  }

  // Queues the waiters of counter c whose threshold its value meets, in threshold order.
  void release(std::size_t c) {
    const auto& w = x_->waiters[c];
    while (cursor_[c] < w.size() && s_->op(w[cursor_[c]]).threshold <= value_[c]) ready_.push_back(w[cursor_[c]++]);
  }

  bool fire(OpId id) {
    const auto i = static_cast<std::size_t>(id);
    fired_[i] = 1;
    const Op& o = s_->op(id);
    bool ok = true;
    for (OpId d : s_->deps(id)) {
      if (completed_[static_cast<std::size_t>(d)]) continue;
      ok = false;
      if (violation_.empty()) {
        violating_op_ = id;
        violation_ = fmt::format("{} fired when {} reached {} (threshold {}) while its parent {} had not "
                                 "completed; completions so far, in order: {}",
                                 name_op(*s_, id), s_->counter_label(o.trigger),
                                 o.trigger == kNoCounter ? 0 : value(o.trigger), o.threshold, name_op(*s_, d),
                                 list_ops(trace_, 40));
      }
      break;
    }
    if (!ok && stop_on_violation_) return false;
    if (is_data_op(o.kind)) {
      enabled_.push_back(id);
      for (OpId a : x_->arrivals_of[i]) {
        source_fired_[static_cast<std::size_t>(a)] = 1;
        if (after_pending_[static_cast<std::size_t>(a)] == 0) enabled_.push_back(a);
      }
    } else {
      finish(id);  // cntr_add and host_wait complete when they fire
    }
    return ok;
  }

  void finish(OpId id) {
    const auto i = static_cast<std::size_t>(id);
    completed_[i] = 1;
    const Op& o = s_->op(id);
    for (OpId a : x_->after_children[i]) {
      const auto ai = static_cast<std::size_t>(a);
      if (--after_pending_[ai] == 0 && source_fired_[ai]) enabled_.push_back(a);
    }
    const CounterId c = o.increments();
    if (c == kNoCounter) return;
    value_[static_cast<std::size_t>(c)] += o.weight();
    release(static_cast<std::size_t>(c));
  }

  const ExecIndex* x_;
  const Schedule* s_;
  std::vector<std::int64_t> value_;
  std::vector<std::size_t> cursor_;
  std::vector<char> fired_, completed_, source_fired_;
  std::vector<std::int32_t> after_pending_;
  std::vector<OpId> enabled_, trace_;
  std::vector<OpId> ready_;  // made ready, not yet fired
  std::size_t head_ = 0;
  bool stop_on_violation_ = true;
  std::string violation_;
  OpId violating_op_ = -1;
};

void check_fixpoint(const ExecIndex& ix, VerifyReport& rep) {
  Executor x(ix);
  x.keep_going_after_violations();
  x.start();
  // Completing every enabled event in any order reaches the same fixpoint (firing is
  // monotone in the counter values).
  while (!x.enabled().empty()) x.complete_at(x.enabled().size() - 1);
  if (x.violated()) {
    rep.safe_by_execution = false;
    rep.violations.push_back({Violation::Kind::early, "fixpoint", x.violating_op(), x.violation()});
  }
  std::vector<OpId> ids;
  auto hangs = x.hangs(&ids);
  if (hangs.empty()) return;
  rep.live_by_fixpoint = false;
  for (std::size_t k = 0; k < hangs.size() && k < kMaxViolationsPerMethod; ++k)
    rep.violations.push_back({Violation::Kind::hang, "fixpoint", ids[k], hangs[k]});
}

bool random_run(const ExecIndex& ix, std::uint64_t seed, VerifyReport& rep) {
  Executor x(ix);
  RandomStream rng(seed, "verifier/adversary");
  bool ok = x.start();
  while (ok && !x.enabled().empty()) {
    const auto& e = x.enabled();
    ok = x.complete_at(rng.below(e.size()));
  }
  if (ok) return true;
  rep.violations.push_back(
      {Violation::Kind::early, fmt::format("random seed {}", seed), x.violating_op(), x.violation()});
  return false;
}

struct StateHash {
  std::size_t operator()(const std::vector<char>& v) const {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (char c : v) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    return static_cast<std::size_t>(h);
  }
};

// Depth-first over every reachable set of completed operations. The state is the
// completed set: counter values and fired operations follow from it.
void exhaustive(const ExecIndex& ix, std::size_t limit, VerifyReport& rep) {
  std::unordered_set<std::vector<char>, StateHash> seen;
  Executor x0(ix);
  if (!x0.start()) {
    rep.safe_by_execution = false;
    rep.violations.push_back({Violation::Kind::early, "exhaustive", x0.violating_op(), x0.violation()});
    return;
  }
  std::vector<Executor> stack{x0};
  seen.insert(x0.completed_set());
  while (!stack.empty()) {
    Executor x = std::move(stack.back());
    stack.pop_back();
    for (std::size_t k = 0; k < x.enabled().size(); ++k) {
      Executor y = x;
      if (!y.complete_at(k)) {
        rep.safe_by_execution = false;
        rep.exhaustive_states = seen.size();
        rep.violations.push_back({Violation::Kind::early, "exhaustive", y.violating_op(), y.violation()});
        return;
      }
      if (!seen.insert(y.completed_set()).second) continue;
      if (seen.size() > limit) {
        rep.exhaustive_states = seen.size();
        return;  // incomplete
      }
      stack.push_back(std::move(y));
    }
  }
  rep.exhaustive_states = seen.size();
  rep.exhaustive_complete = true;
}

// The fixpoint (liveness), the random runs and the exhaustive search, into `rep`.
void executions(const Schedule& s, const VerifyOptions& opt, VerifyReport& rep) {
  const ExecIndex ix(s);
  check_fixpoint(ix, rep);
  for (int k = 0; k < opt.random_runs; ++k) {
    ++rep.random_runs;
    if (!random_run(ix, opt.seed + static_cast<std::uint64_t>(k), rep)) {
      rep.safe_by_execution = false;
      break;
    }
  }
  if (opt.exhaustive_state_limit > 0 && s.size() <= opt.exhaustive_max_ops && rep.safe_by_execution)
    exhaustive(ix, opt.exhaustive_state_limit, rep);
}

}  // namespace

VerifyReport verify(const Schedule& s, const VerifyOptions& opt) {
  validate(s, true);
  VerifyReport rep;
  rep.analysis = opt.analysis;
  if (rep.analysis == Analysis::global && s.size() > kMaxGlobalOps) rep.analysis = Analysis::local;
  // The rule and the executions share nothing but the schedule: on a large one the rule
  // runs on a thread of its own (the same report either way: the rule's is merged first,
  // as if it had run first).
  VerifyReport by_rule;
  std::exception_ptr rule_error;
  const Analysis analysis = rep.analysis;
  const auto run_rule = [&] {
    try {
      check_rule(s, analysis, opt.rule_weighing, by_rule);
    } catch (...) {
      rule_error = std::current_exception();
    }
  };
  std::thread rule;
  if (opt.rule && opt.rule_thread_ops > 0 && s.size() >= opt.rule_thread_ops) {
    try {
      rule = std::thread(run_rule);
    } catch (const std::system_error&) {  // no thread to be had (a process limit): here, first
      run_rule();
    }
  } else if (opt.rule) {
    run_rule();
  }
  if (rule_error && !rule.joinable()) std::rethrow_exception(rule_error);  // as before: the rule's error first
  struct Join {
    std::thread& t;
    ~Join() {
      if (t.joinable()) t.join();
    }
  } join{rule};
  executions(s, opt, rep);
  if (rule.joinable()) rule.join();
  if (rule_error) std::rethrow_exception(rule_error);
  rep.safe_by_rule = by_rule.safe_by_rule;
  rep.violations.insert(rep.violations.begin(), by_rule.violations.begin(), by_rule.violations.end());
  return rep;
}

}  // namespace fabriclab::offload
