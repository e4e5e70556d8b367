// Adaptive routing and flowlets (switch.h: lb = "adaptive", "flowlet"): the rule that
// picks a port, worked by hand; one flow over a leaf whose two uplinks each carry a
// quarter of the host's rate: ECMP keeps it on one, adaptive routing spreads it over both
// (about twice as fast) and counts each move; a flowlet holds its port while the flow's
// packets come closer together than the timeout and moves only after a longer gap.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <string>

#include "core/error.h"
#include "error_message.h"
#include "fabric/network.h"
#include "fabric/switch.h"
#include "fabric/topology.h"

namespace fabriclab::fabric {
namespace {

TEST(AdaptiveRouting, TheShortestQueueWinsTheHashedPortKeepsTiesAndItsBias) {
  const std::array<std::int64_t, 4> q{5000, 3000, 3000, 8000};
  EXPECT_EQ(least_loaded(q.data(), 4, 0, 0), 1u);     // 1 and 2 tie: the first after the hashed port
  EXPECT_EQ(least_loaded(q.data(), 4, 2, 0), 2u);     // the hashed port keeps a tie
  EXPECT_EQ(least_loaded(q.data(), 4, 3, 0), 1u);     // 0 (5000), then 1 (3000); 2 only ties
  EXPECT_EQ(least_loaded(q.data(), 4, 0, 2000), 0u);  // 3000 is not below 5000 - 2000
  EXPECT_EQ(least_loaded(q.data(), 4, 0, 1999), 1u);
  EXPECT_EQ(least_loaded(q.data(), 1, 0, 0), 0u);
}

// h0 -> h1 over leaf0's two uplinks (ports 1 and 2) at 25 Gb/s, hosts at 100 Gb/s: 100
// packets of 4096 bytes, 4182 bytes on the wire but the first (4198, its RETH), arrive at
// the leaf 334.56 ns apart and take 1338.24 ns each on an uplink. On one uplink the last
// leaves after 100 x 1338.24 ns = 133.8 us; spread over two, after about half that.
struct OneFlowOverTwoUplinks {
  Network net;
  explicit OneFlowOverTwoUplinks(const SwitchConfig& sw, std::uint64_t packets = 100) : net(nic(), sw, 1) {
    TopologySpec t;
    t.kind = TopologyKind::leaf_spine;
    t.leaves = 2;
    t.spines = 2;
    t.hosts_per_leaf = 1;
    t.fabric_link.rate = Gbps(25);
    build_topology(net, t);
    net.add_flow({.src = 0, .dst = 1, .bytes = packets * 4096, .start = {}});
    EXPECT_TRUE(net.run(ms(10)).all_finished);
  }
  static NicConfig nic() {
    NicConfig n;
    n.reorder_window = 128;  // (packets over two paths arrive out of order)
    return n;
  }
  std::uint64_t sent(std::size_t port) { return net.switch_at(0).port(port).tx_packets(); }
  std::uint64_t rerouted(std::size_t port) { return net.switch_at(0).rerouted(port); }
  double finish_us() const { return static_cast<double>(net.flows()[0].finish.ps()) / 1e6; }
};

SwitchConfig with_lb(LoadBalance lb) {
  SwitchConfig s;
  s.load_balance = lb;
  return s;
}

TEST(AdaptiveRouting, OneFlowUsesBothUplinksWhereEcmpKeepsOne) {
  OneFlowOverTwoUplinks ecmp(with_lb(LoadBalance::ecmp));
  EXPECT_EQ(std::min(ecmp.sent(1), ecmp.sent(2)), 0u);
  EXPECT_EQ(std::max(ecmp.sent(1), ecmp.sent(2)), 100u);
  EXPECT_GT(ecmp.finish_us(), 133.8);
  OneFlowOverTwoUplinks ar(with_lb(LoadBalance::adaptive));
  EXPECT_EQ(ar.sent(1) + ar.sent(2), 100u);
  EXPECT_GE(std::min(ar.sent(1), ar.sent(2)), 45u);
  EXPECT_GT(ar.rerouted(1) + ar.rerouted(2), 0u);
  EXPECT_LT(ar.finish_us(), 0.6 * ecmp.finish_us());
}

// Five packets, by hand: packet k reaches the leaf (k - 1) x 334.56 ns after the first,
// which leaves by one uplink (its hashed one, H) at once and takes 1343.36 ns -- longer
// than the other four take to come; a frame on the wire does not count as queued.
//   1: H and the other (O) both empty: H (the hashed port keeps a tie).
//   2: both empty again (1 is on the wire): H, where it waits (4162 bytes).
//   3: H 4162, O 0: O -- moved (the flow's last packet left by H), onto O's wire.
//   4: H 4162, O 0 (3 on the wire): O, not moved; it waits.
//   5: H 4162, O 4162: a tie, H -- moved.
// H sends 1, 2 and 5, O 3 and 4; each counts one packet moved.
TEST(AdaptiveRouting, FivePacketsWorkedByHand) {
  OneFlowOverTwoUplinks ar(with_lb(LoadBalance::adaptive), 5);
  const std::size_t h = ar.sent(1) > ar.sent(2) ? 1 : 2, o = 3 - h;
  EXPECT_EQ(ar.sent(h), 3u);
  EXPECT_EQ(ar.sent(o), 2u);
  EXPECT_EQ(ar.rerouted(h), 1u);
  EXPECT_EQ(ar.rerouted(o), 1u);
}

TEST(Flowlets, AFlowletHoldsItsPortWithinTheTimeoutAndMovesAfterIt) {
  SwitchConfig sw = with_lb(LoadBalance::flowlet);
  sw.flowlet_timeout = us(1);  // longer than the 334.56 ns between packets: one flowlet
  OneFlowOverTwoUplinks held(sw);
  EXPECT_EQ(std::max(held.sent(1), held.sent(2)), 100u);
  EXPECT_EQ(held.rerouted(1) + held.rerouted(2), 0u);
  // Shorter than the gap: every packet starts a flowlet, on the least-loaded port, as
  // adaptive routing sends it -- port for port.
  sw.flowlet_timeout = Time::from_ps(300'000);
  OneFlowOverTwoUplinks each(sw);
  OneFlowOverTwoUplinks ar(with_lb(LoadBalance::adaptive));
  for (std::size_t p : {1, 2}) {
    EXPECT_EQ(each.sent(p), ar.sent(p)) << p;
    EXPECT_EQ(each.rerouted(p), ar.rerouted(p)) << p;
  }
  EXPECT_GT(each.rerouted(1) + each.rerouted(2), 0u);
  sw.flowlet_choice = FlowletChoice::random;  // LetFlow: a new flowlet's port at random
  OneFlowOverTwoUplinks random(sw);
  EXPECT_GT(std::min(random.sent(1), random.sent(2)), 20u);
}

TEST(AdaptiveRouting, TheFlowTableIsAPowerOfTwo) {
  SwitchConfig sw = with_lb(LoadBalance::adaptive);
  sw.flow_table = 3000;
  Network net({}, sw, 1);
  TopologySpec t;
  t.kind = TopologyKind::leaf_spine;
  t.leaves = 2;
  t.hosts_per_leaf = 1;
  EXPECT_EQ(testing::input_error_of([&] {
              build_topology(net, t);
              net.add_flow({.src = 0, .dst = 1, .bytes = 4096, .start = {}});
              net.run(ms(1));
            }),
            "switch.flowlet.table = 3000: expected a power of two");
}

}  // namespace
}  // namespace fabriclab::fabric
