// A topology two test files share: the PFC deadlock of pfc_test, found again by a
// partitioned run in network_test.
#pragma once

#include <memory>

#include "fabric/network.h"
#include "fabric/topology.h"

namespace fabriclab::fabric {

// Five switches in a ring, two hosts each; every host sends to the host two switches
// clockwise (the only shortest path), so each ring link carries two flows' first hop and
// two flows' second hop, and every transit buffer waits on the next switch's.
inline std::unique_ptr<Network> ring_of_five(SwitchConfig sw) {
  sw.buffer = MiB(1);
  sw.threshold_mode = ThresholdMode::static_th;
  sw.static_th = KiB(32);
  auto net = std::make_unique<Network>(NicConfig{}, sw, 1);
  TopologySpec t;
  t.kind = TopologyKind::ring;
  t.ring_switches = 5;
  t.hosts_per_switch = 2;
  build_topology(*net, t);
  for (std::uint32_t s = 0; s < 5; ++s)
    for (std::uint32_t k = 0; k < 2; ++k)
      net->add_flow({.src = s * 2 + k, .dst = ((s + 2) % 5) * 2 + k, .bytes = 20'000'000, .start = {}, .priority = 3});
  return net;
}

}  // namespace fabriclab::fabric
