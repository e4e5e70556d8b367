#include "scenario/fabric/lookup.h"

#include <fmt/format.h>
#include <fnmatch.h>

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

namespace {

// The nodes whose name matches `pattern` (fnmatch: '*', '?', [..]); a name without a
// wildcard is one node, and an unknown one an error that lists the names.
std::vector<fabric::Node*> nodes_matching(const Config& cfg, Network& net, const std::string& key,
                                          const std::string& pattern) {
  if (pattern.find_first_of("*?[") == std::string::npos) return {&find_node(cfg, net, key, pattern)};
  std::vector<fabric::Node*> out;
  for (fabric::Node* n : net.nodes())
    if (fnmatch(pattern.c_str(), n->name().c_str(), 0) == 0) out.push_back(n);
  if (out.empty())
    throw InputError(fmt::format("{}: {}: '{}' matches no node (hosts are h0..h{}{})", cfg.origin(key), key, pattern,
                                 net.host_count() - 1,
                                 net.switch_count() ? ", switches " + net.switch_at(0).name() + ".." : ""));
  return out;
}

// The ports of `node` that `spec` names: "*" all, "N" one, "A-B" a range.
std::vector<std::size_t> ports_matching(const Config& cfg, const std::string& key, const std::string& item,
                                        fabric::Node& node, const std::string& spec) {
  const std::size_t n = node.port_count();
  std::vector<std::size_t> out;
  if (spec == "*") {
    for (std::size_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  const auto dash = spec.find('-');
  const auto lo = parse_integer(spec.substr(0, dash));
  const auto hi = dash == std::string::npos ? lo : parse_integer(spec.substr(dash + 1));
  if (!lo || !hi || *lo < 0 || *hi < *lo || static_cast<std::size_t>(*hi) >= n)
    throw InputError(fmt::format("{}: {}: '{}': expected NODE:PORT, NODE:A-B or NODE:*; {} has ports 0..{}",
                                 cfg.origin(key), key, item, node.name(), n - 1));
  for (auto i = *lo; i <= *hi; ++i) out.push_back(static_cast<std::size_t>(i));
  return out;
}

}  // namespace

std::vector<std::pair<fabric::Node*, std::size_t>> port_list(const Config& cfg, Network& net, const std::string& key) {
  const std::string& list = cfg.text(key);
  std::vector<std::pair<fabric::Node*, std::size_t>> chosen;
  if (list.empty()) return chosen;
  for (const std::string& item : split_list(list)) {
    const auto colon = item.find(':');
    const std::string spec = colon == std::string::npos ? "*" : item.substr(colon + 1);
    for (fabric::Node* node : nodes_matching(cfg, net, key, item.substr(0, colon)))
      for (std::size_t i : ports_matching(cfg, key, item, *node, spec)) chosen.emplace_back(node, i);
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
