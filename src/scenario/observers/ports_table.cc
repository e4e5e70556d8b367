#include "scenario/observers/ports_table.h"

#include <fmt/format.h>

#include "scenario/report/files.h"

namespace fabriclab::scenario {

std::string ports_table(const fabric::Network& net, const std::vector<fabric::PortCounters>& per_port) {
  std::string ports = "node,port";
  for (const auto& f : fabric::port_counter_fields()) ports += fmt::format(",{}", f.name);
  ports += "\n";
  std::size_t k = 0;
  for (const fabric::Node* n : net.nodes()) {
    for (std::size_t i = 0; i < n->port_count(); ++i, ++k) {
      const fabric::PortCounters& c = per_port.at(k);
      ports += fmt::format("{},{}", n->name(), i);
      for (const auto& f : fabric::port_counter_fields())
        ports += f.time ? fmt::format(",{}", ns_text(Time::from_ps(f.value(c)))) : fmt::format(",{}", f.value(c));
      ports += "\n";
    }
  }
  return ports;
}

}  // namespace fabriclab::scenario
