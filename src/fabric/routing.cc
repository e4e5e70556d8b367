// Network: forwarding tables -- shortest paths with every equal-cost next hop, or the
// static routes a scenario gives.
#include "fabric/network.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.h"

namespace fabriclab::fabric {

void Network::set_static_route(std::uint32_t sw, std::uint32_t dst, std::vector<std::uint16_t> ports) {
  if (prepared_) throw std::logic_error("Network::set_static_route after the run was prepared");
  if (sw >= switches_.size()) throw InputError("static route: no switch " + std::to_string(sw));
  if (dst >= hosts_.size()) throw InputError("static route: no host " + std::to_string(dst));
  if (ports.empty()) throw InputError("static route at " + switches_[sw]->name() + ": no port");
  for (auto p : ports)
    if (p >= switches_[sw]->port_count())
      throw InputError("static route at " + switches_[sw]->name() + " toward " + hosts_[dst]->name() + ": port " +
                       std::to_string(p) + " does not exist (ports 0.." +
                       std::to_string(switches_[sw]->port_count() - 1) + ")");
  for (auto p : ports) {
    const Node& next = switches_[sw]->port(p).peer()->owner();
    if (next.id() < hosts_.size() && next.id() != dst)
      throw InputError("static route at " + switches_[sw]->name() + " toward " + hosts_[dst]->name() + ": port " +
                       std::to_string(p) + " leads to host " + next.name());
  }
  static_routes_[{sw, dst}] = std::move(ports);
}

void Network::build_routes() {
  // Every host has one link, to its edge node. Away from its edge switch, a host is
  // reached by the shortest paths to that switch, as every other host behind it: one
  // breadth-first search per edge switch, and at each switch one group of equal-cost
  // ports per edge switch, shared by the hosts behind it (at the edge switch itself, the
  // port to the host; a static route, its own group). The paths and their port order
  // are those of a search from each host: a host is never transit, so its distance is
  // its edge switch's plus one.
  const std::size_t n = nodes_.size(), hosts = hosts_.size();
  constexpr std::uint32_t kNone = ~0u;
  std::vector<std::uint32_t> edge_of(hosts, kNone), edges;  // per host: its edge switch's index in `edges`
  std::vector<std::uint32_t> edge_index(n, kNone);
  for (std::uint32_t h = 0; h < hosts; ++h) {
    const std::uint32_t e = hosts_[h]->port(0).peer()->owner().id();
    if (e < hosts) continue;  // two hosts joined directly: no switch reaches them
    if (edge_index[e] == kNone) {
      edge_index[e] = static_cast<std::uint32_t>(edges.size());
      edges.push_back(e);
    }
    edge_of[h] = edge_index[e];
  }
  // Per switch: its groups, and each host's.
  struct Table {
    std::vector<std::uint32_t> group_of_host, begin{0};
    std::vector<std::uint16_t> ports;
    std::vector<std::uint32_t> group_of_edge;
    std::uint32_t add(const std::uint16_t* first, std::size_t count) {
      ports.insert(ports.end(), first, first + count);
      begin.push_back(static_cast<std::uint32_t>(ports.size()));
      return static_cast<std::uint32_t>(begin.size() - 2);
    }
  };
  std::vector<Table> tables(switches_.size());
  for (auto& t : tables) {
    t.add(nullptr, 0);  // group 0: unreachable
    t.group_of_edge.assign(edges.size(), 0);
  }
  std::vector<std::int32_t> dist(n);
  std::vector<std::uint32_t> frontier, next;
  std::vector<std::uint16_t> list;
  // Each flow's source must reach its destination's edge switch (or be the host its
  // destination is joined to).
  std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> flows_to_edge(edges.size());
  for (const auto& f : flows_) {
    const std::uint32_t src = f.spec.src, dst = f.spec.dst;
    if (edge_of[dst] != kNone) flows_to_edge[edge_of[dst]].emplace_back(src, dst);
    else if (hosts_[dst]->port(0).peer()->owner().id() != src)
      throw InputError("no path from " + hosts_[src]->name() + " to " + hosts_[dst]->name());
  }
  for (std::uint32_t k = 0; k < edges.size(); ++k) {
    const std::uint32_t e = edges[k];
    std::fill(dist.begin(), dist.end(), -1);
    dist[e] = 0;
    frontier.assign(1, e);
    while (!frontier.empty()) {
      next.clear();
      for (std::uint32_t u : frontier) {
        if (u < hosts) continue;  // hosts are endpoints, never transit
        Node& node = *nodes_[u];
        for (std::size_t i = 0; i < node.port_count(); ++i) {
          const std::uint32_t v = node.port(i).peer()->owner().id();
          if (dist[v] < 0) {
            dist[v] = dist[u] + 1;
            next.push_back(v);
          }
        }
      }
      frontier.swap(next);
    }
    for (const auto& [src, dst] : flows_to_edge[k])
      if (dist[src] < 0) throw InputError("no path from " + hosts_[src]->name() + " to " + hosts_[dst]->name());
    for (std::size_t s = 0; s < switches_.size(); ++s) {
      Switch& sw = *switches_[s];
      const std::int32_t d = dist[sw.id()];
      if (d <= 0) continue;  // unreachable, or the edge switch itself (per host, below)
      list.clear();
      for (std::size_t i = 0; i < sw.port_count(); ++i)
        if (dist[sw.port(i).peer()->owner().id()] == d - 1) list.push_back(static_cast<std::uint16_t>(i));
      tables[s].group_of_edge[k] = tables[s].add(list.data(), list.size());
    }
  }
  for (std::size_t s = 0; s < switches_.size(); ++s) {
    Table& t = tables[s];
    Switch& sw = *switches_[s];
    t.group_of_host.resize(hosts);
    for (std::uint32_t h = 0; h < hosts; ++h) {
      auto fixed = static_routes_.find({static_cast<std::uint32_t>(s), h});
      if (fixed != static_routes_.end()) {
        t.group_of_host[h] = t.add(fixed->second.data(), fixed->second.size());
      } else if (edge_of[h] == kNone) {
        t.group_of_host[h] = 0;
      } else if (edges[edge_of[h]] == sw.id()) {
        // Its own host: the port to it.
        list.clear();
        for (std::size_t i = 0; i < sw.port_count(); ++i)
          if (sw.port(i).peer()->owner().id() == h) list.push_back(static_cast<std::uint16_t>(i));
        t.group_of_host[h] = t.add(list.data(), list.size());
      } else {
        t.group_of_host[h] = t.group_of_edge[edge_of[h]];
      }
    }
    sw.set_routes(t.group_of_host, t.begin, t.ports);
    t = Table{};  // (free it as soon as the switch has it)
  }
}

}  // namespace fabriclab::fabric
