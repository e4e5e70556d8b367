#include "offload/advice.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace fabriclab::offload {
namespace {

using D = Advice::Decision;

TEST(Advice, OffloadsWaitsAndFallsBackByHand) {
  // 4 counters per NIC. Recursive doubling on 8 ranks needs 3 per rank, binomial bcast
  // 1, ring allreduce 2(P-1) = 14: offload (4 -> 1 free), offload (1 -> 0), wait until
  // #1 releases its 3, software (14 > 4 ever).
  const auto a = advise({.counters = 4},
                        {{"allreduce", "recursive_doubling", {.ranks = 8}},
                         {"bcast", "binomial", {.ranks = 8}},
                         {"allreduce", "recursive_doubling", {.ranks = 8}},
                         {"allreduce", "ring", {.ranks = 8}}});
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[0].decision, D::offload);
  EXPECT_EQ(a[0].counters_max, 3);
  EXPECT_EQ(a[1].decision, D::offload);
  EXPECT_EQ(a[2].decision, D::wait);
  EXPECT_EQ(a[2].waits_for, (std::vector<std::size_t>{0}));
  EXPECT_EQ(a[3].decision, D::software);
  EXPECT_EQ(a[3].counters_max, 14);
  EXPECT_EQ(a[3].counters_naive_max, 29);  // 4P - 3
  EXPECT_EQ(a[3].reason, "needs 14 counters on a NIC that has 4 (naive would need 29)");
}

TEST(Advice, CountsTriggeredOpSlots) {
  // Recursive doubling on 8 ranks posts 3 levels x (remote + local atomic) = 6 ops per
  // rank: 5 slots can never hold it; 6 can.
  EXPECT_EQ(advise({.counters = 16, .slots = 5}, {{"allreduce", "recursive_doubling", {.ranks = 8}}})[0].decision,
            D::software);
  const auto ok = advise({.counters = 16, .slots = 6}, {{"allreduce", "recursive_doubling", {.ranks = 8}}});
  EXPECT_EQ(ok[0].decision, D::offload);
  EXPECT_EQ(ok[0].slots_max, 6);
}

TEST(Advice, WithoutWaitingWhatDoesNotFitNowRunsInSoftware) {
  const auto a = advise({.counters = 4, .allow_wait = false},
                        {{"allreduce", "recursive_doubling", {.ranks = 8}},
                         {"allreduce", "recursive_doubling", {.ranks = 8}}});
  EXPECT_EQ(a[1].decision, D::software);
}

TEST(Advice, NaiveNeedsMoreAndFallsBackSooner) {
  // Naive binomial bcast on 8 ranks: 4 counters at the root (3 puts + a trigger).
  const auto a = advise({.counters = 3}, {{"bcast", "binomial", {.ranks = 8}}}, Strategy::naive);
  EXPECT_EQ(a[0].decision, D::software);
  EXPECT_EQ(advise({.counters = 3}, {{"bcast", "binomial", {.ranks = 8}}})[0].decision, D::offload);
}

TEST(Advice, RejectsBadRequests) {
  EXPECT_THROW(advise({.counters = -1}, {{"bcast", "binomial", {.ranks = 8}}}), InputError);
  EXPECT_THROW(advise({.counters = 4}, {}), InputError);
  EXPECT_THROW(advise({.counters = 4}, {{"bcast", "binary", {.ranks = 8}}}), InputError);
}

}  // namespace
}  // namespace fabriclab::offload
