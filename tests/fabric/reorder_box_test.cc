// The reorder box on a back-to-back link, with hand-computed outcomes: a reorder of
// extent E is absorbed by a receiver window W exactly when E <= W; delays, duplicates,
// corruption and drops by rule and by probability; and the rule syntax.
#include "fabric/reorder_box.h"

#include <gtest/gtest.h>

#include <cmath>

#include "error_message.h"
#include "fabric/network.h"
#include "fabric/topology.h"

namespace fabriclab::fabric {
namespace {

// FIRST and MIDDLE/LAST frames at 100G, and the 1 us link (network_test.cc derives them).
constexpr std::int64_t kFirst = 335840, kMiddle = 334560, kProp = 1'000'000;

struct Link {
  Link(std::uint32_t packets, const std::string& rules, std::uint32_t window = 0, ImpairmentConfig c = {})
      : net(nic(window), {}, 1) {
    TopologySpec t;
    t.kind = TopologyKind::back_to_back;
    build_topology(net, t);
    net.add_flow({.src = 0, .dst = 1, .bytes = packets * 4096ull, .start = {}});
    c.rules = parse_impairment_rules(rules);
    box = &net.add_impairment(net.host(0).port(0), c);
  }
  static NicConfig nic(std::uint32_t window) {
    NicConfig n;
    n.reorder_window = window;
    n.ack_every = 1000;  // ACK only at the end: nothing but the reorder decides
    return n;
  }
  Network net;
  ReorderBox* box;
};

TEST(ReorderBox, WindowAbsorbsAReorderOfExtentUpToW) {
  // PSN 1 held for 3 later packets: arrival order 0 2 3 4 1 5 6 7, extent 3.
  for (std::uint32_t w : {3u, 4u}) {
    Link l(8, "hold 0/1 3", w);
    ASSERT_TRUE(l.net.run(ms(10)).all_finished);
    EXPECT_EQ(l.net.host(1).naks_sent(), 0u) << "W = " << w;
    EXPECT_EQ(l.net.flows()[0].retransmitted, 0u);
    EXPECT_EQ(l.net.host(1).reordered_accepted(), 3u);
    // PSN 1 left the box right after PSN 4: the last packet is on time.
    EXPECT_EQ(l.net.flows()[0].finish.ps(), kFirst + 7 * kMiddle + kProp);
  }
  // Smaller windows NAK, and NAK twice: the late PSN 1 clears the gap, and a packet
  // beyond the window after it opens a new one. W = 0: NAK(1) at 2, then NAK(2) at 5 (3
  // and 4 were dropped). W = 1: 2 placed, NAK(1) at 3, then NAK(3) at 5. W = 2: 2 and 3
  // placed, NAK(1) at 4, then 5 and 6 placed beyond 4 and NAK(4) at 7.
  for (std::uint32_t w : {0u, 1u, 2u}) {
    Link l(8, "hold 0/1 3", w);
    ASSERT_TRUE(l.net.run(ms(10)).all_finished);
    EXPECT_EQ(l.net.host(1).naks_sent(), 2u) << "W = " << w;
    EXPECT_GT(l.net.flows()[0].retransmitted, 0u);
  }
}

TEST(ReorderBox, SwapIsAHoldOfOne) {
  // Order 1 0 2 3. Go-back-N: NAK(0) at 1 (dropped), then NAK(1) at 2.
  Link go_back_n(4, "hold 0/0 1", 0);
  go_back_n.net.run(ms(10));
  EXPECT_EQ(go_back_n.net.host(1).naks_sent(), 2u);
  Link window(4, "hold 0/0 1", 1);
  window.net.run(ms(10));
  EXPECT_EQ(window.net.host(1).naks_sent(), 0u);
  EXPECT_EQ(window.box->held(), 1u);
}

TEST(ReorderBox, DelayRuleAddsItsTime) {
  Link l(8, "delay 0/7 2us");
  ASSERT_TRUE(l.net.run(ms(10)).all_finished);
  EXPECT_EQ(l.net.flows()[0].finish.ps(), kFirst + 7 * kMiddle + kProp + us(2).ps());
}

TEST(ReorderBox, HoldGivesUpAfterMaxHold) {
  // Nothing follows the last packet: the box lets it go after max_hold.
  ImpairmentConfig c;
  c.max_hold = us(5);
  Link l(4, "hold 0/3 10", 0, c);
  ASSERT_TRUE(l.net.run(ms(10)).all_finished);
  EXPECT_EQ(l.net.flows()[0].finish.ps(), kFirst + 3 * kMiddle + kProp + us(5).ps());
}

TEST(ReorderBox, DuplicateIsReacknowledgedAndConserved) {
  Link l(4, "dup 0/2");
  ASSERT_TRUE(l.net.run(ms(10)).all_finished);  // run() checks sent + duplicated = arrived + ...
  EXPECT_EQ(l.net.host(1).duplicates(), 1u);
  EXPECT_EQ(l.net.flows()[0].delivered, 4u * 4096u);
  EXPECT_EQ(l.net.ledger().data_packets_duplicated, 1u);
  EXPECT_EQ(l.net.ledger().data_packets_arrived, 5u);
}

TEST(ReorderBox, CorruptedPacketIsDiscardedAtTheReceiverAndRecovered) {
  Link l(8, "corrupt 0/2");
  ASSERT_TRUE(l.net.run(ms(10)).all_finished);
  EXPECT_EQ(l.net.host(1).port(0).rx_errors(), 1u);
  EXPECT_EQ(Network::port_counters(l.net.host(1), 0, Time()).drops, 1u);  // at the receiving MAC
  EXPECT_EQ(l.net.ledger().dropped(DropReason::corrupted), 1u);
  EXPECT_EQ(l.net.ledger().dropped(DropReason::link_loss), 0u);
  EXPECT_EQ(l.net.host(1).naks_sent(), 1u);
  EXPECT_EQ(l.net.flows()[0].retransmitted, 6u);  // 2..7 again, as after a drop
  EXPECT_EQ(l.box->corrupted(), 1u);
}

TEST(ReorderBox, SecondTransmissionCanBeTargeted) {
  // Drop PSN 2 and its resend: the receiver NAKs a gap once, until the expected PSN
  // comes, so only the retransmission timeout recovers.
  Link l(8, "drop 0/2; drop 0/2/2");
  ASSERT_TRUE(l.net.run(ms(10)).all_finished);
  EXPECT_EQ(l.box->dropped(), 2u);
  EXPECT_EQ(l.net.host(1).naks_sent(), 1u);
  EXPECT_EQ(l.net.host(0).timeouts(), 1u);
}

TEST(ReorderBox, DropProbabilityIsBinomial) {
  // 4000 packets at p = 0.02 over a window that absorbs nothing: about 80 drops of first
  // transmissions (and more among resends); the flow completes. sd of the first-pass count
  // is sqrt(4000 x 0.02 x 0.98) = 8.9.
  ImpairmentConfig c;
  c.drop = 0.02;
  NicConfig nic;
  nic.rto = us(50);
  Network net(nic, {}, 9);
  TopologySpec t;
  t.kind = TopologyKind::back_to_back;
  build_topology(net, t);
  net.add_flow({.src = 0, .dst = 1, .bytes = 4000 * 4096ull, .start = {}});
  const ReorderBox& box = net.add_impairment(net.host(0).port(0), c);
  ASSERT_TRUE(net.run(sec(1)).all_finished);
  const double sent = static_cast<double>(net.ledger().data_packets_sent);
  EXPECT_NEAR(static_cast<double>(box.dropped()), 0.02 * sent, 4 * std::sqrt(sent * 0.02 * 0.98));
}

TEST(ReorderBox, RuleSyntaxErrors) {
  EXPECT_EQ(testing::input_error_of([] { parse_impairment_rules("swap 0/1"); }),
            "impairment rule 'swap 0/1': unknown action 'swap' (expected drop, hold, delay, dup or corrupt)");
  EXPECT_EQ(testing::input_error_of([] { parse_impairment_rules("hold 0/1"); }),
            "impairment rule 'hold 0/1': expected 'hold FLOW/PSN[/OCCURRENCE] PACKETS'");
  EXPECT_EQ(testing::input_error_of([] { parse_impairment_rules("drop 0-1"); }),
            "impairment rule 'drop 0-1': expected FLOW/PSN or FLOW/PSN/OCCURRENCE, got '0-1'");
  EXPECT_EQ(testing::input_error_of([] { parse_impairment_rules("delay 0/1 3 parsecs"); }),
            "impairment rule 'delay 0/1 3 parsecs': expected 'delay FLOW/PSN[/OCCURRENCE] TIME'");
  const auto r = parse_impairment_rules("drop 1/2/3, delay 0/9 2.5us");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].occurrence, 3u);
  EXPECT_EQ(r[1].delay, ns(2500));
}

}  // namespace
}  // namespace fabriclab::fabric
