// The Ultra Ethernet transport (nic.transport = "uet"): entropies picked per packet by
// hand (entropy.h), the ECMP key of an entropy by the hash's affinity, one flow sprayed
// over a leaf's four uplinks, and its reliability worked by hand on one flow between two
// hosts on one 100 Gb/s link of 1 us, packets lost or held back by rules on h0's link
// (as tests/fabric/irn_test.cc): losses are known from a trimmed packet's NACK or a
// timeout only -- a SACK never makes a hole lost -- and a timeout, counted from the send
// of the oldest packet in flight, resends that packet and only it.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "error_message.h"
#include "fabric/entropy.h"
#include "fabric/hash.h"
#include "fabric/network.h"
#include "fabric/reorder_box.h"
#include "fabric/switch.h"
#include "fabric/topology.h"
#include "one_flow_back_to_back.h"
#include "quarter_rate_uplink.h"

namespace fabriclab::fabric {
namespace {

// A packet's key is the QP's XOR the entropy's change, for every function and field set:
// the host computes one key per QP and 2^k changes, never a hash per packet.
TEST(Uet, AnEntropysKeyIsTheBaseKeyXorItsChange) {
  for (const HashFunction f : {HashFunction::crc32, HashFunction::crc16, HashFunction::xor_fold})
    for (const std::uint8_t fields : {kAllHashFields, std::uint8_t{kSrcIp | kDstIp | kSrcPort}, std::uint8_t{kDstIp}})
      for (const std::uint16_t base : {std::uint16_t{49152}, std::uint16_t{0xd5c0}, std::uint16_t{0xffc0}})
        for (const std::uint16_t ev : {std::uint16_t{1}, std::uint16_t{7}, std::uint16_t{63}}) {
          const std::uint32_t src = host_ipv4(3), dst = host_ipv4(17);
          const std::uint32_t change = flow_hash_key(f, 0, 0, ev, fields) ^ flow_hash_key(f, 0, 0, 0, fields);
          EXPECT_EQ(flow_hash_key(f, src, dst, static_cast<std::uint16_t>(base | ev), fields),
                    flow_hash_key(f, src, dst, base, fields) ^ change)
              << to_string(f) << " fields " << int{fields} << " base " << base << " ev " << ev;
        }
}

std::vector<std::uint32_t> picks(EntropyPicker& p, int n) {
  std::vector<std::uint32_t> v;
  for (int k = 0; k < n; ++k) v.push_back(p.next());
  return v;
}

// Oblivious: every round of n picks is a permutation of 0..n-1 (the index XOR a mask).
TEST(Uet, ObliviousVisitsEveryEntropyOncePerRound) {
  EntropyPicker p(EntropyAlgo::oblivious, 8, RandomStream(1, "test"));
  for (int round = 0; round < 5; ++round) {
    std::vector<std::uint32_t> r = picks(p, 8);
    p.on_trim(r[0]);  // ignored
    std::sort(r.begin(), r.end());
    EXPECT_EQ(r, (std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5, 6, 7})) << "round " << round;
  }
}

// Bitmap, 4 entropies, X trimmed before any pick (penalty 4): each round the walk meets X
// once and takes one point off, so for four rounds each pick is one of the other three
// (3 picks a round, 12 in all, each other value 4 times); in the fifth round X is taken.
TEST(Uet, ATrimmedEntropyIsSkippedForAsManyRoundsAsItsPenalty) {
  EntropyPicker p(EntropyAlgo::bitmap, 4, RandomStream(7, "test"));
  const std::uint32_t x = 2;
  p.on_trim(x);
  EXPECT_EQ(p.penalty(x), EntropyPicker::kPenaltyTrim);
  const std::vector<std::uint32_t> first = picks(p, 12);
  std::map<std::uint32_t, int> seen;
  for (std::uint32_t ev : first) ++seen[ev];
  EXPECT_EQ(seen.count(x), 0u);
  for (std::uint32_t ev = 0; ev < 4; ++ev)
    if (ev != x) {
      EXPECT_EQ(seen[ev], 4) << ev;
    }
  EXPECT_EQ(p.penalty(x), 0);
  const std::vector<std::uint32_t> fifth = picks(p, 4);
  EXPECT_EQ(std::count(fifth.begin(), fifth.end(), x), 1);
}

TEST(Uet, PenaltiesAddUpToTheCap) {
  EntropyPicker p(EntropyAlgo::bitmap, 64, RandomStream(1, "test"));
  p.on_ecn(5);
  EXPECT_EQ(p.penalty(5), 1);
  p.on_trim(5);
  p.on_trim(5);
  EXPECT_EQ(p.penalty(5), 9);
  p.on_trim(5);
  p.on_trim(5);
  EXPECT_EQ(p.penalty(5), 15);
  p.on_timeout(9);
  EXPECT_EQ(p.penalty(9), 15);
  p.on_clean_ack(9);  // a clean ACK takes nothing off (the walk does)
  EXPECT_EQ(p.penalty(9), 15);
}

// Mixed: entropies that came back clean are used again, oldest first, before the walk;
// an ECN-marked or trimmed one is not recycled.
TEST(Uet, MixedRecyclesCleanEntropiesFirstInOrder) {
  EntropyPicker p(EntropyAlgo::mixed, 16, RandomStream(3, "test"));
  p.on_clean_ack(11);
  p.on_ecn(4);
  p.on_clean_ack(2);
  p.on_trim(6);
  p.on_clean_ack(11);
  EXPECT_EQ(p.good_queued(), 3u);
  EXPECT_EQ(picks(p, 3), (std::vector<std::uint32_t>{11, 2, 11}));
  // Then the walk, which skips 4 and 6 (penalised) the first time it meets them.
  const std::vector<std::uint32_t> round = picks(p, 14);
  EXPECT_EQ(std::count(round.begin(), round.end(), 4u), 0);
  EXPECT_EQ(std::count(round.begin(), round.end(), 6u), 0);
  // A long queue of good entropies grows (no entry lost) and is used in order.
  for (std::uint32_t k = 0; k < 100; ++k) p.on_clean_ack(k % 16);
  const std::vector<std::uint32_t> hundred = picks(p, 100);
  for (std::uint32_t k = 0; k < 100; ++k) ASSERT_EQ(hundred[k], k % 16) << k;
}

// h0 -> h1 across a leaf-spine of two leaves and four spines, one host per leaf, 640
// packets. Oblivious over 64 entropies uses each exactly 10 times, and ECMP sends an
// entropy's packets always the same way: each uplink of leaf0 (ports 1..4) carries 10
// packets per entropy that hashes to it -- a multiple of 10, every uplink some (64
// entropies missing one of 4 ports has probability 4 (3/4)^64, and the hashes are fixed).
// One entropy: every packet takes the same uplink, as RC's one QP under ECMP.
struct OneFlowOverFourSpines {
  Network net;
  explicit OneFlowOverFourSpines(UetParams uet) : net(nic(uet), {}, 1) {
    TopologySpec t;
    t.kind = TopologyKind::leaf_spine;
    t.leaves = 2;
    t.spines = 4;
    t.hosts_per_leaf = 1;
    build_topology(net, t);
    net.add_flow({.src = 0, .dst = 1, .bytes = 640 * 4096, .start = {}});
    EXPECT_TRUE(net.run(ms(10)).all_finished);
  }
  static NicConfig nic(UetParams uet) {
    NicConfig n;
    n.transport = Transport::uet;
    n.uet = uet;
    return n;
  }
  std::array<std::uint64_t, 4> uplinks() {
    std::array<std::uint64_t, 4> a{};
    for (std::size_t k = 0; k < 4; ++k) a[k] = net.switch_at(0).port(k + 1).tx_packets();
    return a;
  }
};

TEST(Uet, ObliviousEntropiesSprayOneFlowOverEveryUplinkInWholeRounds) {
  UetParams p;
  p.entropy = EntropyAlgo::oblivious;
  OneFlowOverFourSpines run(p);
  const auto up = run.uplinks();
  EXPECT_EQ(up[0] + up[1] + up[2] + up[3], 640u);
  for (std::size_t k = 0; k < 4; ++k) {
    EXPECT_GT(up[k], 0u) << k;
    EXPECT_EQ(up[k] % 10, 0u) << k;
  }
  EXPECT_EQ(run.net.flows()[0].delivered, 640u * 4096);
  EXPECT_EQ(run.net.flows()[0].retransmitted, 0u);

  p.entropies = 1;
  OneFlowOverFourSpines one(p);
  const auto single = one.uplinks();
  EXPECT_EQ(*std::max_element(single.begin(), single.end()), 640u);
}

// (the set-up, one_flow_back_to_back.h: PSN k leaves h0 at 335.84 + (k - 1) x 334.56 ns)
struct OneUetFlow : OneFlowBackToBack {
  OneUetFlow(std::uint32_t packets, const std::string& rules, Time rto) : OneFlowBackToBack(packets, rules, nic(rto)) {}
  static NicConfig nic(Time rto) {
    NicConfig n;
    n.transport = Transport::uet;
    n.uet.rto = rto;
    return n;
  }
};

// 16 packets, PSNs 3 and 7 lost, 10 overtaken by 11 and 12, RTO 50 us. Every packet after
// 3 is SACKed and none makes a hole lost (where IRN resends 3 at 4.35 us, irn_test.cc).
// The timer runs from the send of the oldest packet in flight (uet-htsim's): PSN k leaves
// at 335.84 + (k - 1) x 334.56 ns, so 3 at 1004.96 ns and 7 at 2343.2 ns. The check armed
// at the first send (50 us) finds 3 the oldest and comes back at 51004.96 ns: timeout, 3
// goes again. The next oldest in flight is 7: its timeout at 52343.2 ns, and it arrives
// 334.56 + 1000 ns later, at 53677.76 ns, completing the message. 10, only late, is never
// resent.
TEST(Uet, LossesAreFoundByTimeoutsOneOldestPacketEach) {
  OneUetFlow run(16, "drop 0/3; drop 0/7; hold 0/10 2", us(50));
  EXPECT_TRUE(run.totals.all_finished);
  EXPECT_EQ(run.tx().timeouts, 2u);
  EXPECT_EQ(run.retransmitted(), 2u);
  EXPECT_EQ(run.rx().duplicates, 0u);
  EXPECT_EQ(run.net.flows()[0].delivered, 16u * 4096);
  EXPECT_NEAR(run.fct_us(), 53.67776, 1e-6);
  // Held at most: 4, 5, 6, 8, 9, 11, 12, 10, 13, 14, 15 -- all 11 until 3 comes again.
  EXPECT_EQ(run.rx().reassembly_peak, 11u);
}

// The default timeout: uet-htsim's 15 us + six drains of its switch queues, 1 BDP deep
// with trimming and 5 without: 15 us + 6 or 30 base RTTs. Back to back (no switch trims),
// the base RTT is a full first data frame out and an ACK back over 1 us each: 4198 bytes
// on the wire at 100 Gb/s (335.84 ns) + 1 us + 90 bytes (7.2 ns) + 1 us = 2343.04 ns, so
// the timeout is 15 us + 30 x 2343.04 ns = 85291.2 ns. PSN 3 of 4 is lost; it left at
// 335.84 + 2 x 334.56 = 1004.96 ns, so it goes again at 86296.16 ns and arrives 334.56 +
// 1000 ns later, at 87630.72 ns.
TEST(Uet, TheDefaultTimeoutIsFifteenMicrosecondsAndSixQueueDrains) {
  OneUetFlow run(4, "drop 0/3", Time());
  EXPECT_TRUE(run.totals.all_finished);
  EXPECT_EQ(run.net.base_rtt(), Time::from_ps(2'343'040));
  EXPECT_EQ(run.net.uet_rto(), Time::from_ps(85'291'200));
  EXPECT_EQ(uet_rto(UetParams{}, run.net.base_rtt(), true), Time::from_ps(29'058'240));
  EXPECT_EQ(run.tx().timeouts, 1u);
  EXPECT_EQ(run.retransmitted(), 1u);
  EXPECT_NEAR(run.fct_us(), 87.63072, 1e-6);
}

// Trimmed (tests/fabric/trimming_test.cc: the third of three packets is cut at leaf0's
// quarter-rate uplink): its NACK (0x65) makes the sender resend that packet alone, at once.
TEST(Uet, ATrimmedPacketIsResentAloneAtOnce) {
  SwitchConfig sw;
  sw.trim_threshold = Bytes::from_count(5000);
  NicConfig n;
  n.transport = Transport::uet;
  Network net(n, sw, 1);
  three_packets_over_a_quarter_rate_uplink(net);
  EXPECT_TRUE(net.run(ms(10)).all_finished);
  EXPECT_EQ(net.switch_at(0).trimmed(1), 1u);
  EXPECT_EQ(net.flows()[0].retransmitted, 1u);
  EXPECT_EQ(net.host_counters(0).timeouts, 0u);
  EXPECT_EQ(net.host_counters(1).duplicates, 0u);
  EXPECT_EQ(net.flows()[0].delivered, 3u * 4096);
}

TEST(Uet, ParametersThatCannotWorkAreErrors) {
  NicConfig n;
  n.transport = Transport::uet;
  n.uet.entropies = 48;
  EXPECT_EQ(testing::input_error_of([&] { check_nic_config(n); }),
            "nic.uet.entropies = 48: expected a power of two, 1 to 16384");
  n.uet.entropies = 64;
  n.congestion_control = "dcqcn";
  EXPECT_EQ(testing::input_error_of([&] { check_nic_config(n); }),
            "nic.congestion_control = dcqcn: expected a policy that reads ACKs (nscc, dctcp, swift, ...) or none with "
            "nic.transport = uet (UET sends no CNPs: its ACKs echo the CE marks)");
  n.congestion_control = "none";
  n.reorder_window = 8;
  EXPECT_EQ(testing::input_error_of([&] { check_nic_config(n); }),
            "nic.reorder_window / nic.reorder_timeout: expected neither with nic.transport = uet (its receiver places "
            "every packet within its bitmap: nic.uet.max_outstanding)");
}

// N senders of `packets` x 4 KiB each into one 100 Gb/s port of one switch, PFC off,
// trimming over 60 KB (about one BDP: the base RTT is 4.7 us), ECN marks from 12 to 48 KB.
struct Incast {
  Network net;
  RunTotals totals;
  Incast(std::uint32_t senders, std::uint32_t packets, const std::string& cc, bool rccc = false)
      : net(nic(cc, rccc), sw(), 1), senders_(senders) {
    TopologySpec t;
    t.kind = TopologyKind::single_switch;
    t.hosts = senders + 1;
    build_topology(net, t);
    for (std::uint32_t h = 1; h <= senders; ++h)
      net.add_flow({.src = h, .dst = 0, .bytes = std::uint64_t{packets} * 4096, .start = {}});
    totals = net.run(ms(20));
  }
  static NicConfig nic(const std::string& cc, bool rccc) {
    NicConfig n;
    n.transport = Transport::uet;
    n.congestion_control = cc;
    n.uet.rccc = rccc;
    return n;
  }
  static SwitchConfig sw() {
    SwitchConfig s;
    s.pfc.enabled = false;
    s.trim_threshold = Bytes::from_count(60000);
    s.wred = Wred{.kmin = 12000, .kmax = 48000, .pmax = 1};
    return s;
  }
  std::uint64_t trimmed() const {
    std::uint64_t n = 0;
    for (std::uint32_t h = 0; h <= senders_; ++h) n += net.host_counters(h).trimmed_received;
    return n;
  }
  std::uint64_t retransmitted() const {
    std::uint64_t n = 0;
    for (const auto& f : net.flows()) n += f.retransmitted;
    return n;
  }
  double last_finish_us() const {
    Time t;
    for (const auto& f : net.flows()) t = std::max(t, f.finish);
    return static_cast<double>(t.ps()) / 1e6;
  }
  std::uint32_t senders_;
};

// 8 x 512 KiB: UET without congestion control sends at line rate and has most of its
// packets trimmed once the queue is full; NSCC starts at 1.5 BDP each, is trimmed at
// first, cuts (quick adapt, then the marks) and keeps the queue short. Both resend
// exactly the trimmed packets (no timeout), and every flow completes.
TEST(Uet, NsccKeepsAnIncastsQueueShortWhereLineRateIsTrimmed) {
  Incast none(8, 128, "none"), nscc(8, 128, "nscc");
  // At line rate 8 packets arrive per one that leaves: most are trimmed, their resends
  // again -- more trims than the 1024 packets.
  EXPECT_GT(none.trimmed(), 1024u);
  // NSCC: at most its first windows, 1.5 BDP each, trimmed twice over.
  const double bdp = 100e9 / 8 * static_cast<double>(nscc.net.base_rtt().ps()) * 1e-12;
  EXPECT_LT(static_cast<double>(nscc.trimmed()), 2 * 8 * std::ceil(1.5 * bdp / 4096));
  for (const Incast* r : {&none, &nscc}) {
    EXPECT_TRUE(r->totals.all_finished);
    EXPECT_EQ(r->retransmitted(), r->trimmed());
    EXPECT_EQ(r->net.host_counters(1).timeouts, 0u);
  }
}

// RCCC: after their speculative first windows (1.5 BDP each) the senders send only what
// the receiver's pulls grant, at 99 % of its line: only those first windows can overrun
// the queue, so no more packets are trimmed than they hold -- with NSCC beside it too.
TEST(Uet, ReceiverCreditsTrimNoMoreThanTheSpeculativeWindows) {
  for (const std::string cc : {"none", "nscc"}) {
    Incast run(8, 128, cc, true);
    EXPECT_TRUE(run.totals.all_finished) << cc;
    EXPECT_EQ(run.retransmitted(), run.trimmed()) << cc;
    const double bdp = 100e9 / 8 * static_cast<double>(run.net.base_rtt().ps()) * 1e-12;
    EXPECT_LE(static_cast<double>(run.trimmed()), 8 * std::ceil(1.5 * bdp / 4096)) << cc;
    EXPECT_GT(run.net.host_counters(0).pulls_sent, 0u) << cc;
  }
}

// 64:1 under UET with NSCC and trimming, PFC off: 64 x 128 KiB (32 packets each: 4198 +
// 31 x 4182 wire bytes) is 8 565 760 bytes through the receiver's port, 685.26 us at 100
// Gb/s, and the first frame's 2 x (335.84 ns + 1 us) to get there: the ideal 687.93 us.
// Nothing is dropped (trimmed headers instead), every trimmed packet is resent once per
// trim and nothing else is (no timeout), and the last flow finishes within 10 % of the
// ideal; with receiver credits too.
TEST(Uet, ASixtyFourToOneIncastWithTrimmingLosesNothingAndFinishesNearTheIdeal) {
  const double ideal_us = (4198 + 31 * 4182.0) * 64 * 8 / 100e3 + 2 * 1.33584;
  for (const bool rccc : {false, true}) {
    Incast run(64, 32, "nscc", rccc);
    EXPECT_TRUE(run.totals.all_finished) << rccc;
    EXPECT_EQ(run.net.ledger().data_packets_dropped, 0u) << rccc;
    EXPECT_GT(run.trimmed(), 0u) << rccc;
    EXPECT_EQ(run.retransmitted(), run.trimmed()) << rccc;
    EXPECT_EQ(run.net.host_counters(1).timeouts, 0u) << rccc;
    EXPECT_GT(run.last_finish_us(), ideal_us) << rccc;
    EXPECT_LT(run.last_finish_us(), 1.1 * ideal_us) << rccc;
  }
}

// RCCC on a 4:1 incast, 4 x 512 packets, no congestion control: the receiver's pacer
// grants one pull (4 packets) per 1356.93 ns, round-robin over the four. Each sender
// speculates at most ceil(1.5 BDP / 4096) packets before its first ACK or pull; every
// other packet needs a pull, and a sender asks at most one unit beyond its need: between
// (2048 - 4 x that) / 4 and 2048 / 4 + 4 pulls. Round-robin, the four finish within a
// round of pulls, the last grant's four packets and a round trip of one another; all at
// no more than the pulls' pace after the start: 2048 packets, 512 pulls of 4, one per
// period. Only the speculative windows can be trimmed.
TEST(Uet, ReceiverCreditsShareAFourToOneIncastRoundRobin) {
  Incast run(4, 512, "none", true);
  EXPECT_TRUE(run.totals.all_finished);
  const double rtt_us = static_cast<double>(run.net.base_rtt().ps()) / 1e6;
  const double bdp = 100e9 / 8 * rtt_us * 1e-6;
  const double speculative = std::ceil(1.5 * bdp / 4096);
  const double pulls = static_cast<double>(run.net.host_counters(0).pulls_sent);
  EXPECT_GE(pulls, (2048 - 4 * speculative) / 4);
  EXPECT_LE(pulls, 2048 / 4 + 4);
  Time first = Time::max(), last;
  for (const auto& f : run.net.flows()) {
    first = std::min(first, f.finish);
    last = std::max(last, f.finish);
  }
  const double period_us = 1.35693;
  EXPECT_LT(static_cast<double>((last - first).ps()) / 1e6, 4 * period_us + 4 * 0.33456 + rtt_us);
  EXPECT_LT(run.last_finish_us(), 512 * period_us + 2 * rtt_us);
  // Only the speculative windows can overrun the queue: 4 of them at once into one port.
  EXPECT_LE(static_cast<double>(run.trimmed()), 4 * speculative);
  EXPECT_EQ(run.retransmitted(), run.trimmed());
}

// One flow, back to back, under RCCC: past its speculative start it sends as the
// receiver's pulls grant -- 4 MTUs per pull, one pull per 4 full frames' wire bytes
// (4 x 4198) at 99 Gb/s: 16 792 x 8 / 99e9 s = 1356.93 ns. Every further 2000 packets
// (500 pulls) take 500 of those periods, where at line rate they take 2000 x 334.56 ns.
TEST(Uet, ReceiverCreditsPaceAFlowAtThePullRate) {
  const auto fct_us = [](std::uint32_t packets, bool rccc) {
    NicConfig n;
    n.transport = Transport::uet;
    n.uet.rccc = rccc;
    Network net(n, {}, 1);
    TopologySpec t;
    t.kind = TopologyKind::back_to_back;
    t.hosts = 2;
    build_topology(net, t);
    net.add_flow({.src = 0, .dst = 1, .bytes = std::uint64_t{packets} * 4096, .start = {}});
    EXPECT_TRUE(net.run(ms(10)).all_finished);
    EXPECT_EQ(net.flows()[0].retransmitted, 0u);
    return static_cast<double>(net.flows()[0].finish.ps()) / 1e6;
  };
  EXPECT_NEAR(fct_us(4000, true) - fct_us(2000, true), 500 * 1.35693, 2 * 1.35693);
  EXPECT_NEAR(fct_us(4000, false) - fct_us(2000, false), 2000 * 0.33456, 0.01);
}

TEST(Uet, ReceiverCreditsThatCannotWorkAreErrors) {
  NicConfig n;
  n.uet.rccc = true;
  EXPECT_EQ(testing::input_error_of([&] { check_nic_config(n); }),
            "nic.uet.rccc = true: expected nic.transport = uet (receiver credits are UET's)");
  n.transport = Transport::uet;
  n.uet.pull_bytes = 256;
  // 10 us at 400 Gb/s is 500 000 bytes: the targets' lead, ceil((1.5 BDP + 4096) / u), and
  // lag, ceil(BDP / u), + 1 must stay within 127 units: 76 + 50 + 1 at u = 10 000 bytes,
  // 76 + 51 + 1 at 9999.
  EXPECT_EQ(testing::input_error_of([&] { selective_repeat_cap(n, Gbps(400), us(10)); }),
            "nic.uet.pull_bytes = 256B: expected at least 10000 bytes (a pull target travels modulo 256 pulls, and "
            "1.5 + 1 BDPs of 10us at 400Gbps must fit in half of them)");
  n.uet.pull_bytes = 10000;
  EXPECT_NO_THROW(selective_repeat_cap(n, Gbps(400), us(10)));
  n.uet.pull_bytes = 9999;
  EXPECT_THROW(selective_repeat_cap(n, Gbps(400), us(10)), InputError);
}

}  // namespace
}  // namespace fabriclab::fabric
