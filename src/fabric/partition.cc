// How a split run's nodes are put into parts (Network::set_partitioner): by levels away
// from the hosts, or by METIS.
#include "fabric/network.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <metis.h>

namespace fabriclab::fabric {

void Run::partition_by_levels() {
  // Hosts by index; switches level by level away from the hosts, each to the part most
  // of its nearer neighbours are in, those without a majority spread evenly in id order.
  const std::size_t n = net_.nodes_.size();
  constexpr std::uint32_t kNone = ~0u;
  part_of_.assign(n, kNone);
  std::vector<std::int32_t> level(n, -1);
  std::vector<std::uint32_t> frontier, next;
  for (std::uint32_t h = 0; h < net_.hosts_.size(); ++h) {
    part_of_[h] = static_cast<std::uint32_t>(std::uint64_t{h} * n_parts_ / net_.hosts_.size());
    level[h] = 0;
    frontier.push_back(h);
  }
  std::vector<std::uint32_t> votes(n_parts_), tied;
  for (std::int32_t l = 1; !frontier.empty(); ++l) {
    next.clear();
    for (std::uint32_t u : frontier)
      for (std::size_t i = 0; i < net_.nodes_[u]->port_count(); ++i) {
        const std::uint32_t v = net_.nodes_[u]->port(i).peer()->owner().id();
        if (level[v] < 0) {
          level[v] = l;
          next.push_back(v);
        }
      }
    std::sort(next.begin(), next.end());
    tied.clear();
    for (std::uint32_t v : next) {
      std::fill(votes.begin(), votes.end(), 0u);
      for (std::size_t i = 0; i < net_.nodes_[v]->port_count(); ++i) {
        const std::uint32_t w = net_.nodes_[v]->port(i).peer()->owner().id();
        if (level[w] >= 0 && level[w] < l) ++votes[part_of_[w]];
      }
      const auto best = std::max_element(votes.begin(), votes.end());
      if (std::count(votes.begin(), votes.end(), *best) == 1)
        part_of_[v] = static_cast<std::uint32_t>(best - votes.begin());
      else tied.push_back(v);
    }
    for (std::size_t i = 0; i < tied.size(); ++i)
      part_of_[tied[i]] = static_cast<std::uint32_t>(i * n_parts_ / tied.size());
    frontier.swap(next);
  }
  for (auto& p : part_of_)
    if (p == kNone) p = 0;  // not connected to any host
}

void Run::partition_by_metis() {
  // The graph as METIS takes it: adjacency lists, parallel links as one edge of their
  // number, each node weighted by its ports (its share of the run's events, roughly).
  const auto n = static_cast<idx_t>(net_.nodes_.size());
  std::vector<idx_t> xadj{0}, adjncy, adjwgt, vwgt;
  std::map<std::uint32_t, idx_t> links;
  for (const Node* u : net_.nodes_) {
    links.clear();
    for (std::size_t i = 0; i < u->port_count(); ++i) ++links[u->port(i).peer()->owner().id()];
    for (const auto& [v, count] : links) {
      adjncy.push_back(static_cast<idx_t>(v));
      adjwgt.push_back(count);
    }
    xadj.push_back(static_cast<idx_t>(adjncy.size()));
    vwgt.push_back(static_cast<idx_t>(std::max<std::size_t>(u->port_count(), 1)));
  }
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = 1;  // the same parts every time (the result does not depend on them)
  idx_t ncon = 1, nparts = static_cast<idx_t>(n_parts_), cut = 0, nv = n;
  std::vector<idx_t> part(net_.nodes_.size());
  const int rc = METIS_PartGraphKway(&nv, &ncon, xadj.data(), adjncy.data(), vwgt.data(), nullptr, adjwgt.data(),
                                     &nparts, nullptr, nullptr, options, &cut, part.data());
  if (rc != METIS_OK)
    throw std::runtime_error(fmt::format("METIS could not split the network ({} nodes) into {} parts (error {})",
                                         net_.nodes_.size(), n_parts_, rc));
  part_of_.assign(part.begin(), part.end());
}

}  // namespace fabriclab::fabric
