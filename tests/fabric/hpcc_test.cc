// HPCC (cc/hpcc.h) fed INT stacks by hand, every rate, stage and window worked out by hand
// from Algorithm 1 of the paper; the INT stack (telemetry.h) a switch writes and the NIC
// echoes, to the picosecond, on two hosts through one switch; the header's bytes on the
// wire and in a pcap frame.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "error_message.h"
#include "fabric/cc/hpcc.h"
#include "fabric/network.h"
#include "fabric/pint.h"
#include "fabric/rate_recorder.h"
#include "fabric/reorder_box.h"
#include "fabric/topology.h"
#include "fabric/wire.h"

namespace fabriclab::fabric {
namespace {

constexpr std::int64_t G = 1'000'000'000;
constexpr std::int64_t kT = 10'000'000;  // base RTT, ps

// A stack of one record: a 100 Gb/s hop.
IntStack one_hop(std::int64_t at_ps, std::uint64_t tx_bytes, std::uint64_t qlen = 0) {
  IntStack s;
  s.hops = 1;
  s.hop[0] = {Time::from_ps(at_ps), tx_bytes, qlen, Gbps(100)};
  return s;
}

AckInfo ack(std::uint32_t acked, std::uint32_t next, const IntStack& s) {
  AckInfo a;
  a.acked = acked;
  a.next_psn = next;
  a.telemetry = &s;
  return a;
}

// 100 Gb/s, T = 10 us: B x T = 125 000 bytes, the BDP; rai = 100 G / 2500 = 40 Mb/s.
struct HpccBench {
  Simulator sim;
  RateRecorder rec;
  HpccParams p;
  Hpcc cc;
  std::uint32_t psn = 0;
  explicit HpccBench(HpccParams params = {})
      : p(std::move(params)), cc(p, CcContext{sim, Gbps(100), Time::from_ps(kT), 4096, &rec, 3}) {}
  // An ACK a round trip on (acked past the last update's next PSN): the reference moves.
  void per_rtt(const IntStack& s) {
    cc.on_ack(Time(), ack(psn + 1, psn + 10, s));
    psn += 10;
  }
  // An ACK within the round trip: it reacts, the reference stays.
  void fast(const IntStack& s) { cc.on_ack(Time(), ack(psn, psn + 10, s)); }
};

TEST(Hpcc, TheFirstStackIsOnlyTheReference) {
  HpccBench b(HpccParams::preset_named("ns3"));
  EXPECT_EQ(b.cc.rate().bps(), 100 * G);
  EXPECT_EQ(b.cc.window(), 125'000u);
  EXPECT_EQ(b.cc.reference(), nullptr);
  b.per_rtt(one_hop(0, 0));
  EXPECT_EQ(b.cc.rate().bps(), 100 * G);
  ASSERT_NE(b.cc.reference(), nullptr);
  EXPECT_DOUBLE_EQ(b.cc.alpha(Time()), 1.0);  // U starts at 1
}

// ns3 preset (maxStage 0): every update is multiplicative.
//  - a full T at line rate, empty queues: u = 1, U = 1; R = 100 G x 0.95 + 40 M = 95.04 G.
//  - 62 500 bytes queued, the last stack's queue empty: min = 0, u = 1 again;
//    R = 95.04 G x 0.95 + 40 M = 90.328 G.
//  - 62 500 bytes queued in both stacks: u = 1 + 62 500 x 8 / (100 G x 10 us) = 1.5,
//    U = 1.5; R = 90.328 G x 0.95 / 1.5 + 40 M = 57.2477 G; W = 125 000 x R / 100 G.
TEST(Hpcc, AMultiplicativeStepPerRoundTripFromTheUtilization) {
  HpccBench b(HpccParams::preset_named("ns3"));
  b.per_rtt(one_hop(0, 0));
  b.per_rtt(one_hop(kT, 125'000));
  EXPECT_DOUBLE_EQ(b.cc.alpha(Time()), 1.0);
  EXPECT_NEAR(static_cast<double>(b.cc.rate().bps()), 95.04e9, 1);
  EXPECT_EQ(b.cc.target_rate(), b.cc.rate());
  b.per_rtt(one_hop(2 * kT, 250'000, 62'500));
  EXPECT_DOUBLE_EQ(b.cc.alpha(Time()), 1.0);
  EXPECT_NEAR(static_cast<double>(b.cc.rate().bps()), 90.328e9, 2);
  b.per_rtt(one_hop(3 * kT, 375'000, 62'500));
  EXPECT_DOUBLE_EQ(b.cc.alpha(Time()), 1.5);
  EXPECT_NEAR(static_cast<double>(b.cc.rate().bps()), 90.328e9 * 0.95 / 1.5 + 40e6, 2);
  // W = 125 000 x 57 247 733 332 / 100e9 bytes, truncated.
  EXPECT_EQ(b.cc.window(), 71'559u);
}

// An update a step tau after the reference counts tau / T of the new u: tau = T/4 with
// 62 500 bytes sent in it (8 x 62 500 / 2.5 us = 200 Gb/s on a 100 G link: u = 2) gives
// U = 0.75 x 1 + 0.25 x 2 = 1.25.
TEST(Hpcc, TheUtilizationIsAnAverageOverTheBaseRtt) {
  HpccBench b(HpccParams::preset_named("ns3"));
  b.per_rtt(one_hop(0, 0));
  b.per_rtt(one_hop(kT / 4, 62'500));
  EXPECT_DOUBLE_EQ(b.cc.alpha(Time()), 1.25);
  EXPECT_NEAR(static_cast<double>(b.cc.rate().bps()), 100e9 * 0.95 / 1.25 + 40e6, 1);
  // A step longer than T counts as T: the new u alone (u = 0.5 over 2 T).
  b.per_rtt(one_hop(kT / 4 + 2 * kT, 62'500 + 125'000));
  EXPECT_DOUBLE_EQ(b.cc.alpha(Time()), 0.5);
}

// The paper's maxStage = 5: below eta, five additive rounds (Rc + W_AI), then a
// multiplicative one. Start: u = 2 over T, R = 100 G / (2 / 0.95) + 40 M = 47.54 G.
// Then u = 0.5: 47.58, 47.62, ..., 47.74 G (stage 5), then 47.74 x 0.95 / 0.5 + 0.04 G.
TEST(Hpcc, AdditiveRoundsBelowTheTargetThenAMultiplicativeOne) {
  HpccBench b;
  std::int64_t t = 0;
  std::uint64_t tx = 0;
  const auto step = [&](std::uint64_t bytes) {
    t += kT;
    tx += bytes;
    b.per_rtt(one_hop(t, tx));
  };
  b.per_rtt(one_hop(0, 0));
  step(250'000);
  const double start = 100e9 * 0.95 / 2 + 40e6;
  EXPECT_NEAR(static_cast<double>(b.cc.rate().bps()), start, 1);
  EXPECT_EQ(b.cc.stage(), 0u);
  for (std::uint32_t k = 1; k <= 5; ++k) {
    step(62'500);
    EXPECT_NEAR(static_cast<double>(b.cc.rate().bps()), start + k * 40e6, 1) << k;
    EXPECT_EQ(b.cc.stage(), k);
  }
  step(62'500);
  EXPECT_NEAR(static_cast<double>(b.cc.rate().bps()), (start + 5 * 40e6) * 0.95 / 0.5 + 40e6, 2);
  EXPECT_EQ(b.cc.stage(), 0u);
  // ns3 (maxStage 0) from the same start goes multiplicative at once.
  HpccBench n(HpccParams::preset_named("ns3"));
  n.per_rtt(one_hop(0, 0));
  n.per_rtt(one_hop(kT, 250'000));
  n.per_rtt(one_hop(2 * kT, 312'500));
  EXPECT_NEAR(static_cast<double>(n.cc.rate().bps()), start * 0.95 / 0.5 + 40e6, 2);
}

// Within a round trip an ACK reacts from the reference Rc without moving it; with
// fast_react off it changes nothing.
TEST(Hpcc, FastReactionLeavesTheReferenceWhereItWas) {
  HpccBench b(HpccParams::preset_named("ns3"));
  b.per_rtt(one_hop(0, 0));
  b.fast(one_hop(kT, 250'000));  // u = 2: R = 100 G x 0.95 / 2 + 40 M
  EXPECT_NEAR(static_cast<double>(b.cc.rate().bps()), 47.54e9, 1);
  EXPECT_EQ(b.cc.target_rate().bps(), 100 * G);
  b.fast(one_hop(2 * kT, 250'000 + 125'000));  // u = 1, U = 1: from Rc = 100 G again
  EXPECT_NEAR(static_cast<double>(b.cc.rate().bps()), 95.04e9, 1);
  HpccParams slow = HpccParams::preset_named("ns3");
  slow.fast_react = false;
  HpccBench s(slow);
  s.per_rtt(one_hop(0, 0));
  s.fast(one_hop(kT, 250'000));
  EXPECT_EQ(s.cc.rate().bps(), 100 * G);
}

// A stack that does not continue the reference (another number of hops; a hop whose
// clock or bytes did not advance: another path) updates nothing; the next one does.
TEST(Hpcc, AnotherPathIsANewReferenceNotAReading) {
  HpccBench b(HpccParams::preset_named("ns3"));
  b.per_rtt(one_hop(0, 0));
  IntStack two = one_hop(kT, 500'000);
  two.hops = 2;
  two.hop[1] = two.hop[0];
  b.per_rtt(two);
  EXPECT_EQ(b.cc.rate().bps(), 100 * G);
  b.per_rtt(one_hop(2 * kT, 1'000'000));  // 1 hop again: a new reference
  EXPECT_EQ(b.cc.rate().bps(), 100 * G);
  b.per_rtt(one_hop(2 * kT, 1'000'000));  // no time passed on that hop
  EXPECT_EQ(b.cc.rate().bps(), 100 * G);
  b.per_rtt(one_hop(3 * kT, 1'000'000 + 250'000));  // u = 2
  EXPECT_NEAR(static_cast<double>(b.cc.rate().bps()), 47.54e9, 1);
  // An ACK with no stack (a QP that crossed no switch) is not read.
  AckInfo none;
  none.acked = 1000;
  none.next_psn = 1010;
  b.cc.on_ack(Time(), none);
  EXPECT_NEAR(static_cast<double>(b.cc.rate().bps()), 47.54e9, 1);
}

TEST(Hpcc, ParametersAreChecked) {
  EXPECT_EQ(testing::input_error_of([] { HpccParams::preset_named("fast"); }),
            "unknown nic.hpcc.preset 'fast' (expected: paper, ns3)");
  HpccParams p;
  p.eta = 0;
  EXPECT_NE(testing::input_error_of([&] { p.validate(); }).find("eta"), std::string::npos);
}

// Runs one flow of `bytes` from h0 to h1, the two hosts of one switch (100 Gb/s, links of
// 1 us); true when it finished.
bool h0_to_h1_through_one_switch(Network& net, std::uint64_t bytes) {
  TopologySpec t;
  t.kind = TopologyKind::single_switch;
  t.hosts = 2;
  build_topology(net, t);
  net.add_flow({.src = 0, .dst = 1, .bytes = bytes, .start = {}});
  return net.run(ms(1)).all_finished;
}

// Two hosts through one 100 Gb/s switch, links of 1 us. A first data frame with the INT
// header is 4096 + 66 + 16 (RETH) + 42 = 4220 bytes (4240 on the wire: 339 200 ps), the
// last 4204 (337 920 ps), an ACK 70 + 42 = 112 (132: 10 560 ps); T = 2 x (339 200 +
// 1 000 000 + 10 560 + 1 000 000) ps. The first packet leaves h0 at 0 and starts out of
// the switch at 1 339 200 ps: nothing sent before it there, nothing queued. The second
// follows it back to back, reaches the switch at 1 677 120 ps and starts out at 1 678 400,
// as the first has left: 4240 bytes sent before it, none left queued. Its ACK
// (within the first round trip) reads u = 4240 x 8 / 339 200 ps / 100 G = 1: R = 100 G x
// 0.95 + 40 M, from the reference Rc = 100 G, which stays.
TEST(HpccNic, TheSwitchStampsEachPacketAndTheAckEchoesIt) {
  NicConfig nic;
  nic.congestion_control = "hpcc";
  nic.flow_end = FlowEnd::acked;
  Network net(nic, {}, 1);
  ASSERT_TRUE(h0_to_h1_through_one_switch(net, 2 * 4096));
  EXPECT_EQ(net.base_rtt().ps(), 2 * (339'200 + 1'000'000 + 10'560 + 1'000'000));
  const Hpcc* cc = nullptr;
  net.host(0).for_each_send_qp([&](std::uint32_t, std::uint32_t, const CongestionControl& c, std::uint64_t) {
    cc = dynamic_cast<const Hpcc*>(&c);
  });
  ASSERT_NE(cc, nullptr);
  ASSERT_NE(cc->reference(), nullptr);
  const IntStack& s = *cc->reference();
  ASSERT_EQ(s.hops, 1);
  EXPECT_EQ(s.hop[0].at.ps(), 1'678'400);
  EXPECT_EQ(s.hop[0].tx_bytes, 4240u);
  EXPECT_EQ(s.hop[0].qlen, 0u);
  EXPECT_EQ(s.hop[0].rate, Gbps(100));
  EXPECT_NEAR(static_cast<double>(cc->rate().bps()), 95.04e9, 1);
  EXPECT_EQ(cc->target_rate().bps(), 100 * G);
  // Every frame counted its INT header: 2 data frames and 2 ACKs through each port.
  EXPECT_EQ(Network::port_counters(net.host(0), 0, net.sim().now()).tx_bytes, 4220u + 4204);
  EXPECT_EQ(Network::port_counters(net.host(1), 0, net.sim().now()).tx_bytes, 2u * 112);
}

TEST(HpccNic, OnlyAPolicyThatReadsIntPaysForTheHeader) {
  NicConfig nic;
  nic.congestion_control = "dcqcn";
  Network plain(nic, {}, 1);
  EXPECT_EQ(plain.wire_format().int_bytes, 0u);
  nic.congestion_control = "hpcc";
  Network with(nic, {}, 1);
  EXPECT_EQ(with.wire_format().int_bytes, 42u);
  WireFormat w;
  w.int_max_hops = 8;
  with.set_wire_format(w);
  EXPECT_EQ(with.wire_format().int_bytes, 2u + 8 * 8);
}

// Every path a stack leaves by gives it back: the link into the receiver drops and
// duplicates data packets (a copy gets a copy of the stack), the receiver acknowledges
// every fourth packet (the others' stacks go back unanswered) and NAKs the gaps (a NAK
// echoes the stack of the packet that revealed the gap). The run ends with the store
// empty, or throws (Network::finish checks it like the packet pool).
TEST(HpccNic, EveryStackGoesBackWhateverHappensToItsPacket) {
  NicConfig nic;
  nic.congestion_control = "hpcc";
  nic.ack_every = 4;
  Network net(nic, {}, 7);
  TopologySpec t;
  t.kind = TopologyKind::single_switch;
  t.hosts = 3;
  build_topology(net, t);
  ImpairmentConfig c;
  c.drop = 0.01;
  c.duplicate = 0.01;
  net.add_impairment(net.switch_at(0).port(0), c);  // toward h0
  net.add_flow({.src = 1, .dst = 0, .bytes = 4096 * 500, .start = {}});
  net.add_flow({.src = 2, .dst = 0, .bytes = 4096 * 500, .start = {}});
  const RunTotals r = net.run(ms(50));
  EXPECT_TRUE(r.all_finished);
  EXPECT_GT(net.ledger().data_packets_dropped, 0u);
  EXPECT_GT(net.ledger().data_packets_duplicated, 0u);
}

// A path of more switches than the header has slots is refused as it happens, by key.
TEST(HpccNic, APathLongerThanTheHeaderIsAnError) {
  NicConfig nic;
  nic.congestion_control = "hpcc";
  Network net(nic, {}, 1);
  WireFormat w;
  w.int_max_hops = 2;
  net.set_wire_format(w);
  TopologySpec t;
  t.kind = TopologyKind::leaf_spine;
  t.leaves = 2;
  t.spines = 1;
  t.hosts_per_leaf = 1;
  build_topology(net, t);
  net.add_flow({.src = 0, .dst = 1, .bytes = 4096, .start = {}});
  EXPECT_EQ(testing::input_error_of([&] { net.run(ms(1)); }),
            "switch leaf1: a packet of flow 0 (host 0 to host 1) crosses more than wire.int_max_hops = 2 switches: "
            "its INT header has no slot for this one (raise wire.int_max_hops, at most 8)");
}

// The pcap frame: the header between the payload and the ICRC, in the IP and UDP lengths
// and under the ICRC; each hop's word as wire.h lays it out.
TEST(HpccWire, AFrameCarriesTheIntHeader) {
  IntStack s;
  s.hops = 1;
  // 100 G (code 2); 5 000 000 ps = 5000 ns; 1280 bytes = 10 units of 128; 800 queued = 10 of 80.
  s.hop[0] = {Time::from_ps(5'000'000), 1280, 800, Gbps(100)};
  EXPECT_EQ(int_hop_word(s.hop[0]), std::uint64_t{2} << 61 | std::uint64_t{5000} << 37 | 10u << 17 | 10u);
  Packet p;
  p.opcode = Opcode::rc_ack;
  p.src = 1;
  p.telemetry = 1;
  const std::uint8_t mac[6] = {};
  std::vector<std::uint8_t> with(kMaxFrameBytes), without(kMaxFrameBytes);
  const std::size_t n = encode_frame(p, mac, with.data(), {&s, 5});
  const std::size_t m = encode_frame(p, mac, without.data());  // no stack given: no header
  ASSERT_EQ(n, m + 42);
  const std::uint8_t* ip = with.data() + 18;
  EXPECT_EQ(ip[2] << 8 | ip[3], static_cast<int>(n - 18));  // IP total length
  const std::uint8_t* hdr = ip + 20 + 8 + 12 + 4;           // after the AETH
  EXPECT_EQ(hdr[0] << 8 | hdr[1], 1);
  std::uint64_t word = 0;
  for (int i = 0; i < 8; ++i) word = word << 8 | hdr[2 + i];
  EXPECT_EQ(word, int_hop_word(s.hop[0]));
  for (std::size_t i = 10; i < 42; ++i) EXPECT_EQ(hdr[i], 0) << i;  // the unused slots
  const std::uint32_t icrc = roce_icrc(ip, n - 18 - 4);
  EXPECT_EQ(with[n - 4] | with[n - 3] << 8 | with[n - 2] << 16 | static_cast<std::uint32_t>(with[n - 1]) << 24, icrc);
}

// PINT's code (pint.h). Base 2 keeps the powers whole: u = 2 is 1024 / 512, exactly 2^10,
// which never rounds up; u = 3 is 1536, halfway from 2^10 to 2^11 (p = 512 / 1024).
TEST(Pint, ACodeIsTheLogarithmOfTheScaledUtilizationRoundedAtRandom) {
  EXPECT_EQ(PintCode(1.05).bits(), 8u);  // log(512^2) / log(1.05) = 255.7
  EXPECT_EQ(PintCode(1.05).bytes(), 1u);
  EXPECT_EQ(PintCode(1.01).bits(), 11u);  // 1253.9
  EXPECT_EQ(PintCode(1.01).bytes(), 2u);
  const PintCode two(2);
  EXPECT_EQ(two.bits(), 5u);  // 18
  EXPECT_DOUBLE_EQ(two.decode(10), 2.0);
  EXPECT_DOUBLE_EQ(PintCode(1.05).decode(0), 1.0 / 512);
  RandomStream rng(1, "test");
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(two.encode(2.0, rng), 10);
    EXPECT_EQ(two.encode(0.0, rng), 0);               // at least 1 / 512: code 0
    EXPECT_EQ(PintCode(1.05).encode(1e9, rng), 255);  // the largest 8 bits hold
  }
  int up = 0;
  for (int i = 0; i < 20'000; ++i) {
    const std::uint16_t c = two.encode(3.0, rng);
    ASSERT_TRUE(c == 10 || c == 11) << c;
    up += c == 11;
  }
  EXPECT_NEAR(up / 20'000.0, 0.5, 0.02);  // 5.7 standard deviations
}

// The switch's estimate at 100 Gb/s (B = 0.0125 bytes/ps) and T = 10 us (B T = 125 000
// bytes, the BDP), by hand:
//  - 62 500 bytes queued, dt = 5 us, last 4 000 bytes, u = 0.8: 62 500 x 0.5 / 125 000
//    + 4 000 / 125 000 + 0.8 x 0.5 = 0.25 + 0.032 + 0.4 = 0.682;
//  - the same after 25 us: dt is T, the old u gone: 0.5 + 0.032 = 0.532.
TEST(Pint, ThePortsEstimateWeighsTheQueueTheLastPacketAndTheOldEstimate) {
  EXPECT_NEAR(pint_estimate(0.8, 62'500, 5e6, 4000, 0.0125, 1e7), 0.682, 1e-12);
  EXPECT_NEAR(pint_estimate(0.8, 62'500, 25e6, 4000, 0.0125, 1e7), 0.532, 1e-12);
  EXPECT_DOUBLE_EQ(pint_estimate(0.3, 0, 0, 0, 0.0125, 1e7), 0.3);  // no time, nothing sent: unchanged
}

// HPCC-PINT's sender, the ns3 preset (every update multiplicative), 100 Gb/s, rai 40 Mb/s:
//  - the first ACK only marks the round trip;
//  - code 128: U = 1.05^128 / 512 = 1.007; R = 100 G x 0.95 / U + 40 M, the new reference;
//  - a fast reaction to code 100 (U = 0.2568): Rc / (U / 0.95) is past the line: the line;
//    the reference stays.
TEST(HpccPint, EachAckSetsTheRateFromTheUtilizationItCarries) {
  HpccParams p = HpccParams::preset_named("ns3");
  p.feedback = HpccFeedback::pint;
  HpccBench b(p);
  IntStack s;
  s.pint = 128;
  b.per_rtt(s);
  EXPECT_EQ(b.cc.rate().bps(), 100 * G);
  b.per_rtt(s);
  const double u = std::pow(1.05, 128) / 512;
  EXPECT_DOUBLE_EQ(b.cc.alpha(Time()), u);
  const double r = 100e9 * 0.95 / u + 40e6;
  EXPECT_NEAR(static_cast<double>(b.cc.rate().bps()), r, 1);
  EXPECT_NEAR(static_cast<double>(b.cc.target_rate().bps()), r, 1);
  s.pint = 100;
  b.fast(s);
  EXPECT_EQ(b.cc.rate().bps(), 100 * G);
  EXPECT_NEAR(static_cast<double>(b.cc.target_rate().bps()), r, 1);
}

// With pint_prob = 0.5 about half the ACKs are read (each reading a new code shows in
// alpha), the same ones for the same seed.
TEST(HpccPint, TheSenderReadsTheShareOfAcksItSamples) {
  HpccParams p;
  p.feedback = HpccFeedback::pint;
  p.pint_prob = 0.5;
  auto reads = [&] {
    HpccBench b(p);
    IntStack s;
    std::vector<int> read;
    for (int i = 0; i < 2000; ++i) {
      s.pint = static_cast<std::uint16_t>(1 + i % 200);
      const double before = b.cc.alpha(Time());
      b.fast(s);
      if (b.cc.alpha(Time()) != before) read.push_back(i);
    }
    return read;
  };
  const std::vector<int> a = reads();
  EXPECT_NEAR(static_cast<double>(a.size()) / 2000, 0.5, 0.05);  // 4.5 standard deviations
  EXPECT_EQ(a, reads());
}

// Two hosts through one 100 Gb/s switch under HPCC-PINT, links of 1 us: the header is
// PINT's 1 byte, so a first data frame is 4096 + 66 + 16 + 1 = 4179 bytes (4199 on the
// wire), the others 4163 (4183), an ACK 71 (91); T = 2 x (4199 + 91) x 80 ps + 4 us =
// 4 686 400 ps. Ten packets leave h0 back to back and, the switch's egress as fast as
// its ingress, leave the switch back to back, none queued behind them (the egress frees
// 4199 - 4183 bytes' time after the second arrives): the estimate of the port toward h1
// starts at 0 (no packet before) and each next packet i adds its predecessor's bytes:
//   u_i = w_(i-1) / (B T) + u_(i-1) (T - w_(i-1) / B) / T.
// (No other frame leaves that port: the ACKs go out toward h0.)
TEST(HpccPintNic, EachPortsUtilizationIsTheModelsAverage) {
  NicConfig nic;
  nic.congestion_control = "hpcc";
  nic.hpcc.feedback = HpccFeedback::pint;
  nic.flow_end = FlowEnd::acked;
  Network net(nic, {}, 1);
  EXPECT_EQ(net.wire_format().int_bytes, 1u);
  ASSERT_TRUE(h0_to_h1_through_one_switch(net, 10 * 4096));
  const double T = 4'686'400, B = 0.0125;  // ps, bytes per ps
  EXPECT_EQ(net.base_rtt().ps(), 4'686'400);
  double u = 0;
  for (int i = 2; i <= 10; ++i) {
    const double w = i == 2 ? 4199 : 4183;
    u = w / (B * T) + u * (T - w / B) / T;
  }
  EXPECT_NEAR(net.switch_at(0).pint_utilization(1), u, 1e-12);
  EXPECT_DOUBLE_EQ(net.switch_at(0).pint_utilization(0), 0.0);  // ACKs only
  EXPECT_EQ(Network::port_counters(net.host(0), 0, net.sim().now()).tx_bytes, 4179u + 9 * 4163);
  EXPECT_EQ(Network::port_counters(net.host(1), 0, net.sim().now()).tx_bytes, 10u * 71);
  nic.hpcc.pint_log_base = 1.01;
  EXPECT_EQ(Network(nic, {}, 1).wire_format().int_bytes, 2u);
}

// HPCC-PINT's header is its code alone, after the AETH on an ACK.
TEST(HpccWire, PintsHeaderIsItsCode) {
  IntStack s;
  s.pint = 0x1a2;
  Packet p;
  p.opcode = Opcode::rc_ack;
  p.telemetry = 1;
  const std::uint8_t mac[6] = {};
  std::vector<std::uint8_t> one(kMaxFrameBytes), two(kMaxFrameBytes), none(kMaxFrameBytes);
  const std::size_t m = encode_frame(p, mac, none.data());
  ASSERT_EQ(encode_frame(p, mac, one.data(), {&s, 0, 1}), m + 1);
  ASSERT_EQ(encode_frame(p, mac, two.data(), {&s, 0, 2}), m + 2);
  const std::size_t at = 18 + 20 + 8 + 12 + 4;  // after the AETH
  EXPECT_EQ(one[at], 0xa2);
  EXPECT_EQ(two[at] << 8 | two[at + 1], 0x1a2);
}

TEST(Telemetry, StacksAreReusedAndCountedUntilReleased) {
  Telemetry t;
  const std::uint32_t a = t.acquire();
  EXPECT_EQ(a, 1u);
  ASSERT_TRUE(t.push(a, {Time::from_ps(7), 1, 2, Gbps(25)}, 1));
  EXPECT_FALSE(t.push(a, {Time::from_ps(8), 1, 2, Gbps(25)}, 1));  // one slot: full
  const std::uint32_t b = t.copy(a);
  EXPECT_EQ(t.at(b).hops, 1);
  EXPECT_EQ(t.at(b).hop[0].at.ps(), 7);
  EXPECT_EQ(t.live(), 2u);
  t.release(a);
  EXPECT_THROW(t.release(a), std::logic_error);  // twice: two packets would share it
  EXPECT_THROW(t.release(9), std::logic_error);  // never taken
  EXPECT_THROW(t.check_no_leaks(), std::logic_error);
  const std::uint32_t c = t.acquire();  // a's slot again, emptied
  EXPECT_EQ(c, a);
  EXPECT_EQ(t.at(c).hops, 0);
  t.release(b);
  t.release(c);
  EXPECT_NO_THROW(t.check_no_leaks());
}

}  // namespace
}  // namespace fabriclab::fabric
