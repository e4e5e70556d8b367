#include "fabric/deadlock.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "fabric/port.h"
#include "fabric/switch.h"

namespace fabriclab::fabric {

std::vector<PausedQueue> paused_queues(const std::vector<std::unique_ptr<Switch>>& switches,
                                       std::uint32_t first_switch_id, Time now, Time persist,
                                       const std::function<bool(std::size_t)>& mine) {
  std::vector<PausedQueue> out;
  for (std::size_t i = 0; i < switches.size(); ++i) {
    if (!mine(i)) continue;
    const Switch& s = *switches[i];
    for (std::size_t p = 0; p < s.port_count(); ++p) {
      const Port& port = s.port(p);
      for (std::uint8_t c = 0; c < 8; ++c) {
        if (s.queue(p, c).empty() || !port.paused(c) || now - port.paused_since(c) < persist) continue;
        PausedQueue q{static_cast<std::uint32_t>(first_switch_id + i), static_cast<std::uint16_t>(p), c, {}};
        std::set<std::uint16_t> ingress;
        for (const Packet* k = s.queue(p, c).front(); k; k = k->next) ingress.insert(k->ingress);
        for (std::uint16_t in : ingress) {
          const Port* up = s.port(in).peer();
          q.upstream.emplace_back(up->owner().id(), up->index());
        }
        out.push_back(std::move(q));
      }
    }
  }
  return out;
}

std::optional<DeadlockReport> find_cycle(const std::vector<PausedQueue>& nodes,
                                         const std::vector<std::unique_ptr<Switch>>& switches,
                                         std::uint32_t first_switch_id, Time now) {
  if (nodes.empty()) return std::nullopt;
  std::map<std::tuple<std::uint32_t, std::uint16_t, std::uint8_t>, std::size_t> index;
  for (std::size_t v = 0; v < nodes.size(); ++v)
    index.emplace(std::tuple{nodes[v].sw, nodes[v].port, nodes[v].prio}, v);
  // u -> v: queue u is paused because the switch of v holds, in v, packets that came
  // in over u's link. A host upstream pauses nothing downstream of a switch.
  std::vector<std::vector<std::size_t>> out(nodes.size());
  for (std::size_t v = 0; v < nodes.size(); ++v)
    for (const auto& [owner, port] : nodes[v].upstream) {
      if (owner < first_switch_id) continue;
      const auto it = index.find({owner, port, nodes[v].prio});
      if (it != index.end()) out[it->second].push_back(v);
    }
  // A cycle by depth-first search (colors: 0 new, 1 on the stack, 2 done).
  std::vector<int> color(nodes.size(), 0);
  std::vector<std::size_t> parent(nodes.size(), 0);
  for (std::size_t start = 0; start < nodes.size(); ++start) {
    if (color[start]) continue;
    std::vector<std::pair<std::size_t, std::size_t>> dfs = {{start, 0}};
    color[start] = 1;
    while (!dfs.empty()) {
      auto& [u, next] = dfs.back();
      if (next == out[u].size()) {
        color[u] = 2;
        dfs.pop_back();
        continue;
      }
      const std::size_t v = out[u][next++];
      if (color[v] == 0) {
        color[v] = 1;
        parent[v] = u;
        dfs.push_back({v, 0});
      } else if (color[v] == 1) {
        DeadlockReport r;
        r.detected_at = now;
        std::vector<std::size_t> cyc;
        for (std::size_t w = u; w != v; w = parent[w]) cyc.push_back(w);
        cyc.push_back(v);
        std::reverse(cyc.begin(), cyc.end());
        for (std::size_t w : cyc)
          r.cycle.push_back(fmt::format("{} port {} priority {}", switches[nodes[w].sw - first_switch_id]->name(),
                                        nodes[w].port, nodes[w].prio));
        return r;
      }
    }
  }
  return std::nullopt;
}

std::optional<DeadlockReport> find_pfc_deadlock(const std::vector<std::unique_ptr<Switch>>& switches,
                                                std::uint32_t first_switch_id, Time now, Time persist) {
  return find_cycle(paused_queues(switches, first_switch_id, now, persist, [](std::size_t) { return true; }), switches,
                    first_switch_id, now);
}

}  // namespace fabriclab::fabric
