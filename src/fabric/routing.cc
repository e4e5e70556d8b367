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
  for (std::size_t i = 0; i < ports.size(); ++i)
    if (std::find(ports.begin(), ports.begin() + static_cast<std::ptrdiff_t>(i), ports[i]) !=
        ports.begin() + static_cast<std::ptrdiff_t>(i))
      throw InputError("static route at " + switches_[sw]->name() + " toward " + hosts_[dst]->name() + ": port " +
                       std::to_string(ports[i]) + " listed twice");
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
  // ports per edge switch, shared by the hosts behind it -- the switch's table is by edge
  // switch (at the edge switch itself, the port to each host, and a static route, its own
  // group: routed on their own). The paths and their port order are those of a search
  // from each host: a host is never transit, so its distance is its edge switch's plus
  // one. Time: edge switches x links between switches; memory: switches x edge switches.
  const std::size_t n = nodes_.size(), hosts = hosts_.size();
  constexpr std::uint32_t kNone = ~0u;
  std::vector<std::uint32_t> edges;  // edge switches by node id
  std::vector<std::uint32_t> edge_index(n, kNone);
  edge_of_host_.assign(hosts, kNone);
  for (std::uint32_t h = 0; h < hosts; ++h) {
    const std::uint32_t e = hosts_[h]->port(0).peer()->owner().id();
    if (e < hosts) continue;  // two hosts joined directly: no switch reaches them
    if (edge_index[e] == kNone) {
      edge_index[e] = static_cast<std::uint32_t>(edges.size());
      edges.push_back(e);
    }
    edge_of_host_[h] = edge_index[e];
  }
  const auto none = static_cast<std::uint32_t>(edges.size());  // the hosts no switch reaches
  for (auto& e : edge_of_host_)
    if (e == kNone) e = none;
  // Per switch: its groups, its group per edge switch, and the hosts routed on their own.
  struct Table {
    std::vector<std::uint32_t> begin{0};
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
    t.add(nullptr, 0);                            // group 0: unreachable
    t.group_of_edge.assign(edges.size() + 1, 0);  // (the last: hosts no switch reaches)
  }
  // The switches' links to each other, as compact lists (port, peer switch) per switch:
  // the searches read nothing else (a host is never transit, nor a next hop but at its
  // own edge switch: its only neighbour is that switch, one step further away).
  const std::size_t n_sw = switches_.size();
  std::vector<std::uint32_t> link_begin{0};
  std::vector<std::pair<std::uint16_t, std::uint32_t>> links;
  for (std::size_t s = 0; s < n_sw; ++s) {
    const Switch& sw = *switches_[s];
    for (std::size_t i = 0; i < sw.port_count(); ++i)
      if (const std::uint32_t v = sw.port(i).peer()->owner().id(); v >= hosts)
        links.emplace_back(static_cast<std::uint16_t>(i), v - static_cast<std::uint32_t>(hosts));
    link_begin.push_back(static_cast<std::uint32_t>(links.size()));
  }
  std::vector<std::int32_t> dist(n_sw);
  std::vector<std::uint32_t> frontier, next;
  std::vector<std::uint16_t> list;
  // Each flow's and connection's source must reach its destination's edge switch (or be
  // the host its destination is joined to).
  std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> flows_to_edge(edges.size());
  const auto must_reach = [&](std::uint32_t src, std::uint32_t dst) {
    if (edge_of_host_[dst] != none) flows_to_edge[edge_of_host_[dst]].emplace_back(src, dst);
    else if (hosts_[dst]->port(0).peer()->owner().id() != src)
      throw InputError("no path from " + hosts_[src]->name() + " to " + hosts_[dst]->name());
  };
  for (const auto& f : flows_) must_reach(f.spec.src, f.spec.dst);
  for (const Conn& c : conns_) must_reach(c.src, c.dst);
  for (std::uint32_t k = 0; k < edges.size(); ++k) {
    const std::uint32_t e = edges[k] - static_cast<std::uint32_t>(hosts);
    std::fill(dist.begin(), dist.end(), -1);
    dist[e] = 0;
    frontier.assign(1, e);
    while (!frontier.empty()) {
      next.clear();
      for (std::uint32_t u : frontier)
        for (std::uint32_t l = link_begin[u]; l < link_begin[u + 1]; ++l)
          if (const std::uint32_t v = links[l].second; dist[v] < 0) {
            dist[v] = dist[u] + 1;
            next.push_back(v);
          }
      frontier.swap(next);
    }
    for (const auto& [src, dst] : flows_to_edge[k])
      if (edge_of_host_[src] == none || dist[edges[edge_of_host_[src]] - hosts] < 0)
        throw InputError("no path from " + hosts_[src]->name() + " to " + hosts_[dst]->name());
    for (std::size_t s = 0; s < n_sw; ++s) {
      const std::int32_t d = dist[s];
      if (d <= 0) continue;  // unreachable, or the edge switch itself (its own hosts, below)
      list.clear();
      for (std::uint32_t l = link_begin[s]; l < link_begin[s + 1]; ++l)
        if (dist[links[l].second] == d - 1) list.push_back(links[l].first);
      tables[s].group_of_edge[k] = tables[s].add(list.data(), list.size());
    }
  }
  std::vector<std::pair<std::uint32_t, std::uint32_t>> own, fixed;  // (host, group)
  for (std::size_t s = 0; s < switches_.size(); ++s) {
    Table& t = tables[s];
    Switch& sw = *switches_[s];
    own.clear();
    for (std::size_t i = 0; i < sw.port_count(); ++i)  // its own hosts: the port to each
      if (const std::uint32_t h = sw.port(i).peer()->owner().id(); h < hosts) {
        const auto port = static_cast<std::uint16_t>(i);
        own.emplace_back(h, t.add(&port, 1));
      }
    std::sort(own.begin(), own.end());
    // Static routes at this switch, by host (each replaces the host's own route, if any).
    fixed.clear();
    const auto sw_index = static_cast<std::uint32_t>(s);
    for (auto it = static_routes_.lower_bound({sw_index, 0}); it != static_routes_.end() && it->first.first == sw_index;
         ++it)
      fixed.emplace_back(it->first.second, t.add(it->second.data(), it->second.size()));
    sw.set_routes(edge_of_host_.data(), hosts, t.group_of_edge, own, fixed, t.begin, t.ports);
    t = Table{};  // (free it as soon as the switch has it)
  }
}

}  // namespace fabriclab::fabric
