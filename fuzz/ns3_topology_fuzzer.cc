// Fuzz target: an ns-3 topology.txt (topology.kind = "ns3") read by
// fabric::read_ns3_topology, the reader `fabriclab run` uses, and built into a network;
// what it accepts must build: every link between two nodes it declares, every host with
// one link. The reader takes a path, so each input is written to an in-memory file
// (memfd) read back through /proc/self/fd.
#include <cstddef>
#include <cstdint>

#include "fabric/network.h"
#include "fabric/topology.h"
#include "fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fabriclab::fuzz::MemFile file("topology.txt");
  file.write(data, size);
  fabriclab::fuzz::expect_input_errors([&] {
    const auto t = fabriclab::fabric::read_ns3_topology(file.path);
    if (t.hosts() < 2 || t.nodes > 4096 || t.links.size() > 8192) return;  // a big one builds slowly, not wrongly
    for (const auto& l : t.links)
      if (l.a >= t.nodes || l.b >= t.nodes || l.a == l.b) fabriclab::fuzz::finding("a link to a node not declared");
    fabriclab::fabric::Network net({}, {}, 1);
    fabriclab::fabric::TopologySpec spec;
    spec.kind = fabriclab::fabric::TopologyKind::ns3;
    spec.file = file.path;
    fabriclab::fabric::build_topology(net, spec);
    for (std::uint32_t h = 0; h < net.host_count(); ++h)
      if (net.host(h).port_count() != 1) fabriclab::fuzz::finding("a host built without exactly one port");
  });
  return 0;
}
