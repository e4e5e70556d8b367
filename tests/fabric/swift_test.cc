// Swift on its own, fed ACKs by hand (cc/swift.h): the target with hops and flow
// scaling, additive increase per packet acknowledged, the decrease bounded by max_mdf and
// taken at most once per RTT, the endpoint window against the receiver's hold, pacing
// below one packet, and the timeouts.
#include "fabric/cc/swift.h"

#include <gtest/gtest.h>

#include <cmath>

#include "error_message.h"
#include "fabric/rate_recorder.h"

namespace fabriclab::fabric {
namespace {

// 100 Gb/s, MTU 4096: a full packet is 4096 + 82 + 20 = 4198 bytes on the wire.
struct SwiftBench {
  Simulator sim;
  RateRecorder rec;
  SwiftParams p;
  Swift cc;
  explicit SwiftBench(SwiftParams params = {})
      : p(std::move(params)), cc(p, CcContext{sim, Gbps(100), us(5), 4096, &rec, 9, 0, 4198}) {}
  void ack(Time now, Time rtt, std::uint32_t acked = 1, std::uint8_t hops = 3, Time remote_hold = {}) {
    cc.on_ack(now, AckInfo{.acked = 1,
                           .next_psn = 2,
                           .rtt = rtt,
                           .newly_acked = acked,
                           .hops = hops,
                           .remote_hold = remote_hold,
                           .local_hold = {}});
  }
};

// Flow scaling, restated: a = 100 us / (1/sqrt(0.1) - 1/sqrt(256)), b = -a/16.
double flow_scaling_ps(double cwnd) {
  const double a = 100e6 / (1 / std::sqrt(0.1) - 1.0 / 16);
  return std::clamp(a / std::sqrt(cwnd) - a / 16, 0.0, 100e6);
}

TEST(Swift, TargetAddsAMicrosecondPerHopAndTheFlowScalingOfTheWindow) {
  SwiftBench b;
  EXPECT_EQ(b.cc.fcwnd(), 32.0);
  // At 32 packets: 25 us + 3 x 1 us + a (1/sqrt(32) - 1/16), a = 32 260 378.3 ps: 31 686 609 ps.
  EXPECT_NEAR(static_cast<double>(b.cc.target(3).ps()), 28e6 + flow_scaling_ps(32), 1);
  EXPECT_NEAR(static_cast<double>(b.cc.target(3).ps()), 31'686'609, 1);
  EXPECT_EQ(b.cc.target(5) - b.cc.target(3), us(2));
  // Flow scaling is at most fs_range (100 us), reached at fs_min_cwnd and below.
  SwiftParams small;
  small.initial_cwnd = 0.05;
  SwiftBench s(small);
  EXPECT_EQ(s.cc.target(0), us(125));
}

TEST(Swift, IncreasesPerPacketAckedAndCutsAtMostOncePerRtt) {
  SwiftBench b;
  // Below the target: each window + ai x acked / w; 4 packets acked: 32 + 4/32.
  b.ack(us(10), us(10), 4);
  EXPECT_DOUBLE_EQ(b.cc.fcwnd(), 32.125);
  EXPECT_DOUBLE_EQ(b.cc.ecwnd(), 32.125);
  EXPECT_EQ(b.cc.window(), static_cast<std::uint64_t>(32.125 * 4096));
  EXPECT_EQ(b.rec.raised, std::vector<std::uint32_t>{9});
  // 1 ms of delay, far above the target: 1 - 0.8 (d - t)/d < 0.5, so max_mdf bounds it:
  // fcwnd halves; the endpoint delay (0) is below its target, ecwnd grows by 1/32.125.
  b.ack(ms(2), ms(1));
  EXPECT_DOUBLE_EQ(b.cc.fcwnd(), 32.125 / 2);
  EXPECT_DOUBLE_EQ(b.cc.ecwnd(), 32.125 + 1 / 32.125);
  // Again 10 us later: within an RTT (1 ms) of the last decrease, no cut.
  b.ack(ms(2) + us(10), ms(1));
  EXPECT_DOUBLE_EQ(b.cc.fcwnd(), 32.125 / 2);
  // An RTT after it: cut again.
  b.ack(ms(3), ms(1));
  EXPECT_DOUBLE_EQ(b.cc.fcwnd(), 32.125 / 4);
  // A delay just above the target cuts by beta (d - t) / d: fcwnd 8.03125 -> target
  // 28 us + flow_scaling(8.03125); the delay 10 % above it cuts by 0.8 x 0.1 / 1.1.
  const double t = 28e6 + flow_scaling_ps(32.125 / 4);
  const Time d = Time::from_ps(std::llround(t * 1.1));
  b.ack(ms(5), d);
  const double dd = static_cast<double>(d.ps());
  EXPECT_NEAR(b.cc.fcwnd(), 32.125 / 4 * (1 - 0.8 * (dd - static_cast<double>(std::llround(t))) / dd), 1e-9);
}

TEST(Swift, TheEndpointWindowReadsTheReceiversHold) {
  SwiftBench b;
  // RTT 160 us of which the receiver held the packet 150 us: the fabric's 10 us is below
  // its target (fcwnd + 1/32), the endpoint's 150 us above its 100 us: ecwnd x (1 - 0.8 x
  // 50/150), and the QP may have min(fcwnd, ecwnd) in flight.
  b.ack(ms(1), us(160), 1, 3, us(150));
  EXPECT_DOUBLE_EQ(b.cc.fcwnd(), 32 + 1.0 / 32);
  EXPECT_NEAR(b.cc.ecwnd(), 32 * (1 - 0.8 * 50.0 / 150), 1e-12);
  EXPECT_EQ(b.cc.window(), static_cast<std::uint64_t>(b.cc.ecwnd() * 4096));
}

TEST(Swift, BelowOnePacketItPacesOnePacketPerRttOverCwnd) {
  SwiftParams q;
  q.initial_cwnd = 0.2;
  SwiftBench c(q);
  EXPECT_EQ(c.cc.rate(), Gbps(100));  // no RTT sample yet: nothing to pace by
  EXPECT_EQ(c.cc.window(), 1u);       // one packet at a time
  // 1 ms of fabric delay, far above the target: cut by max_mdf to 0.1 (the endpoint
  // window, its delay 0, grows by ai x 1 to 1.2; the smaller one rules).
  c.ack(ms(1), ms(1));
  EXPECT_DOUBLE_EQ(c.cc.fcwnd(), 0.1);
  EXPECT_DOUBLE_EQ(c.cc.ecwnd(), 1.2);
  EXPECT_EQ(c.cc.window(), 1u);
  // One 4198-byte packet per 1 ms / 0.1 = 10 ms: 4198 x 8 / 10 ms = 3.3584 Mb/s.
  EXPECT_EQ(c.cc.rate().bps(), 3'358'400);
}

TEST(Swift, ANakCutsTheFabricWindowOncePerRtt) {
  SwiftBench b;
  b.ack(us(10), us(10));  // an RTT of 10 us; 32 + 1/32 both
  const double w = 32 + 1.0 / 32;
  AckInfo nak{.acked = 1, .next_psn = 1, .nak = true, .remote_hold = {}, .local_hold = {}};
  b.cc.on_ack(us(20), nak);  // fast recovery: x (1 - max_mdf)
  EXPECT_DOUBLE_EQ(b.cc.fcwnd(), w / 2);
  EXPECT_DOUBLE_EQ(b.cc.ecwnd(), w);
  b.cc.on_ack(us(25), nak);  // within an RTT of it: none
  EXPECT_DOUBLE_EQ(b.cc.fcwnd(), w / 2);
  b.cc.on_ack(us(30), nak);
  EXPECT_DOUBLE_EQ(b.cc.fcwnd(), w / 4);
}

TEST(Swift, TimeoutsCutOncePerRttAndTheFifthInARowResetsTheWindow) {
  SwiftBench b;
  b.ack(us(10), us(10));  // an RTT of 10 us; 32 + 1/32
  const double w = 32 + 1.0 / 32;
  b.cc.on_timeout(us(20));  // first: cut by max_mdf
  EXPECT_DOUBLE_EQ(b.cc.fcwnd(), w / 2);
  b.cc.on_timeout(us(25));  // within an RTT of that cut: none
  EXPECT_DOUBLE_EQ(b.cc.fcwnd(), w / 2);
  b.cc.on_timeout(us(40));
  b.cc.on_timeout(us(60));
  EXPECT_DOUBLE_EQ(b.cc.fcwnd(), w / 8);
  b.cc.on_timeout(us(80));  // the fifth in a row: min_cwnd
  EXPECT_DOUBLE_EQ(b.cc.fcwnd(), 0.01);
  SwiftParams bad;
  bad.fs_min_cwnd = 300;
  EXPECT_EQ(testing::input_error_of([&] { bad.validate(); }),
            "nic.swift.fs_min_cwnd must be below nic.swift.fs_max_cwnd");
}

}  // namespace
}  // namespace fabriclab::fabric
