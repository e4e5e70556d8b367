#include "offload/segment.h"

#include <fmt/format.h>

#include <stdexcept>
#include <vector>

namespace fabriclab::offload {

Schedule split_atomics(const Schedule& dag, std::int64_t max_bytes) {
  if (max_bytes <= 0) throw std::invalid_argument("split_atomics: max_bytes must be positive");
  if (dag.counter_count() != 0) throw std::invalid_argument("split_atomics: the schedule already has counters");
  Schedule out(dag.ranks());
  out.copy_metadata(dag);
  // Old id -> its new ids (one per segment; an arrival maps to its segments' arrivals).
  std::vector<std::vector<OpId>> now(dag.size());
  std::vector<OpId> deps, after;
  auto map_into = [&](std::span<const OpId> old, std::vector<OpId>& into) {
    into.clear();
    for (OpId d : old) {
      const auto& n = now[static_cast<std::size_t>(d)];
      into.insert(into.end(), n.begin(), n.end());
    }
  };
  for (std::size_t i = 0; i < dag.size(); ++i) {
    const auto id = static_cast<OpId>(i);
    const Op& o = dag.op(id);
    map_into(dag.deps(id), deps);
    map_into(dag.after(id), after);
    if (o.kind == OpKind::arrival) {
      // The send was split (or not) already; one arrival per segment, each fed by its own.
      const auto& sends = now[static_cast<std::size_t>(dag.deps(id)[0])];
      for (OpId s : sends) {
        const Op& seg = out.op(s);
        Op a = o;
        a.bytes = seg.bytes;
        a.dst_offset = seg.dst_offset;
        const OpId one[] = {s};
        // With ordered channels, segments land in order behind what the original followed.
        std::span<const OpId> behind;
        if (now[i].empty()) behind = after;
        else if (dag.ordered_channels) behind = std::span<const OpId>(&now[i].back(), 1);
        now[i].push_back(out.add(a, one, behind));
      }
      continue;
    }
    if (o.kind != OpKind::atomic || o.bytes <= max_bytes) {
      now[i].push_back(out.add(o, deps, after));
      continue;
    }
    for (std::int64_t done = 0; done < o.bytes; done += max_bytes) {
      Op seg = o;
      seg.bytes = std::min(max_bytes, o.bytes - done);
      seg.src_offset = o.src_offset + done;
      seg.dst_offset = o.dst_offset + done;
      now[i].push_back(out.add(seg, deps, after));
    }
  }
  return out;
}

}  // namespace fabriclab::offload
