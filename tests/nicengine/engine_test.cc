// Offloaded collectives on the packet-level fabric, against timelines worked out by hand
// from the frame sizes (fabric/packet.h: 66 header bytes, +16 RETH on a WRITE's first
// packet, +4 AETH on an ACK, +20 on the wire per frame), the link rate and delay, and
// the NIC model's costs (50 ns per operation, +100 ns per counter-cache miss), and
// against the timed NIC model where the fabric adds only latency.
#include "nicengine/engine.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.h"
#include "error_message.h"
#include "fabric/loopback.h"
#include "offload/assignment.h"
#include "offload/collectives.h"

namespace fabriclab::nicengine {
namespace {

using nicmodel::NicParams;
using nicmodel::Policy;

std::shared_ptr<const offload::Schedule> assigned(const char* coll, const char* alg, int ranks, std::int64_t bytes,
                                                  bool count_sends = true) {
  offload::BuildOptions b;
  b.ranks = ranks;
  b.bytes = bytes;
  b.count_send_completions = count_sends;
  return std::make_shared<const offload::Schedule>(offload::assign_counters(
      offload::build_schedule(coll, alg, b), offload::Strategy::optimized, {.analysis = offload::Analysis::local}));
}

// The model's defaults, but a host that polls every picosecond: a collective is seen done
// at the first poll after its last host_wait is met, one picosecond later.
NicParams sharp() {
  NicParams p;
  p.host_poll = Time::from_ps(1);
  return p;
}

// `n` hosts on one switch (n = 2 and `direct`: back to back), 100G links of `delay`.
std::unique_ptr<fabric::Network> star(int n, Time delay, bool direct = false, fabric::NicConfig nic = {}) {
  auto net = std::make_unique<fabric::Network>(nic, fabric::SwitchConfig{}, 1);
  for (int i = 0; i < n; ++i) net->add_host();
  if (direct) {
    net->connect(net->host(0), net->host(1), Gbps(100), delay);
    return net;
  }
  const std::uint32_t sw = net->add_switch("sw");
  for (int i = 0; i < n; ++i)
    net->connect(net->host(static_cast<std::uint32_t>(i)), net->switch_at(sw), Gbps(100), delay);
  return net;
}

std::vector<std::int32_t> linear(int n) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  return v;
}

// Serialization at 100G of `bytes` on the wire, in picoseconds (80 ps per byte).
std::int64_t wire_ps(std::int64_t bytes) { return bytes * 80; }

TEST(Engine, OnePutBetweenBackToBackHosts) {
  // bcast binomial on 2 ranks, 4 KiB: one WRITE-only packet of 66 + 16 + 4096 bytes.
  //   50 ns   the root's NIC processes the put (no counter touched)
  //   +335.84 ns serialization (4198 wire bytes) + 1 us: placed at rank 1 at 1385.84 ns
  //   rank 1's NIC processes the arrival: 50 ns + a miss 100 ns -> its wait met at 1535.84
  //   the ACK (90 wire bytes: 7.2 ns) + 1 us back: the root's completion at 2393.04 ns,
  //   which is the root's host_wait: the host sees the end 1 ps later.
  auto net = star(2, us(1), /*direct=*/true);
  Engine e(*net, sharp(), Policy::stall, 3);
  e.add({.name = "b", .schedule = assigned("bcast", "binomial", 2, 4096), .nic_of_rank = linear(2), .issue = {}});
  const fabric::RunTotals t = net->run(ms(1));
  const auto r = e.results();
  ASSERT_EQ(r.size(), 1u);
  ASSERT_TRUE(r[0].done());
  EXPECT_TRUE(r[0].job.offloaded);
  const std::int64_t arrival = 50'000 + wire_ps(66 + 16 + 4096 + 20) + 1'000'000;
  EXPECT_EQ(arrival, 1'385'840);
  EXPECT_EQ(r[0].job.done.ps(), arrival + wire_ps(66 + 4 + 20) + 1'000'000 + 1);
  EXPECT_EQ(r[0].messages, 1u);
  EXPECT_EQ(r[0].bytes, 4096u);
  EXPECT_EQ(r[0].retransmitted, 0u);
  EXPECT_TRUE(t.all_finished);
  EXPECT_EQ(e.connections(), 1u);
}

TEST(Engine, RecursiveDoublingRoundsByHand) {
  // allreduce recursive doubling on 4 ranks, 1 KiB, one switch, 1 us links. Each rank:
  //   t=0: its atomic to the partner (50 ns: sent at 50 ns), its local atomic (done at
  //   100 ns). A 1 KiB WRITE-only frame is 1126 wire bytes (90.08 ns); two hops and 2 us:
  //   placed at 50 + 180.16 + 2000 = 2230.16 ns. The arrival: 50 ns + a miss -> 2380.16,
  //   the round-2 counter reaches 2; its atomic to the far partner (a hit: 50 ns) leaves
  //   at 2430.16 and is placed at 4610.32. Counter 0 gathers: the local atomic of round 2,
  //   round 2's arrival, and the two sends' ACKs (90 wire bytes: 7.2 ns per hop): the last,
  //   round 2's, returns at 4610.32 + 14.4 + 2000 = 6624.72 ns, which ends the collective
  //   (seen 1 ps later).
  auto net = star(4, us(1));
  Engine e(*net, sharp(), Policy::stall, 3);
  e.add({.name = "rd",
         .schedule = assigned("allreduce", "recursive_doubling", 4, 1024),
         .nic_of_rank = linear(4),
         .issue = {}});
  net->run(ms(1));
  const auto r = e.results();
  ASSERT_TRUE(r[0].done());
  const std::int64_t hop2 = 2 * wire_ps(66 + 16 + 1024 + 20) + 2'000'000;
  const std::int64_t round2_sent = 50'000 + hop2 + 150'000 + 50'000;
  EXPECT_EQ(r[0].job.done.ps(), round2_sent + hop2 + 2 * wire_ps(90) + 2'000'000 + 1);
  EXPECT_EQ(r[0].job.done.ps(), 6'624'721);
  EXPECT_EQ(r[0].messages, 8u);  // two rounds of 4 messages on the wire
}

// nccl-tests: algbw = bytes / time, busbw = algbw x 2(n-1)/n.
double busbw_gbps(std::int64_t bytes, Time t, int n) {
  return static_cast<double>(bytes) * 8.0 / static_cast<double>(t.ps()) * 1e3 * 2.0 * (n - 1) / n;
}

TEST(Engine, LargeRingAllreduceReachesTheLinksPayloadRate) {
  // 8 ranks, 64 MiB: 14 steps of 8 MiB messages, 2048 packets each. On the wire a message
  // is 8 MiB + 2048 x 86 header and gap bytes + 16 (RETH): 97.94 Gbps of payload on a
  // 100G link. The ring's steps add a few microseconds each (NIC processing, two hops of
  // 1 us) to about 685 us of serialization, and each uplink also carries ACKs: busbw
  // must come within 3 % of the payload rate, never above it.
  const int n = 8;
  const std::int64_t bytes = 64ll << 20;
  auto net = star(n, us(1));
  Engine e(*net, NicParams{}, Policy::stall, 3);
  e.add({.name = "ring", .schedule = assigned("allreduce", "ring", n, bytes), .nic_of_rank = linear(n), .issue = {}});
  net->run(Time::from_ps(1'000'000'000'000));
  const auto r = e.results();
  ASSERT_TRUE(r[0].done());
  const double msg = static_cast<double>(bytes / n);
  const double payload_rate = 100.0 * msg / (msg + 2048 * 86 + 16);
  EXPECT_NEAR(payload_rate, 97.94, 0.01);
  const double bus = busbw_gbps(bytes, r[0].job.completion(), n);
  RecordProperty("busbw_gbps", std::to_string(bus));
  EXPECT_LE(bus, payload_rate);
  EXPECT_GE(bus, 0.97 * payload_rate);
  EXPECT_EQ(r[0].retransmitted, 0u);
  EXPECT_EQ(r[0].bytes, static_cast<std::uint64_t>(2 * (n - 1) * bytes));  // 2(n-1) chunks of bytes/n per rank
}

// Where every message is one packet and no two share a link at once, a message takes
// exactly 2 x its wire time at 100G + 2 link delays. The timed NIC model with latency
// 2 x (the frame's 102 non-payload wire bytes at 100G) + 2 us and bandwidth 50G (the
// payload serialized twice) charges exactly that; with sends' completions uncounted, no
// ACK gates anything. The two must agree to the picosecond: both run the same NIC model.
TEST(Engine, SmallMessagesAgreeWithTheTimedNicModel) {
  for (const char* alg : {"recursive_doubling", "ring"}) {
    SCOPED_TRACE(alg);
    const int n = 8;
    const auto s = assigned("allreduce", alg, n, 256 * n, /*count_sends=*/false);
    auto net = star(n, us(1));
    Engine e(*net, sharp(), Policy::stall, 3);
    e.add({.name = "x", .schedule = s, .nic_of_rank = linear(n), .issue = {}});
    net->run(ms(10));

    NicParams timed = sharp();
    timed.latency = Time::from_ps(2 * wire_ps(66 + 16 + 20) + 2'000'000);
    timed.bandwidth = Gbps(50);
    nicmodel::OffloadModel m(timed, n, Policy::stall);
    m.add({.name = "x", .schedule = s, .nic_of_rank = linear(n), .issue = {}});
    const auto expect = m.run();
    ASSERT_TRUE(e.results()[0].done());
    EXPECT_EQ(e.results()[0].job.done, expect[0].done);
  }
}

TEST(Engine, AThresholdOneTooLowIsCaughtWhenItFires) {
  // Recursive doubling's round-2 atomic waits for the local atomic and the partner's
  // data (threshold 2). At threshold 1 it fires once the local atomic is done, before
  // the partner's data has arrived.
  auto s = std::make_shared<offload::Schedule>(*assigned("allreduce", "recursive_doubling", 4, 1024));
  offload::OpId planted = -1;
  for (offload::OpId id = 0; id < static_cast<offload::OpId>(s->size()); ++id) {
    offload::Op& o = s->op(id);
    if (o.rank == 0 && o.kind == offload::OpKind::atomic && o.peer != 0 && o.threshold == 2) {
      o.threshold = 1;
      planted = id;
      break;
    }
  }
  ASSERT_GE(planted, 0);
  auto net = star(4, us(1));
  Engine e(*net, sharp(), Policy::stall, 3);
  e.add({.name = "rd", .schedule = s, .nic_of_rank = linear(4), .issue = {}});
  try {
    net->run(ms(1));
    FAIL() << "an early firing went unnoticed";
  } catch (const nicmodel::UnsafeSchedule& x) {
    const std::string what = x.what();
    EXPECT_NE(what.find(fmt::format("op {} (atomic, rank 0) fired", planted)), std::string::npos) << what;
    EXPECT_NE(what.find("threshold 1"), std::string::npos) << what;
  }
}

TEST(Engine, ShortOfCountersTheSecondStallsOrFallsBack) {
  // Two broadcasts on 2 back-to-back hosts with one counter per NIC: the second, issued
  // at 100 ns, waits for the first's counters (seen at 2393.04 ns + 1 ps, as above) under
  // stall, and under fallback goes to software at once.
  const auto s = assigned("bcast", "binomial", 2, 4096);
  for (Policy policy : {Policy::stall, Policy::fallback}) {
    NicParams p = sharp();
    p.counters = 1;
    auto net = star(2, us(1), true);
    Engine e(*net, p, policy, 3);
    e.add({.name = "A", .schedule = s, .nic_of_rank = linear(2), .issue = {}});
    e.add({.name = "B", .schedule = s, .nic_of_rank = linear(2), .issue = ns(100)});
    net->run(ms(1));
    const auto r = e.results();
    ASSERT_TRUE(r[0].done() && r[1].done());
    EXPECT_EQ(r[0].job.done.ps(), 2'393'041);
    if (policy == Policy::stall) {
      EXPECT_TRUE(r[1].job.offloaded);
      EXPECT_EQ(r[1].job.start, r[0].job.done);
      EXPECT_EQ(r[1].job.done.ps(), 2 * 2'393'041);
    } else {
      // Software: the host posts the put (1 us), the same message and ACK follow; the
      // connection is shared, but A's message left long before. The host sees its last
      // operation (the put's completion) at its next poll, 1 ps later.
      EXPECT_FALSE(r[1].job.offloaded);
      EXPECT_EQ(r[1].job.start, ns(100));
      EXPECT_EQ(r[1].job.done.ps(), 100'000 + 1'000'000 + (2'393'040 - 50'000) + 1);
    }
  }
}

TEST(Engine, UcConnectionsIgnoreDuplicatesAndPastPackets) {
  // UC, every data packet from host 0 duplicated on its link: the copy of each one-packet
  // message comes right behind it. Each message must arrive once -- a second arrival
  // would push a counter past its threshold (an early firing) or finish the collective
  // twice -- so four chained all-to-alls complete with exactly their messages.
  fabric::NicConfig nic;
  nic.transport = fabric::Transport::uc;
  auto net = star(2, us(1), /*direct=*/true, nic);
  fabric::ImpairmentConfig dup;
  dup.duplicate = 1.0;
  net->add_impairment(net->host(0).port(0), dup);
  Engine e(*net, sharp(), Policy::stall, 3);
  const auto s = assigned("alltoall", "pairwise", 2, 1024);
  for (int i = 0; i < 4; ++i)
    e.add({.name = fmt::format("a{}", i),
           .schedule = s,
           .nic_of_rank = linear(2),
           .issue = {},
           .after = i == 0 ? -1 : i - 1});
  const fabric::RunTotals t = net->run(ms(1));
  EXPECT_TRUE(t.all_finished);
  for (const auto& r : e.results()) {
    EXPECT_TRUE(r.done()) << r.job.name;
    EXPECT_EQ(r.messages, 2u) << r.job.name;  // one block each way
  }
  EXPECT_EQ(net->host(1).duplicates(), 4u);  // host 0's four copies, discarded
}

// One run of a ring allreduce and an all-to-all issued while it runs, on 8 hosts with
// DCQCN, undivided or split into `parts` run by `threads` (over the processes `ranks`
// joins, if given), on NICs `p` under `policy`.
struct Outcome {
  std::vector<CollectiveResult> results;
  std::uint64_t fingerprint;
  bool all_finished;
  std::vector<std::uint64_t> cache_hits, cache_misses;                 // by NIC
  std::vector<std::vector<nicmodel::OffloadModel::OpTimes>> op_times;  // by job
};
Outcome ring_and_alltoall(std::uint32_t parts, std::uint32_t threads, fabric::Exchange* ranks = nullptr,
                          NicParams p = {}, Policy policy = Policy::stall) {
  fabric::NicConfig nic;
  nic.congestion_control = "dcqcn";
  auto net = star(8, us(1), false, nic);
  if (ranks) net->set_partitions(parts, threads, *ranks);
  else if (parts > 1) net->set_partitions(parts, threads);
  Engine e(*net, p, policy, 3);
  e.add({.name = "ring", .schedule = assigned("allreduce", "ring", 8, 1 << 20), .nic_of_rank = linear(8), .issue = {}});
  e.add({.name = "a2a",
         .schedule = assigned("alltoall", "pairwise", 8, 8 << 10),
         .nic_of_rank = linear(8),
         .issue = us(3)});
  e.trace_ops();
  const fabric::RunTotals t = net->run(ms(10));
  Outcome o{e.results(), net->fingerprint(), t.all_finished, {}, {}, {}};
  for (std::int32_t n = 0; n < 8; ++n) {
    o.cache_hits.push_back(e.model().cache(n).hits());
    o.cache_misses.push_back(e.model().cache(n).misses());
  }
  for (std::uint32_t j = 0; j < 2; ++j) o.op_times.push_back(e.model().op_times(j));
  return o;
}

void expect_same(const std::vector<CollectiveResult>& a, const std::vector<CollectiveResult>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t j = 0; j < a.size(); ++j) {
    SCOPED_TRACE(a[j].job.name);
    EXPECT_EQ(a[j].job.issue, b[j].job.issue);
    EXPECT_EQ(a[j].job.start, b[j].job.start);
    EXPECT_EQ(a[j].job.done, b[j].job.done);
    EXPECT_EQ(a[j].job.offloaded, b[j].job.offloaded);
    EXPECT_EQ(a[j].messages, b[j].messages);
    EXPECT_EQ(a[j].bytes, b[j].bytes);
    EXPECT_EQ(a[j].retransmitted, b[j].retransmitted);
  }
}

TEST(Engine, SameRunSameResultsHoweverItIsSplit) {
  const Outcome a = ring_and_alltoall(1, 1), b = ring_and_alltoall(1, 1);
  EXPECT_EQ(a.fingerprint, b.fingerprint);
  expect_same(a.results, b.results);
  ASSERT_TRUE(a.all_finished);
  EXPECT_GT(a.results[1].job.done, us(3));
  // Split in two (the switch goes with one half): the parts' NICs run on their own
  // simulators, issues and completions between windows. The same collectives, and the
  // same run event for event with one thread or two.
  const Outcome one = ring_and_alltoall(2, 1), two = ring_and_alltoall(2, 2);
  EXPECT_TRUE(one.all_finished);
  expect_same(a.results, one.results);
  expect_same(one.results, two.results);
  EXPECT_EQ(one.fingerprint, two.fingerprint);
  const Outcome four = ring_and_alltoall(4, 2);
  expect_same(a.results, four.results);
}

// Over several processes (threads standing in for MPI ranks), each with a copy of the
// model running its parts' NICs: every copy steps alike (the same issues, starts and
// completions as undivided), and rank 0 ends with the undivided run's results whole --
// the traffic, the counter caches' counts and every operation's times, gathered from the
// processes that ran them. Under stall, and under fallback with 16 counters, where the
// all-to-all (issued while the ring holds 14 counters per NIC) runs in software.
TEST(Engine, OverSeveralProcessesRankZeroHoldsTheUndividedResults) {
  NicParams short_of_counters;
  short_of_counters.counters = 16;
  for (const auto& [p, policy] : {std::pair{NicParams{}, Policy::stall}, {short_of_counters, Policy::fallback}}) {
    const Outcome whole = ring_and_alltoall(1, 1, nullptr, p, policy);
    ASSERT_TRUE(whole.all_finished);
    EXPECT_EQ(whole.results[1].job.offloaded, policy == Policy::stall);
    for (const auto& [ranks, parts, threads] : {std::tuple{2, 2u, 1u}, {3, 3u, 1u}, {2, 4u, 2u}}) {
      SCOPED_TRACE(fmt::format("{} ranks, {} parts, {} threads, policy {}", ranks, parts, threads,
                               policy == Policy::stall ? "stall" : "fallback"));
      fabric::Loopback loop(ranks);
      std::vector<Outcome> by_rank(static_cast<std::size_t>(ranks));
      std::vector<std::string> errors(static_cast<std::size_t>(ranks));
      {
        std::vector<std::jthread> procs;
        for (int k = 0; k < ranks; ++k)
          procs.emplace_back([&, k, parts = parts, threads = threads, p = p, policy = policy] {
            fabric::Loopback::Rank ex(loop, k);
            try {
              by_rank[static_cast<std::size_t>(k)] = ring_and_alltoall(parts, threads, &ex, p, policy);
            } catch (const std::exception& e) {
              errors[static_cast<std::size_t>(k)] = e.what();
            }
          });
      }
      for (int k = 0; k < ranks; ++k) {
        const Outcome& o = by_rank[static_cast<std::size_t>(k)];
        ASSERT_EQ(errors[static_cast<std::size_t>(k)], "") << "rank " << k;
        EXPECT_TRUE(o.all_finished) << "rank " << k;
        EXPECT_EQ(o.fingerprint, whole.fingerprint) << "rank " << k;
        for (std::size_t j = 0; j < 2; ++j) {
          EXPECT_EQ(o.results[j].job.issue, whole.results[j].job.issue) << "rank " << k;
          EXPECT_EQ(o.results[j].job.start, whole.results[j].job.start) << "rank " << k;
          EXPECT_EQ(o.results[j].job.done, whole.results[j].job.done) << "rank " << k;
          EXPECT_EQ(o.results[j].job.offloaded, whole.results[j].job.offloaded) << "rank " << k;
        }
      }
      const Outcome& zero = by_rank[0];
      expect_same(whole.results, zero.results);
      EXPECT_EQ(zero.cache_hits, whole.cache_hits);
      EXPECT_EQ(zero.cache_misses, whole.cache_misses);
      ASSERT_EQ(zero.op_times.size(), whole.op_times.size());
      for (std::size_t j = 0; j < whole.op_times.size(); ++j) {
        ASSERT_EQ(zero.op_times[j].size(), whole.op_times[j].size());
        ASSERT_FALSE(whole.op_times[j].empty());
        for (std::size_t m = 0; m < whole.op_times[j].size(); ++m) {
          const auto &a = zero.op_times[j][m], &b = whole.op_times[j][m];
          EXPECT_EQ(a.ready, b.ready) << "job " << j << " op " << m;
          EXPECT_EQ(a.fired, b.fired) << "job " << j << " op " << m;
          EXPECT_EQ(a.completed, b.completed) << "job " << j << " op " << m;
        }
      }
      // The other ranks hold their own parts' traffic only: less than the whole.
      EXPECT_LT(by_rank[1].results[0].messages, whole.results[0].messages);
    }
  }
}

// The recursive-doubling allreduce of AThresholdOneTooLowIsCaughtWhenItFires, with
// rank 0's round-2 atomic at threshold 0: it fires as the collective starts, in the step
// that starts it, before its dependences are done.
std::shared_ptr<offload::Schedule> fires_at_start() {
  auto s = std::make_shared<offload::Schedule>(*assigned("allreduce", "recursive_doubling", 4, 1024));
  for (offload::OpId id = 0; id < static_cast<offload::OpId>(s->size()); ++id)
    if (offload::Op& o = s->op(id);
        o.rank == 0 && o.kind == offload::OpKind::atomic && o.peer != 0 && o.threshold == 2) {
      o.threshold = 0;
      return s;
    }
  return nullptr;
}

// Over two processes, the step that starts it fails on rank 0 only (NIC 0 is there),
// half-way: rank 1's step goes on to start a second collective issued at the same
// instant, which rank 0's never reaches. Both ranks still make the step's exchanges,
// hear of the failure, read nothing of each other's diverged copies, and end with it,
// named by rank -- neither waits for the other for ever.
TEST(Engine, AStepThatFailsOnOneRankEndsEveryRank) {
  const auto s = fires_at_start();
  ASSERT_TRUE(s);
  fabric::Loopback loop(2);
  std::vector<std::string> errors(2);
  {
    std::vector<std::jthread> procs;
    for (int k = 0; k < 2; ++k)
      procs.emplace_back([&, k] {
        fabric::Loopback::Rank ex(loop, k);
        auto net = star(4, us(1));
        net->set_partitions(2, 1, ex);
        Engine e(*net, sharp(), Policy::stall, 3);
        e.add({.name = "rd", .schedule = s, .nic_of_rank = linear(4), .issue = {}});
        e.add(
            {.name = "bc", .schedule = assigned("bcast", "binomial", 4, 1024), .nic_of_rank = linear(4), .issue = {}});
        try {
          net->run(ms(1));
        } catch (const RankFailure& x) {
          errors[static_cast<std::size_t>(k)] = fmt::format("{} {}", x.exit_code(), x.what());
        }
      });
  }
  for (const std::string& what : errors) {
    EXPECT_EQ(what.rfind("1 rank 0: job 'rd': op ", 0), 0u) << what;  // an unsafe schedule is a "no": exit 1
    EXPECT_NE(what.find("(atomic, rank 0) fired when counter"), std::string::npos) << what;
  }
}

// Tags wrap: with 8-bit tags, twelve ring allreduces, each issued when the one two
// before it is done (two at a time), go through the 256 tags several times and give
// the results of 32-bit tags; with fewer tags than two of them hold, the second is
// refused as it starts, naming both.
TEST(Engine, MessageTagsWrapAroundWhileTheCollectivesRunningAtOnceFit) {
  const auto s = assigned("allreduce", "ring", 4, 4096);
  const std::size_t ops = s->size();
  ASSERT_LT(4 * ops, 256u);  // three live at once at most (one draining) fit 8 bits
  ASSERT_GT(12 * ops, 2 * 256u);
  const auto run = [&](std::uint32_t bits) {
    auto net = star(4, us(1));
    Engine e(*net, sharp(), Policy::stall, 3, bits);
    for (int j = 0; j < 12; ++j)
      e.add({.name = fmt::format("ar{}", j),
             .schedule = s,
             .nic_of_rank = linear(4),
             .issue = {},
             .after = j >= 2 ? j - 2 : -1});
    EXPECT_TRUE(net->run(ms(10)).all_finished);
    return e.results();
  };
  const auto wide = run(32), narrow = run(8);
  expect_same(wide, narrow);
  EXPECT_GT(wide[11].job.start, wide[9].job.done - Time::from_ps(1));  // (issued after the one two before)
  // 2^bits between one and two collectives' operations: the second cannot start.
  std::uint32_t bits = 1;
  while ((std::size_t{2} << bits) <= ops) ++bits;  // 2^bits < ops <= 2^(bits+1)
  ++bits;                                          // ops <= 2^bits < 2 ops
  EXPECT_EQ(testing::input_error_of([&] { run(bits); }),
            fmt::format("collectives: 'ar1' starts while 'ar0' still runs, {} operations apart; the collectives "
                        "running at once (from the first added to the last) must have at most {} operations for "
                        "their messages to be told apart",
                        2 * ops, std::size_t{1} << bits));
}

// A collective whose hosts cannot reach each other is refused as the run starts, by the
// pair that cannot (not by a switch mid-run): hosts 0, 1 on one switch, 2, 3 on another,
// no link between the switches; the ring's pair 3 -> 0 is the first whose destination's
// switch is searched.
TEST(Engine, HostsWithNoPathBetweenThemAreRefusedByName) {
  auto net = std::make_unique<fabric::Network>(fabric::NicConfig{}, fabric::SwitchConfig{}, 1);
  for (int i = 0; i < 4; ++i) net->add_host();
  const std::uint32_t a = net->add_switch("a"), b = net->add_switch("b");
  for (std::uint32_t h = 0; h < 4; ++h) net->connect(net->host(h), net->switch_at(h < 2 ? a : b), Gbps(100), us(1));
  Engine e(*net, sharp(), Policy::stall, 3);
  e.add({.name = "ring", .schedule = assigned("allreduce", "ring", 4, 4096), .nic_of_rank = linear(4), .issue = {}});
  EXPECT_EQ(testing::input_error_of([&] { net->run(ms(1)); }),
            "no path from " + net->host(3).name() + " to " + net->host(0).name());
}

}  // namespace
}  // namespace fabriclab::nicengine
