// The triggered-path plan of small schedules, worked out by hand from the schedule.
#include "exec/plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <span>
#include <string>

#include "offload/assignment.h"
#include "offload/collectives.h"
#include "offload/segment.h"

namespace fabriclab::exec {
namespace {

using offload::Strategy;

TEST(Plan, BinomialBcastOnTwoRanks) {
  // Naive: rank 0's put completes into schedule counter 0; rank 1's arrival into counter
  // 1; each rank's host_wait waits for its counter to reach 1.
  const auto s = offload::assign_counters(offload::build_schedule("bcast", "binomial", {.ranks = 2, .bytes = 64}),
                                          Strategy::naive);
  const auto prog = plan_triggered(s);
  ASSERT_EQ(prog.size(), 2u);
  const RankProgram& r0 = prog[0];
  EXPECT_EQ(r0.counters, (std::vector<offload::CounterId>{0}));
  EXPECT_EQ(r0.key_counter, (std::vector<int>{-1}));  // nothing lands on rank 0
  ASSERT_EQ(r0.ops.size(), 1u);
  const TriggeredOp& put = r0.ops[0];
  EXPECT_FALSE(put.is_counter_add);
  EXPECT_EQ(put.trigger, -1);  // fires at start
  EXPECT_EQ(put.completion, 0);
  EXPECT_EQ(put.transfer.op, DataOp::put);
  EXPECT_EQ(put.transfer.peer, 1);
  EXPECT_EQ(put.transfer.key, 1);  // rank 1's registration bound to its arrival counter
  EXPECT_EQ(put.transfer.bytes, 64);
  EXPECT_EQ(r0.per_iteration, (std::vector<std::int64_t>{1}));
  ASSERT_EQ(r0.waits.size(), 1u);
  EXPECT_EQ(r0.waits[0].counter, 0);
  EXPECT_EQ(r0.waits[0].value, 1);

  const RankProgram& r1 = prog[1];
  EXPECT_EQ(r1.counters, (std::vector<offload::CounterId>{1}));
  EXPECT_EQ(r1.key_counter, (std::vector<int>{-1, 0}));
  EXPECT_TRUE(r1.ops.empty());
  EXPECT_EQ(r1.per_iteration, (std::vector<std::int64_t>{1}));
  ASSERT_EQ(r1.waits.size(), 1u);
  EXPECT_EQ(r1.waits[0].value, 1);
}

TEST(Plan, CountsWhatEachIterationAddsToEveryCounter) {
  // Ring allreduce, P = 4: per rank 6 transfers (3 atomics, 3 puts) and 6 arrivals. Every
  // completion is counted, so one run adds 12 to a rank's counters in all.
  const auto s = offload::assign_counters(offload::build_schedule("allreduce", "ring", {.ranks = 4, .bytes = 4 * 8}),
                                          Strategy::optimized);
  for (const RankProgram& rp : plan_triggered(s)) {
    std::int64_t total = 0;
    for (auto v : rp.per_iteration) total += v;
    std::int64_t added = 0, relays = 0;
    for (const auto& op : rp.ops) {
      added += op.is_counter_add ? op.add : 0;
      relays += op.is_counter_add;
    }
    EXPECT_EQ(total, 12 + added) << "rank " << rp.rank;
    EXPECT_EQ(rp.ops.size(), 6u + static_cast<std::size_t>(relays));
    EXPECT_EQ(rp.counters.size(), s.counter_summary().per_rank[static_cast<std::size_t>(rp.rank)]);
  }
}

TEST(Plan, PacesABurstOfSegmentsThroughAFlowCounter) {
  // Binomial reduce on 2 ranks of 80 KiB: rank 1 adds its vector into rank 0's as one
  // atomic, split at 4 KiB into 20 segments that fire together. Paced 8 at a time:
  // segments 0..7 keep their trigger, segment i >= 8 waits for the flow counter (a new
  // NIC counter, counting the 20 completions) to reach i - 7, and at 20 counter adds give
  // each completion counter what the segments owed it. Naive gives every segment its own
  // completion counter (20 adds of 1, behind the segments; the schedule's 20 relays
  // follow unchanged); optimized gives them one (one add of 20).
  for (const Strategy strategy : {Strategy::naive, Strategy::optimized}) {
    SCOPED_TRACE(strategy == Strategy::naive ? "naive" : "optimized");
    const auto s = offload::assign_counters(
        offload::split_atomics(offload::build_schedule("reduce", "binomial", {.ranks = 2, .bytes = 80 * 1024}), 4096),
        strategy);
    const auto plain = plan_triggered(s);
    const auto paced = plan_triggered(s, 8);
    ASSERT_EQ(paced.size(), 2u);
    EXPECT_EQ(paced[0].ops.size(), plain[0].ops.size());  // rank 0 sends nothing
    const RankProgram& was = plain[1];
    const RankProgram& r1 = paced[1];
    const std::size_t relays = was.ops.size() - 20;  // the schedule's own, after the segments
    for (std::size_t i = 20; i < was.ops.size(); ++i) ASSERT_TRUE(was.ops[i].is_counter_add);
    const int flow = static_cast<int>(was.counters.size());
    ASSERT_EQ(r1.counters.size(), was.counters.size() + 1);
    EXPECT_EQ(r1.counters.back(), offload::kNoCounter);
    ASSERT_EQ(r1.per_iteration.size(), was.per_iteration.size() + 1);
    EXPECT_EQ(r1.per_iteration.back(), 20);
    for (std::size_t c = 0; c < was.per_iteration.size(); ++c) EXPECT_EQ(r1.per_iteration[c], was.per_iteration[c]);
    // What the segments owe each completion counter, in order of first appearance.
    std::vector<std::pair<int, std::int64_t>> owed;
    for (std::size_t i = 0; i < 20; ++i) {
      const int c = was.ops[i].completion;
      ASSERT_GE(c, 0);
      if (owed.empty() || std::none_of(owed.begin(), owed.end(), [&](const auto& o) { return o.first == c; }))
        owed.push_back({c, 0});
      for (auto& o : owed)
        if (o.first == c) ++o.second;
    }
    EXPECT_EQ(owed.size(), strategy == Strategy::naive ? 20u : 1u);
    ASSERT_EQ(r1.ops.size(), 20 + owed.size() + relays);
    for (std::size_t i = 0; i < 20; ++i) {
      const TriggeredOp& t = r1.ops[i];
      ASSERT_FALSE(t.is_counter_add) << i;
      EXPECT_EQ(t.completion, flow) << i;
      EXPECT_EQ(t.transfer.src, was.ops[i].transfer.src) << i;
      EXPECT_EQ(t.transfer.dst, was.ops[i].transfer.dst) << i;
      if (i < 8) {
        EXPECT_EQ(t.trigger, was.ops[i].trigger) << i;
        EXPECT_EQ(t.threshold, was.ops[i].threshold) << i;
      } else {
        EXPECT_EQ(t.trigger, flow) << i;
        EXPECT_EQ(t.threshold, static_cast<std::int64_t>(i) - 7) << i;
      }
    }
    for (std::size_t k = 0; k < owed.size(); ++k) {
      const TriggeredOp& add = r1.ops[20 + k];
      EXPECT_TRUE(add.is_counter_add);
      EXPECT_EQ(add.target, owed[k].first);
      EXPECT_EQ(add.add, owed[k].second);
      EXPECT_EQ(add.trigger, flow);
      EXPECT_EQ(add.threshold, 20);
      EXPECT_EQ(r1.op_ids[20 + k], r1.op_ids[0]);
    }
    for (std::size_t k = 0; k < relays; ++k) {
      EXPECT_EQ(r1.ops[20 + owed.size() + k].target, was.ops[20 + k].target);
      EXPECT_EQ(r1.ops[20 + owed.size() + k].trigger, was.ops[20 + k].trigger);
    }
    EXPECT_EQ(max_counters(paced), max_counters(plain) + 1);

    // A window as wide as the burst changes nothing.
    const auto wide = plan_triggered(s, 20);
    EXPECT_EQ(wide[1].counters, was.counters);
    EXPECT_EQ(wide[1].ops.size(), was.ops.size());
  }
  EXPECT_THROW(plan_triggered(offload::Schedule(2), -1), std::invalid_argument);
}

// Runs rank programs as a NIC would, in memory, in a random interleaving (seed 0: every
// ready operation fires before anything lands, the worst case for bursts): at each step
// either an operation whose trigger counter has reached its threshold (at once without a
// trigger) fires -- a counter add adds, a transfer goes in flight -- or an in-flight
// transfer lands, counting the arrival through the target's key and then the completion
// at the sender (delivery complete). Checks that every data transfer fires only after
// the DAG's dependences are done (looking through the assignment's relays to the
// transfers and arrivals they stand for), that everything fires, that each counter ends
// at what the program says one iteration adds, and that every host wait is met -- and
// that when the waits are first met (where a host ends the iteration) everything has
// fired and nothing is in flight. Returns the most transfers one rank had in flight to
// one peer.
std::size_t run_programs(const offload::Schedule& s, const std::vector<RankProgram>& progs, std::uint64_t seed,
                         const std::string& what) {
  using offload::OpId;
  using offload::OpKind;
  std::vector<char> done(s.size(), 0);
  std::vector<OpId> arrival_of(s.size(), -1);
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s.op(static_cast<OpId>(i)).kind == OpKind::arrival)
      arrival_of[static_cast<std::size_t>(s.deps(static_cast<OpId>(i))[0])] = static_cast<OpId>(i);
  auto data_deps_done = [&](OpId id) {
    std::vector<OpId> stack(s.deps(id).begin(), s.deps(id).end());
    while (!stack.empty()) {
      const OpId d = stack.back();
      stack.pop_back();
      const auto& o = s.op(d);
      if (o.kind == OpKind::cntr_add && o.relay) stack.insert(stack.end(), s.deps(d).begin(), s.deps(d).end());
      else if (!done[static_cast<std::size_t>(d)]) return false;
    }
    return true;
  };
  std::vector<std::vector<std::int64_t>> counter(progs.size());
  std::vector<std::vector<char>> fired(progs.size());
  for (std::size_t r = 0; r < progs.size(); ++r) {
    counter[r].assign(progs[r].counters.size(), 0);
    fired[r].assign(progs[r].ops.size(), 0);
  }
  struct Ref {
    std::size_t rank, op;
  };
  std::vector<Ref> flight, ready;
  std::map<std::pair<std::size_t, int>, std::size_t> to_peer;
  std::size_t most = 0;
  std::mt19937_64 rng(seed);
  auto pick = [&](std::vector<Ref>& v) {
    const std::size_t k = std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng);
    const Ref x = v[k];
    v[k] = v.back();
    v.pop_back();
    return x;
  };
  auto waits_met = [&] {
    for (std::size_t r = 0; r < progs.size(); ++r)
      for (const HostWait& w : progs[r].waits)
        if (counter[r][static_cast<std::size_t>(w.counter)] < w.value) return false;
    return true;
  };
  bool ended = false;  // the hosts' waits were met: the iteration ended there
  for (;;) {
    if (!ended && waits_met()) {
      // Nothing may still be on its way when the hosts end the iteration.
      ended = true;
      EXPECT_TRUE(flight.empty()) << what << ": the hosts' waits were met with " << flight.size()
                                  << " transfers in flight";
      for (std::size_t r = 0; r < progs.size(); ++r)
        for (std::size_t i = 0; i < fired[r].size(); ++i)
          EXPECT_TRUE(fired[r][i]) << what << ": rank " << r << " op " << progs[r].op_ids[i]
                                   << " not fired when the waits were met";
    }
    ready.clear();
    for (std::size_t r = 0; r < progs.size(); ++r)
      for (std::size_t i = 0; i < progs[r].ops.size(); ++i) {
        const TriggeredOp& t = progs[r].ops[i];
        if (!fired[r][i] && (t.trigger < 0 || counter[r][static_cast<std::size_t>(t.trigger)] >= t.threshold))
          ready.push_back({r, i});
      }
    if (ready.empty() && flight.empty()) break;
    if (!ready.empty() && (flight.empty() || seed == 0 || rng() % 2 == 0)) {
      const Ref f = pick(ready);
      fired[f.rank][f.op] = 1;
      const TriggeredOp& t = progs[f.rank].ops[f.op];
      const OpId id = progs[f.rank].op_ids[f.op];
      if (t.is_counter_add) {
        counter[f.rank][static_cast<std::size_t>(t.target)] += t.add;
        if (s.op(id).kind == OpKind::cntr_add) done[static_cast<std::size_t>(id)] = 1;
      } else {
        EXPECT_TRUE(data_deps_done(id)) << what << ": op " << id << " fired before its dependences were done";
        flight.push_back(f);
        most = std::max(most, ++to_peer[{f.rank, t.transfer.peer}]);
      }
      continue;
    }
    const Ref f = pick(flight);
    const TriggeredOp& t = progs[f.rank].ops[f.op];
    const OpId id = progs[f.rank].op_ids[f.op];
    const auto peer = static_cast<std::size_t>(t.transfer.peer);
    const int c = progs[peer].key_counter[static_cast<std::size_t>(t.transfer.key)];
    if (c >= 0) ++counter[peer][static_cast<std::size_t>(c)];
    if (arrival_of[static_cast<std::size_t>(id)] >= 0)
      done[static_cast<std::size_t>(arrival_of[static_cast<std::size_t>(id)])] = 1;
    if (t.completion >= 0) ++counter[f.rank][static_cast<std::size_t>(t.completion)];
    done[static_cast<std::size_t>(id)] = 1;
    --to_peer[{f.rank, t.transfer.peer}];
  }
  for (std::size_t r = 0; r < progs.size(); ++r) {
    for (std::size_t i = 0; i < fired[r].size(); ++i)
      EXPECT_TRUE(fired[r][i]) << what << ": rank " << r << " op " << progs[r].op_ids[i] << " never fired";
    EXPECT_EQ(counter[r], progs[r].per_iteration) << what << ": rank " << r;
    for (const HostWait& w : progs[r].waits)
      EXPECT_GE(counter[r][static_cast<std::size_t>(w.counter)], w.value) << what << ": rank " << r;
  }
  return most;
}

TEST(Plan, PacedProgramsRunEveryCollectiveWithoutFiringEarly) {
  // Every builder at P = 4 and 64 KiB, its atomics split at 4 KiB (16 segments for a
  // whole vector), both assignments, unpaced and paced 4 at a time, four interleavings.
  for (const auto& a : offload::algorithms())
    for (const Strategy strategy : {Strategy::naive, Strategy::optimized}) {
      offload::BuildOptions o{.ranks = 4, .bytes = 64 * 1024};
      if (a.uses_root) o.root = 3;
      const auto s = offload::assign_counters(
          offload::split_atomics(offload::build_schedule(a.collective, a.algorithm, o), 4096), strategy);
      const std::string what = a.collective + "/" + a.algorithm +
                               (strategy == Strategy::naive ? " naive" : " optimized");
      for (std::uint64_t seed = 0; seed <= 3; ++seed) {
        const std::size_t unpaced = run_programs(s, plan_triggered(s), seed, what + " unpaced");
        const std::size_t paced = run_programs(s, plan_triggered(s, 4), seed, what + " paced");
        if (a.collective == "allreduce" && a.algorithm == "recursive_doubling") {
          // Each round sends the whole vector to one partner: 16 segments at once
          // unpaced when everything ready fires first, never more than 4 paced (one
          // burst per partner at a time).
          if (seed == 0) {
            EXPECT_EQ(unpaced, 16u) << what;
            EXPECT_EQ(paced, 4u) << what;
          }
          EXPECT_LE(paced, 4u) << what;
        }
      }
    }
}

TEST(Plan, PacesUncountedSendsAndTheHostWaitsForThem) {
  // Sends whose completions are not counted: the burst's flow counter is all that
  // counts them, so the host must wait for it to reach the burst's size, or the next
  // iteration could start with completions still to come.
  const auto s = offload::assign_counters(
      offload::split_atomics(offload::build_schedule("reduce", "binomial",
                                                     {.ranks = 2, .bytes = 40 * 1024, .count_send_completions = false}),
                             4096),
      Strategy::optimized);
  const auto plain = plan_triggered(s);
  const auto paced = plan_triggered(s, 4);
  const RankProgram& r1 = paced[1];
  for (const TriggeredOp& t : plain[1].ops) {
    if (!t.is_counter_add) {
      EXPECT_EQ(t.completion, -1);
    }
  }
  const int flow = static_cast<int>(plain[1].counters.size());
  ASSERT_EQ(r1.counters.size(), plain[1].counters.size() + 1);
  ASSERT_EQ(r1.waits.size(), plain[1].waits.size() + 1);
  EXPECT_EQ(r1.waits.back().counter, flow);
  EXPECT_EQ(r1.waits.back().value, 10);           // 40 KiB in 4 KiB segments
  EXPECT_EQ(r1.ops.size(), plain[1].ops.size());  // nothing owed: no counter add
  run_programs(s, paced, 1, "uncounted");
}

TEST(Plan, LeavesUnpacedWhatPacingWouldStall) {
  // A schedule file may count more than an operation's ancestors (the verifier accepts
  // it): here rank 0's first atomic of a burst of 9 to rank 1 waits for counter C to
  // reach 2, and C counts its local op X and the burst's last atomic. Paced 8 at a time,
  // the last atomic would wait for the first's completion and the first for the last's:
  // the plan stays unpaced, and says why.
  offload::Schedule s(2);
  const auto C = s.new_counter(0), D = s.new_counter(0), E = s.new_counter(1);
  offload::Op x{.kind = offload::OpKind::atomic, .rank = 0, .peer = 0, .bytes = 8};
  x.completion = C;
  const offload::OpId X = s.add(x);
  std::vector<offload::OpId> sends, arrivals;
  for (int k = 0; k < 9; ++k) {
    offload::Op a{.kind = offload::OpKind::atomic, .rank = 0, .peer = 1, .bytes = 8};
    a.trigger = C;
    a.threshold = k == 0 ? 2 : 1;
    a.completion = k == 8 ? C : D;
    sends.push_back(s.add(a, {X}));
    offload::Op arr{.kind = offload::OpKind::arrival, .rank = 1, .peer = 0, .bytes = 8};
    arr.completion = E;
    arrivals.push_back(s.add(arr, {sends.back()}));
  }
  offload::Op w0{.kind = offload::OpKind::host_wait, .rank = 0};
  w0.trigger = D;
  w0.threshold = 8;
  s.add(w0, std::span<const offload::OpId>(sends.data(), 8));
  offload::Op w1{.kind = offload::OpKind::host_wait, .rank = 0};
  w1.trigger = C;
  w1.threshold = 2;
  const offload::OpId both[] = {X, sends[8]};
  s.add(w1, both);
  offload::Op w2{.kind = offload::OpKind::host_wait, .rank = 1};
  w2.trigger = E;
  w2.threshold = 9;
  s.add(w2, arrivals);

  std::string why;
  const auto plan = plan_triggered(s, 8, &why);
  EXPECT_NE(why.find("would wait for completions the pacing holds back"), std::string::npos) << why;
  EXPECT_EQ(max_counters(plan), max_counters(plan_triggered(s)));  // no flow counter
  for (std::uint64_t seed = 0; seed <= 3; ++seed) run_programs(s, plan, seed, "unpaced file schedule");

  // Ordered channels: pacing could let a later burst overtake an earlier one's tail.
  auto rd = offload::assign_counters(offload::split_atomics(offload::build_schedule("allreduce", "recursive_doubling",
                                                                                    {.ranks = 4, .bytes = 64 * 1024}),
                                                            4096),
                                     Strategy::optimized);
  std::string why_rd;
  EXPECT_GT(max_counters(plan_triggered(rd, 4, &why_rd)), max_counters(plan_triggered(rd)));
  EXPECT_TRUE(why_rd.empty()) << why_rd;
  rd.ordered_channels = true;
  EXPECT_EQ(max_counters(plan_triggered(rd, 4, &why_rd)), max_counters(plan_triggered(rd)));
  EXPECT_NE(why_rd.find("ordered channels"), std::string::npos) << why_rd;
}

}  // namespace
}  // namespace fabriclab::exec
