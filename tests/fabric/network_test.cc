// Tiny topologies with hand-computed picosecond times, and the transport's recovery.
//
// At 100 Gb/s a byte takes 80 ps. A 4096-byte RDMA WRITE ONLY frame is 4096 + 82 header
// bytes (Ethernet 14, 802.1Q 4, IPv4 20, UDP 8, BTH 12, RETH 16, ICRC 4, FCS 4), plus 20
// of preamble and gap on the wire: 4198 x 80 = 335840 ps. A 4096-byte MIDDLE/LAST frame
// has no RETH: 4182 x 80 = 334560 ps. An ACK is 70 (+20) bytes: 7200 ps.
#include <gtest/gtest.h>

#include <set>
#include <thread>
#include <tuple>

#include "core/error.h"
#include "error_message.h"
#include "fabric/network.h"
#include "fabric/reorder_box.h"
#include "fabric/switch.h"
#include "fabric/topology.h"
#include "loopback.h"
#include "ring_of_five.h"

namespace fabriclab::fabric {
namespace {

constexpr std::int64_t kOnly = 335840, kFirst = 335840, kMiddle = 334560, kAck = 7200, kProp = 1'000'000;

TopologySpec spec(TopologyKind k) {
  TopologySpec t;
  t.kind = k;
  t.hosts = 2;
  return t;
}

// Two hosts on one link carrying one flow of `bytes` from h0 to h1, whose packet `psn`
// (if any) is lost on h0's link the first time it is sent.
struct OneFlow {
  explicit OneFlow(std::uint64_t bytes, NicConfig nic = {}, std::int64_t lost_psn = -1, const WireFormat& wire = {})
      : net(nic, {}, 1) {
    net.set_wire_format(wire);
    build_topology(net, spec(TopologyKind::back_to_back));
    net.add_flow({.src = 0, .dst = 1, .bytes = bytes, .start = {}});
    if (lost_psn >= 0) {
      ImpairmentConfig c;
      c.rules = parse_impairment_rules("drop 0/" + std::to_string(lost_psn));
      net.add_impairment(net.host(0).port(0), c);
    }
  }
  Network net;
};

// docs/fabric.md, "Nodes and ports": every port's peer is the one the table names.
// topology.link_rates: leaf0's one uplink (port 1: one host per leaf) at 50 Gb/s, both
// ways; the other links keep 100. One flow of 100 packets from h0 to h1 crosses it: the
// first frame (4198 wire bytes) reaches leaf0 after 335.84 ns + 1 us, and from then the
// slow uplink is busy: 671.68 ns for it, 669.12 ns for each of the other 99 (4182 bytes
// at 50 Gb/s); then 1 us to spine0, 334.56 ns + 1 us on to leaf1, 334.56 ns + 1 us to h1.
TEST(Topology, ALinkRateChangesThatLinkAlone) {
  NicConfig n;
  Network net(n, SwitchConfig{}, 1);
  TopologySpec t = spec(TopologyKind::leaf_spine);
  t.leaves = 2, t.spines = 1, t.hosts_per_leaf = 1;
  t.link_rates = parse_link_rates(" leaf0:1=50Gbps ");
  build_topology(net, t);
  Switch& leaf0 = net.switch_at(0);
  EXPECT_EQ(leaf0.port(1).rate(), Gbps(50));
  EXPECT_EQ(leaf0.port(1).peer()->rate(), Gbps(50));
  EXPECT_EQ(leaf0.port(0).rate(), Gbps(100));
  EXPECT_EQ(net.switch_at(1).port(1).rate(), Gbps(100));
  net.add_flow({.src = 0, .dst = 1, .bytes = 100 * 4096, .start = {}});
  EXPECT_TRUE(net.run(ms(1)).all_finished);
  const double finish_ns = static_cast<double>(net.flows()[0].finish.ps()) / 1000;
  EXPECT_NEAR(finish_ns, 335.84 + 1000 + 671.68 + 99 * 669.12 + 1000 + 334.56 + 1000 + 334.56 + 1000, 1e-3);
  EXPECT_EQ(link_rates_text(parse_link_rates("leaf0:1=50Gbps, spine0:0=25Gbps")), "leaf0:1=50Gbps,spine0:0=25Gbps");
}

TEST(Topology, LinkRatesThatNameNothingAreErrors) {
  EXPECT_EQ(testing::input_error_of([] { parse_link_rates("leaf0=50Gbps"); }),
            "topology.link_rates: 'leaf0=50Gbps': not NODE:PORT=RATE (expected NODE:PORT=RATE, e.g. "
            "leaf0:4=50Gbps)");
  EXPECT_EQ(testing::input_error_of([] { parse_link_rates("leaf0:x=50Gbps"); }),
            "topology.link_rates: 'leaf0:x=50Gbps': the port must be a number (expected NODE:PORT=RATE, e.g. "
            "leaf0:4=50Gbps)");
  for (const auto& [list, message] : std::vector<std::pair<std::string, std::string>>{
           {"leaf9:1=50Gbps", "topology.link_rates: no node 'leaf9' in this topology"},
           {"leaf0:7=50Gbps", "topology.link_rates: leaf0 has no port 7 (it has 2)"},
           {"leaf0:1=50Gbps,spine0:0=25Gbps",
            "topology.link_rates: the link at spine0:0 is given twice (an item per link, either end)"}}) {
    Network net(NicConfig{}, SwitchConfig{}, 1);
    TopologySpec t = spec(TopologyKind::leaf_spine);
    t.leaves = 2, t.spines = 1, t.hosts_per_leaf = 1;
    t.link_rates = parse_link_rates(list);
    EXPECT_EQ(testing::input_error_of([&] { build_topology(net, t); }), message) << list;
  }
}

TEST(Topology, PortsAreNumberedAsTheDocsSay) {
  const auto peer = [](Network& net, const std::string& node, std::size_t port) {
    for (Node* n : net.nodes())
      if (n->name() == node) {
        const Port* p = n->port(port).peer();
        return p->owner().name() + ":" + std::to_string(p->index());
      }
    return std::string("none");
  };
  {
    Network net(NicConfig{}, SwitchConfig{}, 1);
    TopologySpec t = spec(TopologyKind::leaf_spine);
    t.leaves = 3, t.spines = 2, t.hosts_per_leaf = 4, t.uplinks = 2, t.hosts = 12;
    build_topology(net, t);
    EXPECT_EQ(peer(net, "leaf1", 2), "h6:0");                  // h = L x hosts_per_leaf + port
    EXPECT_EQ(peer(net, "leaf1", 4 + 1 * 2 + 1), "spine1:3");  // hosts_per_leaf + S x uplinks + U ...
    EXPECT_EQ(peer(net, "spine1", 1 * 2 + 1), "leaf1:7");      // ... and back: L x uplinks + U
    EXPECT_EQ(peer(net, "spine0", 2 * 2 + 0), "leaf2:4");
  }
  {
    Network net(NicConfig{}, SwitchConfig{}, 1);
    TopologySpec t = spec(TopologyKind::ring);
    t.ring_switches = 4, t.hosts_per_switch = 2, t.hosts = 8;
    build_topology(net, t);
    EXPECT_EQ(peer(net, "sw2", 1), "h5:0");
    EXPECT_EQ(peer(net, "sw2", 2), "sw1:3");  // from sw(S-1), made first, ...
    EXPECT_EQ(peer(net, "sw2", 3), "sw3:2");  // ... then to sw(S+1)
    EXPECT_EQ(peer(net, "sw0", 2), "sw1:2");  // sw0: to sw1 ...
    EXPECT_EQ(peer(net, "sw0", 3), "sw3:3");  // ... then from the last
  }
  {
    Network net(NicConfig{}, SwitchConfig{}, 1);
    TopologySpec t = spec(TopologyKind::fat_tree);
    t.k = 4, t.hosts = 16;
    build_topology(net, t);
    EXPECT_EQ(peer(net, "edge1_0", 1), "h5:0");          // pod 1, edge 0: hosts 4, 5
    EXPECT_EQ(peer(net, "edge1_0", 2 + 1), "agg1_1:0");  // k/2 + A; the aggregation's port E
    EXPECT_EQ(peer(net, "agg1_1", 2 + 0), "core2:1");    // core A x k/2 + i = 2; its port P = 1
  }
  {
    Network net(NicConfig{}, SwitchConfig{}, 1);
    TopologySpec t = spec(TopologyKind::two_switches);
    t.s1_hosts = 2, t.s2_hosts = 3, t.inter_switch_links = 2, t.hosts = 5;
    build_topology(net, t);
    EXPECT_EQ(peer(net, "s2", 1), "h3:0");  // h = s1_hosts + port
    EXPECT_EQ(peer(net, "s1", 3), "s2:4");  // the second inter-switch link
  }
}

// Port numbers are 16-bit: a switch of more than 65 534 ports is refused before anything
// is built, naming the keys that make its count (which the hostile-input campaign found
// reported as "sw0: too many ports").
TEST(Topology, ASwitchOfTooManyPortsNamesTheKeysThatMakeIt) {
  const auto error_of = [](const TopologySpec& t) {
    Network net(NicConfig{}, SwitchConfig{}, 1);
    return fabriclab::testing::input_error_of([&] { build_topology(net, t); });
  };
  TopologySpec one = spec(TopologyKind::single_switch);
  one.hosts = 65536;
  EXPECT_EQ(error_of(one), "topology: sw0 would have 65536 ports (topology.hosts 65536); a switch has at most 65534 "
                           "(port numbers are 16-bit)");
  one.hosts = 65535;  // one past the limit
  EXPECT_EQ(error_of(one), "topology: sw0 would have 65535 ports (topology.hosts 65535); a switch has at most 65534 "
                           "(port numbers are 16-bit)");
  TopologySpec ls = spec(TopologyKind::leaf_spine);
  ls.leaves = 2, ls.hosts_per_leaf = 1, ls.spines = 1024, ls.uplinks = 64;  // 1 + 65536 on each leaf
  EXPECT_EQ(error_of(ls), "topology: each leaf would have 65537 ports (topology.hosts_per_leaf 1 + topology.spines "
                          "1024 x topology.uplinks 64); a switch has at most 65534 (port numbers are 16-bit)");
  ls.spines = 1, ls.uplinks = 40000, ls.leaves = 2;  // leaves 40 001 ports, spines 80 000
  EXPECT_EQ(error_of(ls), "topology: each spine would have 80000 ports (topology.leaves 2 x topology.uplinks "
                          "40000); a switch has at most 65534 (port numbers are 16-bit)");
  TopologySpec ring = spec(TopologyKind::ring);
  ring.ring_switches = 3, ring.hosts_per_switch = 65533;
  EXPECT_EQ(error_of(ring), "topology: each switch would have 65535 ports (topology.hosts_per_switch 65533 + 2 ring "
                            "links); a switch has at most 65534 (port numbers are 16-bit)");
}

TEST(Network, OnePacketOverOneLinkIsSerializationPlusPropagation) {
  OneFlow f(4096);
  Network& net = f.net;
  const RunTotals t = net.run(ms(1));
  ASSERT_TRUE(t.all_finished);
  EXPECT_EQ(net.flows()[0].finish.ps(), kOnly + kProp);
  EXPECT_EQ(net.flows()[0].delivered, 4096u);
}

// A run to time 0 runs the events at 0 (the first send) and stops there: a window of
// one instant, not one that ends before it starts (which went back to -1 ps for ever).
TEST(Network, ARunToTimeZeroRunsTheEventsAtZeroOnly) {
  OneFlow f(4096);
  const RunTotals t = f.net.run(Time());
  EXPECT_EQ(t.end, Time());
  EXPECT_GT(t.events, 0u);
  EXPECT_FALSE(t.all_finished);
  EXPECT_EQ(f.net.flows()[0].delivered, 0u);
}

// nic.flow_end: one WRITE ONLY over one link is placed at kOnly + kProp; its ACK, sent
// then, reaches the sender kAck + kProp later.
TEST(Network, FlowEndsWhenItsLastByteIsPlacedOrWhenItsLastAckArrives) {
  for (FlowEnd end : {FlowEnd::placed, FlowEnd::acked}) {
    NicConfig nic;
    nic.flow_end = end;
    OneFlow f(4096, nic);
    const RunTotals t = f.net.run(ms(1));
    ASSERT_TRUE(t.all_finished);
    const std::int64_t placed = kOnly + kProp;
    EXPECT_EQ(f.net.flows()[0].finish.ps(), end == FlowEnd::placed ? placed : placed + kAck + kProp);
  }
  NicConfig uc;
  uc.flow_end = FlowEnd::acked;
  uc.transport = Transport::uc;
  EXPECT_EQ(testing::input_error_of([&] { Network n(uc, {}, 1); }),
            "nic.flow_end = last_ack_received: expected nic.transport = rc (an unreliable connection's sender gets "
            "no ACKs)");
}

// wire.*: a model whose frames have 48 bytes of headers, no minimum, no gap and times in
// whole ns. One 4096-byte WRITE ONLY is a 48 + 16 (RETH) + 4096 = 4160-byte frame, 332.8
// ns at 100 Gb/s: 332 ns truncated, 333 to the nearest; the port counts 4160 bytes.
TEST(Network, WireFormatSetsFrameSizesAndTimesOnTheWire) {
  for (WireRounding rounding : {WireRounding::ns_down, WireRounding::ns_nearest}) {
    Network net({}, {}, 1);
    net.set_wire_format({.header_bytes = 48, .min_frame_bytes = 0, .gap_bytes = 0, .rounding = rounding});
    build_topology(net, spec(TopologyKind::back_to_back));
    net.add_flow({.src = 0, .dst = 1, .bytes = 4096, .start = {}});
    ASSERT_TRUE(net.run(ms(1)).all_finished);
    const std::int64_t wire = rounding == WireRounding::ns_down ? 332'000 : 333'000;
    EXPECT_EQ(net.flows()[0].finish.ps(), wire + kProp);
    EXPECT_EQ(net.host(0).port(0).tx_bytes(), 4160u);
    // The ACK: 48 + 4 (AETH) = 52 bytes, below Ethernet's 64 but no minimum here.
    EXPECT_EQ(net.host(1).port(0).tx_bytes(), 52u);
  }
  Network late({}, {}, 1);
  build_topology(late, spec(TopologyKind::back_to_back));
  EXPECT_THROW(late.set_wire_format({}), std::logic_error);
}

TEST(Network, BackToBackPacketsQueueBehindEachOther) {
  OneFlow f(3 * 4096);  // FIRST, MIDDLE, LAST
  Network& net = f.net;
  net.run(ms(1));
  EXPECT_EQ(net.flows()[0].finish.ps(), kFirst + 2 * kMiddle + kProp);
}

// A flow that waits for another starts `after_delay` after it has been delivered and then
// takes exactly as long as the first did alone (the link is idle again).
TEST(Network, DependentFlowStartsAfterItsDependenceAndDelay) {
  OneFlow f(3 * 4096);
  Network& net = f.net;
  net.add_flow({.src = 0, .dst = 1, .bytes = 4096, .start = {}, .after = {0}, .after_delay = us(5)});
  net.add_flow({.src = 0, .dst = 1, .bytes = 4096, .start = us(50), .after = {0, 1}});  // not before 50 us
  ASSERT_TRUE(net.run(ms(1)).all_finished);
  const auto& fl = net.flows();
  EXPECT_EQ(fl[0].started.ps(), 0);
  EXPECT_EQ(fl[0].finish.ps(), kFirst + 2 * kMiddle + kProp);
  EXPECT_EQ(fl[1].started.ps(), fl[0].finish.ps() + us(5).ps());
  EXPECT_EQ(fl[1].finish.ps(), fl[1].started.ps() + kOnly + kProp);
  EXPECT_EQ(fl[2].started.ps(), us(50).ps());
  EXPECT_EQ(fl[2].finish.ps(), us(50).ps() + kOnly + kProp);
}

TEST(Network, DependenceOnALaterFlowIsRefused) {
  OneFlow f(4096);
  EXPECT_EQ(testing::input_error_of(
                [&] { f.net.add_flow({.src = 0, .dst = 1, .bytes = 1, .start = {}, .after = {1}}); }),
            "flow 1: waits for flow 1, which is not listed before it");
}

TEST(Network, AQpsShareMustFitItsPsns) {
  // 24-bit PSNs: at most 2^24 - 1 = 16777215 packets of 4096 bytes on a QP.
  OneFlow f(4096);
  const std::uint64_t most = 16'777'215ull * 4096;
  EXPECT_NO_THROW(f.net.add_flow({.src = 0, .dst = 1, .bytes = most, .start = {}}));
  EXPECT_EQ(testing::input_error_of([&] { f.net.add_flow({.src = 0, .dst = 1, .bytes = most + 1, .start = {}}); }),
            "flow 2: 68719472641 bytes over 1 QP(s) make 16777216 packets of nic.mtu = 4096 bytes on a QP, more "
            "than its 24-bit PSNs number (16777215); use more QPs (traffic.qps_per_flow, or the flow list's qps "
            "column)");
  // Two QPs share it: 34359736321 and 34359736320 bytes, 8388608 packets each at most.
  EXPECT_NO_THROW(f.net.add_flow({.src = 0, .dst = 1, .bytes = most + 1, .start = {}, .qps = 2}));
}

TEST(Network, SwitchStoresAndForwards) {
  // h0 -> sw0 -> h1: the switch starts forwarding FIRST when its last bit is in; MIDDLE
  // arrives while FIRST is still leaving (kMiddle < kFirst) and waits for the port.
  Network net({}, {}, 1);
  build_topology(net, spec(TopologyKind::single_switch));
  net.add_flow({.src = 0, .dst = 1, .bytes = 2 * 4096, .start = {}});
  net.run(ms(1));
  const std::int64_t first_at_switch = kFirst + kProp;
  const std::int64_t first_left_switch = first_at_switch + kFirst;
  const std::int64_t second_at_switch = kFirst + kMiddle + kProp;
  const std::int64_t second_starts = std::max(first_left_switch, second_at_switch);
  EXPECT_EQ(net.flows()[0].finish.ps(), second_starts + kMiddle + kProp);
}

TEST(Network, ReceivedPauseStopsThePriorityForItsQuanta) {
  // 512 bit times at 100 Gb/s are 5.12 ns; 1000 quanta hold the sender 5.12 us.
  Network net({}, {}, 1);
  build_topology(net, spec(TopologyKind::back_to_back));
  net.add_flow({.src = 0, .dst = 1, .bytes = 4096, .start = {}, .priority = 3});
  EXPECT_EQ(net.host(0).port(0).pause_quantum_time(1).ps(), 5120);
  EXPECT_EQ(net.host(0).port(0).pause_quantum_time(0xffff).ps(), 335'539'200);  // 335.5 us
  net.host(0).port(0).pause(3, 1000);
  net.run(ms(1));
  EXPECT_EQ(net.flows()[0].finish.ps(), 1000 * 5120 + kOnly + kProp);
  EXPECT_EQ(net.host(0).port(0).paused_time(net.sim().now()).ps(), 1000 * 5120);
}

TEST(Network, PauseOnAnotherPriorityDoesNotStopTheFlow) {
  Network net({}, {}, 1);
  build_topology(net, spec(TopologyKind::back_to_back));
  net.add_flow({.src = 0, .dst = 1, .bytes = 4096, .start = {}, .priority = 3});
  net.host(0).port(0).pause(4, 1000);
  net.run(ms(1));
  EXPECT_EQ(net.flows()[0].finish.ps(), kOnly + kProp);
}

TEST(Network, GoBackNRecoversFromAPlantedDrop) {
  // 8 packets, PSN 2 lost on the wire. PSN 3 reaches the receiver at 4 x T + prop
  // (T = 335840 for FIRST; the rest are MIDDLE/LAST at 334560): the receiver NAKs PSN 2
  // once and drops 3..7. The NAK reaches the sender after everything was sent, and the
  // sender resends 2..7 back to back.
  NicConfig nic;
  nic.ack_every = 8;
  OneFlow f(8 * 4096, nic, 2);
  Network& net = f.net;
  const RunTotals t = net.run(ms(10));
  ASSERT_TRUE(t.all_finished);
  const std::int64_t psn3_arrives = kFirst + 3 * kMiddle + kProp;
  const std::int64_t nak_arrives = psn3_arrives + kAck + kProp;
  ASSERT_GT(nak_arrives, kFirst + 7 * kMiddle);  // everything was sent before the NAK came back
  EXPECT_EQ(net.flows()[0].finish.ps(), nak_arrives + 6 * kMiddle + kProp);
  EXPECT_EQ(net.flows()[0].retransmitted, 6u);
  EXPECT_EQ(net.host(1).naks_sent(), 1u);
  EXPECT_EQ(net.host(1).out_of_sequence_drops(), 5u);
  EXPECT_EQ(net.host(0).port(0).link_drops(), 1u);
  // The one drop, counted once at its place and once by its reason.
  EXPECT_EQ(Network::port_counters(net.host(0), 0, t.end).drops, 1u);
  EXPECT_EQ(Network::port_counters(net.host(1), 0, t.end).drops, 0u);
  EXPECT_EQ(net.ledger().dropped(DropReason::link_loss), 1u);
  EXPECT_EQ(net.ledger().data_packets_sent, 14u);
  EXPECT_EQ(net.ledger().data_packets_dropped, 1u);
  EXPECT_EQ(net.host(0).timeouts(), 0u);
}

TEST(Network, LostLastPacketIsRecoveredByTheTimeout) {
  // Nothing follows the last packet to reveal the gap: only the RTO brings it back. With
  // an ACK per packet, ACK(0) arrives at kFirst + prop + kAck + prop and moves the
  // timer (armed at 0 for 100 us) to 100 us after that; then PSN 1 (LAST) goes again.
  NicConfig nic;
  nic.rto = us(100);
  nic.ack_every = 1;
  OneFlow f(2 * 4096, nic, 1);
  Network& net = f.net;
  net.run(ms(10));
  const std::int64_t ack0 = kFirst + kProp + kAck + kProp;
  EXPECT_EQ(net.host(0).timeouts(), 1u);
  EXPECT_EQ(net.flows()[0].finish.ps(), ack0 + us(100).ps() + kMiddle + kProp);
  EXPECT_EQ(net.flows()[0].retransmitted, 1u);
}

TEST(Network, TimeoutGoesBackToTheOldestUnacknowledged) {
  // With ACKs coalesced over 8 packets, PSN 0 is never acknowledged before the loss of
  // PSN 1 is noticed: the timeout (armed at 0) resends both.
  NicConfig nic;
  nic.rto = us(100);
  OneFlow f(2 * 4096, nic, 1);
  Network& net = f.net;
  net.run(ms(10));
  EXPECT_EQ(net.host(0).timeouts(), 1u);
  EXPECT_EQ(net.flows()[0].finish.ps(), us(100).ps() + kFirst + kMiddle + kProp);
  EXPECT_EQ(net.flows()[0].retransmitted, 2u);
  EXPECT_EQ(net.host(1).duplicates(), 1u);
}

TEST(Network, UcLosesTheRestOfAMessageAfterAGap) {
  NicConfig nic;
  nic.transport = Transport::uc;
  OneFlow f(4 * 4096, nic, 1);
  Network& net = f.net;
  const RunTotals t = net.run(ms(1));
  EXPECT_FALSE(t.all_finished);
  EXPECT_EQ(net.flows()[0].delivered, 4096u);
  EXPECT_EQ(net.flows()[0].retransmitted, 0u);
  EXPECT_EQ(net.host(1).out_of_sequence_drops(), 2u);
}

TEST(Network, UcDiscardsCopiesWithoutBreakingTheMessage) {
  // Every packet of a 4-packet UC flow is duplicated on the link: each copy arrives right
  // behind its original, with a PSN the receiver has passed. It is discarded; the flow
  // completes with its 4 packets placed once.
  NicConfig nic;
  nic.transport = Transport::uc;
  Network net(nic, {}, 1);
  build_topology(net, spec(TopologyKind::back_to_back));
  net.add_flow({.src = 0, .dst = 1, .bytes = 4 * 4096, .start = {}});
  ImpairmentConfig c;
  c.duplicate = 1.0;
  net.add_impairment(net.host(0).port(0), c);
  const RunTotals t = net.run(ms(1));
  EXPECT_TRUE(t.all_finished);
  EXPECT_EQ(net.flows()[0].delivered, 4u * 4096u);
  EXPECT_EQ(net.host(1).duplicates(), 4u);
  EXPECT_EQ(net.host(1).out_of_sequence_drops(), 0u);
}

TEST(Network, ReorderWindowAcceptsPacketsUpToWBeyondTheExpectedOne) {
  // PSN 1 is dropped: PSNs 2..5 arrive 1..4 beyond the expected PSN 1. With W = 3 the
  // receiver places 2, 3, 4 and NAKs at 5 (4 beyond); after the resend of 1 the bitmap
  // lets the expected PSN jump to 5.
  NicConfig nic;
  nic.reorder_window = 3;
  OneFlow f(6 * 4096, nic, 1);
  Network& net = f.net;
  const RunTotals t = net.run(ms(10));
  ASSERT_TRUE(t.all_finished);
  EXPECT_EQ(net.host(1).reordered_accepted(), 3u);
  EXPECT_EQ(net.host(1).naks_sent(), 1u);
  EXPECT_EQ(net.flows()[0].delivered, 6u * 4096u);
}

TEST(Network, IncastPausesUpstreamAndDropsNothingOnTheLosslessPriority) {
  SwitchConfig sw;
  sw.buffer = MiB(2);
  sw.threshold_mode = ThresholdMode::static_th;
  sw.static_th = KiB(64);
  Network net({}, sw, 7);
  TopologySpec t = spec(TopologyKind::single_switch);
  t.hosts = 9;
  build_topology(net, t);
  for (std::uint32_t h = 1; h < 9; ++h)
    net.add_flow({.src = h, .dst = 0, .bytes = 1'000'000, .start = {}, .priority = 3});
  const RunTotals r = net.run(ms(50));
  ASSERT_TRUE(r.all_finished);
  EXPECT_EQ(net.ledger().data_packets_dropped, 0u);
  EXPECT_EQ(net.ledger().lossless_drops, 0u);
  std::uint64_t pauses = 0;
  for (std::uint32_t h = 1; h < 9; ++h) pauses += net.host(h).port(0).pfc_received();
  EXPECT_GT(pauses, 0u);
  // 8 MB through one 100G port: at least 8e6 x 8 / 100e9 s = 640 us.
  EXPECT_GE(r.end.ps(), us(640).ps());
  // Conservation (also checked inside run): everything sent arrived.
  EXPECT_EQ(net.ledger().data_bytes_sent, net.ledger().data_bytes_arrived);
}

TEST(Network, LossyIncastDropsAndRecovers) {
  SwitchConfig sw;
  sw.buffer = MiB(1);
  sw.pfc.enabled = false;
  sw.threshold_mode = ThresholdMode::static_th;
  sw.static_th = KiB(32);
  NicConfig nic;
  nic.rto = us(200);
  Network net(nic, sw, 7);
  TopologySpec t = spec(TopologyKind::single_switch);
  t.hosts = 5;
  build_topology(net, t);
  for (std::uint32_t h = 1; h < 5; ++h)
    net.add_flow({.src = h, .dst = 0, .bytes = 200'000, .start = {}, .priority = 0});
  const RunTotals r = net.run(sec(1));
  ASSERT_TRUE(r.all_finished);
  EXPECT_GT(net.ledger().data_packets_dropped, 0u);
  std::uint64_t retx = 0;
  for (const auto& f : net.flows()) retx += f.retransmitted;
  EXPECT_GE(retx, net.ledger().data_packets_dropped);
  EXPECT_EQ(net.ledger().data_bytes_sent,
            net.ledger().data_bytes_arrived + net.ledger().data_bytes_dropped + r.in_flight_data_bytes);
}

}  // namespace
}  // namespace fabriclab::fabric

namespace fabriclab::fabric {
namespace {

// h0 - s1 = s2 - h1 (.. h<behind>) with two s1-s2 links: s1's ports are 0 (h0), 1 and 2
// (to s2); one flow of four packets from h0 to host `dst`.
std::unique_ptr<Network> two_links(std::uint32_t behind = 1, std::uint32_t dst = 1) {
  auto net = std::make_unique<Network>(NicConfig{}, SwitchConfig{}, 1);
  TopologySpec t;
  t.kind = TopologyKind::two_switches;
  t.s1_hosts = 1;
  t.s2_hosts = behind;
  t.inter_switch_links = 2;
  build_topology(*net, t);
  net->add_flow({.src = 0, .dst = dst, .bytes = 4 * 4096, .start = {}});
  return net;
}

TEST(StaticRoutes, PinTheNextHop) {
  auto net = two_links();
  net->set_static_route(0, 1, {2});
  ASSERT_TRUE(net->run(ms(1)).all_finished);
  EXPECT_EQ(net->switch_at(0).port(2).tx_packets(), 4u);
  EXPECT_EQ(net->switch_at(0).port(1).tx_packets(), 0u);
}

TEST(StaticRoutes, ALoopEndsWithTheTtl) {
  // s1 sends h1's packets to s2 over link 1, s2 sends them back over link 2: each data
  // packet is forwarded by 63 switches (TTL 64 down to 1) and dropped at the 64th.
  auto net = two_links();
  net->set_static_route(0, 1, {1});
  net->set_static_route(1, 1, {2});
  const RunTotals t = net->run(us(500));  // before the 1 ms retransmission timeout
  EXPECT_EQ(t.flows_finished, 0u);
  EXPECT_EQ(net->ledger().dropped(DropReason::ttl), 4u);
  std::uint64_t at_ports = 0;
  for (const Node* n : net->nodes())
    for (std::size_t i = 0; i < n->port_count(); ++i) at_ports += Network::port_counters(*n, i, t.end).drops;
  EXPECT_EQ(at_ports, 4u);
  const std::uint64_t forwarded = net->switch_at(0).port(1).tx_packets() + net->switch_at(1).port(2).tx_packets();
  EXPECT_EQ(forwarded, 4u * 63u);
}

// h0 behind s1; h1 and h2 behind s2, two s1-s2 links: a static route for h1 at s1 leaves
// h2, behind the same switch, on the path ECMP gives it without one.
TEST(StaticRoutes, PinOneHostAndLeaveTheOthersBehindItsSwitch) {
  const auto sent = [](Network& net) {
    return std::pair{net.switch_at(0).port(1).tx_packets(), net.switch_at(0).port(2).tx_packets()};
  };
  auto unpinned = two_links(2, 2);
  ASSERT_TRUE(unpinned->run(ms(1)).all_finished);
  const auto [by1, by2] = sent(*unpinned);
  ASSERT_EQ(by1 + by2, 4u);
  ASSERT_TRUE(by1 == 0 || by2 == 0);             // one QP: one path
  const std::uint16_t other = by1 == 0 ? 1 : 2;  // the link h2's flow does not take
  auto pinned = two_links(2, 2);
  pinned->set_static_route(0, 1, {other});
  ASSERT_TRUE(pinned->run(ms(1)).all_finished);
  EXPECT_EQ(sent(*pinned), sent(*unpinned));
  auto h1 = two_links(2, 1);
  h1->set_static_route(0, 1, {other});
  ASSERT_TRUE(h1->run(ms(1)).all_finished);
  EXPECT_EQ(h1->switch_at(0).port(other).tx_packets(), 4u);
}

// A switch's forwarding table grows with the edge switches, not the hosts: on a
// leaf-spine of 16 leaves of 8 hosts and 4 spines, a leaf holds 16 + 1 entries by edge
// switch and its 8 hosts, a spine 16 + 1; a static route adds its host at its switch.
TEST(Routes, TablesByEdgeSwitch) {
  Network net(NicConfig{}, SwitchConfig{}, 1);
  TopologySpec t;
  t.kind = TopologyKind::leaf_spine;
  t.leaves = 16;
  t.spines = 4;
  t.hosts_per_leaf = 8;
  build_topology(net, t);
  ASSERT_EQ(net.host_count(), 128u);
  net.add_flow({.src = 0, .dst = 127, .bytes = 4096, .start = {}});
  net.set_static_route(16, 100, {3});  // the first spine, toward host 100 (leaf 12)
  ASSERT_TRUE(net.run(ms(1)).all_finished);
  for (std::uint32_t s = 0; s < 16; ++s) EXPECT_EQ(net.switch_at(s).route_entries(), 17u + 8u) << "leaf " << s;
  EXPECT_EQ(net.switch_at(16).route_entries(), 17u + 1u);
  for (std::uint32_t s = 17; s < 20; ++s) EXPECT_EQ(net.switch_at(s).route_entries(), 17u) << "spine " << s;
}

TEST(StaticRoutes, BadPortIsRefused) {
  auto net = two_links();
  EXPECT_THROW(net->set_static_route(0, 1, {3}), InputError);
  EXPECT_EQ(testing::input_error_of([&] {
              net->set_static_route(0, 1, {2, 1, 2});
            }),
            "static route at " + net->switch_at(0).name() + " toward " + net->host(1).name() + ": port 2 listed twice");
}

}  // namespace
}  // namespace fabriclab::fabric

// Partitioned runs (Network::set_partitions): the parts run in windows of the smallest
// delay between them and hand frames over at each window's end.
namespace fabriclab::fabric {
namespace {

// A run of `net` split into `parts` on `threads` threads; what a test compares between runs.
struct PartRun {
  RunTotals totals;
  std::uint64_t fingerprint;
  std::vector<Time> finish;
};
PartRun partitioned(Network& net, std::uint32_t parts, std::uint32_t threads, Time stop) {
  net.set_partitions(parts, threads);
  PartRun r{net.run(stop), net.fingerprint(), {}};
  for (const auto& f : net.flows()) r.finish.push_back(f.finish);
  return r;
}

TEST(PartitionedRun, OnePacketAcrossTheCutTakesTheHandComputedTime) {
  for (std::uint32_t threads : {1u, 2u}) {
    OneFlow f(3 * 4096);  // h0 in one part, h1 in the other: their link is the cut
    const PartRun r = partitioned(f.net, 2, threads, ms(1));
    EXPECT_EQ(f.net.partition_of(0), 0u);
    EXPECT_EQ(f.net.partition_of(1), 1u);
    EXPECT_EQ(f.net.window(), us(1));
    ASSERT_TRUE(r.totals.all_finished);
    EXPECT_EQ(r.finish[0].ps(), kFirst + 2 * kMiddle + kProp);
    EXPECT_EQ(f.net.flows()[0].delivered, 3 * 4096u);
  }
}

// As above with nic.flow_end = last_ack_received: the flow finishes in the sender's part,
// when the last ACK (sent at the placement) has crossed back.
TEST(PartitionedRun, AFlowEndingAtItsSenderFinishesInTheSendersPart) {
  for (std::uint32_t threads : {1u, 2u}) {
    NicConfig nic;
    nic.flow_end = FlowEnd::acked;
    OneFlow f(3 * 4096, nic);
    const PartRun r = partitioned(f.net, 2, threads, ms(1));
    ASSERT_TRUE(r.totals.all_finished);
    EXPECT_EQ(r.totals.flows_finished, 1u);
    EXPECT_EQ(r.finish[0].ps(), kFirst + 2 * kMiddle + kProp + kAck + kProp);
  }
}

// The wire format reaches every part: as Network.WireFormatSetsFrameSizesAndTimesOnTheWire,
// with h0 and h1 in two parts (three packets: 4160 + 2 x 4144 bytes, 332.8 + 2 x 331.52 ns,
// each truncated to the ns).
TEST(PartitionedRun, TheWireFormatHoldsInEveryPart) {
  for (std::uint32_t threads : {1u, 2u}) {
    OneFlow f(3 * 4096, {}, -1,
              {.header_bytes = 48, .min_frame_bytes = 0, .gap_bytes = 0, .rounding = WireRounding::ns_down});
    const PartRun r = partitioned(f.net, 2, threads, ms(1));
    ASSERT_TRUE(r.totals.all_finished);
    EXPECT_EQ(r.finish[0].ps(), 332'000 + 2 * 331'000 + kProp);
  }
}

TEST(PartitionedRun, SwitchStoresAndForwardsAcrossTheCut) {
  // As Network.SwitchStoresAndForwards: sw0 has one host of each part, so it goes by
  // index to part 0, and its link to h1 is the cut.
  Network net({}, {}, 1);
  build_topology(net, spec(TopologyKind::single_switch));
  net.add_flow({.src = 0, .dst = 1, .bytes = 2 * 4096, .start = {}});
  const PartRun r = partitioned(net, 2, 2, ms(1));
  EXPECT_EQ(net.partition_of(net.switch_at(0).id()), 0u);
  const std::int64_t second_starts = std::max(kFirst + kProp + kFirst, kFirst + kMiddle + kProp);
  EXPECT_EQ(r.finish[0].ps(), second_starts + kMiddle + kProp);
}

TEST(PartitionedRun, FatTreeSplitsByPodsWithHalfTheCores) {
  Network net({}, {}, 1);
  TopologySpec t;
  t.kind = TopologyKind::fat_tree;
  t.k = 4;  // 4 pods of 4 hosts, 2 edges, 2 aggregations; 4 cores, each on one agg per pod
  build_topology(net, t);
  net.add_flow({.src = 0, .dst = 15, .bytes = 4096, .start = {}});
  net.set_partitions(2, 1);
  net.run(ms(1));
  for (std::uint32_t h = 0; h < 16; ++h) EXPECT_EQ(net.partition_of(h), h < 8 ? 0u : 1u) << h;
  for (std::uint32_t s = 0; s < net.switch_count(); ++s) {
    const std::string& name = net.switch_at(s).name();  // edgeP_E, aggP_A, coreC
    const std::uint32_t want = name.starts_with("core") ? (name[4] - '0') / 2u : (name[name.find('_') - 1] - '0') / 2u;
    EXPECT_EQ(net.partition_of(net.switch_at(s).id()), want) << name;
  }
}

// A network of `sw` switches on a leaf-spine of that shape (one uplink per pair).
std::unique_ptr<Network> leaf_spine(const SwitchConfig& sw, std::uint64_t seed, std::uint32_t leaves,
                                    std::uint32_t spines, std::uint32_t hosts_per_leaf, const NicConfig& nic = {}) {
  auto net = std::make_unique<Network>(nic, sw, seed);
  TopologySpec t;
  t.kind = TopologyKind::leaf_spine;
  t.leaves = leaves;
  t.spines = spines;
  t.hosts_per_leaf = hosts_per_leaf;
  build_topology(*net, t);
  return net;
}

// A loaded leaf-spine (an incast and a permutation on the lossless priority, ECN on):
// one thread or two give the same run, event for event.
std::unique_ptr<Network> busy_leaf_spine(const NicConfig& nic = {}) {
  SwitchConfig sw;
  sw.buffer = MiB(2);
  sw.ecn = true;
  auto net = leaf_spine(sw, 3, 4, 2, 4, nic);
  for (std::uint32_t h = 1; h < 16; h += 2)
    net->add_flow({.src = h, .dst = 0, .bytes = 300'000, .start = {}, .priority = 3});
  for (std::uint32_t h = 2; h < 16; h += 2)
    net->add_flow({.src = h, .dst = (h + 6) % 16, .bytes = 500'000, .start = us(h), .priority = 3});
  return net;
}

// Links between parts, and hosts per part.
std::pair<std::size_t, std::vector<std::size_t>> cut_and_hosts(const Network& net) {
  std::size_t cut = 0;
  std::vector<std::size_t> hosts(net.partitions());
  for (const Node* n : net.nodes()) {
    if (n->id() < net.host_count()) ++hosts[net.partition_of(n->id())];
    for (std::size_t i = 0; i < n->port_count(); ++i)
      cut += net.partition_of(n->id()) != net.partition_of(n->port(i).peer()->owner().id());
  }
  return {cut / 2, hosts};
}

TEST(PartitionedRun, MetisPartsGiveTheSameRunWithFewCutLinks) {
  // 4 leaves of 4 hosts, 2 spines: nodes weighted by their ports (16 hosts x 1, leaves x
  // 6, spines x 4: 48) halve into two leaves with their hosts and one spine (24 each),
  // which cuts each leaf's link to the other spine: 4 links, as the levels partitioner's
  // halves do. Whatever the parts, the run is the undivided one.
  auto whole = busy_leaf_spine();
  const RunTotals w = whole->run(ms(50));
  for (std::uint32_t parts : {2u, 3u}) {
    auto split = busy_leaf_spine();
    split->set_partitioner(Partitioner::metis);
    const PartRun s = partitioned(*split, parts, 2, ms(50));
    EXPECT_EQ(s.fingerprint, whole->fingerprint()) << parts;
    EXPECT_EQ(s.totals.events, w.events) << parts;
    for (std::size_t i = 0; i < whole->flows().size(); ++i)
      EXPECT_EQ(s.finish[i], whole->flows()[i].finish) << parts << " parts, flow " << i;
    if (parts == 2) {
      const auto [cut, hosts] = cut_and_hosts(*split);
      EXPECT_EQ(cut, 4u);
      EXPECT_EQ(hosts, (std::vector<std::size_t>{8, 8}));
      auto levels = busy_leaf_spine();
      partitioned(*levels, 2, 1, ms(50));
      EXPECT_EQ(cut_and_hosts(*levels).first, 4u);
    }
  }
}

TEST(PartitionedRun, OneThreadOrTwoGiveTheSameRun) {
  auto a = busy_leaf_spine(), b = busy_leaf_spine();
  const PartRun one = partitioned(*a, 2, 1, ms(50)), two = partitioned(*b, 2, 2, ms(50));
  ASSERT_TRUE(one.totals.all_finished);
  EXPECT_EQ(one.fingerprint, two.fingerprint);
  EXPECT_EQ(one.totals.events, two.totals.events);
  EXPECT_EQ(one.totals.packet_hops, two.totals.packet_hops);
  EXPECT_EQ(one.finish, two.finish);
  // The parts' ledgers add up (conservation is also checked inside run): nothing lost on
  // the lossless priority, every byte sent arrived.
  EXPECT_EQ(a->ledger().lossless_drops, 0u);
  EXPECT_EQ(a->ledger().data_bytes_sent, a->ledger().data_bytes_arrived);
  EXPECT_EQ(a->ledger().data_bytes_arrived, 8 * 300'000u + 7 * 500'000u);
  EXPECT_EQ(a->packets_alive(), 0u);
}

// Every port's counters, for comparing two runs of one network.
std::vector<std::uint64_t> port_counts(Network& net, Time end) {
  std::vector<std::uint64_t> v;
  std::vector<const Node*> nodes;
  for (std::uint32_t h = 0; h < net.host_count(); ++h) nodes.push_back(&net.host(h));
  for (std::uint32_t s = 0; s < net.switch_count(); ++s) nodes.push_back(&net.switch_at(s));
  for (const Node* n : nodes)
    for (std::size_t i = 0; i < n->port_count(); ++i) {
      const PortCounters c = Network::port_counters(*n, i, end);
      v.insert(v.end(), {c.tx_bytes, c.tx_packets, c.drops, c.ecn_marks, c.pfc_pause_sent, c.pfc_pause_received,
                         static_cast<std::uint64_t>(c.paused.ps()), static_cast<std::uint64_t>(c.max_queue_bytes)});
    }
  return v;
}

TEST(PartitionedRun, IsTheUndividedRunEventForEvent) {
  // Ties at one picosecond run in the order of their nodes' keys, which a split does not
  // change, and a run that finishes its work ends one longest link delay after the last
  // delivery, which every split can stop at: 2, 3 and 4 parts execute the undivided run's
  // events (the fingerprint is a sum over them) and leave every counter as it does.
  auto whole = busy_leaf_spine();
  const RunTotals w = whole->run(ms(50));
  ASSERT_TRUE(w.all_finished);
  EXPECT_EQ(whole->ledger().lossless_drops, 0u);
  const std::vector<std::uint64_t> counts = port_counts(*whole, w.end);
  std::uint64_t marks = 0;
  for (std::size_t i = 0; i < counts.size(); i += 8) marks += counts[i + 3];
  EXPECT_GT(marks, 0u) << "congestion, so that ties matter";
  const Time last = std::max_element(whole->flows().begin(), whole->flows().end(), [](const auto& a, const auto& b) {
                      return a.finish < b.finish;
                    })->finish;
  EXPECT_LE(w.end, last + us(1));  // the tail: one link delay (1 us everywhere here)
  for (std::uint32_t parts : {2u, 3u, 4u}) {
    auto split = busy_leaf_spine();
    const PartRun s = partitioned(*split, parts, 2, ms(50));
    EXPECT_EQ(s.fingerprint, whole->fingerprint()) << parts;
    EXPECT_EQ(s.totals.events, w.events) << parts;
    EXPECT_EQ(s.totals.packet_hops, w.packet_hops) << parts;
    EXPECT_EQ(s.totals.end, w.end) << parts;
    for (std::size_t i = 0; i < whole->flows().size(); ++i)
      EXPECT_EQ(s.finish[i], whole->flows()[i].finish) << parts << " parts, flow " << i;
    EXPECT_TRUE(port_counts(*split, s.totals.end) == port_counts(*whole, w.end)) << parts;
  }
}

TEST(PartitionedRun, ANetworkWithoutWorkRunsToTheStopSplitOrNot) {
  // No flows, a watchdog polling every 100 us and deadlock checks every 30 us: the run
  // goes on to `stop` (the polls are pending), checks and all, split or not.
  auto make = [] {
    SwitchConfig sw;
    sw.watchdog = true;
    sw.wd_poll = us(100);
    auto net = leaf_spine(sw, 1, 2, 1, 2);
    net->detect_deadlocks(us(30), us(500));
    return net;
  };
  auto whole = make();
  const RunTotals w = whole->run(ms(1));
  EXPECT_EQ(w.end, ms(1));
  EXPECT_EQ(w.events, 3u * 10);  // 3 switches, polls at 100, 200, ..., 1000 us
  auto split = make();
  const PartRun s = partitioned(*split, 2, 2, ms(1));
  EXPECT_EQ(s.totals.end, ms(1));
  EXPECT_EQ(s.totals.events, w.events);
  EXPECT_EQ(s.fingerprint, whole->fingerprint());
}

TEST(PartitionedRun, LookingForDeadlocksChangesNothing) {
  // Checks every 7.3 us, not a multiple of the 1 us window: the windows also end at the
  // checks, which changes nothing, since the order of ties does not depend on where
  // windows end.
  auto a = busy_leaf_spine(), b = busy_leaf_spine();
  a->detect_deadlocks(Time::from_ps(7'300'000), us(500), /*keep_running=*/true);
  const PartRun watched = partitioned(*a, 2, 2, ms(50)), plain = partitioned(*b, 2, 2, ms(50));
  ASSERT_TRUE(plain.totals.all_finished);
  EXPECT_FALSE(watched.totals.deadlock);
  EXPECT_EQ(watched.fingerprint, plain.fingerprint);
  EXPECT_EQ(watched.finish, plain.finish);
}

TEST(PartitionedRun, FindsTheRingDeadlockAtTheSameCheck) {
  // pfc_test's ring of five switches split in two (sw2 has a host of each part): the
  // check at each 100 us runs where a window ends and sees the same cycle at 600 us, and
  // the run stops there, as the undivided one does.
  auto whole = ring_of_five({});
  whole->detect_deadlocks(us(100), us(500));
  const RunTotals w = whole->run(ms(20));
  ASSERT_TRUE(w.deadlock);
  EXPECT_EQ(whole->deadlock()->detected_at, us(600));
  EXPECT_EQ(w.end, us(600));
  auto ring = ring_of_five({});
  Network& net = *ring;
  net.detect_deadlocks(us(100), us(500));
  const PartRun r = partitioned(net, 2, 2, ms(20));
  EXPECT_EQ(r.fingerprint, whole->fingerprint());
  EXPECT_EQ(r.totals.events, w.events);
  ASSERT_TRUE(r.totals.deadlock);
  const std::vector<std::string> cycle = {"sw0 port 2 priority 3", "sw1 port 3 priority 3", "sw2 port 3 priority 3",
                                          "sw3 port 3 priority 3", "sw4 port 3 priority 3"};
  EXPECT_EQ(net.deadlock()->cycle, cycle);
  EXPECT_EQ(net.deadlock()->detected_at, us(600));
  EXPECT_EQ(r.totals.end, us(600));  // the run stopped there: every event before 600 us ran
}

TEST(PartitionedRun, WhatWouldActAcrossPartsIsRefused) {
  {
    OneFlow f(4096);
    f.net.add_flow({.src = 1, .dst = 0, .bytes = 1, .start = {}, .after = {0}});
    f.net.set_partitions(2, 2);
    EXPECT_EQ(testing::input_error_of([&] { f.net.run(ms(1)); }),
              "a partitioned run (2 partitions) cannot start a flow when another finishes: flow 1 waits for others "
              "(after)");
  }
  {
    OneFlow f(4096, {}, 0);  // a reorder box on h0's link
    f.net.set_partitions(2, 1);
    EXPECT_EQ(testing::input_error_of([&] { f.net.run(ms(1)); }),
              "a partitioned run (2 partitions) does not support reorder boxes or re-sequencers on links");
  }
  {
    Network net({}, {}, 1);
    TopologySpec t = spec(TopologyKind::back_to_back);
    t.host_link.delay = Time();
    build_topology(net, t);
    net.add_flow({.src = 0, .dst = 1, .bytes = 4096, .start = {}});
    net.set_partitions(2, 2);
    EXPECT_EQ(testing::input_error_of([&] { net.run(ms(1)); }),
              "a partitioned run (2 partitions) needs a delay on every link between partitions: h0-h1 has none");
  }
  OneFlow f(4096);
  EXPECT_EQ(testing::input_error_of([&] { f.net.set_partitions(2, 3); }),
            "threads: expected 1..2 (one per partition at most), got 3");
  EXPECT_EQ(testing::input_error_of([&] {
              f.net.set_partitions(3, 1);
              f.net.run(ms(1));
            }),
            "a partitioned run (3 partitions) needs a host per partition at least (2 hosts)");
}

}  // namespace
}  // namespace fabriclab::fabric

namespace fabriclab::fabric {
namespace {

// The notification point's variants (roce_np.cnp_pacing, cnp_form). Six one-packet
// flows h0 -> sw0 -> h1 (4096 bytes, WRITE ONLY), started so that their packets reach h1
// at 3, 9, 12, 19, 21 and 25 us: each crosses an idle path in 2 x (kOnly + kProp). The switch
// marks every data packet (Kmin = 0, Kmax = 1 byte: a queue holding the packet is above
// Kmax). With a 10 us interval per port: since the last CNP, notifications at 3 and 19
// (9 and 12 are within 10 us of 3; 21 within 10 of 19); per window [0, 10), [10, 20),
// [20, 30): at 3, 12 and 21. The packet at 25 us is answered by neither: it keeps the run
// going until the last CNP has reached h0.
struct MarkedArrivals {
  explicit MarkedArrivals(CnpPacing pacing, CnpForm form) : net(nic(pacing, form), marking_switch(), 1) {
    build_topology(net, spec(TopologyKind::single_switch));
    const std::int64_t path = 2 * (kOnly + kProp);
    for (std::int64_t at : {3, 9, 12, 19, 21, 25})
      net.add_flow({.src = 0, .dst = 1, .bytes = 4096, .start = Time::from_ps(at * 1'000'000 - path)});
    totals = net.run(ms(1));
  }
  static NicConfig nic(CnpPacing pacing, CnpForm form) {
    NicConfig n;
    n.cnp.min_time_between_cnps = 10;
    n.cnp.pacing = pacing;
    n.cnp.form = form;
    return n;
  }
  static SwitchConfig marking_switch() {
    SwitchConfig sw;
    sw.ecn = true;
    sw.wred.kmin = 0;
    sw.wred.kmax = 1;
    return sw;
  }
  Network net;
  RunTotals totals;
};

TEST(Network, NotificationsPacedSinceTheLastOrPerWindow) {
  for (CnpPacing pacing : {CnpPacing::since_last, CnpPacing::windows}) {
    const std::uint64_t expected = pacing == CnpPacing::since_last ? 2 : 3;
    MarkedArrivals m(pacing, CnpForm::frame);
    ASSERT_TRUE(m.totals.all_finished);
    EXPECT_EQ(m.net.host(1).ce_marked_received(), 6u);
    EXPECT_EQ(m.net.host(1).cnps_sent(), expected);
    EXPECT_EQ(m.net.host(0).cnps_received(), expected);
    EXPECT_EQ(m.net.host(1).port(0).tx_packets(), 6 + expected);  // an ACK per flow, and the CNPs
  }
}

TEST(Network, BecnRidesTheAckInsteadOfACnpFrame) {
  MarkedArrivals m(CnpPacing::since_last, CnpForm::becn);
  ASSERT_TRUE(m.totals.all_finished);
  EXPECT_EQ(m.net.host(1).cnps_sent(), 2u);  // the ACKs of the packets at 3 and 19 us
  EXPECT_EQ(m.net.host(0).cnps_received(), 2u);
  EXPECT_EQ(m.net.host(1).port(0).tx_packets(), 6u);  // the six ACKs, no CNP frame
  NicConfig uc = MarkedArrivals::nic(CnpPacing::since_last, CnpForm::becn);
  uc.transport = Transport::uc;
  EXPECT_EQ(testing::input_error_of([&] { Network n(uc, {}, 1); }),
            "nic.roce_np.cnp_form = becn (set by the key or by a preset such as ns3-mlx): expected nic.transport = rc "
            "(an unreliable connection sends no ACKs to carry the BECN bit)");
}

// switch.wred.queue_bytes: sw0's port to h2 is paused on priorities 3 and 4, so what comes
// for it stays queued. h0 sends 4 packets on priority 3 at 0, h1 4 on priority 4 from 10
// us (FIRST 4178, then 4162-byte frames). Marked at enqueue when the bytes read, the
// packet's own included, pass Kmax = 10001: by queue, 12502 and 16664 in each queue, 2 + 2
// marks; by port, h1's packets also count h0's 16664 queued bytes: 20842 and more, 2 + 4.
TEST(Switch, WredReadsThePacketsQueueOrTheWholePort) {
  for (bool by_port : {false, true}) {
    SwitchConfig sw;
    sw.ecn = true;
    sw.mark_at_enqueue = true;
    sw.mark_by_port = by_port;
    sw.wred.kmin = 10000;
    sw.wred.kmax = 10001;
    Network net({}, sw, 1);
    TopologySpec t = spec(TopologyKind::single_switch);
    t.hosts = 3;
    build_topology(net, t);
    net.add_flow({.src = 0, .dst = 2, .bytes = 4 * 4096, .start = {}, .priority = 3});
    net.add_flow({.src = 1, .dst = 2, .bytes = 4 * 4096, .start = us(10), .priority = 4});
    net.switch_at(0).port(2).pause(3, 0xffff);
    net.switch_at(0).port(2).pause(4, 0xffff);
    net.run(us(100));
    EXPECT_EQ(net.switch_at(0).queued_bytes(2), 2 * 16664);
    EXPECT_EQ(net.switch_at(0).ecn_marks(2), by_port ? 6u : 4u);
  }
}

// The NIC configuration every host shares is checked once, when the network is made,
// against its declared ranges (fabric/params.cc: cnp_dscp 0..63, rpg_gd 1..20).
TEST(Network, ANicConfigurationOutsideItsDeclarationsIsRefusedOnce) {
  NicConfig nic;
  nic.cnp.cnp_dscp = 64;
  EXPECT_EQ(testing::input_error_of([&] { Network net(nic, SwitchConfig{}, 1); }),
            "cnp_dscp: 64 is above the maximum 63");
  nic = NicConfig{};
  nic.congestion_control = "dcqcn";
  nic.dcqcn.rpg_gd = 0;
  EXPECT_EQ(testing::input_error_of([&] { Network net(nic, SwitchConfig{}, 1); }), "rpg_gd: 0 is below the minimum 1");
  nic.congestion_control = "none";  // the DCQCN values matter only to DCQCN
  EXPECT_NO_THROW(Network(nic, SwitchConfig{}, 1));
}

// What rank 0 of a run over `ranks` loopback processes reports, and every rank's totals.
struct RanksRun {
  std::unique_ptr<Loopback> loop;  // (outlives the networks, which keep their exchange)
  std::vector<std::unique_ptr<Loopback::Rank>> ex;
  std::vector<RunTotals> totals;  // by rank
  std::vector<std::uint64_t> fingerprints;
  std::vector<std::unique_ptr<Network>> nets;  // rank 0's holds the results
  std::vector<std::string> errors;             // by rank: what the run threw ("" = nothing)
};
template <typename Make>
RanksRun over_ranks(Make make, int ranks, std::uint32_t parts, std::uint32_t threads, Time stop,
                    std::function<void(int, Time)> progress = {}) {
  RanksRun r;
  r.loop = std::make_unique<Loopback>(ranks);
  r.totals.resize(static_cast<std::size_t>(ranks));
  r.fingerprints.resize(static_cast<std::size_t>(ranks));
  r.errors.resize(static_cast<std::size_t>(ranks));
  for (int k = 0; k < ranks; ++k) {
    r.ex.push_back(std::make_unique<Loopback::Rank>(*r.loop, k));
    r.nets.push_back(make());
    r.nets.back()->set_partitions(parts, threads, *r.ex.back());
  }
  {
    std::vector<std::jthread> procs;
    for (int k = 0; k < ranks; ++k)
      procs.emplace_back([&, k] {
        const auto i = static_cast<std::size_t>(k);
        try {
          r.totals[i] = r.nets[i]->run(stop, us(100), [&](Time now) {
            if (progress) progress(k, now);
          });
          r.fingerprints[i] = r.nets[i]->fingerprint();
        } catch (const RankFailure& e) {
          r.errors[i] = std::to_string(e.exit_code()) + " " + e.what();
        }
      });
  }
  return r;
}

TEST(RunOverRanks, IsTheUndividedRunOnEveryRankAndRankZeroHoldsEveryCounter) {
  auto whole = busy_leaf_spine();
  const RunTotals w = whole->run(ms(50));
  ASSERT_TRUE(w.all_finished);
  for (const auto& [ranks, parts, threads] : {std::tuple{2, 2u, 1u}, {3, 3u, 1u}, {2, 4u, 2u}, {3, 4u, 1u}}) {
    const RanksRun r = over_ranks([] { return busy_leaf_spine(); }, ranks, parts, threads, ms(50));
    const std::string what = std::to_string(ranks) + " ranks, " + std::to_string(parts) + " parts";
    for (int k = 0; k < ranks; ++k) {
      const auto i = static_cast<std::size_t>(k);
      ASSERT_EQ(r.errors[i], "") << what;
      // The totals every rank agrees on.
      EXPECT_EQ(r.fingerprints[i], whole->fingerprint()) << what << ", rank " << k;
      EXPECT_EQ(r.totals[i].events, w.events) << what << ", rank " << k;
      EXPECT_EQ(r.totals[i].packet_hops, w.packet_hops) << what << ", rank " << k;
      EXPECT_EQ(r.totals[i].end, w.end) << what << ", rank " << k;
      EXPECT_EQ(r.totals[i].flows_finished, w.flows_finished) << what << ", rank " << k;
      EXPECT_TRUE(r.totals[i].all_finished) << what << ", rank " << k;
      EXPECT_EQ(r.nets[i]->ledger().data_bytes_arrived, whole->ledger().data_bytes_arrived) << what;
      EXPECT_EQ(r.nets[i]->ledger().control_packets_sent, whole->ledger().control_packets_sent) << what;
      EXPECT_EQ(r.nets[i]->holds_results(), k == 0);
    }
    // What the outputs read, on rank 0: every node's and flow's, as the undivided run left them.
    const Network& net = *r.nets[0];
    for (std::size_t f = 0; f < whole->flows().size(); ++f) {
      EXPECT_EQ(net.flows()[f].finish, whole->flows()[f].finish) << what << ", flow " << f;
      EXPECT_EQ(net.flows()[f].delivered, whole->flows()[f].delivered) << what << ", flow " << f;
      EXPECT_EQ(net.flows()[f].retransmitted, whole->flows()[f].retransmitted) << what << ", flow " << f;
    }
    for (const Node* n : whole->nodes())
      for (std::size_t p = 0; p < n->port_count(); ++p) {
        const PortCounters a = net.port_counters_at_end(n->id(), p), b = Network::port_counters(*n, p, w.end);
        EXPECT_EQ(std::tuple(a.tx_bytes, a.tx_packets, a.ecn_marks, a.pfc_pause_sent, a.paused, a.max_queue_bytes),
                  std::tuple(b.tx_bytes, b.tx_packets, b.ecn_marks, b.pfc_pause_sent, b.paused, b.max_queue_bytes))
            << what << ", " << n->name() << " port " << p;
      }
    std::uint64_t cnps = 0, marked = 0;
    for (std::uint32_t h = 0; h < whole->host_count(); ++h) {
      EXPECT_EQ(net.host_counters(h).cnps_sent, whole->host(h).cnps_sent()) << what << ", host " << h;
      cnps += net.host_counters(h).cnps_sent;
      marked += net.host_counters(h).ce_marked_received;
    }
    EXPECT_GT(cnps, 0u) << "congestion, so that the counters say something";
    EXPECT_GT(marked, 0u);
  }
}

// Snapshots over ranks (output.window's readings): each rank reads its own nodes and flows
// at the instants, rank 0 gathers them, and holds what the undivided run read -- every
// port's counters (the queue maxima since the snapshot before included), every flow's
// bytes, which instants the run reached, and the reading at the end.
TEST(RunOverRanks, SnapshotsAreGatheredToRankZeroAsTheUndividedRunTookThem) {
  const Time end = busy_leaf_spine()->run(ms(50)).end;
  // One early, one in the middle (not on a microsecond), one past the end.
  const std::vector<Time> at{us(3), Time::from_ps(end.ps() / 2 + 7), end + us(5)};
  const auto make = [&] {
    auto net = busy_leaf_spine();
    net->snapshot_at(at);
    return net;
  };
  auto whole = make();
  ASSERT_EQ(whole->run(ms(50)).end, end);
  const auto same = [](const Network::Snapshot& a, const Network::Snapshot& b, const std::string& what) {
    EXPECT_EQ(a.taken, b.taken) << what;
    EXPECT_EQ(a.delivered, b.delivered) << what;
    ASSERT_EQ(a.ports.size(), b.ports.size()) << what;
    for (std::size_t p = 0; p < a.ports.size(); ++p) {
      const PortCounters &x = a.ports[p], &y = b.ports[p];
      EXPECT_EQ(std::tuple(x.tx_bytes, x.tx_packets, x.ecn_marks, x.pfc_pause_sent, x.paused, x.max_queue_bytes),
                std::tuple(y.tx_bytes, y.tx_packets, y.ecn_marks, y.pfc_pause_sent, y.paused, y.max_queue_bytes))
          << what << ", port " << p;
    }
  };
  const auto& w = whole->snapshots();
  ASSERT_EQ(w.size(), 3u);
  EXPECT_TRUE(w[0].taken && w[1].taken);
  EXPECT_FALSE(w[2].taken);  // past the end
  std::uint64_t moved = 0;
  for (const auto& p : w[1].ports) moved += p.tx_packets;
  EXPECT_GT(moved, 0u);  // the readings say something
  for (const auto& [ranks, parts, threads] : {std::tuple{2, 2u, 1u}, {3, 4u, 1u}}) {
    const RanksRun r = over_ranks(make, ranks, parts, threads, ms(50));
    const std::string what = std::to_string(ranks) + " ranks, " + std::to_string(parts) + " parts";
    for (const std::string& e : r.errors) ASSERT_EQ(e, "") << what;
    const auto& s = r.nets[0]->snapshots();
    ASSERT_EQ(s.size(), w.size());
    for (std::size_t i = 0; i < s.size(); ++i) same(s[i], w[i], what + ", snapshot " + std::to_string(i));
    same(r.nets[0]->snapshot_at_end(), whole->snapshot_at_end(), what + ", at the end");
  }
}

// Flows that finish at their senders (nic.flow_end = last_ack_received): rank 0 gathers
// each finish from the rank of the sender, as the undivided run has it.
TEST(RunOverRanks, FlowsFinishingAtTheirSendersAreGatheredFromThem) {
  NicConfig nic;
  nic.flow_end = FlowEnd::acked;
  const auto make = [&] { return busy_leaf_spine(nic); };
  auto whole = make();
  const RunTotals w = whole->run(ms(50));
  ASSERT_TRUE(w.all_finished);
  auto placed = busy_leaf_spine();
  placed->run(ms(50));
  for (const auto& [ranks, parts] : {std::pair{2, 2u}, {3, 4u}}) {
    const RanksRun r = over_ranks(make, ranks, parts, 1, ms(50));
    for (int k = 0; k < ranks; ++k) {
      ASSERT_EQ(r.errors[static_cast<std::size_t>(k)], "");
      EXPECT_EQ(r.totals[static_cast<std::size_t>(k)].flows_finished, w.flows_finished);
      EXPECT_TRUE(r.totals[static_cast<std::size_t>(k)].all_finished);
    }
    for (std::size_t f = 0; f < whole->flows().size(); ++f) {
      EXPECT_EQ(r.nets[0]->flows()[f].finish, whole->flows()[f].finish) << ranks << " ranks, flow " << f;
      EXPECT_EQ(r.nets[0]->flows()[f].delivered, whole->flows()[f].delivered) << ranks << " ranks, flow " << f;
      // The last ACK comes after the last byte placed, and the same run otherwise.
      EXPECT_GT(whole->flows()[f].finish, placed->flows()[f].finish) << "flow " << f;
    }
  }
}

TEST(RunOverRanks, FindsTheRingDeadlockOnEveryRank) {
  // The ring's queues paused in a cycle that spans the ranks: each collects its own
  // switches' paused queues, every one puts them together and sees the undivided cycle.
  auto make = [] {
    auto net = ring_of_five({});
    net->detect_deadlocks(us(100), us(500));
    return net;
  };
  auto whole = make();
  const RunTotals w = whole->run(ms(20));
  ASSERT_TRUE(w.deadlock);
  const RanksRun r = over_ranks(make, 3, 3, 1, ms(20));
  std::set<std::uint32_t> parts;
  for (std::uint32_t s = 0; s < 5; ++s) parts.insert(r.nets[0]->partition_of(r.nets[0]->switch_at(s).id()));
  EXPECT_EQ(parts.size(), 3u) << "the cycle's switches are on every rank";
  for (int k = 0; k < 3; ++k) {
    const auto i = static_cast<std::size_t>(k);
    ASSERT_EQ(r.errors[i], "");
    ASSERT_TRUE(r.totals[i].deadlock) << "rank " << k;
    EXPECT_EQ(r.nets[i]->deadlock()->cycle, whole->deadlock()->cycle) << "rank " << k;
    EXPECT_EQ(r.nets[i]->deadlock()->detected_at, us(600));
    EXPECT_EQ(r.totals[i].end, us(600));
    EXPECT_EQ(r.fingerprints[i], whole->fingerprint());
  }
}

TEST(RunOverRanks, AFailureInOneRankEndsTheRunInEveryRankNamingIt) {
  // Rank 1's progress report throws (as a part that meets an impossible state would):
  // every rank stops after the window and throws the same RankFailure, code 3 (a bug).
  const RanksRun r = over_ranks([] { return busy_leaf_spine(); }, 3, 3, 1, ms(50),
                                [](int rank, Time now) {
                                  if (rank == 1 && now >= us(200)) throw std::logic_error("a counter fired early");
                                });
  for (int k = 0; k < 3; ++k) EXPECT_EQ(r.errors[static_cast<std::size_t>(k)], "3 rank 1: a counter fired early");
}

TEST(RunOverRanks, TooFewPartsOrTooManyThreadsAreRefused) {
  Loopback loop(3);
  Loopback::Rank rank0(loop, 0);
  auto net = busy_leaf_spine();
  EXPECT_EQ(testing::input_error_of([&] { net->set_partitions(2, 1, rank0); }),
            "partitions: 2 parts cannot run on 3 processes (at least one part each)");
  EXPECT_EQ(testing::input_error_of([&] { net->set_partitions(5, 2, rank0); }),
            "threads: expected 1..1 per process (5 parts on 3 processes), got 2");
}

// Flows fed while the run goes (Network::feed_flows) from a list.
class ListSource final : public FlowSource {
 public:
  explicit ListSource(std::vector<FlowSpec> flows) : flows_(std::move(flows)) {}
  bool next(FlowSpec& out) override {
    if (next_ == flows_.size()) return false;
    out = flows_[next_++];
    return true;
  }

 private:
  std::vector<FlowSpec> flows_;
  std::size_t next_ = 0;
};

// 240 flows over 3 ms on the busy leaf-spine's fabric (ECN on, DCQCN: its timers keep
// finished QPs busy for a while): each host starts one every 200 us, sizes 8 KB to 200 KB.
std::vector<FlowSpec> stream_of_flows() {
  std::vector<FlowSpec> flows;
  for (std::uint32_t k = 0; k < 15; ++k)
    for (std::uint32_t h = 0; h < 16; ++h)
      flows.push_back({.src = h,
                       .dst = (h + 1 + (k * 7 + h) % 15) % 16,
                       .bytes = 8'000 + (k * 37 + h * 11) % 25 * 8'000,
                       .start = us(200) * k + ns(250) * h,
                       .priority = 3});
  return flows;
}
std::unique_ptr<Network> fabric_for_stream() {
  SwitchConfig sw;
  sw.buffer = MiB(2);
  sw.ecn = true;
  NicConfig nic;
  nic.congestion_control = "dcqcn";
  nic.rto = us(100);  // (a finished QP's check ends sooner)
  return leaf_spine(sw, 3, 4, 2, 4, nic);
}
std::unique_ptr<Network> fed_stream() {
  auto net = fabric_for_stream();
  net->feed_flows(std::make_unique<ListSource>(stream_of_flows()), us(50));
  return net;
}
std::size_t send_qp_numbers(const Network& net) {
  std::size_t n = 0;
  for (std::uint32_t h = 0; h < net.host_count(); ++h) n += net.host(h).send_qp_numbers();
  return n;
}

// Fed 50 us before they start, the flows run exactly as when all are added up front --
// the same events, finishes and port counters -- while finished flows' QP numbers go to
// later ones.
TEST(FlowFeed, FlowsFedAsTheRunGoesRunAsFlowsAddedUpFront) {
  auto whole = fabric_for_stream();
  for (const FlowSpec& f : stream_of_flows()) whole->add_flow(f);
  const RunTotals w = whole->run(ms(50));
  ASSERT_TRUE(w.all_finished);
  auto fed = fed_stream();
  const RunTotals r = fed->run(ms(50));
  ASSERT_TRUE(r.all_finished);
  ASSERT_EQ(fed->flows().size(), 240u);
  EXPECT_EQ(fed->feed()->flows_added(), 240u);
  EXPECT_EQ(r.events, w.events);
  EXPECT_EQ(r.end, w.end);
  for (std::size_t f = 0; f < 240; ++f) {
    EXPECT_EQ(fed->flows()[f].started, whole->flows()[f].started) << f;
    EXPECT_EQ(fed->flows()[f].finish, whole->flows()[f].finish) << f;
    EXPECT_EQ(fed->source_port(static_cast<std::uint32_t>(f)), whole->source_port(static_cast<std::uint32_t>(f))) << f;
  }
  for (const Node* n : whole->nodes())
    for (std::size_t p = 0; p < n->port_count(); ++p) {
      const PortCounters a = Network::port_counters(*fed->nodes()[n->id()], p, r.end);
      const PortCounters b = Network::port_counters(*n, p, w.end);
      EXPECT_EQ(std::tuple(a.tx_bytes, a.ecn_marks, a.pfc_pause_sent, a.max_queue_bytes),
                std::tuple(b.tx_bytes, b.ecn_marks, b.pfc_pause_sent, b.max_queue_bytes))
          << n->name() << " port " << p;
    }
  std::uint64_t cnps = 0, late = 0;
  for (std::uint32_t h = 0; h < 16; ++h) {
    cnps += fed->host_counters(h).cnps_received;
    late += fed->host_counters(h).late_discarded;
  }
  EXPECT_GT(cnps, 0u) << "congestion, so that DCQCN's timers run";
  EXPECT_EQ(late, 0u);
  EXPECT_EQ(send_qp_numbers(*whole), 240u);  // one per flow
  // Each flow is placed over 10 us (an RTT of four 1 us links, its last ACK's way back,
  // with room) before the instant that adds its host's next flow, 200 us after its own
  // (checked here): that instant finds it finished at both ends and gives its numbers to
  // the next flow. One send QP number per host.
  for (std::size_t f = 0; f < 240; ++f) {
    const Time next_instant = us(200) * static_cast<std::int64_t>(f / 16 + 1) - ps(1);
    EXPECT_LT(fed->flows()[f].finish + us(10), next_instant) << f;
  }
  EXPECT_EQ(send_qp_numbers(*fed), 16u);
}

// Split into parts, over threads or processes, the fed run frees the same QPs at the same
// instants: the same trajectory (QP numbers are in its events), on every rank.
TEST(FlowFeed, PartsAndRanksFreeTheSameQps) {
  auto whole = fed_stream();
  const RunTotals w = whole->run(ms(50));
  ASSERT_TRUE(w.all_finished);
  {
    auto split = fed_stream();
    const PartRun s = partitioned(*split, 2, 2, ms(50));
    EXPECT_EQ(s.fingerprint, whole->fingerprint());
    EXPECT_EQ(s.totals.events, w.events);
    EXPECT_EQ(send_qp_numbers(*split), send_qp_numbers(*whole));
  }
  for (const auto& [ranks, parts] : {std::pair{2, 2u}, {3, 4u}}) {
    const RanksRun r = over_ranks([] { return fed_stream(); }, ranks, parts, 1, ms(50));
    for (int k = 0; k < ranks; ++k) {
      const auto i = static_cast<std::size_t>(k);
      ASSERT_EQ(r.errors[i], "") << ranks << " ranks";
      EXPECT_EQ(r.fingerprints[i], whole->fingerprint()) << ranks << " ranks, rank " << k;
      EXPECT_EQ(r.totals[i].events, w.events) << ranks << " ranks, rank " << k;
      EXPECT_TRUE(r.totals[i].all_finished);
      EXPECT_EQ(send_qp_numbers(*r.nets[i]), send_qp_numbers(*whole)) << ranks << " ranks, rank " << k;
    }
    for (std::size_t f = 0; f < whole->flows().size(); ++f)
      EXPECT_EQ(r.nets[0]->flows()[f].finish, whole->flows()[f].finish) << ranks << " ranks, flow " << f;
  }
}

// A packet held on a link past its flow's end arrives for a QP freed since: discarded and
// counted. Flow 0 (h0 -> h1, two packets) has its PSN 0 delayed 500 us: PSN 1 arrives
// first, the receiver NAKs, the sender goes back and the flow finishes within
// microseconds; its QPs are free from the first instant after the sender's 100 us check
// (its RTO) has passed, and flow 1 (h2 -> h1 at 300 us) takes h1's receiving QP. The
// original PSN 0 then arrives for flow 1's QP (flow 2, at 700 us, keeps the run going).
// Added up front, the same packet is a duplicate for flow 0's finished QP instead.
TEST(FlowFeed, APacketForAFreedQpIsDiscardedAndCounted) {
  const auto make = [](bool feed) {
    SwitchConfig sw;
    NicConfig nic;
    nic.rto = us(100);
    auto net = leaf_spine(sw, 1, 2, 1, 2, nic);  // h0, h1 on leaf 0; h2, h3 on leaf 1
    ImpairmentConfig box;
    box.rules = parse_impairment_rules("delay 0/0 500us");
    box.max_hold = ms(1);
    net->add_impairment(net->host(0).port(0), box);
    std::vector<FlowSpec> flows{{.src = 0, .dst = 1, .bytes = 8192, .start = {}},
                                {.src = 2, .dst = 1, .bytes = 8192, .start = us(300)},
                                {.src = 3, .dst = 2, .bytes = 8192, .start = us(700)}};  // (runs past 500 us)
    if (feed) net->feed_flows(std::make_unique<ListSource>(flows), us(50));
    else
      for (const auto& f : flows) net->add_flow(f);
    return net;
  };
  for (const bool feed : {false, true}) {
    auto net = make(feed);
    const RunTotals t = net->run(ms(5));  // (conservation checked at the end)
    ASSERT_TRUE(t.all_finished) << feed;
    EXPECT_LT(net->flows()[0].finish, us(50)) << feed;
    EXPECT_EQ(net->host_counters(1).late_discarded, feed ? 1u : 0u);
    EXPECT_EQ(net->host_counters(1).duplicates, feed ? 0u : 1u);
    EXPECT_EQ(net->ledger().data_packets_arrived, net->ledger().data_packets_sent);
  }
}

// A fed flow between hosts no path joins is refused as one added before the run is, by
// name: among the first instant's flows before the run, later when it is added.
TEST(FlowFeed, AFlowWithoutAPathIsRefusedByName) {
  const auto islands = [](Time start) {  // h0 - s0 - h1 and h2 - s1 - h3, unjoined
    auto net = std::make_unique<Network>(NicConfig{}, SwitchConfig{}, 1);
    for (int h = 0; h < 4; ++h) net->add_host("h" + std::to_string(h));
    const auto s0 = net->add_switch("s0"), s1 = net->add_switch("s1");
    for (std::uint32_t h = 0; h < 4; ++h) net->connect(net->host(h), net->switch_at(h < 2 ? s0 : s1), Gbps(100), us(1));
    net->feed_flows(std::make_unique<ListSource>(
                        std::vector<FlowSpec>{{.src = 0, .dst = 1, .bytes = 4096, .start = {}},
                                              {.src = 0, .dst = 2, .bytes = 4096, .start = start}}),
                    us(50));
    return net;
  };
  EXPECT_EQ(testing::input_error_of([&] { islands(us(10))->run(ms(1)); }), "no path from h0 to h2");
  EXPECT_EQ(testing::input_error_of([&] { islands(us(100))->run(ms(1)); }), "no path from h0 to h2");
}

}  // namespace
}  // namespace fabriclab::fabric
