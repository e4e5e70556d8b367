// The triggered-path plan of small schedules, worked out by hand from the schedule.
#include "exec/plan.h"

#include <gtest/gtest.h>

#include "offload/assignment.h"
#include "offload/collectives.h"

namespace fabriclab::exec {
namespace {

using offload::Strategy;

TEST(Plan, BinomialBcastOnTwoRanks) {
  // Naive: rank 0's put completes into schedule counter 0; rank 1's arrival into counter
  // 1; each rank's host_wait waits for its counter to reach 1.
  const auto s = offload::assign_counters(
      offload::build_schedule("bcast", "binomial", {.ranks = 2, .bytes = 64}), Strategy::naive);
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
  const auto s = offload::assign_counters(
      offload::build_schedule("allreduce", "ring", {.ranks = 4, .bytes = 4 * 8}),
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

}  // namespace
}  // namespace fabriclab::exec
