#include "fabric/deadlock.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "fabric/port.h"
#include "fabric/switch.h"

namespace fabriclab::fabric {

std::optional<DeadlockReport> find_pfc_deadlock(const std::vector<std::unique_ptr<Switch>>& switches,
                                                std::uint32_t first_switch_id, Time now, Time persist) {
  std::optional<DeadlockReport> found;
  // Candidates: egress queues holding packets, paused without a break for `persist`.
  struct Q {
    Switch* sw;
    std::uint16_t port;
    std::uint8_t prio;
    auto operator<=>(const Q&) const = default;
  };
  std::map<Q, std::size_t> index;
  std::vector<Q> nodes;
  for (const auto& s : switches)
    for (std::size_t p = 0; p < s->port_count(); ++p) {
      const Port& port = s->port(p);
      for (std::uint8_t c = 0; c < 8; ++c)
        if (!s->queue(p, c).empty() && port.paused(c) && now - port.paused_since(c) >= persist) {
          const Q q{s.get(), static_cast<std::uint16_t>(p), c};
          index.emplace(q, nodes.size());
          nodes.push_back(q);
        }
    }
  if (!nodes.empty()) {
    // u -> v: queue u is paused because the switch of v holds, in v, packets that came
    // in over u's link.
    std::vector<std::vector<std::size_t>> out(nodes.size());
    for (std::size_t v = 0; v < nodes.size(); ++v) {
      const Q& q = nodes[v];
      std::set<std::uint16_t> ingress;
      for (const Packet* p = q.sw->queue(q.port, q.prio).front(); p; p = p->next) ingress.insert(p->ingress);
      for (std::uint16_t in : ingress) {
        const Port* up = q.sw->port(in).peer();
        const std::uint32_t owner = up->owner().id();
        if (owner < first_switch_id) continue;  // a host: it pauses nothing downstream of a switch
        Switch* usw = switches[owner - first_switch_id].get();
        auto it = index.find({usw, up->index(), q.prio});
        if (it != index.end()) out[it->second].push_back(v);
      }
    }
    // A cycle by depth-first search (colors: 0 new, 1 on the stack, 2 done).
    std::vector<int> color(nodes.size(), 0);
    std::vector<std::size_t> stack, parent(nodes.size(), 0);
    for (std::size_t start = 0; start < nodes.size() && !found; ++start) {
      if (color[start]) continue;
      std::vector<std::pair<std::size_t, std::size_t>> dfs = {{start, 0}};
      color[start] = 1;
      while (!dfs.empty() && !found) {
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
            r.cycle.push_back(fmt::format("{} port {} priority {}", nodes[w].sw->name(), nodes[w].port, nodes[w].prio));
          found = std::move(r);
        }
      }
    }
  }
  return found;
}

}  // namespace fabriclab::fabric
