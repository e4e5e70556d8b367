// PFC beyond the single pause: the watchdog (detection at a poll, drop / forward /
// alert) with hand-computed times, and PFC deadlock detection on a ring whose flows all
// turn the same way (a cyclic buffer dependency).
#include <gtest/gtest.h>

#include <stdexcept>

#include "core/error.h"
#include "error_message.h"
#include "fabric/network.h"
#include "fabric/topology.h"
#include "ring_of_five.h"

namespace fabriclab::fabric {
namespace {

constexpr std::int64_t kFirst = 335840, kMiddle = 334560, kProp = 1'000'000;

// Two hosts: on one link (back_to_back) or on one switch (single_switch).
void build(Network& net, TopologyKind kind) {
  TopologySpec t;
  t.kind = kind;
  t.hosts = 2;
  build_topology(net, t);
}

// h0 -> sw0 -> h1 with sw0's port to h1 paused at t = 0 for 0xFFFF quanta (335.5 us), as
// if h1 had sent a pause and nothing after it; a watchdog polling every 10 us with a
// detection time of 50 us.
struct StuckPort {
  explicit StuckPort(WatchdogAction action, bool watchdog = true) : net({}, config(action, watchdog), 1) {
    build(net, TopologyKind::single_switch);
    net.add_flow({.src = 0, .dst = 1, .bytes = 8 * 4096, .start = {}, .priority = 3});
    net.switch_at(0).port(1).pause(3, 0xffff);
  }
  static SwitchConfig config(WatchdogAction action, bool watchdog) {
    SwitchConfig c;
    c.watchdog = watchdog;
    c.wd_action = action;
    c.wd_detection = us(50);
    c.wd_restoration = us(1000);
    c.wd_poll = us(10);
    return c;
  }
  Network net;
};

TEST(PfcWatchdog, DetectsAStormAtTheFirstPollAfterTheDetectionTime) {
  StuckPort before(WatchdogAction::alert);
  before.net.run(us(49));
  EXPECT_EQ(before.net.switch_at(0).storms(1), 0u);
  StuckPort after(WatchdogAction::alert);
  after.net.run(us(51));
  EXPECT_EQ(after.net.switch_at(0).storms(1), 1u);
  EXPECT_TRUE(after.net.switch_at(0).in_storm(1, 3));
}

TEST(PfcWatchdog, ForwardSendsDespiteThePause) {
  // At the 50 us poll the queue (all 8 packets, there since ~3 us) is let go at line rate.
  StuckPort s(WatchdogAction::forward);
  ASSERT_TRUE(s.net.run(ms(1)).all_finished);
  EXPECT_EQ(s.net.flows()[0].finish.ps(), us(50).ps() + kFirst + 7 * kMiddle + kProp);
}

TEST(PfcWatchdog, DropFlushesTheQueue) {
  StuckPort s(WatchdogAction::drop);
  s.net.run(us(60));
  EXPECT_EQ(s.net.switch_at(0).watchdog_drops(1), 8u);
  EXPECT_EQ(Network::port_counters(s.net.switch_at(0), 1, us(60)).drops, 8u);  // the queue's port
  EXPECT_EQ(s.net.ledger().dropped(DropReason::watchdog), 8u);
  EXPECT_EQ(s.net.switch_at(0).queued_bytes(1), 0);
  EXPECT_EQ(s.net.ledger().lossless_drops, 0u);
}

TEST(PfcWatchdog, WithoutItThePauseRunsOut) {
  StuckPort s(WatchdogAction::drop, false);
  ASSERT_TRUE(s.net.run(ms(1)).all_finished);
  EXPECT_FALSE(s.net.switch_at(0).port(1).pause_until_xon());  // the default: pauses last their quanta
  EXPECT_EQ(s.net.flows()[0].finish.ps(), 65535 * 5120 + kFirst + 7 * kMiddle + kProp);
}

TEST(PfcDeadlock, RingDeadlockIsReportedWithItsCycle) {
  auto net = ring_of_five({});
  net->detect_deadlocks(us(100), us(500));
  const RunTotals t = net->run(ms(20));
  ASSERT_TRUE(t.deadlock);
  EXPECT_EQ(t.flows_finished, 0u);
  // Port 2 of sw0 is its link to sw1; port 3 of sw1..sw4 the link to the next switch
  // (each ring link was made after the two host links and the link from the previous
  // switch). The first check that sees queues paused for 500 us is at 600 us.
  const std::vector<std::string> cycle = {"sw0 port 2 priority 3", "sw1 port 3 priority 3", "sw2 port 3 priority 3",
                                          "sw3 port 3 priority 3", "sw4 port 3 priority 3"};
  EXPECT_EQ(net->deadlock()->cycle, cycle);
  EXPECT_EQ(net->deadlock()->detected_at, us(600));
  EXPECT_LT(net->sim().now(), ms(1));  // the run stopped there
}

TEST(PfcDeadlock, WatchdogDropBreaksIt) {
  SwitchConfig sw;
  sw.watchdog = true;
  sw.wd_action = WatchdogAction::drop;
  sw.wd_detection = us(100);
  sw.wd_restoration = us(100);
  sw.wd_poll = us(50);
  auto net = ring_of_five(sw);
  net->detect_deadlocks(us(100), us(500), /*keep_running=*/true);
  net->run(ms(2));
  std::uint64_t storms = 0, drops = 0;
  for (std::uint32_t s = 0; s < 5; ++s)
    for (std::size_t p = 0; p < net->switch_at(s).port_count(); ++p) {
      storms += net->switch_at(s).storms(p);
      drops += net->switch_at(s).watchdog_drops(p);
    }
  EXPECT_GT(storms, 0u);
  EXPECT_GT(drops, 0u);
  EXPECT_EQ(net->ledger().lossless_drops, 0u);  // the watchdog drops on purpose, not for want of buffer
  EXPECT_EQ(net->sim().now(), ms(2));           // the run went on
}

}  // namespace
}  // namespace fabriclab::fabric

namespace fabriclab::fabric {
namespace {

// h1 -> h0 back to back, h0 draining its receive buffer at 50 Gb/s (half the link).
std::unique_ptr<Network> slow_receiver(Bytes rx_buffer, std::uint64_t bytes) {
  NicConfig nic;
  nic.rx_rate = Gbps(50);
  nic.rx_buffer = rx_buffer;
  auto net = std::make_unique<Network>(nic, SwitchConfig{}, 1);
  build(*net, TopologyKind::back_to_back);
  net->add_flow({.src = 1, .dst = 0, .bytes = bytes, .start = {}, .priority = 3});
  return net;
}

TEST(NicReceiveBuffer, DrainsAtItsRate) {
  // FIRST arrives at 335840 + 1 us and takes 4178 x 8 / 50G = 668480 ps to drain; the
  // other 7 (4162 bytes: 665920 ps each) queue behind it.
  auto net = slow_receiver(MiB(1), 8 * 4096);
  ASSERT_TRUE(net->run(ms(1)).all_finished);
  EXPECT_EQ(net->flows()[0].finish.ps(), 335840 + 1'000'000 + 668480 + 7 * 665920);
  EXPECT_EQ(net->host(0).port(0).pfc_sent(), 0u);  // 1 MiB never filled
}

TEST(NicReceiveBuffer, PausesTheSenderInsteadOfDropping) {
  // 64 KiB of buffer, headroom 2 x 4178 + 2 x 12500 + 1536 + 3840 = 38732 B: the NIC
  // pauses at 26804 B. 4 MB at half rate would overflow it many times over.
  auto net = slow_receiver(KiB(64), 4'000'000);
  ASSERT_TRUE(net->run(sec(1)).all_finished);
  EXPECT_GT(net->host(0).port(0).pfc_sent(), 0u);
  EXPECT_EQ(net->host(0).rx_buffer_drops(), 0u);
  EXPECT_EQ(net->ledger().lossless_drops, 0u);
  EXPECT_LE(net->host(0).rx_buffer_peak(), KiB(64).count());
  // The drain is the bottleneck: 4 MB = 976 packets of 4096 + one of 2304, frames of
  // 4178 (FIRST), 4162 x 975 and 2370 (LAST) bytes at 50G; the run takes that plus the
  // first frame's way over the link, exactly: the pauses never let the buffer run dry.
  const std::int64_t drain = (4178 + 975 * std::int64_t{4162} + 2370) * 8 * 1000 / 50;  // ps
  EXPECT_EQ(net->flows()[0].finish.ps(), 335840 + 1'000'000 + drain);
}

// Pauses that last until their XON (switch.pfc.pause_expiry = "xon", the ns-3 RDMA
// model's PFC) change nothing where XONs come: the slow receiver's run ends at the same
// picosecond, the drain still the bottleneck.
TEST(PfcPauseExpiry, UntilXonEndsAtTheXon) {
  NicConfig nic;
  nic.rx_rate = Gbps(50);
  nic.rx_buffer = KiB(64);
  SwitchConfig sw;
  sw.pfc.pause_until_xon = true;
  Network net(nic, sw, 1);
  build(net, TopologyKind::back_to_back);
  net.add_flow({.src = 1, .dst = 0, .bytes = 4'000'000, .start = {}, .priority = 3});
  ASSERT_TRUE(net.run(sec(1)).all_finished);
  EXPECT_GT(net.host(0).port(0).pfc_sent(), 0u);
  EXPECT_EQ(net.ledger().lossless_drops, 0u);
  const std::int64_t drain = (4178 + 975 * std::int64_t{4162} + 2370) * 8 * 1000 / 50;  // ps
  EXPECT_EQ(net.flows()[0].finish.ps(), 335840 + 1'000'000 + drain);
  // The NICs took the setting from the network's PfcConfig when it was finalized.
  EXPECT_TRUE(net.host(0).port(0).pause_until_xon());
  EXPECT_TRUE(net.host(1).port(0).pause_until_xon());
}

// ... and where no XON comes, a pause outlasts its quanta: the stuck port of the watchdog
// tests (0xFFFF quanta at t = 0, 335.5 us at 802.1Qbb's reading, after which the flow
// finishes) is still paused at 1 ms, the whole millisecond, its flow unfinished.
TEST(PfcPauseExpiry, UntilXonOutlastsItsQuanta) {
  SwitchConfig sw;
  sw.pfc.pause_until_xon = true;
  Network net({}, sw, 1);
  build(net, TopologyKind::single_switch);
  net.add_flow({.src = 0, .dst = 1, .bytes = 8 * 4096, .start = {}, .priority = 3});
  net.switch_at(0).port(1).set_pause_until_xon(true);  // as the network's finalize does
  net.switch_at(0).port(1).pause(3, 0xffff);
  EXPECT_FALSE(net.run(ms(1)).all_finished);
  EXPECT_EQ(Network::port_counters(net.switch_at(0), 1, ms(1)).paused, ms(1));
  EXPECT_TRUE(net.switch_at(0).port(1).paused(3));
  // The switch's other port and the hosts' took the setting at finalize, as port 1 would.
  EXPECT_TRUE(net.switch_at(0).port(0).pause_until_xon());
  EXPECT_TRUE(net.host(1).port(0).pause_until_xon());
}

// The fill of an ingress port to its first pause (switch.mmu.reserve_scope: with a reserve
// per priority group or one per port). sw0's port to h1 is paused on priorities 3 and 4 at
// t = 0, so nothing leaves; h0 sends 4 packets on priority 4 (its NIC serves it first),
// then 10 on priority 3, back to back (FIRST 4178 bytes, then 4162: 4198 and 4182 on the
// wire, 80 ps a byte). Reserve 20000 bytes, static threshold 10000: a group pauses when
// its bytes beyond the reserve would pass 10000.
//   per group: priority 3 has its own 20000 bytes; its 8th packet (12th of all) would
//   take its shared part to 13312: XOFF when it is in, at (16744 + 33472) x 80 ps + 1 us
//   = 5017280 ps.
//   per port: priority 4's 16664 bytes leave 3336 of the reserve; priority 3's shared
//   part is 842, 5004, 9166, then 13328 at its 4th packet (8th of all): XOFF at
//   (16744 + 16744) x 80 + 1 us = 3679040 ps.
// The pause (84 wire bytes) reaches h0 6720 ps + 1 us later, and holds it to the end (20
// us; 0xFFFF quanta are 335 us).
struct Fill {
  PortCounters h0;          // h0's port at 20 us
  std::uint64_t to_h0 = 0;  // bytes sw0 sent h0 (the pause)
};
Fill fill_to_the_pause(SwitchConfig sw, const WireFormat& wire = {}) {
  sw.reserve = Bytes::from_count(20000);
  sw.threshold_mode = ThresholdMode::static_th;
  sw.static_th = Bytes::from_count(10000);
  sw.pfc.lossless = (1u << 3) | (1u << 4);
  Network net({}, sw, 1);
  net.set_wire_format(wire);
  build(net, TopologyKind::single_switch);
  net.add_flow({.src = 0, .dst = 1, .bytes = 4 * 4096, .start = {}, .priority = 4});
  net.add_flow({.src = 0, .dst = 1, .bytes = 10 * 4096, .start = {}, .priority = 3});
  net.switch_at(0).port(1).set_pause_until_xon(sw.pfc.pause_until_xon);  // as the network's finalize does
  net.switch_at(0).port(1).pause(3, 0xffff);
  net.switch_at(0).port(1).pause(4, 0xffff);
  net.run(us(20));
  return {Network::port_counters(net.host(0), 0, us(20)), net.switch_at(0).port(0).tx_bytes()};
}

TEST(SwitchMmu, AReservePerPortPausesSoonerThanOnePerGroup) {
  for (bool per_port : {false, true}) {
    SwitchConfig sw;
    sw.reserve_per_port = per_port;
    const PortCounters h0 = fill_to_the_pause(sw).h0;
    const std::int64_t xoff = per_port ? 3'679'040 : 5'017'280;
    EXPECT_EQ(h0.pfc_pause_received, 1u) << per_port;
    EXPECT_EQ(h0.paused.ps(), us(20).ps() - (xoff + 6720 + 1'000'000)) << per_port;
  }
}

// The pause-refresh check's error for pauses of `quanta` in `wire`, or "no error": a
// 4096-byte flow through one switch.
std::string refresh_check(std::uint16_t quanta, const WireFormat& wire) {
  SwitchConfig sw;
  sw.pfc.pause_quanta = quanta;
  Network net({}, sw, 1);
  net.set_wire_format(wire);
  build(net, TopologyKind::single_switch);
  net.add_flow({.src = 0, .dst = 1, .bytes = 4096, .start = {}, .priority = 3});
  return testing::input_error_of([&] {
    if (!net.run(ms(1)).all_finished) throw std::logic_error("the flow did not finish");
  });
}

// The pause-refresh check counts frames in the network's wire format: 134 quanta at 100
// Gb/s are refreshed every 134 x 2560 = 343040 ps, enough for a largest frame and a PFC
// frame with 20 bytes of gap ((4178 + 20 + 64 + 20) x 80 = 342560 ps), not with 1000
// ((4178 + 1000 + 64 + 1000) x 80 = 499360 ps).
TEST(SwitchMmu, PauseRefreshIsCheckedInTheWireFormat) {
  EXPECT_EQ(refresh_check(134, {.gap_bytes = 20}), "no error");
  EXPECT_NE(refresh_check(134, {.gap_bytes = 1000}).find("(499.36ns): raise switch.pfc.pause_quanta"),
            std::string::npos);
}

// wire.pfc_frame_bytes: the ns-3 RDMA model's 43-byte PFC frame (63 bytes on the wire
// with the 20 of gap) reaches h0 5040 ps after it starts, not 6720: the per-group run of
// AReservePerPortPausesSoonerThanOnePerGroup, XOFF at 5017280 ps, h0 paused 1680 ps
// longer.
TEST(SwitchMmu, ThePfcFrameSizeIsTheWireFormats) {
  for (std::uint32_t bytes : {64u, 43u}) {
    const Fill f = fill_to_the_pause({}, {.pfc_frame_bytes = bytes});
    EXPECT_EQ(f.h0.pfc_pause_received, 1u) << bytes;
    EXPECT_EQ(f.h0.paused.ps(), us(20).ps() - (5'017'280 + (bytes + 20) * 80 + 1'000'000)) << bytes;
    EXPECT_EQ(f.to_h0, bytes) << bytes;  // all the switch sent h0
  }
}

// switch.pfc.pause_refresh = "off" (the ns-3 RDMA model's PFC, with pauses that last to
// their XON): one pause per XOFF, each ended by its XON. The slow receiver with pauses
// of 134 quanta (686 ns at 100G, refreshed every 343 ns with refresh on): its XOFFs last
// longer than that (8192 bytes of xon_offset drain at 50G in 1.3 us), so with refresh
// there are more pauses than XONs; without, exactly as many. Either way the drain is
// the bottleneck and the run ends at the same picosecond.
TEST(PfcPauseRefresh, OffSendsOnePausePerXoff) {
  std::int64_t finish[2] = {};
  for (bool refresh : {true, false}) {
    NicConfig nic;
    nic.rx_rate = Gbps(50);
    nic.rx_buffer = KiB(64);
    SwitchConfig sw;
    sw.pfc.pause_until_xon = true;
    sw.pfc.pause_quanta = 134;
    sw.pfc.refresh = refresh;
    Network net(nic, sw, 1);
    build(net, TopologyKind::back_to_back);
    net.add_flow({.src = 1, .dst = 0, .bytes = 4'000'000, .start = {}, .priority = 3});
    ASSERT_TRUE(net.run(sec(1)).all_finished);
    const PortCounters c = Network::port_counters(net.host(0), 0, sec(1));  // pfc_pause_sent: XONs too
    ASSERT_GT(c.pfc_resume_sent, 0u);
    if (refresh) EXPECT_GT(c.pfc_pause_sent, 2 * c.pfc_resume_sent);
    else EXPECT_EQ(c.pfc_pause_sent, 2 * c.pfc_resume_sent);
    EXPECT_EQ(net.ledger().lossless_drops, 0u);
    finish[refresh] = net.flows()[0].finish.ps();
  }
  EXPECT_EQ(finish[0], finish[1]);
}

// ... and the switch's: the per-group run of AReservePerPortPausesSoonerThanOnePerGroup
// (XOFF at 5017280 ps, held to the end) with pauses of 134 quanta that last to their XON.
// Refreshed every 134 x 2560 / 2 = 343040 ps, the k-th pause leaves at 5017280 + 343040 k
// and reaches h0 1006720 ps later: by 20 us, k = 0..40 (13976000 / 343040 = 40.7), 41
// pauses; without refresh, the one.
TEST(PfcPauseRefresh, OffSendsTheSwitchsPauseOnce) {
  for (bool refresh : {true, false}) {
    SwitchConfig sw;
    sw.pfc.pause_quanta = 134;
    sw.pfc.pause_until_xon = true;
    sw.pfc.refresh = refresh;
    const PortCounters h0 = fill_to_the_pause(sw).h0;
    EXPECT_EQ(h0.pfc_pause_received, refresh ? 41u : 1u) << refresh;
    EXPECT_EQ(h0.paused.ps(), us(20).ps() - (5'017'280 + 6720 + 1'000'000)) << refresh;
  }
}

// The watchdog ends a storm when no pause has come for the restoration time; without
// refreshes none comes while a pause holds, so the storm lasts as long as the pause: the
// stuck port (paused at t = 0, no XON ever) has one storm in 1 ms, from 50 us on, not one
// every detection + restoration time.
TEST(PfcPauseRefresh, OffTheWatchdogsStormLastsAsLongAsThePause) {
  SwitchConfig sw = StuckPort::config(WatchdogAction::alert, true);
  sw.wd_restoration = us(100);
  sw.pfc.pause_until_xon = true;
  sw.pfc.refresh = false;
  Network net({}, sw, 1);
  build(net, TopologyKind::single_switch);
  net.add_flow({.src = 0, .dst = 1, .bytes = 8 * 4096, .start = {}, .priority = 3});
  net.switch_at(0).port(1).set_pause_until_xon(true);
  net.switch_at(0).port(1).pause(3, 0xffff);
  net.run(ms(1));
  EXPECT_EQ(net.switch_at(0).storms(1), 1u);
  EXPECT_TRUE(net.switch_at(0).in_storm(1, 3));
}

// Without a refresh, a pause that expires by its quanta would let the sender go while XOFF
// holds: refused, naming both keys.
TEST(PfcPauseRefresh, OffNeedsPausesThatLastToTheirXon) {
  SwitchConfig sw;
  sw.pfc.refresh = false;
  Network net({}, sw, 1);
  build(net, TopologyKind::single_switch);
  net.add_flow({.src = 0, .dst = 1, .bytes = 4096, .start = {}, .priority = 3});
  EXPECT_EQ(testing::input_error_of([&] { net.run(ms(1)); }),
            "switch sw0: switch.pfc.pause_refresh = \"off\" needs switch.pfc.pause_expiry = \"xon\": a pause that "
            "is not refreshed would expire while XOFF holds");
}

// switch.mmu.release_at = "start" (the ns-3 RDMA model frees a packet's buffer on
// dequeue): the same run, h0 -> h1 over UC (no ACKs share sw0's port to h0), sw0's port
// to h1 paused for 20 us at first so that h0 is paused and resumed once. The releases
// come in the same order, each a frame time sooner; the XON leaves when the release of
// the same frame brings the group low enough -- as that frame (a MIDDLE, 4162 bytes, 4182
// on the wire: 334560 ps) starts instead of when it ends. So h0 is resumed, and every
// packet after goes, exactly 334560 ps sooner.
TEST(SwitchMmu, ReleasedAtTheStartTheXonLeavesAFrameSooner) {
  Time xon[2], paused[2];
  for (bool at_start : {false, true}) {
    NicConfig nic;
    nic.transport = Transport::uc;
    SwitchConfig sw;
    sw.threshold_mode = ThresholdMode::static_th;
    sw.static_th = Bytes::from_count(20000);
    sw.release_at_start = at_start;
    Network net(nic, sw, 1);
    build(net, TopologyKind::single_switch);
    net.add_flow({.src = 0, .dst = 1, .bytes = 40 * 4096, .start = {}, .priority = 3});
    net.switch_at(0).port(1).pause(3, 0x1000);  // 4096 x 5.12 ns = 20.97 us at 100G
    ASSERT_TRUE(net.run(ms(1)).all_finished);
    const PortCounters h0 = Network::port_counters(net.host(0), 0, ms(1));
    EXPECT_EQ(h0.pfc_pause_received, 2u) << at_start;  // one XOFF, one XON
    EXPECT_EQ(h0.pfc_resume_received, 1u) << at_start;
    xon[at_start] = net.host(0).port(0).last_pause_received(3);
    paused[at_start] = h0.paused;
  }
  EXPECT_EQ((xon[0] - xon[1]).ps(), 334560);
  EXPECT_EQ((paused[0] - paused[1]).ps(), 334560);
}

// ... and its PFC frame in the format's size: with no gap, 132 quanta are refreshed every
// 132 x 2560 = 337920 ps, enough for a largest frame and a 43-byte PFC frame ((4178 + 43)
// x 80 = 337680 ps), not a 64-byte one ((4178 + 64) x 80 = 339360 ps).
TEST(SwitchMmu, PauseRefreshCountsThePfcFrameInItsSize) {
  EXPECT_EQ(refresh_check(132, {.gap_bytes = 0, .pfc_frame_bytes = 43}), "no error");
  EXPECT_NE(refresh_check(132, {.gap_bytes = 0, .pfc_frame_bytes = 64})
                .find("less than a largest frame plus a PFC frame (339.36ns)"),
            std::string::npos);
}

TEST(NicReceiveBuffer, TooSmallForItsHeadroomIsRefused) {
  auto net = slow_receiver(KiB(16), 4096);
  EXPECT_THROW(net->run(ms(1)), InputError);
}

}  // namespace
}  // namespace fabriclab::fabric

namespace fabriclab::fabric {
namespace {

TEST(PfcWatchdog, AStormNeedsAFreshDetectionWindowAfterItEnds) {
  // A deadlocked ring watched in alert mode with a restoration time (100 us) shorter than
  // the pause refresh (167 us): a storm may end and be declared again, but only after
  // another unbroken 100 us of pause, not at the next 10 us poll.
  SwitchConfig sw;
  sw.watchdog = true;
  sw.wd_action = WatchdogAction::alert;
  sw.wd_detection = us(100);
  sw.wd_restoration = us(100);
  sw.wd_poll = us(10);
  auto net = ring_of_five(sw);
  net->run(ms(2));
  for (std::uint32_t s = 0; s < 5; ++s)
    for (std::size_t p = 0; p < net->switch_at(s).port_count(); ++p)
      EXPECT_LE(net->switch_at(s).storms(p), 2000u / 100u) << net->switch_at(s).name() << " port " << p;
}

TEST(PfcHairpin, XonSentOnTheLinkAFrameJustLeftDoesNotCollide) {
  // s2 is told to send h1's packets back where they came from: frames leave s2 on the
  // port they arrived on, and releasing their buffer resumes that same port's upstream
  // (an XON through the port that just finished a frame). With 8 KiB thresholds the
  // two directions of the one link pause each other: a deadlock of two queues. Freed as
  // a frame starts (switch.mmu.release_at = "start"), the XON queues behind that frame on
  // the wire: the same deadlock.
  for (bool at_start : {false, true}) {
    SwitchConfig sw;
    sw.threshold_mode = ThresholdMode::static_th;
    sw.static_th = KiB(8);
    sw.pfc.pause_quanta = 1000;
    sw.release_at_start = at_start;
    Network net({}, sw, 1);
    TopologySpec t;
    t.kind = TopologyKind::two_switches;
    t.s1_hosts = t.s2_hosts = 1;
    build_topology(net, t);
    net.add_flow({.src = 0, .dst = 1, .bytes = 4'000'000, .start = {}, .priority = 3});
    net.set_static_route(1, 1, {1});
    net.detect_deadlocks(us(100), us(500));
    const RunTotals r = net.run(ms(5));  // conservation and leak checks run inside
    EXPECT_EQ(r.flows_finished, 0u);
    ASSERT_TRUE(r.deadlock);
    const std::vector<std::string> cycle = {"s1 port 1 priority 3", "s2 port 1 priority 3"};
    EXPECT_EQ(net.deadlock()->cycle, cycle);
  }
}

}  // namespace
}  // namespace fabriclab::fabric
