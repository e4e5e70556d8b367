// NSCC on its own, fed ACKs by hand (cc/nscc.h), on uet-htsim's reference network:
// 100 Gb/s and a 12 us base RTT, so the BDP is 150 000 bytes and a = 1; the target is
// 0.75 x 12 = 9 us, so b = 0.75; MSS 4096. Then alpha = 4 x 4096 x 0.75 / 9 us, fi = 5
// MSS = 20 480, eta = 0.15 MSS = 614.4, fi_scale = 0.25, maxwnd = 1.5 BDP = 225 000 bytes
// (the first window), the quick-adapt threshold 36 us and an epoch 21 us.
#include "fabric/cc/nscc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fabric/rate_recorder.h"

namespace fabriclab::fabric {
namespace {

constexpr double kMss = 4096;

struct NsccBench {
  Simulator sim;
  RateRecorder rec;
  NsccParams p;
  Nscc cc;
  explicit NsccBench(NsccParams params = {})
      : p(std::move(params)), cc(p, CcContext{sim, Gbps(100), us(12), 4096, &rec, 9, 0, 4198}) {}
  // An ACK at `now` showing `packets` received anew, with an RTT sample.
  void ack(Time now, Time rtt, bool ecn = false, std::uint32_t packets = 1, std::uint64_t in_flight = 0) {
    AckInfo a;
    a.rtt = rtt;
    a.ecn_echo = ecn;
    a.delivered = packets;
    a.in_flight = in_flight;
    cc.on_ack(now, a);
  }
  void trimmed(Time now) {
    AckInfo a;
    a.nak = a.trimmed = true;
    cc.on_ack(now, a);
  }
};

Time at_us(double v) { return Time::from_ps(std::llround(v * 1e6)); }

TEST(Nscc, ItsConstantsScaleWithTheReferenceNetwork) {
  NsccBench b;
  EXPECT_EQ(b.cc.target(), us(9));
  EXPECT_DOUBLE_EQ(b.cc.increase_alpha(), 4 * kMss * 0.75 / 9e6);
  EXPECT_DOUBLE_EQ(b.cc.fi(), 5 * kMss);
  EXPECT_DOUBLE_EQ(b.cc.eta(), 0.15 * kMss);
  EXPECT_DOUBLE_EQ(b.cc.fi_scale(), 0.25);
  EXPECT_DOUBLE_EQ(b.cc.max_window(), 225000);
  EXPECT_DOUBLE_EQ(b.cc.cwnd(), 225000);
  EXPECT_EQ(b.cc.window(), 225000u);
  // Half the rate, twice the RTT: the same BDP, a = 1, but b and the target double.
  Simulator sim;
  NsccParams p;
  Nscc slow(p, CcContext{sim, Gbps(50), us(24), 4096, nullptr, 0, 0, 4198});
  EXPECT_EQ(slow.target(), us(18));
  EXPECT_DOUBLE_EQ(slow.fi(), 5 * kMss);
  EXPECT_DOUBLE_EQ(slow.increase_alpha(), 4 * kMss * 1.5 / 18e6);
  EXPECT_DOUBLE_EQ(slow.max_window(), 225000);
}

// Fair increase (no ECN, delay 10 us >= 9 us): each ACK adds fi x 4096 to the increment,
// applied once more than 8 MSS were received -- at the 9th ACK: cwnd += 9 fi MSS / cwnd.
// (All within the first 12 us: no eta, and no quick adapt before the epoch ends.)
TEST(Nscc, FairIncreaseIsAppliedEveryEightPacketsReceived) {
  NsccBench b;
  b.cc.on_timeout(Time());  // one MSS off the window, so that it can grow
  const double w0 = 225000 - kMss;
  EXPECT_DOUBLE_EQ(b.cc.cwnd(), w0);
  for (int k = 0; k < 8; ++k) b.ack(at_us(5 + 0.1 * k), us(22));
  EXPECT_DOUBLE_EQ(b.cc.cwnd(), w0);
  b.ack(at_us(5.8), us(22));
  EXPECT_DOUBLE_EQ(b.cc.cwnd(), w0 + 9 * 5 * kMss * kMss / w0);
}

// Proportional increase (no ECN, 1 us <= delay 2 us < 9 us): alpha x MSS x (9 - 2) us per ACK.
TEST(Nscc, ProportionalIncreaseGrowsWithTheDelayBelowTarget) {
  NsccBench b;
  b.cc.on_timeout(Time());
  const double w0 = 225000 - kMss;
  for (int k = 0; k < 9; ++k) b.ack(at_us(5 + 0.1 * k), us(14));
  const double alpha = 4 * kMss * 0.75 / 9e6;
  EXPECT_NEAR(b.cc.cwnd(), w0 + 9 * alpha * kMss * 7e6 / w0, 1e-9);
}

// Fast increase: below 1 us of delay for more than a window's worth of bytes, then
// cwnd += 0.25 x MSS = 1024 per ACK at once; an ACK at 2 us ends it, and the count starts
// over. With pi = 0 (no proportional increase, which would move the window the count is
// compared with) and 10 MSS off the first window, 184 040 bytes: the 45th ACK (184 320
// bytes) starts it.
TEST(Nscc, FastIncreaseFollowsAWindowOfNearZeroDelay) {
  NsccParams p;
  p.pi = 0;
  NsccBench b(p);
  for (int k = 0; k < 10; ++k) b.cc.on_timeout(Time());
  const double w0 = 225000 - 10 * kMss;
  EXPECT_DOUBLE_EQ(b.cc.cwnd(), w0);
  std::vector<double> w{b.cc.cwnd()};
  for (int k = 1; k <= 47; ++k) {
    b.ack(at_us(1 + 0.1 * k), at_us(12.5));
    w.push_back(b.cc.cwnd());
  }
  EXPECT_DOUBLE_EQ(w[44], w0);
  EXPECT_DOUBLE_EQ(w[45], w0 + 1024);
  EXPECT_DOUBLE_EQ(w[46], w0 + 2048);
  EXPECT_DOUBLE_EQ(w[47], w0 + 3072);
  b.ack(at_us(5.9), at_us(14));
  b.ack(at_us(6.0), at_us(12.5));
  EXPECT_DOUBLE_EQ(b.cc.cwnd(), w0 + 3072);  // counting again
}

// Multiplicative decrease (ECN, delay 30 us >= target): only once the average delay is
// above target. From 0 with weight 0.0125, n samples of 30 us average 30 (1 - 0.9875^n)
// us: 8.90 after 28, 9.17 after 29 -- the 29th cuts to max(1 - 0.8 (avg - 9) / avg, 0.5)
// of the window, and the 30th, less than a base RTT later, does not.
TEST(Nscc, ADecreaseNeedsEcnADelayAndAnAverageAboveTargetAndComesOncePerRtt) {
  NsccBench b;
  for (int k = 1; k <= 28; ++k) b.ack(at_us(13 + 0.1 * k), us(42), true);
  EXPECT_DOUBLE_EQ(b.cc.cwnd(), 225000);
  b.ack(at_us(15.9), us(42), true);
  const double avg = 30e6 * (1 - std::pow(0.9875, 29));
  EXPECT_NEAR(static_cast<double>(b.cc.avg_delay().ps()), avg, 1);
  EXPECT_NEAR(b.cc.cwnd(), 225000 * (1 - 0.8 * (avg - 9e6) / avg), 0.05);
  const double cut = b.cc.cwnd();
  b.ack(at_us(16.0), us(42), true);
  EXPECT_DOUBLE_EQ(b.cc.cwnd(), cut);
  // ECN with a delay below target changes nothing (the sender moves off the entropy).
  b.ack(at_us(16.1), us(15), true);
  EXPECT_DOUBLE_EQ(b.cc.cwnd(), cut);
}

// A trimmed packet's NACK takes one MSS off and asks for quick adapt. The first NACK
// starts an epoch (21 us); 3 packets come in it; the ACK after it ends (at 23 us, a
// fourth) finds 4 x 4096 = 16 384 bytes achieved, below maxwnd / 8 = 28 125: the window
// becomes them. The bytes then in flight (50 000) are 13 MSS: ECN echoes are ignored
// until as many came back, ACKs without ECN are not.
TEST(Nscc, QuickAdaptCutsTheWindowToWhatAnEpochAchieved) {
  NsccBench b;
  b.trimmed(at_us(1));
  EXPECT_DOUBLE_EQ(b.cc.cwnd(), 225000 - kMss);
  for (double t : {5.0, 6.0, 7.0}) b.ack(at_us(t), us(12));
  b.ack(at_us(23), us(12), false, 1, 50000);
  EXPECT_DOUBLE_EQ(b.cc.cwnd(), 4 * kMss);
  for (int k = 0; k < 12; ++k) b.ack(at_us(24 + 0.1 * k), us(45), true);  // ignored
  EXPECT_DOUBLE_EQ(b.cc.cwnd(), 4 * kMss);
  NsccParams off;
  off.quick_adapt = false;
  NsccBench without(off);
  without.trimmed(at_us(1));
  for (double t : {5.0, 6.0, 7.0}) without.ack(at_us(t), us(12));
  without.ack(at_us(23), us(12));
  EXPECT_GT(without.cc.cwnd(), 200000.0);
}

// A smaller RTT sample lowers the base RTT, and maxwnd with it: 1.5 x 8 us x 100 Gb/s.
TEST(Nscc, AShorterPathLowersTheBaseRttAndTheMaximumWindow) {
  NsccBench b;
  b.ack(at_us(1), us(8));
  EXPECT_DOUBLE_EQ(b.cc.max_window(), 150000);
  EXPECT_DOUBLE_EQ(b.cc.cwnd(), 150000);
}

}  // namespace
}  // namespace fabriclab::fabric
