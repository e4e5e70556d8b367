// The fabric simulator's scale benchmark (issue: packet-level RoCEv2 simulator):
// permutation traffic of 100 MB flows at 100G with PFC and ECN on, 1 ms simulated, on
//   fat_tree_128     3-tier fat-tree, k = 8 (128 hosts, 80 switches)
//   leaf_spine_1024  32 leaves x 32 hosts, 16 spines, 2 uplinks per leaf-spine pair (1:1)
// Prints wall time, events, packet-hops (one packet crossing one link) per second, the
// most packets alive at once, bytes per packet in flight and the process's peak RSS.
// Run one case per process so that the peak RSS is that case's:
//   fabric_scale fat_tree_128 [STOP [PARTITIONS [THREADS]]]
// STOP defaults to 1ms; PARTITIONS (default 1) > 1 is a partitioned run (sim.partitions)
// on THREADS threads (default one per partition).
#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "fabric/packet.h"
#include "scenario/fabric_scenario.h"

using namespace fabriclab;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fabric_scale fat_tree_128|leaf_spine_1024 [STOP [PARTITIONS [THREADS]]]\n");
    return 2;
  }
  const std::string which = argv[1];
  const std::string stop = argc > 2 ? argv[2] : "1ms";
  std::vector<std::string> set = {"traffic.pattern=permutation", "traffic.bytes=100MB", "sim.stop_time=" + stop,
                                  "switch.pfc.enabled=true", "switch.wred.ecn=ecn_all"};
  if (argc > 3) set.push_back(std::string("sim.partitions=") + argv[3]);
  if (argc > 4) set.push_back(std::string("sim.threads=") + argv[4]);
  if (which == "fat_tree_128") {
    set.insert(set.end(), {"topology.kind=fat_tree", "topology.k=8"});
  } else if (which == "leaf_spine_1024") {
    set.insert(set.end(), {"topology.kind=leaf_spine", "topology.leaves=32", "topology.hosts_per_leaf=32",
                           "topology.spines=16", "topology.uplinks=2"});
  } else {
    std::fprintf(stderr, "unknown case '%s'\n", which.c_str());
    return 2;
  }
  const auto cfg = scenario::resolve_text(scenario::fabric_parameters(), "", "bench", set);
  const auto o = scenario::run_fabric(cfg, {});
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double hops = static_cast<double>(o.totals.packet_hops);
  fmt::print("{:<16} {}sim {} wall {:.2f} s  events {}  packet-hops {}  {:.2f} M hops/s  peak packets {}  "
             "{} B/packet  peak RSS {:.0f} MiB\n",
             which, argc > 3 ? fmt::format("partitions {} threads {}  ", argv[3], argc > 4 ? argv[4] : argv[3]) : "",
             to_string(o.totals.end), o.wall_seconds, o.totals.events, o.totals.packet_hops,
             hops / o.wall_seconds / 1e6, o.totals.peak_packets, sizeof(fabric::Packet) + sizeof(void*),
             static_cast<double>(ru.ru_maxrss) / 1024.0);
  return 0;
}
