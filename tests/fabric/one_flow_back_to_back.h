// One flow of `packets` x 4 KiB from h0 to h1, two hosts on one 100 Gb/s link of 1 us,
// packets lost or held back by rules on h0's link (reorder_box.h: "drop 0/3" loses the
// first transmission of PSN 3; "hold 0/10 2" lets two later packets pass it), run for
// 10 ms: the set-up the IRN and UET tests work by hand.
#pragma once

#include <cstdint>
#include <string>

#include "fabric/network.h"
#include "fabric/reorder_box.h"
#include "fabric/topology.h"

namespace fabriclab::fabric {

struct OneFlowBackToBack {
  Network net;
  RunTotals totals;
  OneFlowBackToBack(std::uint32_t packets, const std::string& rules, const NicConfig& nic) : net(nic, {}, 1) {
    TopologySpec t;
    t.kind = TopologyKind::back_to_back;
    t.hosts = 2;
    build_topology(net, t);
    net.add_flow({.src = 0, .dst = 1, .bytes = std::uint64_t{packets} * 4096, .start = {}});
    if (!rules.empty()) {
      ImpairmentConfig c;
      c.rules = parse_impairment_rules(rules);
      net.add_impairment(net.host(0).port(0), c);
    }
    totals = net.run(ms(10));
  }
  std::uint64_t retransmitted() const { return net.flows()[0].retransmitted; }
  HostCounters rx() const { return net.host_counters(1); }
  HostCounters tx() const { return net.host_counters(0); }
  double fct_us() const { return static_cast<double>((net.flows()[0].finish - net.flows()[0].started).ps()) / 1e6; }
};

}  // namespace fabriclab::fabric
