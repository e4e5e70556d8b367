#include "offload/program.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "core/input.h"
#include "offload/json_fields.h"
#include "offload/schedule_io.h"

namespace fabriclab::offload {

using detail::Ctx;
using detail::json;

namespace {
constexpr const char* kFormat = "fabriclab.program/1";

std::string name_call(std::size_t i, const ProgramCall& c) {
  return fmt::format("call {} ({} on rank {})", i, to_string(c.kind), c.rank);
}
}  // namespace

Program program_from_json_text(const std::string& text, const std::string& origin) {
  const json j = detail::parse_json(text, origin);
  Ctx top{origin};
  if (!j.is_object()) top.fail("the top level must be an object");
  top.only(j, {"format", "ranks", "ordered_channels", "buffers", "calls", "collective", "algorithm"});
  if (top.string(top.need(j, "format"), "format") != kFormat)
    top.fail(fmt::format("field 'format' must be \"{}\"", kFormat));
  Program p;
  p.origin = origin;
  p.ranks = static_cast<Rank>(top.bounded(top.need(j, "ranks"), "ranks", 1, detail::kMaxRanks));
  if (j.contains("ordered_channels")) p.ordered_channels = top.boolean(j.at("ordered_channels"), "ordered_channels");
  auto rank_of = [&](const Ctx& c, const json& e) {
    const Rank r = c.small(c.need(e, "rank"), "rank");
    if (r >= p.ranks) c.fail(fmt::format("rank {} is outside 0..{}", r, p.ranks - 1));
    return r;
  };
  const json& bufs = j.contains("buffers") ? j.at("buffers") : json::array();
  if (!bufs.is_array()) top.fail("field 'buffers' must be an array");
  std::set<std::pair<Rank, std::string>> declared;
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    Ctx c{fmt::format("{}: buffers[{}]", origin, i)};
    const json& e = bufs[i];
    if (!e.is_object()) c.fail("a buffer must be an object");
    c.only(e, {"rank", "name", "counter"});
    ProgramBuffer b{rank_of(c, e), c.string(c.need(e, "name"), "name"), c.counter(c.need(e, "counter"), "counter")};
    if (b.counter == kNoCounter)
      c.fail(fmt::format("buffer '{}' of rank {} must be bound to a counter: arrivals into it "
                         "could not be observed",
                         b.name, b.rank));
    if (!declared.emplace(b.rank, b.name).second)
      c.fail(fmt::format("buffer '{}' of rank {} is declared twice", b.name, b.rank));
    p.buffers.push_back(std::move(b));
  }
  const json& calls = top.need(j, "calls");
  if (!calls.is_array()) top.fail("field 'calls' must be an array");
  for (std::size_t i = 0; i < calls.size(); ++i) {
    Ctx c{fmt::format("{}: call {}", origin, i)};
    const json& e = calls[i];
    if (!e.is_object()) c.fail("a call must be an object");
    ProgramCall k;
    k.rank = rank_of(c, e);
    const std::string kind = c.string(c.need(e, "kind"), "kind");
    const auto parsed = parse_op_kind(kind);
    if (!parsed || *parsed == OpKind::arrival)
      c.fail(fmt::format("unknown kind '{}' (expected put, get, atomic, cntr_add or host_wait; "
                         "arrivals follow from the buffers)",
                         kind));
    k.kind = *parsed;
    c.where = fmt::format("{}: {}", origin, name_call(i, k));
    const json* trig = &c.need(e, "trigger");
    if (!trig->is_null()) {
      if (!trig->is_object()) c.fail("field 'trigger' must be null or {\"counter\": C, \"threshold\": T}");
      c.only(*trig, {"counter", "threshold"});
      k.trigger = c.counter(c.need(*trig, "counter"), "trigger.counter");
      if (k.trigger == kNoCounter) c.fail("field 'trigger.counter' must be a counter id");
      k.threshold = c.bounded(c.need(*trig, "threshold"), "trigger.threshold", 0, detail::kMaxCount);
    }
    switch (k.kind) {
      case OpKind::put:
      case OpKind::atomic:
      case OpKind::get:
        c.only(e, {"rank", "kind", "peer", "buffer", "bytes", "trigger", "completion"});
        k.peer = c.small(c.need(e, "peer"), "peer");
        if (k.peer >= p.ranks) c.fail(fmt::format("peer {} is outside 0..{}", k.peer, p.ranks - 1));
        k.bytes = c.bounded(c.need(e, "bytes"), "bytes", 0, detail::kMaxBytes);
        k.completion = c.counter(c.need(e, "completion"), "completion");
        if (k.kind != OpKind::get && k.peer != k.rank) k.buffer = c.string(c.need(e, "buffer"), "buffer");
        if (k.kind == OpKind::put && k.peer == k.rank)
          c.fail("a put to its own rank is not a network operation (use a local atomic)");
        break;
      case OpKind::cntr_add:
        c.only(e, {"rank", "kind", "target", "add", "trigger"});
        k.target = c.counter(c.need(e, "target"), "target");
        if (k.target == kNoCounter) c.fail("field 'target' must be a counter id");
        k.add = c.bounded(c.need(e, "add"), "add", 0, detail::kMaxCount);
        break;
      case OpKind::host_wait:
        c.only(e, {"rank", "kind", "trigger"});
        if (k.trigger == kNoCounter) c.fail("a host_wait needs a trigger: the counter and value it waits for");
        break;
      case OpKind::arrival: break;
    }
    p.calls.push_back(k);
  }
  return p;
}

Program read_program_json(const std::string& path) {
  return program_from_json_text(read_input(path, "program file", kJsonDocumentBytes), path);
}

std::string program_to_json_text(const Schedule& s) {
  // Rank-local counter ids, numbered as the schedule writer numbers them.
  const std::vector<CounterId> local = rank_counter_ids(s);
  auto lc = [&](CounterId c) -> json {
    if (c == kNoCounter) return nullptr;
    return local[static_cast<std::size_t>(c)];
  };
  json buffers = json::array(), calls = json::array();
  for (std::size_t i = 0; i < s.size(); ++i) {
    const Op& o = s.op(static_cast<OpId>(i));
    if (o.kind == OpKind::arrival) {
      buffers.push_back({{"rank", o.rank}, {"name", fmt::format("b{}", i)}, {"counter", lc(o.completion)}});
      continue;
    }
    json c{{"rank", o.rank}, {"kind", std::string(to_string(o.kind))}};
    if (is_data_op(o.kind)) {
      c["peer"] = o.peer;
      if (o.kind != OpKind::get && o.peer != o.rank) {
        // The arrival this op feeds follows it in the schedule.
        for (std::size_t a = i + 1; a < s.size(); ++a)
          if (s.op(static_cast<OpId>(a)).kind == OpKind::arrival &&
              s.deps(static_cast<OpId>(a))[0] == static_cast<OpId>(i)) {
            c["buffer"] = fmt::format("b{}", a);
            break;
          }
      }
      c["bytes"] = o.bytes;
      c["completion"] = lc(o.completion);
    }
    if (o.kind == OpKind::cntr_add) {
      c["target"] = lc(o.target);
      c["add"] = o.add;
    }
    c["trigger"] = o.trigger == kNoCounter ? json(nullptr)
                                           : json{{"counter", lc(o.trigger)}, {"threshold", o.threshold}};
    calls.push_back(std::move(c));
  }
  json j{{"format", kFormat},
         {"ranks", s.ranks()},
         {"ordered_channels", s.ordered_channels},
         {"buffers", std::move(buffers)},
         {"calls", std::move(calls)}};
  return j.dump(1) + "\n";
}

Recovered recover_dag(const Program& p) {
  const std::string& origin = p.origin;
  // Schedule-wide ids for (rank, local counter); the local id stays the counter's name,
  // so that the verifier's messages name the library's counters.
  std::map<std::pair<Rank, CounterId>, CounterId> ids;
  std::vector<Rank> owner;
  std::vector<CounterId> name;
  auto gid = [&](Rank r, CounterId c) -> CounterId {
    if (c == kNoCounter) return kNoCounter;
    auto [it, fresh] = ids.emplace(std::pair{r, c}, static_cast<CounterId>(owner.size()));
    if (fresh) owner.push_back(r), name.push_back(c);
    return it->second;
  };
  std::map<std::pair<Rank, std::string>, CounterId> binding;
  for (const auto& b : p.buffers) binding[{b.rank, b.name}] = gid(b.rank, b.counter);

  // Ops: each call, and for a put/atomic to another rank its arrival right after it.
  struct Node {
    Op op;
    std::size_t call;  // index of the call (for an arrival: of its sender)
  };
  std::vector<Node> nodes;
  std::vector<OpId> op_of_call(p.calls.size());
  for (std::size_t i = 0; i < p.calls.size(); ++i) {
    const auto& c = p.calls[i];
    Op o{.kind = c.kind, .rank = c.rank, .peer = c.peer, .bytes = c.bytes, .add = c.add};
    o.trigger = gid(c.rank, c.trigger);
    o.threshold = c.threshold;
    o.completion = gid(c.rank, c.completion);
    o.target = gid(c.rank, c.target);
    o.counted = !(is_data_op(c.kind) && c.completion == kNoCounter);
    op_of_call[i] = static_cast<OpId>(nodes.size());
    nodes.push_back({o, i});
    if ((c.kind == OpKind::put || c.kind == OpKind::atomic) && c.peer != c.rank) {
      auto it = binding.find({c.peer, c.buffer});
      if (it == binding.end())
        throw InputError(fmt::format("{}: {}: rank {} has no buffer '{}' (declare it under "
                                     "\"buffers\" with the counter it is bound to)",
                                     origin, name_call(i, c), c.peer, c.buffer));
      Op a{.kind = OpKind::arrival, .rank = c.peer, .peer = c.rank, .bytes = c.bytes};
      a.completion = it->second;
      nodes.push_back({a, i});
    }
  }
  const auto n = nodes.size();
  // Per counter: its local incrementers (in issue order) and its arrivals (in the order
  // their senders issued them).
  std::vector<std::vector<OpId>> local_inc(owner.size()), arrivals(owner.size());
  for (std::size_t i = 0; i < n; ++i) {
    const CounterId c = nodes[i].op.increments();
    if (c == kNoCounter) continue;
    if (nodes[i].op.kind == OpKind::arrival) arrivals[static_cast<std::size_t>(c)].push_back(static_cast<OpId>(i));
    else local_inc[static_cast<std::size_t>(c)].push_back(static_cast<OpId>(i));
  }
  std::vector<std::vector<OpId>> deps(n), after(n);
  Recovered out;
  for (std::size_t i = 0; i < n; ++i) {
    const Op& o = nodes[i].op;
    if (o.kind == OpKind::arrival) {
      deps[i] = {static_cast<OpId>(i - 1)};  // its sender, created just before it
      continue;
    }
    if (o.trigger == kNoCounter) continue;
    const auto k = static_cast<std::size_t>(o.trigger);
    const auto& call = p.calls[nodes[i].call];
    const std::string where = fmt::format("{}: {}", origin, name_call(nodes[i].call, call));
    // Local incrementers issued before this call.
    std::int64_t before = 0;
    for (OpId x : local_inc[k]) {
      if (static_cast<std::size_t>(x) >= i) break;
      deps[i].push_back(x);
      before += nodes[static_cast<std::size_t>(x)].op.weight();
    }
    const auto& arr = arrivals[k];
    const std::int64_t need = o.threshold - before;
    if (need < 0)
      throw InputError(fmt::format("{}: threshold {} on counter {} is below the {} that calls issued before it add to "
                                   "that counter: which of them it waits for is ambiguous",
                                   where, o.threshold, call.trigger, before));
    std::vector<Rank> senders;
    for (OpId a : arr) senders.push_back(nodes[static_cast<std::size_t>(a)].op.peer);
    std::sort(senders.begin(), senders.end());
    senders.erase(std::unique(senders.begin(), senders.end()), senders.end());
    const bool one_channel = p.ordered_channels && senders.size() == 1;
    if (need == static_cast<std::int64_t>(arr.size())) {
      deps[i].insert(deps[i].end(), arr.begin(), arr.end());  // every arrival (or none bound)
    } else if (need > static_cast<std::int64_t>(arr.size())) {
      throw InputError(fmt::format("{}: threshold {} on counter {} exceeds what increments it before the call ({} "
                                   "from earlier calls, {} arrivals): it would wait for calls issued after it",
                                   where, o.threshold, call.trigger, before, arr.size()));
    } else if (one_channel) {
      // In-order delivery from one sender: the first `need` arrivals.
      deps[i].insert(deps[i].end(), arr.begin(), arr.begin() + need);
    } else {
      std::string from;
      for (Rank r : senders) from += (from.empty() ? "" : ", ") + std::to_string(r);
      throw InputError(
          fmt::format("{}: threshold {} on counter {} leaves {} of the {} arrivals bound to it (from "
                      "rank{} {}) to wait for; which ones is ambiguous{}",
                      where, o.threshold, call.trigger, need, arr.size(), senders.size() == 1 ? "" : "s", from,
                      senders.size() == 1 ? " (declare ordered_channels if the transport delivers in order)" : ""));
    }
    out.dependences += deps[i].size();
  }
  if (p.ordered_channels) {
    std::map<std::pair<Rank, Rank>, OpId> last;
    for (std::size_t i = 0; i < n; ++i) {
      const Op& o = nodes[i].op;
      if (o.kind != OpKind::arrival) continue;
      auto [it, fresh] = last.emplace(std::pair{o.peer, o.rank}, static_cast<OpId>(i));
      if (!fresh) {
        after[i] = {it->second};
        it->second = static_cast<OpId>(i);
      }
    }
  }

  out.as_given = Schedule(p.ranks);
  out.as_given.collective = "program";
  out.as_given.algorithm = origin;
  out.as_given.strategy = "as given";
  out.as_given.ordered_channels = p.ordered_channels;
  out.as_given.set_counters(owner, name);
  for (std::size_t i = 0; i < n; ++i) out.as_given.add(nodes[i].op, deps[i], after[i]);
  validate(out.as_given, true);

  // The DAG: counter adds contracted (an op that waited on a counter add waits on what
  // the counter add waited on), counters dropped; the re-assignment inserts its own
  // relays where they are needed.
  std::vector<std::vector<OpId>> flat(n);
  std::vector<char> drop(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    for (OpId d : deps[i]) {
      if (nodes[static_cast<std::size_t>(d)].op.kind == OpKind::cntr_add && nodes[i].op.kind != OpKind::arrival) {
        const auto& via = flat[static_cast<std::size_t>(d)];
        flat[i].insert(flat[i].end(), via.begin(), via.end());
      } else {
        flat[i].push_back(d);
      }
    }
    std::sort(flat[i].begin(), flat[i].end());
    flat[i].erase(std::unique(flat[i].begin(), flat[i].end()), flat[i].end());
    if (nodes[i].op.kind == OpKind::cntr_add) drop[i] = 1, ++out.contracted_counter_adds;
  }
  std::vector<OpId> new_id(n, -1);
  out.dag = Schedule(p.ranks);
  out.dag.collective = "program";
  out.dag.algorithm = origin;
  out.dag.ordered_channels = p.ordered_channels;
  OpId next = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (!drop[i]) new_id[i] = next++;
  for (std::size_t i = 0; i < n; ++i) {
    if (drop[i]) continue;
    Op o = nodes[i].op;
    o.trigger = o.completion = o.target = kNoCounter;
    o.threshold = 0;
    std::vector<OpId> d, a;
    for (OpId x : flat[i]) d.push_back(new_id[static_cast<std::size_t>(x)]);
    for (OpId x : after[i]) a.push_back(new_id[static_cast<std::size_t>(x)]);
    out.dag.add(o, d, a);
  }
  validate(out.dag, false);
  return out;
}

}  // namespace fabriclab::offload
