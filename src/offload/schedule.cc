#include "offload/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "core/error.h"

namespace fabriclab::offload {

std::string_view to_string(OpKind k) { return params::name_of(kOpKindNames, k); }

std::optional<OpKind> parse_op_kind(std::string_view s) { return params::value_named(kOpKindNames, s); }

OpId Schedule::add(Op op, std::span<const OpId> deps, std::span<const OpId> after) {
  op.deps_begin = static_cast<std::uint32_t>(pool_.size());
  op.deps_count = static_cast<std::uint32_t>(deps.size());
  pool_.insert(pool_.end(), deps.begin(), deps.end());
  op.after_begin = static_cast<std::uint32_t>(pool_.size());
  op.after_count = static_cast<std::uint32_t>(after.size());
  pool_.insert(pool_.end(), after.begin(), after.end());
  ops_.push_back(op);
  return static_cast<OpId>(ops_.size() - 1);
}

CounterId Schedule::new_counter(Rank owner) {
  const auto name = std::count(counter_owner_.begin(), counter_owner_.end(), owner);
  counter_owner_.push_back(owner);
  counter_name_.push_back(static_cast<CounterId>(name));
  return static_cast<CounterId>(counter_owner_.size() - 1);
}

void Schedule::set_counter_owners(std::vector<Rank> owners) {
  std::vector<CounterId> names(owners.size(), kNoCounter);
  std::vector<CounterId> next;
  for (std::size_t c = 0; c < owners.size(); ++c) {
    if (owners[c] < 0) continue;  // no owner: never named by an op
    const auto r = static_cast<std::size_t>(owners[c]);
    if (r >= next.size()) next.resize(r + 1, 0);
    names[c] = next[r]++;
  }
  counter_owner_ = std::move(owners);
  counter_name_ = std::move(names);
}

void Schedule::set_counters(std::vector<Rank> owners, std::vector<CounterId> names) {
  if (owners.size() != names.size()) throw std::logic_error("Schedule::set_counters: one name per counter");
  std::vector<std::pair<Rank, CounterId>> named(owners.size());
  for (std::size_t c = 0; c < owners.size(); ++c) named[c] = {owners[c], names[c]};
  std::sort(named.begin(), named.end());
  for (std::size_t c = 0; c < named.size(); ++c)
    if (named[c].second < 0 || (c > 0 && named[c] == named[c - 1]))
      throw std::logic_error(fmt::format("Schedule::set_counters: counter {} of rank {} is named twice, or negative",
                                         named[c].second, named[c].first));
  counter_owner_ = std::move(owners);
  counter_name_ = std::move(names);
}

std::string Schedule::counter_label(CounterId c) const {
  if (c == kNoCounter) return "no counter";
  return fmt::format("rank {}'s counter {}", counter_owner(c), counter_name(c));
}

CounterSummary Schedule::counter_summary() const {
  CounterSummary s;
  s.per_rank.assign(static_cast<std::size_t>(ranks_), 0);
  std::vector<char> used(counter_owner_.size(), 0);
  auto mark = [&](CounterId c) {
    if (c != kNoCounter) used[static_cast<std::size_t>(c)] = 1;
  };
  for (const Op& o : ops_) {
    mark(o.trigger);
    mark(o.completion);
    mark(o.target);
  }
  for (std::size_t c = 0; c < used.size(); ++c)
    if (used[c]) ++s.per_rank[static_cast<std::size_t>(counter_owner_[c])];
  for (auto n : s.per_rank) {
    s.max = std::max(s.max, n);
    s.total += n;
  }
  return s;
}

std::size_t Schedule::relay_count() const {
  return static_cast<std::size_t>(std::count_if(ops_.begin(), ops_.end(), [](const Op& o) { return o.relay; }));
}

std::vector<std::vector<OpId>> Schedule::ops_by_rank() const {
  std::vector<std::vector<OpId>> by(static_cast<std::size_t>(ranks_));
  for (std::size_t i = 0; i < ops_.size(); ++i)
    by[static_cast<std::size_t>(ops_[i].rank)].push_back(static_cast<OpId>(i));
  return by;
}

namespace {

std::string describe(const Schedule& s, OpId id) {
  const Op& o = s.op(id);
  return fmt::format("operation {} ({} on rank {})", id, to_string(o.kind), o.rank);
}

}  // namespace

void validate(const Schedule& s, bool assigned) {
  const auto n = static_cast<OpId>(s.size());
  if (s.ranks() < 1) throw InputError("schedule: ranks must be at least 1");
  std::vector<OpId> arrivals_of(static_cast<std::size_t>(n), -1);  // sender -> its arrival
  for (OpId id = 0; id < n; ++id) {
    const Op& o = s.op(id);
    if (o.rank < 0 || o.rank >= s.ranks())
      throw InputError(fmt::format("operation {}: rank {} is outside 0..{}", id, o.rank, s.ranks() - 1));
    const bool has_peer = is_data_op(o.kind) || o.kind == OpKind::arrival;
    if (has_peer && (o.peer < 0 || o.peer >= s.ranks()))
      throw InputError(fmt::format("{}: peer {} is outside 0..{}", describe(s, id), o.peer, s.ranks() - 1));
    if (o.bytes < 0) throw InputError(fmt::format("{}: negative bytes", describe(s, id)));
    for (OpId d : s.deps(id)) {
      if (d < 0 || d >= n || d == id)
        throw InputError(fmt::format("{}: dep {} is not another operation", describe(s, id), d));
    }
    for (OpId d : s.after(id)) {
      if (d < 0 || d >= n || d == id)
        throw InputError(fmt::format("{}: 'after' {} is not another operation", describe(s, id), d));
      if (s.op(d).rank != o.rank || s.op(d).kind != OpKind::arrival || o.kind != OpKind::arrival ||
          s.op(d).peer != o.peer)
        throw InputError(fmt::format("{}: 'after' may only order an arrival after an earlier arrival from the same "
                                     "sender to the same rank -- the only order a transport can provide (got operation "
                                     "{})",
                                     describe(s, id), d));
    }
    if (o.kind == OpKind::arrival) {
      auto deps = s.deps(id);
      if (deps.size() != 1)
        throw InputError(fmt::format("{}: an arrival has exactly one dep, the remote put/atomic that feeds it (got {})",
                                     describe(s, id), deps.size()));
      const Op& src = s.op(deps[0]);
      if ((src.kind != OpKind::put && src.kind != OpKind::atomic) || src.peer != o.rank || src.rank == o.rank)
        throw InputError(fmt::format("{}: its dep {} must be a put or atomic on another rank that targets rank {}",
                                     describe(s, id), deps[0], o.rank));
      if (o.peer != src.rank || o.bytes != src.bytes)
        throw InputError(fmt::format("{}: peer {} and bytes {} must be those of its sender, operation {} (rank {}, {} "
                                     "bytes)",
                                     describe(s, id), o.peer, o.bytes, deps[0], src.rank, src.bytes));
      auto& landed = arrivals_of[static_cast<std::size_t>(deps[0])];
      if (landed >= 0)
        throw InputError(fmt::format("{}: operation {} already lands as operation {}; a put or "
                                     "atomic has exactly one arrival",
                                     describe(s, id), deps[0], landed));
      landed = id;
      if (o.trigger != kNoCounter) throw InputError(fmt::format("{}: an arrival has no trigger", describe(s, id)));
    } else {
      for (OpId d : s.deps(id)) {
        if (s.op(d).rank != o.rank)
          throw InputError(fmt::format("{}: depends on operation {} of rank {}: a dependence across ranks needs an "
                                       "arrival",
                                       describe(s, id), d, s.op(d).rank));
        if (s.op(d).kind == OpKind::host_wait)
          throw InputError(fmt::format("{}: depends on a host_wait ({}), which completes "
                                       "nothing a counter could observe",
                                       describe(s, id), d));
      }
    }
    if (o.kind == OpKind::cntr_add && o.add < 0)
      throw InputError(fmt::format("{}: a counter only grows; add must be >= 0", describe(s, id)));
  }

  for (OpId id = 0; id < n; ++id) {
    const Op& o = s.op(id);
    if ((o.kind == OpKind::put || o.kind == OpKind::atomic) && o.peer != o.rank &&
        arrivals_of[static_cast<std::size_t>(id)] < 0)
      throw InputError(fmt::format("{}: no arrival on rank {} lists it as its dep; every put or "
                                   "atomic to another rank lands somewhere",
                                   describe(s, id), o.peer));
  }

  // Acyclic over deps and after (Kahn). Successors in one flat array (CSR), not a vector
  // per operation: schedules reach millions of operations.
  const auto un = static_cast<std::size_t>(n);
  std::vector<std::int32_t> indeg(un, 0);
  std::vector<std::size_t> first(un + 1, 0);  // successors of u: succ[first[u] .. first[u + 1])
  for (OpId id = 0; id < n; ++id) {
    for (OpId d : s.deps(id)) ++first[static_cast<std::size_t>(d) + 1];
    for (OpId d : s.after(id)) ++first[static_cast<std::size_t>(d) + 1];
    indeg[static_cast<std::size_t>(id)] = static_cast<std::int32_t>(s.deps(id).size() + s.after(id).size());
  }
  for (std::size_t u = 0; u < un; ++u) first[u + 1] += first[u];
  std::vector<OpId> succ(first[un]);
  {
    std::vector<std::size_t> next(first.begin(), first.end() - 1);
    for (OpId id = 0; id < n; ++id) {
      for (OpId d : s.deps(id)) succ[next[static_cast<std::size_t>(d)]++] = id;
      for (OpId d : s.after(id)) succ[next[static_cast<std::size_t>(d)]++] = id;
    }
  }
  std::vector<OpId> stack;
  for (OpId id = 0; id < n; ++id)
    if (indeg[static_cast<std::size_t>(id)] == 0) stack.push_back(id);
  std::size_t seen = 0;
  while (!stack.empty()) {
    OpId u = stack.back();
    stack.pop_back();
    ++seen;
    for (std::size_t e = first[static_cast<std::size_t>(u)]; e < first[static_cast<std::size_t>(u) + 1]; ++e)
      if (--indeg[static_cast<std::size_t>(succ[e])] == 0) stack.push_back(succ[e]);
  }
  if (seen != static_cast<std::size_t>(n)) {
    for (OpId id = 0; id < n; ++id)
      if (indeg[static_cast<std::size_t>(id)] > 0)
        throw InputError(fmt::format("the dependences form a cycle through {}", describe(s, id)));
  }

  if (!assigned) return;
  auto check_counter = [&](OpId id, CounterId c, const char* what) {
    if (c == kNoCounter) return;
    if (c < 0 || static_cast<std::size_t>(c) >= s.counter_count())
      throw InputError(fmt::format("{}: {} counter {} is not defined (the schedule has {})", describe(s, id), what, c,
                                   s.counter_count()));
    if (s.counter_owner(c) != s.op(id).rank)
      throw InputError(fmt::format("{}: its {} is {}: an operation names counters of its own "
                                   "rank",
                                   describe(s, id), what, s.counter_label(c)));
  };
  for (OpId id = 0; id < n; ++id) {
    const Op& o = s.op(id);
    check_counter(id, o.trigger, "trigger");
    check_counter(id, o.completion, "completion");
    check_counter(id, o.target, "target");
    if (o.kind == OpKind::cntr_add && o.target == kNoCounter)
      throw InputError(fmt::format("{}: cntr_add needs a target counter", describe(s, id)));
    if (o.kind == OpKind::arrival && o.completion == kNoCounter)
      throw InputError(fmt::format("{}: an arrival's buffer must be bound to a counter", describe(s, id)));
    if (o.kind == OpKind::arrival) continue;
    if (o.kind == OpKind::host_wait && o.trigger == kNoCounter)
      throw InputError(fmt::format("{}: a host_wait needs a counter and value to wait for", describe(s, id)));
    if (!s.deps(id).empty() && o.trigger == kNoCounter)
      throw InputError(fmt::format("{}: has dependences but no trigger, so it would fire at start", describe(s, id)));
    if (o.trigger != kNoCounter && o.threshold < 0)
      throw InputError(fmt::format("{}: negative threshold", describe(s, id)));
    for (OpId d : s.deps(id)) {
      if (s.op(d).increments() != o.trigger)
        throw InputError(fmt::format("{}: parent {} completes into {}, but the op is triggered by {}; all parents of "
                                     "an operation must complete into its trigger counter",
                                     describe(s, id), d, s.counter_label(s.op(d).increments()),
                                     s.counter_label(o.trigger)));
    }
  }
}

}  // namespace fabriclab::offload
