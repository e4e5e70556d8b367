#include "scenario/fabric/lookup.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace fabriclab::scenario {

using fabric::Network;

fabric::Node& find_node(const Config& cfg, Network& net, const std::string& key, const std::string& name) {
  for (fabric::Node* n : net.nodes())
    if (n->name() == name) return *n;
  throw InputError(fmt::format("{}: {}: no node '{}' (hosts are h0..h{}{})", cfg.origin(key), key, name,
                               net.host_count() - 1,
                               net.switch_count() ? ", switches " + net.switch_at(0).name() + ".." : ""));
}

// "NODE:PORT" in parameter `key`.
fabric::Port& find_port(const Config& cfg, Network& net, const std::string& key, const std::string& item) {
  const auto colon = item.find(':');
  fabric::Node& node = find_node(cfg, net, key, item.substr(0, colon));
  const auto port = colon == std::string::npos ? std::nullopt : parse_integer(item.substr(colon + 1));
  if (!port || *port < 0 || static_cast<std::size_t>(*port) >= node.port_count())
    throw InputError(fmt::format("{}: {}: '{}': expected NODE:PORT, {} has ports 0..{}", cfg.origin(key), key, item,
                                 node.name(), node.port_count() - 1));
  return node.port(static_cast<std::size_t>(*port));
}

std::vector<std::pair<fabric::Node*, std::size_t>> port_list(const Config& cfg, Network& net, const std::string& key) {
  const std::string& list = cfg.text(key);
  std::vector<std::pair<fabric::Node*, std::size_t>> chosen;
  if (list.empty()) return chosen;
  for (const std::string& item : split_list(list)) {
    if (item.find(':') == std::string::npos) {
      fabric::Node& node = find_node(cfg, net, key, item);
      for (std::size_t i = 0; i < node.port_count(); ++i) chosen.emplace_back(&node, i);
    } else {
      fabric::Port& p = find_port(cfg, net, key, item);
      chosen.emplace_back(&p.owner(), p.index());
    }
  }
  // In node order (hosts, then switches), each port once: outputs list them the same way every run.
  const auto order = [](const auto& a, const auto& b) {
    return std::pair(a.first->id(), a.second) < std::pair(b.first->id(), b.second);
  };
  std::sort(chosen.begin(), chosen.end(), order);
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  return chosen;
}

}  // namespace fabriclab::scenario
