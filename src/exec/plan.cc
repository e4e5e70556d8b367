#include "exec/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>
#include <stdexcept>
#include <unordered_map>

namespace fabriclab::exec {

using offload::CounterId;
using offload::kNoCounter;
using offload::Op;
using offload::OpId;
using offload::OpKind;
using offload::Rank;

namespace {

// Paces every burst -- transfers to one peer with the same dependences in the DAG, which
// become ready together (an atomic's segments), whatever counters and relays the
// assignment gave them and wherever it put them in the program -- longer than `window`
// (plan.h). Transfer i >= window of a burst may fire once i - window + 1 of the burst's
// transfers have completed: one of them fired, so the dependences they share were done.
void pace(const offload::Schedule& s, RankProgram& rp, int window) {
  // An op's dependences as the DAG had them before counter assignment: the relays an
  // assignment inserted (naive gives each op its own) are looked through.
  auto original_deps = [&](OpId id) {
    std::vector<OpId> out, stack(s.deps(id).begin(), s.deps(id).end());
    while (!stack.empty()) {
      const OpId d = stack.back();
      stack.pop_back();
      if (s.op(d).kind == OpKind::cntr_add && s.op(d).relay)
        stack.insert(stack.end(), s.deps(d).begin(), s.deps(d).end());
      else out.push_back(d);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  };
  std::map<std::pair<offload::Rank, std::vector<OpId>>, std::vector<std::size_t>> bursts;
  for (std::size_t i = 0; i < rp.ops.size(); ++i)
    if (!rp.ops[i].is_counter_add) bursts[{rp.ops[i].transfer.peer, original_deps(rp.op_ids[i])}].push_back(i);
  const std::size_t w = static_cast<std::size_t>(window);
  // A burst's counter adds go after its last transfer, named after its first (the
  // schedule op whose completions they pass on).
  std::vector<std::vector<std::pair<TriggeredOp, OpId>>> adds_after(rp.ops.size());
  // Bursts in program order of their first transfer, so flow counters are numbered alike
  // on every run.
  std::vector<const std::vector<std::size_t>*> order;
  for (const auto& [key, members] : bursts)
    if (members.size() > w) order.push_back(&members);
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return a->front() < b->front(); });
  for (const std::vector<std::size_t>* members : order) {
    const std::size_t n = members->size();
    const int flow = static_cast<int>(rp.counters.size());
    rp.counters.push_back(kNoCounter);
    rp.per_iteration.push_back(static_cast<std::int64_t>(n));
    std::vector<std::pair<int, std::int64_t>> owed;  // completion counter, completions
    for (std::size_t k = 0; k < n; ++k) {
      TriggeredOp& t = rp.ops[(*members)[k]];
      if (t.completion >= 0) {
        auto it = std::find_if(owed.begin(), owed.end(), [&](const auto& o) { return o.first == t.completion; });
        if (it == owed.end()) owed.push_back({t.completion, 1});
        else ++it->second;
      }
      t.completion = flow;
      if (k >= w) {
        t.trigger = flow;
        t.threshold = static_cast<std::int64_t>(k - w + 1);
      }
    }
    // The host waits for the whole burst, so that no completion of it is still to come
    // when the iteration ends (the counter adds make this implicit when the burst's
    // completions are counted; uncounted sends have nothing else to wait for).
    rp.waits.push_back({flow, static_cast<std::int64_t>(n), rp.op_ids[members->front()]});
    for (const auto& [counter, count] : owed) {
      TriggeredOp add;
      add.is_counter_add = true;
      add.target = counter;
      add.add = count;
      add.trigger = flow;
      add.threshold = static_cast<std::int64_t>(n);
      adds_after[members->back()].push_back({add, rp.op_ids[members->front()]});
    }
  }
  std::vector<TriggeredOp> ops;
  std::vector<OpId> ids;
  for (std::size_t i = 0; i < rp.ops.size(); ++i) {
    ops.push_back(rp.ops[i]);
    ids.push_back(rp.op_ids[i]);
    for (const auto& [add, first] : adds_after[i]) {
      ops.push_back(add);
      ids.push_back(first);
    }
  }
  rp.ops = std::move(ops);
  rp.op_ids = std::move(ids);
}

// Whether the programs run to their end when every transfer lands and completes at
// once: counters only grow and thresholds are ">=", so the order does not matter.
bool runs_to_the_end(const std::vector<RankProgram>& prog) {
  struct Watch {
    std::vector<std::pair<std::int64_t, std::size_t>> ops;  // (threshold, op), ascending
    std::size_t next = 0;
  };
  std::vector<std::vector<Watch>> watch(prog.size());
  std::vector<std::vector<std::int64_t>> value(prog.size());
  std::vector<std::pair<std::size_t, std::size_t>> work;  // fired, to apply: (rank, op)
  std::size_t total = 0, fired = 0;
  for (std::size_t r = 0; r < prog.size(); ++r) {
    watch[r].resize(prog[r].counters.size());
    value[r].assign(prog[r].counters.size(), 0);
    total += prog[r].ops.size();
    for (std::size_t i = 0; i < prog[r].ops.size(); ++i) {
      const TriggeredOp& t = prog[r].ops[i];
      if (t.trigger < 0) work.push_back({r, i});
      else watch[r][static_cast<std::size_t>(t.trigger)].ops.push_back({t.threshold, i});
    }
    for (Watch& w : watch[r]) std::sort(w.ops.begin(), w.ops.end());
  }
  auto bump = [&](std::size_t r, int c, std::int64_t by) {
    const auto cc = static_cast<std::size_t>(c);
    value[r][cc] += by;
    Watch& w = watch[r][cc];
    while (w.next < w.ops.size() && w.ops[w.next].first <= value[r][cc]) work.push_back({r, w.ops[w.next++].second});
  };
  for (std::size_t r = 0; r < prog.size(); ++r)
    for (std::size_t c = 0; c < watch[r].size(); ++c) bump(r, static_cast<int>(c), 0);
  while (!work.empty()) {
    const auto [r, i] = work.back();
    work.pop_back();
    ++fired;
    const TriggeredOp& t = prog[r].ops[i];
    if (t.is_counter_add) {
      bump(r, t.target, t.add);
      continue;
    }
    const auto peer = static_cast<std::size_t>(t.transfer.peer);
    const int arrival = prog[peer].key_counter[static_cast<std::size_t>(t.transfer.key)];
    if (arrival >= 0) bump(peer, arrival, 1);
    if (t.completion >= 0) bump(r, t.completion, 1);
  }
  return fired == total;
}

}  // namespace

std::size_t max_counters(const std::vector<RankProgram>& programs) {
  std::size_t m = 0;
  for (const RankProgram& rp : programs) m = std::max(m, rp.counters.size());
  return m;
}

std::vector<RankProgram> plan_triggered(const offload::Schedule& s, int window, std::string* unpaced_because) {
  if (window < 0) throw std::invalid_argument("plan_triggered: the window must not be negative");
  const Rank p = s.ranks();
  std::vector<RankProgram> prog(static_cast<std::size_t>(p));
  std::vector<std::unordered_map<CounterId, int>> local(static_cast<std::size_t>(p));
  auto nic_counter = [&](Rank r, CounterId c) {
    if (c == kNoCounter) return -1;
    auto& m = local[static_cast<std::size_t>(r)];
    auto [it, fresh] = m.try_emplace(c, static_cast<int>(m.size()));
    if (fresh) {
      prog[static_cast<std::size_t>(r)].counters.push_back(c);
      prog[static_cast<std::size_t>(r)].per_iteration.push_back(0);
    }
    return it->second;
  };
  // Keys: one registration per counter that counts arrivals; key 0 counts nothing.
  std::vector<std::unordered_map<int, int>> key_of(static_cast<std::size_t>(p));
  for (Rank r = 0; r < p; ++r) prog[static_cast<std::size_t>(r)].key_counter = {-1};
  std::vector<OpId> arrival_of(s.size(), -1);
  for (std::size_t i = 0; i < s.size(); ++i) {
    const Op& o = s.op(static_cast<OpId>(i));
    prog[static_cast<std::size_t>(o.rank)].rank = o.rank;
    if (o.kind == OpKind::arrival) {
      arrival_of[static_cast<std::size_t>(s.deps(static_cast<OpId>(i))[0])] = static_cast<OpId>(i);
      const int c = nic_counter(o.rank, o.completion);
      if (c >= 0) {
        auto& keys = key_of[static_cast<std::size_t>(o.rank)];
        if (keys.try_emplace(c, static_cast<int>(keys.size()) + 1).second)
          prog[static_cast<std::size_t>(o.rank)].key_counter.push_back(c);
      }
    }
  }
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto id = static_cast<OpId>(i);
    const Op& o = s.op(id);
    RankProgram& rp = prog[static_cast<std::size_t>(o.rank)];
    const int inc = nic_counter(o.rank, o.increments());
    if (inc >= 0) rp.per_iteration[static_cast<std::size_t>(inc)] += o.weight();
    switch (o.kind) {
      case OpKind::arrival: break;
      case OpKind::host_wait: rp.waits.push_back({nic_counter(o.rank, o.trigger), o.threshold, id}); break;
      case OpKind::get:
        throw std::invalid_argument(
            fmt::format("op {}: get operations cannot be executed (no builder emits them)", id));
      case OpKind::cntr_add: {
        TriggeredOp t;
        t.is_counter_add = true;
        t.target = inc;
        t.add = o.add;
        t.trigger = nic_counter(o.rank, o.trigger);
        t.threshold = o.threshold;
        rp.ops.push_back(t);
        rp.op_ids.push_back(id);
        break;
      }
      case OpKind::put:
      case OpKind::atomic: {
        TriggeredOp t;
        t.transfer = {.op = o.kind == OpKind::put ? DataOp::put : DataOp::atomic,
                      .peer = o.peer,
                      .key = 0,
                      .src = o.src_offset,
                      .dst = o.dst_offset,
                      .bytes = o.bytes};
        const OpId a = arrival_of[i];
        if (a >= 0) {
          const Op& arr = s.op(a);
          if (arr.completion != kNoCounter)
            t.transfer.key = key_of[static_cast<std::size_t>(o.peer)].at(
                local[static_cast<std::size_t>(o.peer)].at(arr.completion));
        } else if (o.peer != o.rank) {
          throw std::invalid_argument(fmt::format("op {}: a transfer to rank {} has no arrival", id, o.peer));
        }
        t.trigger = nic_counter(o.rank, o.trigger);
        t.threshold = o.threshold;
        t.completion = inc;
        rp.ops.push_back(t);
        rp.op_ids.push_back(id);
        break;
      }
    }
  }
  if (window == 0) return prog;
  // Arrivals that must land in order (ordered channels) could be overtaken by a later
  // burst's first transfers while an earlier one is held back.
  bool ordered = s.ordered_channels;
  for (std::size_t i = 0; i < s.size() && !ordered; ++i) ordered = !s.after(static_cast<OpId>(i)).empty();
  if (ordered) {
    if (unpaced_because) *unpaced_because = "the schedule relies on ordered channels, which pacing could reorder";
    return prog;
  }
  std::vector<RankProgram> paced = prog;
  for (RankProgram& rp : paced) pace(s, rp, window);
  // The assignments' thresholds count exactly an operation's ancestors, so holding back
  // the rest of a burst delays nothing a burst's first transfers wait for. A schedule
  // file may count more (a first transfer waiting for another's completion): paced, it
  // would never start.
  if (!runs_to_the_end(paced)) {
    if (unpaced_because)
      *unpaced_because = "paced, a burst's first transfers would wait for completions the pacing holds back "
                         "(the schedule's thresholds count more than each operation's ancestors)";
    return prog;
  }
  return paced;
}

}  // namespace fabriclab::exec
