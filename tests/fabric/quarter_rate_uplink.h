// One flow of three 4096-byte packets from h0 to h1 through leaf0's one uplink at 25 Gb/s,
// hosts at 100 Gb/s: the set-up the trimming and IRN tests work by hand
// (tests/fabric/trimming_test.cc gives the times).
#pragma once

#include "fabric/network.h"
#include "fabric/topology.h"

namespace fabriclab::fabric {

inline void three_packets_over_a_quarter_rate_uplink(Network& net) {
  TopologySpec t;
  t.kind = TopologyKind::leaf_spine;
  t.leaves = 2;
  t.spines = 1;
  t.hosts_per_leaf = 1;
  t.fabric_link.rate = Gbps(25);
  build_topology(net, t);
  net.add_flow({.src = 0, .dst = 1, .bytes = 3 * 4096, .start = {}});
}

}  // namespace fabriclab::fabric
