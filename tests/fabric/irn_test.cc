// IRN (nic.transport = "irn"): selective repeat with out-of-order placement, worked by
// hand on one flow between two hosts on one 100 Gb/s link of 1 us, packets lost or held
// back by rules on h0's link (reorder_box.h: "drop 0/3" loses the first transmission of
// PSN 3; "hold 0/10 2" lets two later packets pass it). The receiver places every packet
// and SACKs each out-of-order one; the sender counts a hole lost once a PSN more than
// nic.irn.reorder_tolerance beyond it is SACKed and resends the lost ones only.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "error_message.h"
#include "fabric/network.h"
#include "fabric/reorder_box.h"
#include "fabric/switch.h"
#include "fabric/topology.h"
#include "one_flow_back_to_back.h"
#include "quarter_rate_uplink.h"

namespace fabriclab::fabric {
namespace {

struct OneIrnFlow : OneFlowBackToBack {
  OneIrnFlow(std::uint32_t packets, const std::string& rules, IrnParams irn, Transport transport = Transport::irn)
      : OneFlowBackToBack(packets, rules, nic(irn, transport)) {}
  static NicConfig nic(IrnParams irn, Transport transport) {
    NicConfig n;
    n.transport = transport;
    n.irn = irn;
    return n;
  }
};

IrnParams capped(std::uint32_t cap, std::uint32_t tolerance = 0) {
  IrnParams p;
  p.bdp_cap = cap;
  p.reorder_tolerance = tolerance;
  return p;
}

// 16 packets; PSNs 3 and 7 lost, 10 overtaken by 11 and 12; a tolerance of 2. SACKs of
// 4 and 5 leave hole 3 within the tolerance; 6's makes it lost (6 > 3 + 2): resent.
// 8's and 9's find no new hole (4, 5, 6 SACKed; 7 < 9 - 2 = 7 is not); 11's makes 7 lost
// (11 > 7 + 2): resent; 11's and 12's leave 10 within the tolerance (12 - 2 = 10), and
// 10 arrives after 12. Exactly PSNs 3 and 7 go twice; nothing arrives twice. Times:
// PSN k arrives at 1.336 + 0.335 k us (a 4198-byte first frame, then 4182-byte ones,
// at 100 Gb/s, and 1 us); 6's NACK reaches h0 at 4.35 us, when it has sent up to 12, so
// the second 3 arrives after 10 (5.35 us), at 5.69 us; 11's NACK reaches h0 at 6.02 us,
// after 15 left: the second 7 comes last.
TEST(Irn, AShuffledMessageCompletesWithExactlyTheMissingPacketsResent) {
  OneIrnFlow run(16, "drop 0/3; drop 0/7; hold 0/10 2", capped(64, 2));
  EXPECT_TRUE(run.totals.all_finished);
  EXPECT_EQ(run.retransmitted(), 2u);
  EXPECT_EQ(run.rx().duplicates, 0u);
  EXPECT_EQ(run.tx().timeouts, 0u);
  EXPECT_EQ(run.net.flows()[0].delivered, 16u * 4096);
  // Placed out of order, each answered with a NACK that SACKs it: 4, 5, 6, 8, 9, 11, 12
  // and 10 behind the hole at 3, then 13, 14 and 15 behind the one at 7.
  EXPECT_EQ(run.rx().reordered_accepted, 11u);
  EXPECT_EQ(run.rx().naks_sent, 11u);
  // Held for reassembly at most: the 8 placed before the second 3 arrives (which frees
  // 4, 5, 6), then 8, 9, 10, 11, 12 and 13, 14, 15 -- 8 again -- until the second 7.
  EXPECT_EQ(run.rx().reassembly_peak, 8u);
  // Go-back-N resends from each hole on.
  OneIrnFlow gbn(16, "drop 0/3; drop 0/7; hold 0/10 2", {}, Transport::rc);
  EXPECT_TRUE(gbn.totals.all_finished);
  EXPECT_GT(gbn.retransmitted(), 2u);
}

// IRN's own rule (tolerance 0): any later SACK makes a hole lost, so a packet merely
// overtaken (PSN 2, behind 3, 4 and 5) is resent once, and its copy arrives second.
TEST(Irn, WithoutToleranceAReorderedPacketIsResentOnce) {
  OneIrnFlow run(12, "hold 0/2 3", capped(64));
  EXPECT_TRUE(run.totals.all_finished);
  EXPECT_EQ(run.retransmitted(), 1u);
  EXPECT_EQ(run.rx().duplicates, 1u);
  OneIrnFlow tolerant(12, "hold 0/2 3", capped(64, 3));
  EXPECT_EQ(tolerant.retransmitted(), 0u);
  EXPECT_EQ(tolerant.rx().duplicates, 0u);
}

// The last packet lost: no later SACK shows it, the timeout does -- RTO_low (100 us), as
// one packet (fewer than N = 3) is in flight, where go-back-N waits nic.rto (1 ms).
TEST(Irn, ATailLossWaitsForTheLowTimeout) {
  OneIrnFlow run(12, "drop 0/11", capped(64));
  EXPECT_TRUE(run.totals.all_finished);
  EXPECT_EQ(run.tx().timeouts, 1u);
  EXPECT_EQ(run.retransmitted(), 1u);
  EXPECT_GT(run.fct_us(), 100.0);
  EXPECT_LT(run.fct_us(), 110.0);
}

// PSN 3 lost twice (its first and second transmissions): 4's SACK shows it lost, its
// resend is lost too and nothing shows that but the timeout. The first check, armed at
// the first send with RTO_low (one packet in flight), finds 13 in flight at 100 us and
// re-arms RTO_high after the last progress (2's ACK, at 2.34 us + 2 x 334.56 ns): the
// timeout at about 323 us resends the one hole -- 4 to 15 were SACKed, none goes again.
TEST(Irn, ATimeoutResendsOnlyTheHolesNotSacked) {
  OneIrnFlow run(16, "drop 0/3; drop 0/3/2", capped(64));
  EXPECT_TRUE(run.totals.all_finished);
  EXPECT_EQ(run.tx().timeouts, 1u);
  EXPECT_EQ(run.retransmitted(), 2u);  // PSN 3's second and third transmissions
  EXPECT_EQ(run.rx().duplicates, 0u);
  EXPECT_GT(run.fct_us(), 320.0);
  EXPECT_LT(run.fct_us(), 330.0);
}

// The same at the end of a long flow: 3180 packets, the last leaving h0 after 335.84 +
// 3179 x 334.56 ns = 1063.90 us. While many packets are in flight each check is armed
// RTO_high after the last progress: 100 us, then about every 320 us, the one before the
// end at about 1060 us and the next at about 1380 us. The ACK that leaves one packet in
// flight brings the check forward to RTO_low: the lost last packet goes again 100 us
// after it (without that, at 1380 us).
TEST(Irn, TheTimeoutFallsToRtoLowWhenFewPacketsAreLeft) {
  OneIrnFlow run(3180, "drop 0/3179", capped(8));
  EXPECT_TRUE(run.totals.all_finished);
  EXPECT_EQ(run.tx().timeouts, 1u);
  EXPECT_GT(run.fct_us(), 1063.90 + 100);
  EXPECT_LT(run.fct_us(), 1063.90 + 110);
}

// BDP-FC: a cap of 4 packets. After each of PSNs 3..10 the QP has 4 outstanding and more
// to send, and waits for the ACK that frees one: 8 stalls (after 11 nothing is left).
TEST(Irn, TheCapBoundsThePacketsOutstandingAndCountsEachStall) {
  OneIrnFlow run(12, "", capped(4));
  EXPECT_TRUE(run.totals.all_finished);
  EXPECT_EQ(run.tx().cap_stalls, 8u);
  EXPECT_EQ(run.retransmitted(), 0u);
  EXPECT_EQ(run.net.host(0).outstanding_cap(), 4u);
  // Unset, the cap is the BDP: the longest path's base RTT -- a 4198-byte data frame out
  // (335.84 ns), a 90-byte ACK back (7.2 ns), 1 us each way: 2343.04 ns -- at 100 Gb/s is
  // 29 288 bytes, 7.15 packets of 4096: 8.
  OneIrnFlow bdp(12, "", {});
  EXPECT_EQ(bdp.net.base_rtt(), Time::from_ps(2'343'040));
  EXPECT_EQ(bdp.net.host(0).outstanding_cap(), 8u);
}

// The bitmaps go round: 200 packets under a cap of 16 (bitmaps of 64 bits, each bit
// reused three times), PSNs 70 and 150 lost on the link. The SACK of 71 shows 70 lost,
// that of 151 shows 150 lost: each resent once, nothing else.
TEST(Irn, BitmapsThatGoRoundResendOnlyTheLostPackets) {
  OneIrnFlow run(200, "drop 0/70; drop 0/150", capped(16));
  EXPECT_TRUE(run.totals.all_finished);
  EXPECT_EQ(run.retransmitted(), 2u);
  EXPECT_EQ(run.rx().duplicates, 0u);
  EXPECT_EQ(run.tx().timeouts, 0u);
  EXPECT_EQ(run.net.flows()[0].delivered, 200u * 4096);
}

TEST(Irn, AToleranceAsDeepAsTheCapIsAnError) {
  EXPECT_EQ(testing::input_error_of([] { OneIrnFlow run(12, "", capped(16, 16)); }),
            "nic.irn.reorder_tolerance = 16: expected below the BDP cap (16 packets), beyond which no SACK can ever "
            "show a hole lost");
}

TEST(Irn, AReorderWindowBesideItIsAnError) {
  NicConfig n;
  n.transport = Transport::irn;
  n.reorder_window = 32;
  EXPECT_EQ(testing::input_error_of([&] { check_nic_config(n); }),
            "nic.reorder_window / nic.reorder_timeout: expected neither with nic.transport = irn (its receiver "
            "places every packet within its bitmap, the BDP cap: nic.irn.bdp_cap)");
}

// Trimming (switch.trim): three packets through a quarter-rate uplink, the third trimmed
// (tests/fabric/trimming_test.cc works the times). IRN's receiver NACKs that PSN alone and
// the sender resends it alone: one retransmission, no duplicate (go-back-N: two, one).
// The three packets under IRN with a trim threshold of 5000 bytes, `uplink_rules` on
// leaf0's uplink.
struct TrimmedUnderIrn {
  Network net;
  bool finished;
  explicit TrimmedUnderIrn(const std::string& uplink_rules) : net(nic(), trimming(), 1) {
    three_packets_over_a_quarter_rate_uplink(net);
    if (!uplink_rules.empty()) {
      ImpairmentConfig c;
      c.rules = parse_impairment_rules(uplink_rules);
      net.add_impairment(net.switch_at(0).port(1), c);
    }
    finished = net.run(ms(10)).all_finished;
  }
  static NicConfig nic() {
    NicConfig n;
    n.transport = Transport::irn;
    return n;
  }
  static SwitchConfig trimming() {
    SwitchConfig sw;
    sw.trim_threshold = Bytes::from_count(5000);
    return sw;
  }
};

TEST(Irn, ATrimmedPacketBecomesOneNackAndOneRetransmission) {
  TrimmedUnderIrn run("");
  const Network& net = run.net;
  EXPECT_TRUE(run.finished);
  EXPECT_EQ(run.net.switch_at(0).trimmed(1), 1u);
  EXPECT_EQ(net.host_counters(1).trimmed_received, 1u);
  EXPECT_EQ(net.host_counters(1).naks_sent, 1u);
  EXPECT_EQ(net.flows()[0].retransmitted, 1u);
  EXPECT_EQ(net.host_counters(1).duplicates, 0u);
  EXPECT_EQ(net.host_counters(0).timeouts, 0u);
}

// The same three packets, PSN 1 also lost on the uplink: the header of 2 comes first and
// its NACK has 2 resent; the resent 2 is SACKed with the cumulative ACK still at 1, which
// shows hole 1 lost -- below the PSN the sender had already resent from, so it must look
// back: 1 resent too, no timeout.
TEST(Irn, AHoleBehindATrimmedPacketIsStillFound) {
  TrimmedUnderIrn run("drop 0/1");
  const Network& net = run.net;
  EXPECT_TRUE(run.finished);
  EXPECT_EQ(run.net.switch_at(0).trimmed(1), 1u);
  EXPECT_EQ(net.flows()[0].retransmitted, 2u);
  EXPECT_EQ(net.host_counters(0).timeouts, 0u);
  EXPECT_EQ(net.host_counters(1).duplicates, 0u);
}

}  // namespace
}  // namespace fabriclab::fabric
