// Packet trimming (switch.trim): worked by hand on three packets of one flow, h0 -> h1
// through leaf0's one uplink at 25 Gb/s, hosts at 100 Gb/s. The packets leave h0 back to
// back (frames 4178, 4162, 4162 bytes; 4198, 4182, 4182 on the wire: 335.84 and 334.56 ns
// apart at 100 Gb/s); at 25 Gb/s the first takes 1343.36 ns on the uplink. So the first
// goes straight onto the uplink, the second waits (its queue 4162 bytes) and the third
// arrives 669.12 ns after the first, the second still waiting: 4162 + 4162 = 8324 bytes
// with it, over a threshold of 5000: trimmed, the only one. Its header (66 bytes) jumps
// the second on the trim priority and reaches h1 first: a gap at PSN 1, which h1 NAKs;
// go-back-N resends PSNs 1 and 2 (the second copy of PSN 1 a duplicate at h1). Long
// before they come back the uplink is idle: nothing else is trimmed.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "error_message.h"
#include "fabric/network.h"
#include "fabric/switch.h"
#include "fabric/topology.h"
#include "quarter_rate_uplink.h"

namespace fabriclab::fabric {
namespace {

struct ThreePacketsOverOneUplink {
  Network net;
  RunTotals totals;
  ThreePacketsOverOneUplink(const SwitchConfig& sw, Transport transport) : net(nic(transport), sw, 1) {
    three_packets_over_a_quarter_rate_uplink(net);
    totals = net.run(ms(10));
  }
  static NicConfig nic(Transport transport) {
    NicConfig n;
    n.transport = transport;
    return n;
  }
  std::uint64_t trimmed_at_uplink() { return net.switch_at(0).trimmed(1); }
  std::uint64_t drops_at_leaf0() {
    std::uint64_t d = 0;
    for (std::size_t p = 0; p < net.switch_at(0).port_count(); ++p) d += net.switch_at(0).drops(p);
    return d;
  }
};

SwitchConfig trimming(std::int64_t threshold) {
  SwitchConfig s;
  s.trim_threshold = Bytes::from_count(threshold);
  return s;
}

TEST(Trimming, AQueueOverTheThresholdTrimsAndTheReceiverNaksAtOnce) {
  ThreePacketsOverOneUplink run(trimming(5000), Transport::rc);
  EXPECT_TRUE(run.totals.all_finished);
  EXPECT_EQ(run.trimmed_at_uplink(), 1u);
  EXPECT_EQ(run.net.ledger().data_packets_trimmed, 1u);
  EXPECT_EQ(run.net.ledger().data_bytes_trimmed, 4096u);
  const HostCounters rx = run.net.host_counters(1);
  EXPECT_EQ(rx.trimmed_received, 1u);
  EXPECT_EQ(rx.naks_sent, 1u);
  EXPECT_EQ(rx.duplicates, 1u);
  EXPECT_EQ(rx.timeouts + run.net.host_counters(0).timeouts, 0u);
  EXPECT_EQ(run.net.flows()[0].retransmitted, 2u);
  EXPECT_EQ(run.net.flows()[0].delivered, 3u * 4096);
  EXPECT_EQ(run.drops_at_leaf0(), 0u);
}

TEST(Trimming, BelowTheThresholdNothingIsTrimmed) {
  // 8324 bytes with the third packet: a threshold of that keeps it whole.
  ThreePacketsOverOneUplink run(trimming(8324), Transport::rc);
  EXPECT_TRUE(run.totals.all_finished);
  EXPECT_EQ(run.trimmed_at_uplink(), 0u);
  EXPECT_EQ(run.net.host_counters(1).naks_sent, 0u);
  EXPECT_EQ(run.net.flows()[0].retransmitted, 0u);
}

TEST(Trimming, UnreliableConnectionsLoseWhatWasTrimmed) {
  ThreePacketsOverOneUplink run(trimming(5000), Transport::uc);
  EXPECT_FALSE(run.totals.all_finished);
  EXPECT_EQ(run.trimmed_at_uplink(), 1u);
  EXPECT_EQ(run.net.host_counters(1).trimmed_received, 1u);
  // PSN 0, then the third's header, then PSN 1: the message lost its last packet.
  EXPECT_EQ(run.net.flows()[0].delivered, 2u * 4096);
}

// The buffer, not the threshold: a static limit of 10000 bytes per ingress group holds
// the first two (4178 + 4162 = 8340; the first's bytes stay until its last bit leaves)
// but not the third (12502), on a lossy priority (PFC off). Without trimming it is
// dropped; with it, its header (8406) fits.
TEST(Trimming, APacketTheBufferRefusesIsTrimmedInsteadOfDropped) {
  SwitchConfig sw = trimming(1 << 20);
  sw.threshold_mode = ThresholdMode::static_th;
  sw.static_th = Bytes::from_count(10000);
  sw.pfc.enabled = false;
  ThreePacketsOverOneUplink trimmed(sw, Transport::rc);
  EXPECT_EQ(trimmed.trimmed_at_uplink(), 1u);
  EXPECT_EQ(trimmed.drops_at_leaf0(), 0u);
  EXPECT_EQ(trimmed.net.host_counters(1).naks_sent, 1u);
  EXPECT_EQ(trimmed.net.host_counters(0).timeouts, 0u);
  sw.trim_threshold = Bytes::from_count(0);
  ThreePacketsOverOneUplink dropped(sw, Transport::rc);
  EXPECT_EQ(dropped.trimmed_at_uplink(), 0u);
  // The lost last packet leaves no gap to NAK, and no ACK came yet (one per 8 packets):
  // after the timeout all three go again, and the third meets the same full buffer;
  // the first two, duplicates now, are acknowledged, so the second timeout resends the
  // third alone, which passes.
  EXPECT_EQ(dropped.drops_at_leaf0(), 2u);
  EXPECT_EQ(dropped.net.host_counters(0).timeouts, 2u);
  EXPECT_TRUE(dropped.totals.all_finished);
}

TEST(Trimming, HeadersNeedAStrictPriority) {
  SwitchConfig sw = trimming(5000);
  sw.scheduler = Scheduler::dwrr;
  sw.strict_classes = 0x80;
  sw.trim_priority = 6;
  EXPECT_EQ(testing::input_error_of([&] { check_switch_config(sw); }),
            "switch.trim.priority = 6: expected a priority the DWRR scheduler serves strictly (switch.dwrr.strict), "
            "since trimmed headers go before the data they stand for");
  sw.trim_priority = 7;
  EXPECT_NO_THROW(check_switch_config(sw));
}

}  // namespace
}  // namespace fabriclab::fabric
