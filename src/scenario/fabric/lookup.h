// Nodes and ports named in parameters ("sw1", "h3", "s1:8"), for building and observing a
// fabric run; errors name the parameter and where it was set.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "fabric/network.h"
#include "scenario/parameters.h"

namespace fabriclab::scenario {

// The node called `name`, set in parameter `key`.
fabric::Node& find_node(const Config& cfg, fabric::Network& net, const std::string& key, const std::string& name);
// "NODE:PORT" in parameter `key`.
fabric::Port& find_port(const Config& cfg, fabric::Network& net, const std::string& key, const std::string& item);
// The ports a list parameter names, comma-separated: NODE:PORT, NODE:A-B (a range),
// NODE:* or NODE (all its ports); NODE may be a shell pattern ("leaf*:4-7": every leaf's
// ports 4 to 7). In node order, each once. Port numbers: docs/fabric.md, "Nodes and ports".
std::vector<std::pair<fabric::Node*, std::size_t>> port_list(const Config& cfg, fabric::Network& net,
                                                             const std::string& key);

}  // namespace fabriclab::scenario
