#include "exec/plan.h"

#include <fmt/format.h>

#include <stdexcept>
#include <unordered_map>

namespace fabriclab::exec {

using offload::CounterId;
using offload::kNoCounter;
using offload::Op;
using offload::OpId;
using offload::OpKind;
using offload::Rank;

std::vector<RankProgram> plan_triggered(const offload::Schedule& s) {
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
      case OpKind::arrival:
        break;
      case OpKind::host_wait:
        rp.waits.push_back({nic_counter(o.rank, o.trigger), o.threshold, id});
        break;
      case OpKind::get:
        throw std::invalid_argument(fmt::format(
            "op {}: get operations cannot be executed (no builder emits them)", id));
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
  return prog;
}

}  // namespace fabriclab::exec
