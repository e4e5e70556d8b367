// Hash functions against their published check values, the WRED marking rule against
// its formula (and statistically), ECMP spread and polarization on a fat-tree, traffic
// patterns and the flows file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

#include "core/error.h"
#include "core/pool.h"
#include "error_message.h"
#include "fabric/hash.h"
#include "fabric/network.h"
#include "fabric/topology.h"
#include "fabric/wred.h"
#include "workload/traffic.h"

namespace fabriclab::fabric {
namespace {

TEST(Hash, CheckValuesOfTheStandardCrcs) {
  const std::uint8_t check[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  EXPECT_EQ(crc32(check, sizeof check), 0xCBF43926u);    // CRC-32/ISO-HDLC
  EXPECT_EQ(crc16_ccitt(check, sizeof check), 0x29B1u);  // CRC-16/CCITT-FALSE
}

TEST(Hash, SeedChangesTheHashAndFunctionsDiffer) {
  const auto a = flow_hash(HashFunction::crc32, 1, host_ipv4(0), host_ipv4(5), 50000);
  EXPECT_NE(a, flow_hash(HashFunction::crc32, 2, host_ipv4(0), host_ipv4(5), 50000));
  EXPECT_NE(a, flow_hash(HashFunction::crc16, 1, host_ipv4(0), host_ipv4(5), 50000));
  EXPECT_LE(flow_hash(HashFunction::xor_fold, 7, host_ipv4(3), host_ipv4(9), 61234), 0xffffu);
  // XOR-fold by hand: seed 0, 10.0.0.1, 10.0.0.2, port 0xC000/4791 (0x12B7), proto 17.
  const std::uint32_t x = 0x0a000001u ^ 0x0a000002u ^ (0xC000u << 16 | 0x12B7u) ^ 17u;
  EXPECT_EQ(flow_hash(HashFunction::xor_fold, 0, host_ipv4(0), host_ipv4(1), 0xC000), (x >> 16) ^ (x & 0xffff));
}

TEST(Hash, SplitIntoSeedAndKeyEqualsTheDirectHash) {
  // Switches XOR a per-switch seed part with a key the packet carries; that must be the
  // very hash of the 17 bytes, for every function (CRCs are affine over GF(2)).
  RandomStream rng(5, "test/hash");
  for (HashFunction f : {HashFunction::crc32, HashFunction::crc16, HashFunction::xor_fold})
    for (int i = 0; i < 2000; ++i) {
      const auto seed = static_cast<std::uint32_t>(rng.next());
      const auto src = static_cast<std::uint32_t>(rng.next()), dst = static_cast<std::uint32_t>(rng.next());
      const auto sport = static_cast<std::uint16_t>(rng.next());
      ASSERT_EQ(flow_hash(f, seed, src, dst, sport), flow_hash_seed(f, seed) ^ flow_hash_key(f, src, dst, sport))
          << to_string(f) << " seed " << seed;
    }
}

TEST(Hash, FieldsLeftOutDoNotMatter) {
  // Without the source port, every QP between two hosts hashes alike; with it, they differ.
  const std::uint8_t ips = kSrcIp | kDstIp;
  for (HashFunction f : {HashFunction::crc32, HashFunction::crc16, HashFunction::xor_fold}) {
    EXPECT_EQ(flow_hash(f, 7, 10, 20, 50000, ips), flow_hash(f, 7, 10, 20, 60000, ips));
    EXPECT_NE(flow_hash(f, 7, 10, 20, 50000), flow_hash(f, 7, 10, 20, 60000));
    EXPECT_EQ(flow_hash(f, 7, 10, 20, 50000, ips), flow_hash_seed(f, 7) ^ flow_hash_key(f, 10, 20, 60000, ips));
  }
  EXPECT_EQ(parse_hash_fields("src_ip, dst_ip"), ips);
  EXPECT_EQ(testing::input_error_of([] { parse_hash_fields("src_ip,vlan"); }),
            "unknown hash field 'vlan' (expected: src_ip, dst_ip, src_port, dst_port, protocol)");
}

TEST(Wred, ProbabilityFollowsTheFormula) {
  const Wred w{.kmin = 100'000, .kmax = 300'000, .pmax = 0.2};
  EXPECT_EQ(w.probability(0), 0.0);
  EXPECT_EQ(w.probability(100'000), 0.0);
  EXPECT_DOUBLE_EQ(w.probability(200'000), 0.1);
  EXPECT_DOUBLE_EQ(w.probability(300'000), 0.2);
  EXPECT_EQ(w.probability(300'001), 1.0);
}

TEST(Wred, MarkingFrequencyMatchesTheProbability) {
  // 200000 draws at p = 0.05: the count is binomial, sd = sqrt(n p (1-p)) ~ 97.5; allow 4 sd.
  const Wred w{.kmin = 0, .kmax = 1000, .pmax = 0.1};
  RandomStream rng(42, "test/wred");
  const int n = 200000;
  int marks = 0;
  for (int i = 0; i < n; ++i) marks += w.mark(500, rng);
  const double expected = n * 0.05, sd = std::sqrt(n * 0.05 * 0.95);
  EXPECT_NEAR(marks, expected, 4 * sd);
  EXPECT_FALSE(w.mark(0, rng));
  EXPECT_TRUE(w.mark(1001, rng));
}

// Packets each aggregation switch of pod 0 sent up to each of its cores, with every edge
// host of pod 0 sending to every host of pod 1 on 4 QPs (k = 4: 2 edges x 2 hosts).
std::vector<std::uint64_t> agg_uplink_packets(bool seed_per_switch) {
  SwitchConfig sw;
  sw.seed = 12345;
  sw.seed_per_switch = seed_per_switch;
  Network net({}, sw, 1);
  TopologySpec t;
  t.kind = TopologyKind::fat_tree;
  t.k = 4;
  build_topology(net, t);
  for (std::uint32_t s = 0; s < 4; ++s)
    for (std::uint32_t d = 4; d < 8; ++d) net.add_flow({.src = s, .dst = d, .bytes = 64 * 4096, .start = {}, .qps = 4});
  const RunTotals r = net.run(sec(1));
  EXPECT_TRUE(r.all_finished);
  // Switches: edges 0..7, aggs 8..15 (pod 0: 8, 9), cores 16..19. An aggregation
  // switch's ports 0, 1 go down to the edges, 2, 3 up to its cores.
  std::vector<std::uint64_t> up;
  for (std::uint32_t a : {8u, 9u})
    for (std::size_t p : {2u, 3u}) up.push_back(net.switch_at(a).port(p).tx_packets());
  return up;
}

TEST(Ecmp, SameSeedAtTwoTiersPolarizes) {
  // The edge picks the aggregation switch by hash mod 2; with the same function and seed
  // the aggregation switch computes the same hash, so it only ever sees one residue and
  // sends everything to one of its two cores.
  const auto up = agg_uplink_packets(false);
  EXPECT_TRUE((up[0] == 0) != (up[1] == 0)) << up[0] << " " << up[1];
  EXPECT_TRUE((up[2] == 0) != (up[3] == 0)) << up[2] << " " << up[3];
}

TEST(Ecmp, SeedPerSwitchSpreadsOverEveryUplink) {
  const auto up = agg_uplink_packets(true);
  for (auto n : up) EXPECT_GT(n, 0u);
}

TEST(Ecmp, SeedPerSwitchSpreadsEvenFromOneEdge) {
  // Only the two hosts under edge0_0 send (96 QPs to pods 1-3). A linear hash with the
  // seed XORed in would let the aggregation switches only follow the edge's choice (one
  // core each, whatever their seeds); the per-switch selection must use both.
  SwitchConfig sw;
  sw.seed = 12345;
  Network net({}, sw, 1);
  TopologySpec t;
  t.kind = TopologyKind::fat_tree;
  t.k = 4;
  build_topology(net, t);
  for (std::uint32_t s = 0; s < 2; ++s)
    for (std::uint32_t d = 4; d < 16; d += 4)
      net.add_flow({.src = s, .dst = d, .bytes = 16 * 4096, .start = {}, .qps = 16});
  ASSERT_TRUE(net.run(sec(1)).all_finished);
  for (std::uint32_t a : {8u, 9u})
    for (std::size_t p : {2u, 3u}) EXPECT_GT(net.switch_at(a).port(p).tx_packets(), 0u) << "agg " << a << " port " << p;
}

TEST(Ecmp, SprayingBalancesUplinksExactly) {
  // Round-robin spraying from one leaf over 4 spines: the data packets split evenly.
  SwitchConfig sw;
  sw.load_balance = LoadBalance::spray_round_robin;
  NicConfig nic;
  nic.reorder_window = 64;  // sprayed packets arrive out of order
  Network net(nic, sw, 1);
  TopologySpec t;
  t.kind = TopologyKind::leaf_spine;
  t.leaves = 2;
  t.spines = 4;
  t.hosts_per_leaf = 1;
  build_topology(net, t);
  net.add_flow({.src = 0, .dst = 1, .bytes = 400 * 4096, .start = {}});
  const RunTotals r = net.run(sec(1));
  ASSERT_TRUE(r.all_finished);
  // leaf0: port 0 is the host, ports 1..4 the spines; 400 data packets, 100 each.
  for (std::size_t p = 1; p <= 4; ++p) EXPECT_EQ(net.switch_at(0).port(p).tx_packets(), 100u) << p;
}

TEST(Traffic, PermutationIsADerangementFromTheSeed) {
  workload::TrafficSpec t;
  t.pattern = workload::Pattern::permutation;
  const auto a = workload::make_flows(t, 64, 7);
  const auto b = workload::make_flows(t, 64, 7);
  const auto c = workload::make_flows(t, 64, 8);
  ASSERT_EQ(a.size(), 64u);
  std::set<std::uint32_t> dsts;
  bool differs = false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].src, i);
    EXPECT_NE(a[i].dst, a[i].src);
    dsts.insert(a[i].dst);
    EXPECT_EQ(a[i].dst, b[i].dst);
    differs |= a[i].dst != c[i].dst;
  }
  EXPECT_EQ(dsts.size(), 64u);
  EXPECT_TRUE(differs);
}

TEST(Traffic, IncastTakesTheLowestOtherHosts) {
  workload::TrafficSpec t;
  t.incast_receiver = 2;
  t.incast_senders = 3;
  const auto f = workload::make_flows(t, 8, 1);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].src, 0u);
  EXPECT_EQ(f[1].src, 1u);
  EXPECT_EQ(f[2].src, 3u);
  for (const auto& x : f) EXPECT_EQ(x.dst, 2u);
  t.incast_senders = 8;
  EXPECT_EQ(testing::input_error_of([&] { workload::make_flows(t, 8, 1); }),
            "traffic.incast.senders 8: only 7 other hosts");
}

// Training on 4 GPUs, 2 iterations: per iteration 4 distribution flows (GPU i from GPU
// i + 2) and 2(4-1) = 6 ring steps of 4 flows (i -> i+1, bytes/4 each). Step k of GPU i
// waits for step k-1 into i (from i-1) and its own step k-1; step 0 for i's
// distribution, plus, after the first iteration, i's own last send; iteration 2's
// distribution into i waits for the last step into i.
TEST(Traffic, TrainingChainsTheRingSteps) {
  workload::TrafficSpec t;
  t.pattern = workload::Pattern::training;
  t.bytes = Bytes::from_count(4000);
  t.iterations = 2;
  t.distribution_bytes = Bytes::from_count(100);
  t.compute = us(7);
  const auto f = workload::make_flows(t, 4, 1);
  const workload::TrainingLayout l = workload::training_layout(t, 4);
  ASSERT_EQ(l.per_iteration(), 4u + 6u * 4u);
  ASSERT_EQ(f.size(), 2u * 28u);
  EXPECT_EQ(f[l.dist(0, 1)].src, 3u);
  EXPECT_EQ(f[l.dist(0, 1)].dst, 1u);
  EXPECT_EQ(f[l.dist(0, 1)].bytes, 100u);
  EXPECT_TRUE(f[l.dist(0, 1)].after.empty());
  const auto& s0 = f[l.step(0, 0, 2)];
  EXPECT_EQ(s0.src, 2u);
  EXPECT_EQ(s0.dst, 3u);
  EXPECT_EQ(s0.bytes, 1000u);
  EXPECT_EQ(s0.after, (std::vector<std::uint32_t>{l.dist(0, 2)}));
  EXPECT_EQ(s0.after_delay, us(7));
  EXPECT_EQ(f[l.step(0, 3, 0)].after, (std::vector<std::uint32_t>{l.step(0, 2, 3), l.step(0, 2, 0)}));
  EXPECT_EQ(f[l.dist(1, 2)].after, (std::vector<std::uint32_t>{l.step(0, 5, 1)}));
  EXPECT_EQ(f[l.step(1, 0, 2)].after, (std::vector<std::uint32_t>{l.dist(1, 2), l.step(0, 5, 2)}));
  // Every dependence points back: the network accepts the list as it is.
  for (std::uint32_t id = 0; id < f.size(); ++id)
    for (std::uint32_t d : f[id].after) EXPECT_LT(d, id);
  EXPECT_EQ(testing::input_error_of([&] { workload::make_flows(t, 1, 1); }), "traffic needs at least two hosts");
}

TEST(Traffic, FlowsFileErrorsNameTheLine) {
  const std::string path = ::testing::TempDir() + "flows_test.csv";
  {
    std::ofstream f(path);
    f << "src,dst,bytes,start,priority,qps\n# a comment\nh0,h3,1MB,10us,3,2\n1,2,64KiB,0ns,8,1\n";
  }
  EXPECT_EQ(testing::input_error_of([&] { workload::read_flows_csv(path, 4); }),
            path + ":4: column priority: expected an integer 0..7, got '8'");
  {
    std::ofstream f(path);
    f << "src,dst,bytes,start,priority,qps\nh0,h3,1MB,10us,3,2\n";
  }
  const auto flows = workload::read_flows_csv(path, 4);
  ASSERT_EQ(flows.size(), 1u);
  EXPECT_EQ(flows[0].dst, 3u);
  EXPECT_EQ(flows[0].bytes, 1'000'000u);
  EXPECT_EQ(flows[0].start, us(10));
  EXPECT_EQ(flows[0].qps, 2u);
  EXPECT_EQ(flows[0].dport, 100u);  // no dport column: the ns-3 generator's label
  // An optional last column, dport: the flow's label in fct.txt.
  {
    std::ofstream f(path);
    f << "src,dst,bytes,start,priority,qps,dport\nh0,h3,1MB,10us,3,2,200\n1,2,1KB,0ns,3,1,65536\n";
  }
  EXPECT_EQ(testing::input_error_of([&] { workload::read_flows_csv(path, 4); }),
            path + ":3: column dport: expected an integer 0..65535, got '65536'");
  {
    std::ofstream f(path);
    f << "src,dst,bytes,start,priority,qps,dport\nh0,h3,1MB,10us,3,2,200\n";
  }
  EXPECT_EQ(workload::read_flows_csv(path, 4)[0].dport, 200u);
  {
    std::ofstream f(path);
    f << "src,dst,bytes,start,priority,qps,port\nh0,h3,1MB,10us,3,2,200\n";
  }
  EXPECT_EQ(testing::input_error_of([&] { workload::read_flows_csv(path, 4); }),
            path + ":1: expected the header 'src,dst,bytes,start,priority,qps' or "
                   "'src,dst,bytes,start,priority,qps,dport'");
  std::remove(path.c_str());
}

// The end-of-run walk over many queues at once: more lists than it takes in turns (16),
// empty ones among them, each packet seen once and its list's order kept, and a visit
// that releases the packet it is given.
TEST(PacketLists, InTurnsVisitsEveryPacketOnceInListOrderAndMayReleaseIt) {
  Pool<Packet> pool("Packet", 64);
  std::vector<PacketFifo> fifos(40);
  std::uint32_t id = 0;
  for (std::uint32_t l = 0; l < fifos.size(); ++l)
    for (std::uint32_t k = 0; k < (l % 7) * l; ++k) {  // lists 0, 7, 14, ... stay empty
      Packet* p = pool.acquire();
      p->flow = l;
      p->psn = id++;
      fifos[l].push(p);
    }
  const std::uint32_t total = id;
  std::vector<Packet*> heads;
  for (auto& f : fifos) heads.push_back(f.take_all());
  ASSERT_TRUE(fifos[3].empty());
  std::vector<int> seen(total, 0);
  std::vector<std::int64_t> last(fifos.size(), -1);
  bool in_order = true;
  for_each_in_turns(heads, [&](Packet* p) {
    ++seen.at(p->psn);
    in_order = in_order && static_cast<std::int64_t>(p->psn) > last[p->flow];
    last[p->flow] = p->psn;
    p->next = nullptr;  // as good as released: a walk that read the link after f would stop here
    pool.release(p);
  });
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<std::ptrdiff_t>(total));
  EXPECT_TRUE(in_order);
  EXPECT_EQ(pool.live(), 0u);
}

}  // namespace
}  // namespace fabriclab::fabric
