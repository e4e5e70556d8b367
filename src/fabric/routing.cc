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
  const std::size_t n = nodes_.size();
  // Flows grouped by destination, to check each is reachable from its source.
  std::vector<std::vector<std::uint32_t>> sources_of(hosts_.size());
  for (const auto& f : flows_) sources_of[f.spec.dst].push_back(f.spec.src);

  std::vector<std::vector<std::uint32_t>> begin(switches_.size());
  std::vector<std::vector<std::uint16_t>> ports(switches_.size());
  std::vector<std::int32_t> dist(n);
  std::vector<std::uint32_t> frontier, next;
  for (std::uint32_t h = 0; h < hosts_.size(); ++h) {
    std::fill(dist.begin(), dist.end(), -1);
    dist[h] = 0;
    frontier.assign(1, h);
    // Breadth-first from host h; hosts are endpoints, never transit.
    while (!frontier.empty()) {
      next.clear();
      for (std::uint32_t u : frontier) {
        if (u != h && u < hosts_.size()) continue;
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
    for (std::uint32_t src : sources_of[h])
      if (dist[src] < 0) throw InputError("no path from " + hosts_[src]->name() + " to " + hosts_[h]->name());
    for (std::size_t s = 0; s < switches_.size(); ++s) {
      Switch& sw = *switches_[s];
      begin[s].push_back(static_cast<std::uint32_t>(ports[s].size()));
      auto fixed = static_routes_.find({static_cast<std::uint32_t>(s), h});
      if (fixed != static_routes_.end()) {
        ports[s].insert(ports[s].end(), fixed->second.begin(), fixed->second.end());
        continue;
      }
      const std::int32_t d = dist[sw.id()];
      if (d <= 0) continue;
      for (std::size_t i = 0; i < sw.port_count(); ++i)
        if (dist[sw.port(i).peer()->owner().id()] == d - 1) ports[s].push_back(static_cast<std::uint16_t>(i));
    }
  }
  for (std::size_t s = 0; s < switches_.size(); ++s) {
    begin[s].push_back(static_cast<std::uint32_t>(ports[s].size()));
    switches_[s]->set_routes(begin[s], ports[s]);
  }
}

}  // namespace fabriclab::fabric
