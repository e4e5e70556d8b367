// ports.csv's table: a row per port of every node, in node order, with every field of
// fabric::PortCounters (times in ns). The run's ports.csv and an observed window's
// ports_window.csv share it.
#pragma once

#include <string>
#include <vector>

#include "fabric/counters.h"
#include "fabric/network.h"

namespace fabriclab::scenario {

// node,port and every field, a row per entry of `per_port` (every node's ports, in node order).
std::string ports_table(const fabric::Network& net, const std::vector<fabric::PortCounters>& per_port);

}  // namespace fabriclab::scenario
