// The Ultra Ethernet transport (nic.transport = "uet"): entropies picked per packet by
// hand (entropy.h), the ECMP key of an entropy by the hash's affinity, one flow sprayed
// over a leaf's four uplinks, and its reliability worked by hand on one flow between two
// hosts on one 100 Gb/s link of 1 us, packets lost or held back by rules on h0's link
// (as tests/fabric/irn_test.cc): losses are known from a trimmed packet's NACK or a
// timeout only -- a SACK never makes a hole lost -- and a timeout resends the oldest
// packet not SACKed, and only it.
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
#include "quarter_rate_uplink.h"

namespace fabriclab::fabric {
namespace {

// A packet's key is the QP's XOR the entropy's change, for every function and field set:
// the host computes one key per QP and 2^k changes, never a hash per packet.
TEST(Uet, AnEntropysKeyIsTheBaseKeyXorItsChange) {
  for (const HashFunction f : {HashFunction::crc32, HashFunction::crc16, HashFunction::xor_fold})
    for (const std::uint8_t fields : {kAllHashFields, std::uint8_t{kSrcIp | kDstIp | kSrcPort}, std::uint8_t{kDstIp}})
      for (const std::uint16_t base : {std::uint16_t{49152}, std::uint16_t{0xd5c0}, std::uint16_t{0xffc0}})
        for (const std::uint16_t ev : {1, 7, 63}) {
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
    if (ev != x) EXPECT_EQ(seen[ev], 4) << ev;
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

struct OneUetFlow {
  Network net;
  RunTotals totals;
  OneUetFlow(std::uint32_t packets, const std::string& rules, Time rto) : net(nic(rto), {}, 1) {
    TopologySpec t;
    t.kind = TopologyKind::back_to_back;
    t.hosts = 2;
    build_topology(net, t);
    net.add_flow({.src = 0, .dst = 1, .bytes = std::uint64_t{packets} * 4096, .start = {}});
    if (!rules.empty()) {
      ImpairmentConfig c;
      c.rules = parse_impairment_rules(rules);
      net.add_impairment(net.host(0).port(0), c);
    }
    totals = net.run(ms(10));
  }
  static NicConfig nic(Time rto) {
    NicConfig n;
    n.transport = Transport::uet;
    n.uet.rto = rto;
    return n;
  }
  std::uint64_t retransmitted() const { return net.flows()[0].retransmitted; }
  HostCounters rx() const { return net.host_counters(1); }
  HostCounters tx() const { return net.host_counters(0); }
  double fct_us() const { return static_cast<double>((net.flows()[0].finish - net.flows()[0].started).ps()) / 1e6; }
};

// 16 packets, PSNs 3 and 7 lost, 10 overtaken by 11 and 12, RTO 50 us. Every packet after
// 3 is SACKed, none makes a hole lost (where IRN resends 3 at 4.35 us, irn_test.cc); the
// cumulative ACK stops at 3 (2's ACK at about 3 us). The check armed at the first send
// finds 47 us without progress at 50 us and comes back at about 53 us: timeout, PSN 3
// (the oldest not SACKed) goes again and arrives about 1.3 us later, the cumulative ACK
// jumps to 7 (4, 5, 6 were placed). The next timeout, 50 us after that progress (about
// 105 us), resends 7, which completes the message near 107 us. 10, only late, is never
// resent.
TEST(Uet, LossesAreFoundByTimeoutsOneOldestPacketEach) {
  OneUetFlow run(16, "drop 0/3; drop 0/7; hold 0/10 2", us(50));
  EXPECT_TRUE(run.totals.all_finished);
  EXPECT_EQ(run.tx().timeouts, 2u);
  EXPECT_EQ(run.retransmitted(), 2u);
  EXPECT_EQ(run.rx().duplicates, 0u);
  EXPECT_EQ(run.net.flows()[0].delivered, 16u * 4096);
  EXPECT_GT(run.fct_us(), 100.0 + 2.3);
  EXPECT_LT(run.fct_us(), 100.0 + 10.0);
  // Held at most: 4, 5, 6, 8, 9, 11, 12, 10, 13, 14, 15 -- all 11 until 3 comes again.
  EXPECT_EQ(run.rx().reassembly_peak, 11u);
}

// The default timeout: 15 us + 6 base RTTs. Back to back, the base RTT is a full first
// data frame out and an ACK back over 1 us each: 4198 bytes on the wire at 100 Gb/s
// (335.84 ns) + 1 us + 90 bytes (7.2 ns) + 1 us = 2343.04 ns, so the timeout is
// 29058.24 ns. PSN 3 of 4 is lost; the last progress is PSN 2's ACK, back at 335.84 +
// 2 x 334.56 + 1000 + 7.2 + 1000 = 3012.16 ns; the timeout counts from it (as RC's and
// IRN's: time without progress; uet-htsim counts from the oldest packet's send): at
// 32070.40 ns PSN 3 goes again and arrives 334.56 + 1000 ns later, at 33404.96 ns.
TEST(Uet, TheDefaultTimeoutIsFifteenMicrosecondsAndSixBaseRtts) {
  OneUetFlow run(4, "drop 0/3", Time());
  EXPECT_TRUE(run.totals.all_finished);
  EXPECT_EQ(run.net.base_rtt(), Time::from_ps(2'343'040));
  EXPECT_EQ(uet_rto(UetParams{}, run.net.base_rtt()), Time::from_ps(29'058'240));
  EXPECT_EQ(run.tx().timeouts, 1u);
  EXPECT_EQ(run.retransmitted(), 1u);
  EXPECT_NEAR(run.fct_us(), 33.40496, 1e-6);
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

// 8 x 512 KiB into one 100 Gb/s port of one switch, trimming over 60 KB (about one BDP:
// the base RTT is 4.7 us), ECN marks from 12 to 48 KB: UET without congestion control
// sends at line rate and has most of its packets trimmed once the queue is full; NSCC
// starts at 1.5 BDP each, is trimmed at first, cuts (quick adapt, then the marks) and
// keeps the queue short. Both resend exactly the trimmed packets (no timeout), and every
// flow completes.
struct EightToOne {
  Network net;
  RunTotals totals;
  explicit EightToOne(const std::string& cc) : net(nic(cc), sw(), 1) {
    TopologySpec t;
    t.kind = TopologyKind::single_switch;
    t.hosts = 9;
    build_topology(net, t);
    for (std::uint32_t h = 1; h <= 8; ++h) net.add_flow({.src = h, .dst = 0, .bytes = 128 * 4096, .start = {}});
    totals = net.run(ms(20));
  }
  static NicConfig nic(const std::string& cc) {
    NicConfig n;
    n.transport = Transport::uet;
    n.congestion_control = cc;
    return n;
  }
  static SwitchConfig sw() {
    SwitchConfig s;
    s.trim_threshold = Bytes::from_count(60000);
    s.wred = Wred{.kmin = 12000, .kmax = 48000, .pmax = 1};
    return s;
  }
  std::uint64_t trimmed() const {
    std::uint64_t n = 0;
    for (std::uint32_t h = 0; h < 9; ++h) n += net.host_counters(h).trimmed_received;
    return n;
  }
  std::uint64_t retransmitted() const {
    std::uint64_t n = 0;
    for (const auto& f : net.flows()) n += f.retransmitted;
    return n;
  }
};

TEST(Uet, NsccKeepsAnIncastsQueueShortWhereLineRateIsTrimmed) {
  EightToOne none("none"), nscc("nscc");
  // At line rate 8 packets arrive per one that leaves: most are trimmed, their resends
  // again -- more trims than the 1024 packets.
  EXPECT_GT(none.trimmed(), 1024u);
  // NSCC: at most its first windows, 1.5 BDP each, trimmed twice over.
  const double bdp = 100e9 / 8 * static_cast<double>(nscc.net.base_rtt().ps()) * 1e-12;
  EXPECT_LT(static_cast<double>(nscc.trimmed()), 2 * 8 * std::ceil(1.5 * bdp / 4096));
  for (const EightToOne* r : {&none, &nscc}) {
    EXPECT_TRUE(r->totals.all_finished);
    EXPECT_EQ(r->retransmitted(), r->trimmed());
    EXPECT_EQ(r->net.host_counters(1).timeouts, 0u);
  }
}

}  // namespace
}  // namespace fabriclab::fabric
