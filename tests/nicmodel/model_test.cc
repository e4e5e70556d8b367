// The timed NIC model on hand-computed timelines: a two-rank broadcast, two of them
// sharing a pool that holds one (the second stalls exactly until the first is seen
// complete), the same under the fallback policy, and many concurrent collectives on a
// small pool (all complete, never over the pool, counters as the planner assigned).
#include "nicmodel/model.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "offload/assignment.h"
#include "offload/collectives.h"

namespace fabriclab::nicmodel {
namespace {

std::shared_ptr<const offload::Schedule> assigned(const char* coll, const char* alg, int ranks, std::int64_t bytes) {
  offload::BuildOptions b;
  b.ranks = ranks;
  b.bytes = bytes;
  return std::make_shared<const offload::Schedule>(
      offload::assign_counters(offload::build_schedule(coll, alg, b), offload::Strategy::optimized));
}

// Defaults: 50 ns per NIC operation, 100 ns per counter-cache miss, 1 us + bytes / 100G per
// message, a host that polls every 1 us and posts a software operation in 1 us.
NicParams params(std::int64_t counters) {
  NicParams p;
  p.counters = counters;
  return p;
}

// bcast binomial on 2 ranks, 4 KiB: the root's put (no counter touched: 50 ns), the
// message (1 us + 327.68 ns), the arrival at rank 1 (its counter misses: 150 ns). The
// last host_wait is met at 1527.68 ns; the host sees it at its poll at 2 us.
TEST(OffloadModel, TwoRankBroadcastTimeline) {
  OffloadModel m(params(128), 2, Policy::stall);
  m.add({.name = "b", .schedule = assigned("bcast", "binomial", 2, 4096), .nic_of_rank = {0, 1}, .issue = {}});
  const auto r = m.run();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].offloaded);
  EXPECT_EQ(r[0].start, Time());
  EXPECT_EQ(r[0].done, us(2));
  EXPECT_EQ(m.cache(1).misses(), 1u);
  EXPECT_EQ(m.cache(0).misses(), 0u);
}

TEST(OffloadModel, SecondCollectiveStallsUntilTheFirstIsSeenComplete) {
  // Each broadcast holds one counter on each NIC; the pools hold one. B, issued at 0.5 us,
  // starts when A's resources come back at 2 us (stall 1.5 us) and runs A's timeline.
  OffloadModel m(params(1), 2, Policy::stall);
  const auto s = assigned("bcast", "binomial", 2, 4096);
  m.add({.name = "A", .schedule = s, .nic_of_rank = {0, 1}, .issue = {}});
  m.add({.name = "B", .schedule = s, .nic_of_rank = {0, 1}, .issue = ns(500)});
  const auto r = m.run();
  EXPECT_EQ(r[0].done, us(2));
  EXPECT_EQ(r[1].start, us(2));
  EXPECT_EQ(r[1].stall(), ns(1500));
  EXPECT_EQ(r[1].done, us(4));
  EXPECT_EQ(m.makespan(), us(4));
  EXPECT_EQ(m.pool(0).peak_counters_in_use(), 1);
}

TEST(OffloadModel, FallbackRunsInSoftwareAtOnce) {
  // B cannot get a counter at 0.5 us and goes to software: the root's host posts the put
  // in 1 us (1.5 us), the message takes 1327.68 ns: done at 2827.68 ns, which the host
  // sees at its first poll after it, every 1 us from B's start: 3.5 us.
  OffloadModel m(params(1), 2, Policy::fallback);
  const auto s = assigned("bcast", "binomial", 2, 4096);
  m.add({.name = "A", .schedule = s, .nic_of_rank = {0, 1}, .issue = {}});
  m.add({.name = "B", .schedule = s, .nic_of_rank = {0, 1}, .issue = ns(500)});
  const auto r = m.run();
  EXPECT_TRUE(r[0].offloaded);
  EXPECT_FALSE(r[1].offloaded);
  EXPECT_EQ(r[1].stall(), Time());
  EXPECT_EQ(r[1].done, ns(3500));
}

TEST(OffloadModel, ManyConcurrentCollectivesAllCompleteWithinThePool) {
  // 12 ring allreduces and 12 binomial bcasts on 8 ranks, issued 100 ns apart, on 8 NICs
  // of 16 counters: each start takes what the planner assigned, the pool is never
  // exceeded, and everything completes.
  const auto ring = assigned("allreduce", "ring", 8, 64 * 1024);
  const auto bcast = assigned("bcast", "binomial", 8, 64 * 1024);
  OffloadModel m(params(16), 8, Policy::stall);
  std::vector<std::int32_t> identity = {0, 1, 2, 3, 4, 5, 6, 7};
  for (int i = 0; i < 24; ++i)
    m.add({.name = fmt::format("c{}", i),
           .schedule = i % 2 ? bcast : ring,
           .nic_of_rank = identity,
           .issue = ns(100 * i)});
  const auto r = m.run();
  for (int i = 0; i < 24; ++i) {
    EXPECT_TRUE(r[i].offloaded);
    EXPECT_GT(r[i].done, r[i].start);
    const auto want = (i % 2 ? bcast : ring)->counter_summary().per_rank;
    EXPECT_EQ(r[i].counters_per_nic, want) << i;
  }
  for (int n = 0; n < 8; ++n) {
    EXPECT_LE(m.pool(n).peak_counters_in_use(), 16);
    EXPECT_EQ(m.pool(n).counters_in_use(), 0);
  }
  // With 16 counters a ring allreduce on 8 ranks (its count per rank) leaves room for
  // few others: some must have waited.
  Time stalled;
  for (const auto& x : r) stalled += x.stall();
  EXPECT_GT(stalled, Time());
}

TEST(OffloadModel, BadInputIsRefused) {
  OffloadModel m(params(1), 2, Policy::stall);
  const auto ring = assigned("allreduce", "ring", 2, 1024);
  EXPECT_THROW(m.add({.name = "x", .schedule = ring, .nic_of_rank = {0}, .issue = {}}), InputError);
  EXPECT_THROW(m.add({.name = "x", .schedule = ring, .nic_of_rank = {0, 7}, .issue = {}}), InputError);
  // Needs more counters than a NIC has: under stall it could never start.
  EXPECT_THROW(m.add({.name = "x", .schedule = ring, .nic_of_rank = {0, 1}, .issue = {}}), InputError);
}

}  // namespace
}  // namespace fabriclab::nicmodel

namespace fabriclab::nicmodel {
namespace {

TEST(OffloadModel, SoftwarePathCompletesOnceWhenTheLastOpsFinishTogether) {
  // Recursive doubling on 4 ranks does not fit a 1-counter NIC: it runs in software, where
  // the last arrival completes several joins at once (host_waits, counter adds).
  OffloadModel m(params(1), 4, Policy::fallback);
  m.add({.name = "rd",
         .schedule = assigned("allreduce", "recursive_doubling", 4, 1024),
         .nic_of_rank = {0, 1, 2, 3},
         .issue = {}});
  const auto r = m.run();  // a second completion would throw
  EXPECT_FALSE(r[0].offloaded);
  EXPECT_TRUE(r[0].could_never_offload);
  // Each round a rank's host posts two atomics, 1 us apiece: to its partner, then into its
  // own result; a message takes 1 us + 1024 B at 100G = 1.08192 us. Round two starts when
  // the self-atomic posted at 2 us has landed (3.08192 us), posts at 4.08192 and 5.08192,
  // and its last atomic lands at 6.16384 us; the host's next poll is at 7 us.
  EXPECT_EQ(r[0].done, us(7));
}

TEST(OffloadModel, LateLocalCompletionsAfterTheHostSawTheEnd) {
  // Ring allreduces leave send completions in flight when the host_waits are met; a job
  // issued behind one (k = 1) must not see them. Every job completes once, in order.
  const auto ring = assigned("allreduce", "ring", 4, 4096);
  OffloadModel m(params(64), 4, Policy::stall);
  for (int i = 0; i < 6; ++i)
    m.add({.name = fmt::format("r{}", i),
           .schedule = ring,
           .nic_of_rank = {0, 1, 2, 3},
           .issue = {},
           .after = i == 0 ? -1 : i - 1});
  const auto r = m.run();
  for (int i = 1; i < 6; ++i) EXPECT_EQ(r[i].issue, r[i - 1].done);
}

}  // namespace
}  // namespace fabriclab::nicmodel

namespace fabriclab::nicmodel {
namespace {

TEST(OffloadModel, CollectivesInSoftwareShareTheirHosts) {
  // A takes the only counter; B and C, issued with it, run in software, and the host
  // behind NIC 0 posts B's put (done posting at 1 us) and then C's (at 2 us): B lands at
  // 1 us + 1327.68 ns, C at 2 us + 1327.68 ns, and each is seen at the next whole us.
  OffloadModel m(params(1), 2, Policy::fallback);
  const auto s = assigned("bcast", "binomial", 2, 4096);
  for (const char* name : {"A", "B", "C"}) m.add({.name = name, .schedule = s, .nic_of_rank = {0, 1}, .issue = {}});
  const auto r = m.run();
  EXPECT_TRUE(r[0].offloaded);
  EXPECT_EQ(r[1].done, us(3));
  EXPECT_EQ(r[2].done, us(4));
}

}  // namespace
}  // namespace fabriclab::nicmodel

namespace fabriclab::nicmodel {
namespace {

// Rank 0: a counter add with no dependence (A) triggers a 4 KiB put (P) to rank 1, whose
// arrival (Q) meets rank 1's host_wait; P's completion meets rank 0's.
std::shared_ptr<const offload::Schedule> root_counter_add() {
  using offload::Op;
  using offload::OpKind;
  auto s = std::make_shared<offload::Schedule>(2);
  const auto c0 = s->new_counter(0), c1 = s->new_counter(0), c2 = s->new_counter(1);
  Op a;
  a.kind = OpKind::cntr_add;
  a.rank = 0;
  a.target = c0;
  a.add = 1;
  const auto A = s->add(a);
  Op p;
  p.kind = OpKind::put;
  p.rank = 0;
  p.peer = 1;
  p.bytes = 4096;
  p.trigger = c0;
  p.threshold = 1;
  p.completion = c1;
  const auto P = s->add(p, {A});
  Op q;
  q.kind = OpKind::arrival;
  q.rank = 1;
  q.peer = 0;
  q.bytes = 4096;
  q.completion = c2;
  const auto Q = s->add(q, {P});
  Op h0;
  h0.kind = OpKind::host_wait;
  h0.rank = 0;
  h0.trigger = c1;
  h0.threshold = 1;
  s->add(h0, {P});
  Op h1 = h0;
  h1.rank = 1;
  h1.trigger = c2;
  s->add(h1, {Q});
  return s;
}

TEST(OffloadModel, SoftwarePathPostsTheChildOfARootCounterAddOnce) {
  // Two copies, in software (one counter per NIC is too few). A is a free join, so each
  // P is ready at 0 and rank 0's host posts them one after the other: the first lands at
  // 1 us + 1327.68 ns, the second at 2 us + 1327.68 ns, seen at the 3 and 4 us polls.
  // Posting a P twice would push the second copy back by a microsecond.
  OffloadModel m(params(1), 2, Policy::fallback);
  const auto s = root_counter_add();
  m.add({.name = "x", .schedule = s, .nic_of_rank = {0, 1}, .issue = {}});
  m.add({.name = "y", .schedule = s, .nic_of_rank = {0, 1}, .issue = {}});
  const auto r = m.run();
  EXPECT_FALSE(r[0].offloaded);
  EXPECT_FALSE(r[1].offloaded);
  EXPECT_EQ(r[0].done, us(3));
  EXPECT_EQ(r[1].done, us(4));
}

TEST(OffloadModel, OffloadedRootCounterAddFiresItsPut) {
  // Offloaded: A adds 1 to c0 (a miss on c0: 150 ns), which fires P (c0 now hits: 50 ns,
  // done at 200 ns); the message lands at 1527.68 ns, counting P's completion on c1 (no
  // NIC operation) and queueing the arrival (a miss on c2: 150 ns), which meets rank 1's
  // wait at 1677.68 ns; the host sees it at its 2 us poll.
  OffloadModel m(params(8), 2, Policy::stall);
  m.add({.name = "x", .schedule = root_counter_add(), .nic_of_rank = {0, 1}, .issue = {}});
  const auto r = m.run();
  EXPECT_TRUE(r[0].offloaded);
  EXPECT_EQ(r[0].done, us(2));
  EXPECT_EQ(m.cache(0).misses(), 1u);
  EXPECT_EQ(m.cache(0).hits(), 1u);
  EXPECT_EQ(m.cache(1).misses(), 1u);
  EXPECT_EQ(m.cache(1).hits(), 0u);
}

}  // namespace
}  // namespace fabriclab::nicmodel
