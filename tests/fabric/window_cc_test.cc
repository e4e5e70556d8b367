// The policies that read ACKs (DCTCP, TIMELY) on their own, fed ACKs by hand, every rate,
// alpha and window worked out by hand from the rules in cc/dctcp.h and cc/timely.h; then
// the NIC's part for them on two hosts: the RTT sample, the base RTT, the window.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "error_message.h"
#include "fabric/rate_recorder.h"
#include "fabric/cc/dctcp.h"
#include "fabric/cc/swift.h"
#include "fabric/cc/timely.h"
#include "fabric/network.h"
#include "fabric/topology.h"

namespace fabriclab::fabric {
namespace {

constexpr std::int64_t G = 1'000'000'000, M = 1'000'000;

AckInfo ack(std::uint32_t acked, std::uint32_t next, bool echo = false, Time rtt = Time::max()) {
  AckInfo a;
  a.acked = acked;
  a.next_psn = next;
  a.ecn_echo = echo;
  a.rtt = rtt;
  return a;
}

// 100 Gb/s, base RTT 10 us, MTU 4096: BDP = 100e9 x 10e-6 / 8 = 125 000 bytes; one MTU per
// base RTT = 4096 x 8 / 10 us = 3.2768 Gb/s of additive increase.
struct DctcpBench {
  Simulator sim;
  RateRecorder rec;
  DctcpParams p;
  Dctcp cc;
  explicit DctcpBench(DctcpParams params = {})
      : p(std::move(params)), cc(p, CcContext{sim, Gbps(100), us(10), 4096, &rec, 3}) {}
};

TEST(Dctcp, CutsOncePerWindowAndUpdatesAlphaOncePerRoundTrip) {
  DctcpBench b;
  EXPECT_EQ(b.cc.rate().bps(), 100 * G);
  EXPECT_EQ(b.cc.window(), 125'000u);
  EXPECT_DOUBLE_EQ(b.cc.alpha(Time()), 1.0);
  // First ACK: the first round trip starts (U = 8, B = 8 + 1); at line rate, no increase.
  b.cc.on_ack(Time(), ack(1, 8));
  EXPECT_EQ(b.cc.rate().bps(), 100 * G);
  // An echo: cut by alpha/2 = 1/2, CWR until an ACK passes PSN 9.
  b.cc.on_ack(Time(), ack(2, 9, true));
  EXPECT_EQ(b.cc.rate().bps(), 50 * G);
  EXPECT_EQ(b.cc.window(), 62'500u);
  EXPECT_TRUE(b.cc.in_cwr());
  // A second echo inside the window: no second cut.
  b.cc.on_ack(Time(), ack(3, 9, true));
  EXPECT_EQ(b.cc.rate().bps(), 50 * G);
  // acked 9 > U = 8: alpha = 15/16 x 1 + 1/16 x 2/9; U = 12, B = 12 - 9 + 1 = 4. Still in
  // CWR (9 is not past H = 9): no increase.
  b.cc.on_ack(Time(), ack(9, 12));
  const double a1 = 15.0 / 16 + (2.0 / 9) / 16;
  EXPECT_DOUBLE_EQ(b.cc.alpha(Time()), a1);
  EXPECT_EQ(b.cc.rate().bps(), 50 * G);
  // acked 10 > H: CWR ends; no round trip completed, no increase.
  b.cc.on_ack(Time(), ack(10, 13));
  EXPECT_FALSE(b.cc.in_cwr());
  EXPECT_EQ(b.cc.rate().bps(), 50 * G);
  // acked 13 > U = 12, with an echo: alpha = 15/16 a1 + 1/16 x 1/4, then the cut by it.
  b.cc.on_ack(Time(), ack(13, 16, true));
  const double a2 = 15.0 / 16 * a1 + 0.25 / 16;
  EXPECT_DOUBLE_EQ(b.cc.alpha(Time()), a2);
  const auto r2 = static_cast<std::int64_t>(50e9 * (1 - a2 / 2));  // 27.3112 Gb/s
  EXPECT_EQ(b.cc.rate().bps(), r2);
  // acked 17 > U = 16 and > H = 16, no echo: alpha decays with F = 0; out of CWR, the
  // round trip's additive increase of one MTU per base RTT.
  b.rec.raised.clear();
  b.cc.on_ack(Time(), ack(17, 20));
  EXPECT_DOUBLE_EQ(b.cc.alpha(Time()), 15.0 / 16 * a2);
  EXPECT_EQ(b.cc.rate().bps(), r2 + 3'276'800'000);
  EXPECT_EQ(b.rec.raised, std::vector<std::uint32_t>{3});
  EXPECT_EQ(b.cc.window(), static_cast<std::uint64_t>(125'000 * (r2 + 3'276'800'000) / (100 * G)));
}

TEST(Dctcp, RatesStayBetweenTheFloorAndTheLineAndTheNs3PresetAddsItsStep) {
  DctcpParams p = DctcpParams::preset_named("ns3");
  EXPECT_EQ(p.rate_ai.bps(), 615 * M);
  p.min_rate = Gbps(30);
  DctcpBench b(p);
  b.cc.on_ack(Time(), ack(1, 4));
  b.cc.on_ack(Time(), ack(2, 5, true));  // 100 -> 50 Gb/s
  EXPECT_EQ(b.cc.rate().bps(), 50 * G);
  b.cc.on_ack(Time(), ack(6, 9, true));  // out of CWR (6 > 5), a round trip: alpha ~ 0.97, cut to the floor
  EXPECT_EQ(b.cc.rate().bps(), 30 * G);
  b.cc.on_ack(Time(), ack(10, 12));  // out of CWR, a round trip: + 615 Mb/s
  EXPECT_EQ(b.cc.rate().bps(), 30 * G + 615 * M);
  EXPECT_EQ(testing::input_error_of([] { DctcpParams::preset_named("linux"); }),
            "unknown nic.dctcp.preset 'linux' (expected: default, ns3)");
  DctcpParams off;
  off.window = CcWindow::off;
  DctcpBench w(off);
  EXPECT_EQ(w.cc.window(), 0u);
}

struct TimelyBench {
  Simulator sim;
  RateRecorder rec;
  TimelyParams p;
  Timely cc;
  std::uint32_t psn = 0;
  explicit TimelyBench(TimelyParams params)
      : p(std::move(params)), cc(p, CcContext{sim, Gbps(100), us(10), 4096, &rec, 5}) {}
  // An ACK of the next PSN with an RTT sample of `rtt_ns`.
  void sample(std::int64_t rtt_ns) {
    ++psn;
    cc.on_ack(Time(), ack(psn, psn + 4, false, Time::from_ps(rtt_ns * 1000)));
  }
};

// The paper: alpha 0.875, beta 0.8, T_low 50 us, T_high 500 us, min RTT 20 us, delta 10
// Mb/s, HAI at the 5th gradient <= 0 in a row, by 5 delta.
TEST(Timely, PaperGradientDecreaseAdditiveStepsAndHaiAfterFiveNegativeGradients) {
  TimelyBench b(TimelyParams::preset_named("paper"));
  b.sample(100'000);  // the first sample only sets prev
  EXPECT_EQ(b.cc.rate().bps(), 100 * G);
  EXPECT_EQ(b.cc.rtt(), us(100));
  // rtt_diff = 0.875 x 20 us = 17.5 us; gradient 0.875: R x (1 - 0.8 x 0.875) = 30 Gb/s.
  b.sample(120'000);
  EXPECT_DOUBLE_EQ(b.cc.rtt_diff_ps(), 17.5e6);
  EXPECT_NEAR(static_cast<double>(b.cc.rate().bps()), static_cast<double>(30 * G), 1);
  const std::int64_t r0 = b.cc.rate().bps();
  // Falling RTTs: rtt_diff = 0.125 x 17.5 - 0.875 x 10 = -6.5625 us, gradient < 0 from
  // here on: + delta four times, then the 5th and 6th in a row + 5 delta.
  std::int64_t expect = r0;
  const std::int64_t steps[] = {10 * M, 10 * M, 10 * M, 10 * M, 50 * M, 50 * M};
  const std::int64_t rtts[] = {110'000, 100'000, 90'000, 80'000, 70'000, 60'000};
  for (int k = 0; k < 6; ++k) {
    b.sample(rtts[k]);
    expect += steps[k];
    EXPECT_EQ(b.cc.rate().bps(), expect) << rtts[k];
  }
  EXPECT_EQ(b.cc.streak(), 6u);
  EXPECT_EQ(expect, r0 + 4 * 10 * M + 2 * 50 * M);
  // Below T_low: + delta (the paper's HAI is the gradient branch's); the gradient was
  // still negative, so the count goes on.
  b.sample(40'000);
  expect += 10 * M;
  EXPECT_EQ(b.cc.rate().bps(), expect);
  EXPECT_EQ(b.cc.streak(), 7u);
  // Above T_high: R x (1 - 0.8 (1 - 500/600)) = R x 13/15; a positive gradient ends the count.
  b.sample(600'000);
  EXPECT_NEAR(static_cast<double>(b.cc.rate().bps()), static_cast<double>(static_cast<double>(expect) * 13 / 15), 1);
  EXPECT_EQ(b.cc.streak(), 0u);
}

// The HPCC ns-3 model's reading: one update per round trip (the first ACK past the PSN
// sent at the last update), HAI (500 Mb/s) after 5 increases of either branch.
TEST(Timely, Ns3UpdatesOncePerRoundTripAndCountsEveryIncreaseTowardHai) {
  TimelyBench b(TimelyParams::preset_named("ns3"));
  const auto at = [&](std::uint32_t acked, std::uint32_t next, std::int64_t rtt_ns) {
    b.cc.on_ack(Time(), ack(acked, next, false, Time::from_ps(rtt_ns * 1000)));
  };
  at(1, 10, 30'000);   // the first: U = 10, prev = 30 us
  at(5, 11, 999'000);  // 5 <= U: ignored
  EXPECT_EQ(b.cc.rate().bps(), 100 * G);
  EXPECT_EQ(b.cc.rtt(), us(30));
  at(11, 20, 600'000);  // above T_high: x 13/15
  const auto r0 = static_cast<std::int64_t>(100e9 * (1 - 0.8 * (1 - 500.0 / 600)));
  EXPECT_NEAR(static_cast<double>(b.cc.rate().bps()), static_cast<double>(r0), 1);
  std::int64_t expect = b.cc.rate().bps();
  std::uint32_t acked = 20;      // each ACK below passes the PSN sent at the update before (acked + 5)
  for (int k = 0; k < 6; ++k) {  // below T_low: + 100 Mb/s five times, then + 500 Mb/s
    acked += 10;
    at(acked, acked + 5, 40'000);
    expect += k < 5 ? 100 * M : 500 * M;
    EXPECT_EQ(b.cc.rate().bps(), expect) << k;
  }
  // A decrease restarts the count: the next increase is + 100 Mb/s again.
  at(acked + 10, acked + 15, 600'000);
  expect = static_cast<std::int64_t>(static_cast<double>(expect) * (1 - 0.8 * (1 - 500.0 / 600)));
  EXPECT_NEAR(static_cast<double>(b.cc.rate().bps()), static_cast<double>(expect), 1);
  expect = b.cc.rate().bps();
  at(acked + 20, acked + 25, 40'000);
  EXPECT_EQ(b.cc.rate().bps(), expect + 100 * M);
}

TEST(Timely, TheRateStaysWithinTheFloorAndTheLine) {
  TimelyParams p = TimelyParams::preset_named("paper");
  TimelyBench b(p);
  b.sample(100'000);
  b.sample(40'000);  // below T_low at line rate: stays at the line
  EXPECT_EQ(b.cc.rate().bps(), 100 * G);
  EXPECT_TRUE(b.rec.raised.empty());
  b.sample(400'000);  // gradient 0.875 x 360 / 20 = 15.75: factor max(0, 1 - 12.6) = 0 -> the floor
  EXPECT_EQ(b.cc.rate().bps(), 10 * M);
  p.t_high = us(40);
  EXPECT_EQ(testing::input_error_of([&] { p.validate(); }),
            "nic.timely.t_high (40us) must not be below nic.timely.t_low (50us)");
}

// Two hosts on one 100G link of 1 us: a WRITE ONLY of 4096 bytes is 335 840 ps on the
// wire, its ACK 7 200 ps (network_test.cc), so the unloaded RTT is
// 335 840 + 1 000 000 + 7 200 + 1 000 000 = 2 343 040 ps.
constexpr std::int64_t kBaseRtt = 2'343'040;

TopologySpec two_hosts() {
  TopologySpec t;
  t.kind = TopologyKind::back_to_back;
  t.hosts = 2;
  return t;
}

// One 4096-byte flow from h0 to h1 on two hosts of `kind`, run to its end (its sender's
// last ACK: nic.flow_end is set so), and the policy of its one sending QP.
struct OnePacket {
  OnePacket(NicConfig nic, TopologyKind kind, SwitchConfig sw = {}) : net(with_acked_end(nic), sw, 1) {
    TopologySpec t = two_hosts();
    t.kind = kind;
    build_topology(net, t);
    net.add_flow({.src = 0, .dst = 1, .bytes = 4096, .start = {}});
    finished = net.run(ms(1)).all_finished;
  }
  static NicConfig with_acked_end(NicConfig nic) {
    nic.flow_end = FlowEnd::acked;
    return nic;
  }
  // The sending QP's policy and bytes acknowledged (nullptr unless there is exactly one).
  std::pair<const CongestionControl*, std::uint64_t> sender() {
    std::pair<const CongestionControl*, std::uint64_t> one{nullptr, 0};
    int qps = 0;
    net.host(0).for_each_send_qp([&](std::uint32_t, std::uint32_t, const CongestionControl& cc, std::uint64_t acked) {
      one = {&cc, acked};
      ++qps;
    });
    return qps == 1 ? one : std::pair<const CongestionControl*, std::uint64_t>{nullptr, 0};
  }
  Network net;
  bool finished = false;
};

TEST(WindowNic, BaseRttIsTheLongestPathsAndTheRttSampleMatchesIt) {
  NicConfig nic;
  nic.congestion_control = "timely";
  OnePacket one(nic, TopologyKind::back_to_back);
  ASSERT_TRUE(one.finished);
  EXPECT_EQ(one.net.base_rtt().ps(), kBaseRtt);
  const auto [cc, acked] = one.sender();
  ASSERT_NE(cc, nullptr);
  EXPECT_EQ(acked, 4096u);
  EXPECT_EQ(cc->rtt().ps(), kBaseRtt);  // the simulated round trip, by the NIC's send time
  // Through a switch: two such links each way.
  OnePacket two(nic, TopologyKind::single_switch);
  ASSERT_TRUE(two.finished);
  EXPECT_EQ(two.net.base_rtt().ps(), 2 * kBaseRtt);
  // A policy that reads no ACKs needs no base RTT: none is computed.
  OnePacket dcqcn(NicConfig{}, TopologyKind::back_to_back);
  EXPECT_EQ(dcqcn.net.base_rtt(), Time());
}

// A window of half the path's BDP: 100e9 x 1 171 520 ps / 8 = 14 644 bytes, so a QP sends
// while fewer are in flight: 4 packets (3 x 4096 = 12 288 < 14 644). Each ACK (one per
// packet) lets one more go, so 4 packets per round trip of 2 343 040 ps:
// 4 x 4096 x 8 / 2.34304 us = 55.94 Gb/s of payload; without the window, the line.
TEST(WindowNic, AWindowBoundsTheBytesInFlight) {
  const auto goodput = [](NicConfig nic) {
    Network net(nic, {}, 1);
    build_topology(net, two_hosts());
    net.add_flow({.src = 0, .dst = 1, .bytes = 4096 * 400, .start = {}});
    EXPECT_TRUE(net.run(ms(10)).all_finished);
    return 4096.0 * 400 * 8 / static_cast<double>(net.flows()[0].finish.ps()) * 1e3;  // Gb/s
  };
  NicConfig nic;
  nic.congestion_control = "dctcp";
  nic.ecn_capable = false;  // no marks: the rate stays at the line, only the window binds
  nic.base_rtt = Time::from_ps(kBaseRtt / 2);
  const double windowed = goodput(nic);
  EXPECT_NEAR(windowed, 4 * 4096 * 8 / (kBaseRtt * 1e-3), 0.5);
  nic.dctcp.window = CcWindow::off;
  EXPECT_GT(goodput(nic), 97.0);
}

// Swift's endpoint delay: with both NICs draining their receive buffers at 50 Gb/s, the
// data frame (4178 bytes) waits 4178 x 8 / 50 G = 668 480 ps in the receiver's buffer,
// echoed on the ACK in whole ns (668 000 ps), and the ACK (70 bytes) 11 200 ps in the
// sender's: the RTT is 335 840 + 1 000 000 + 668 480 + 7 200 + 1 000 000 + 11 200 =
// 3 022 720 ps. With an endpoint target of 500 ns, the endpoint delay 679 200 ps cuts ecwnd
// by 1 - 0.8 x 179 200 / 679 200 (the sender's own hold alone, 11.2 ns, would not); the
// fabric's 2.34352 us is far below its target: fcwnd + 1/32.
TEST(WindowNic, SwiftReadsTheReceiversAndItsOwnHold) {
  NicConfig nic;
  nic.congestion_control = "swift";
  nic.rx_rate = Gbps(50);
  nic.swift.endpoint_target = Time::from_ps(500'000);
  OnePacket one(nic, TopologyKind::back_to_back);
  ASSERT_TRUE(one.finished);
  const auto* swift = dynamic_cast<const Swift*>(one.sender().first);
  ASSERT_NE(swift, nullptr);
  EXPECT_EQ(swift->rtt().ps(), 3'022'720);
  EXPECT_DOUBLE_EQ(swift->ecwnd(), 32 * (1 - 0.8 * 179'200.0 / 679'200));
  EXPECT_DOUBLE_EQ(swift->fcwnd(), 32 + 1.0 / 32);
}

// The switches a packet crossed come back on its ACK: through one switch, with a target of
// 1 ps + 100 us per hop, Swift's fabric delay (4.69 us) is below the target of one hop
// (fcwnd + 1/32); a hop count of 0 would put it far above (fcwnd halved).
TEST(WindowNic, SwiftReadsTheHopsTheDataCrossed) {
  NicConfig nic;
  nic.congestion_control = "swift";
  nic.swift.base_target = Time::from_ps(1);
  nic.swift.hop_scaling = us(100);
  nic.swift.fs_range = Time();
  OnePacket one(nic, TopologyKind::single_switch);
  ASSERT_TRUE(one.finished);
  const auto* swift = dynamic_cast<const Swift*>(one.sender().first);
  ASSERT_NE(swift, nullptr);
  EXPECT_EQ(swift->rtt().ps(), 2 * kBaseRtt);
  EXPECT_DOUBLE_EQ(swift->fcwnd(), 32 + 1.0 / 32);
}

// A NAK reopens a window it closed: the go-back sets the bytes in flight to none, and the
// NIC must pull again at once rather than wait for the timeout. Swift's window into a
// receive buffer that overflows (60 Gb/s drain, 20 000 bytes, no PFC) makes NAKs; none of
// them may leave the QP waiting for the RTO (1 ms).
TEST(WindowNic, ANakWakesAQpItsWindowHeld) {
  NicConfig nic;
  nic.congestion_control = "swift";
  nic.rx_rate = Gbps(60);
  nic.rx_buffer = Bytes::from_count(20'000);
  SwitchConfig sw;
  sw.pfc.enabled = false;
  Network net(nic, sw, 1);
  build_topology(net, two_hosts());
  net.add_flow({.src = 0, .dst = 1, .bytes = 8'000'000, .start = {}});
  ASSERT_TRUE(net.run(ms(100)).all_finished);
  EXPECT_GT(net.host_counters(1).naks_sent, 0u);
  EXPECT_EQ(net.host_counters(0).timeouts, 0u);
}

TEST(WindowNic, PoliciesThatReadAcksNeedTheReliableTransportAndAckEveryPacket) {
  NicConfig nic;
  nic.congestion_control = "dctcp";
  EXPECT_EQ(ack_every_of(nic), 1u);
  nic.ack_every = 4;
  EXPECT_EQ(ack_every_of(nic), 4u);
  nic.congestion_control = "dcqcn";
  nic.ack_every = 0;
  EXPECT_EQ(ack_every_of(nic), 8u);
  nic.congestion_control = "timely";
  nic.transport = Transport::uc;
  EXPECT_EQ(testing::input_error_of([&] { check_nic_config(nic); }),
            "nic.congestion_control = timely: expected nic.transport = rc (it reads ACKs, which an unreliable "
            "connection does not send)");
}

}  // namespace
}  // namespace fabriclab::fabric
