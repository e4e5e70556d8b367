#include "offload/collectives.h"

#include <gtest/gtest.h>

#include "error_message.h"

#include <algorithm>

#include "core/error.h"
#include "offload/algorithms/trees.h"
#include "offload/dag_builder.h"
#include "test_util.h"

namespace fabriclab::offload {
namespace {

using testing::host_waits;
using testing::ranks_reaching;

std::size_t count_kind(const Schedule& s, OpKind k, Rank r = kNoRank) {
  return static_cast<std::size_t>(std::count_if(s.ops().begin(), s.ops().end(), [&](const Op& o) {
    return o.kind == k && (r == kNoRank || o.rank == r);
  }));
}

int log2_ceil(int p) {
  int k = 0;
  while ((1 << k) < p) ++k;
  return k;
}

TEST(Collectives, EveryAlgorithmBuildsAValidDagForManyRankCounts) {
  for (const auto& a : algorithms()) {
    for (Rank p : {2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 31, 32, 33}) {
      for (bool counted : {true, false}) {
        for (bool ordered : {false, true}) {
          BuildOptions o{.ranks = p, .bytes = 4096};
          o.count_send_completions = counted;
          o.ordered_channels = ordered;
          SCOPED_TRACE(a.collective + "/" + a.algorithm + " P=" + std::to_string(p));
          const Schedule s = build_schedule(a.collective, a.algorithm, o);
          EXPECT_NO_THROW(validate(s, false));
          // With counted sends every rank has something to observe: exactly one
          // host_wait. Uncounted, a rank that only sends (a reduce leaf) has none.
          for (Rank r = 0; r < p; ++r) {
            if (counted) EXPECT_EQ(host_waits(s, r).size(), 1u) << "rank " << r;
            else EXPECT_LE(host_waits(s, r).size(), 1u) << "rank " << r;
          }
        }
      }
    }
  }
}

// The information each rank ends with, from the DAG's edges: a rank's host_wait can
// only follow data of the ranks that reach it.
TEST(Collectives, DataReachesWhereTheCollectiveSaysItMust) {
  for (Rank p : {2, 3, 5, 6, 8, 11, 16, 17}) {
    for (const auto& a : algorithms()) {
      SCOPED_TRACE(a.collective + "/" + a.algorithm + " P=" + std::to_string(p));
      const Rank root = a.uses_root ? p / 2 : 0;
      const Schedule s = build_schedule(a.collective, a.algorithm, {.ranks = p, .root = root});
      const auto from = ranks_reaching(s);
      for (Rank r = 0; r < p; ++r) {
        const auto hw = host_waits(s, r);
        const bool all_to_all = a.collective == "allreduce" || a.collective == "barrier" || a.collective == "allgather";
        if (all_to_all) {
          ASSERT_EQ(hw.size(), 1u);
          EXPECT_EQ(from[static_cast<std::size_t>(hw[0])].count(), static_cast<std::size_t>(p))
              << "rank " << r << " finishes before hearing from every rank";
        } else if (a.collective == "bcast") {
          if (r == root) continue;
          ASSERT_EQ(hw.size(), 1u);
          EXPECT_TRUE(from[static_cast<std::size_t>(hw[0])].test(static_cast<std::size_t>(root)));
        } else if (a.collective == "reduce" && r == root) {
          ASSERT_EQ(hw.size(), 1u);
          EXPECT_EQ(from[static_cast<std::size_t>(hw[0])].count(), static_cast<std::size_t>(p));
        }
      }
      if (a.collective == "reduce_scatter") {
        // Rank r's block r must have passed through every rank: the arrival that
        // completes it is the last of a chain of P-1 atomics starting at rank r+1.
        for (Rank r = 0; r < p; ++r) {
          const auto hw = host_waits(s, r);
          ASSERT_EQ(hw.size(), 1u);
          EXPECT_EQ(from[static_cast<std::size_t>(hw[0])].count(), static_cast<std::size_t>(p));
        }
      }
      if (a.collective == "alltoall") {
        // Every ordered pair (q, r), q != r, has exactly one transfer.
        std::vector<int> pairs(static_cast<std::size_t>(p * p), 0);
        for (const Op& o : s.ops())
          if (o.kind == OpKind::put) ++pairs[static_cast<std::size_t>(o.rank * p + o.peer)];
        for (Rank q = 0; q < p; ++q)
          for (Rank r = 0; r < p; ++r) EXPECT_EQ(pairs[static_cast<std::size_t>(q * p + r)], q == r ? 0 : 1);
      }
    }
  }
}

TEST(Collectives, OperationCountsFollowTheAlgorithms) {
  for (Rank p : {2, 3, 4, 7, 8, 16, 20}) {
    SCOPED_TRACE("P=" + std::to_string(p));
    // Ring allreduce: 2(P-1) sends and 2(P-1) arrivals per rank, one host_wait.
    auto ring = build_schedule("allreduce", "ring", {.ranks = p});
    EXPECT_EQ(ring.size(), static_cast<std::size_t>(p * (4 * (p - 1) + 1)));
    // Binomial bcast / reduce: one transfer per non-root rank.
    auto bc = build_schedule("bcast", "binomial", {.ranks = p});
    EXPECT_EQ(count_kind(bc, OpKind::put), static_cast<std::size_t>(p - 1));
    EXPECT_EQ(count_kind(bc, OpKind::arrival), static_cast<std::size_t>(p - 1));
    auto rd = build_schedule("reduce", "binomial", {.ranks = p});
    EXPECT_EQ(count_kind(rd, OpKind::atomic), static_cast<std::size_t>(p - 1));
    // Dissemination: ceil(log2 P) rounds, one put per rank per round.
    auto dis = build_schedule("barrier", "dissemination", {.ranks = p});
    EXPECT_EQ(count_kind(dis, OpKind::put), static_cast<std::size_t>(p * log2_ceil(p)));
    // Alltoall: P(P-1) puts either way.
    EXPECT_EQ(count_kind(build_schedule("alltoall", "pairwise", {.ranks = p}), OpKind::put),
              static_cast<std::size_t>(p * (p - 1)));
    // Recursive doubling: pof2 = 2^k ranks do k levels of (remote atomic + local atomic);
    // 2*rem ranks add one fold-in atomic and one fold-out put.
    int k = 0;
    while ((2 << k) <= p) ++k;
    const int pof2 = 1 << k, rem = p - pof2;
    auto rdb = build_schedule("allreduce", "recursive_doubling", {.ranks = p});
    EXPECT_EQ(count_kind(rdb, OpKind::atomic), static_cast<std::size_t>(pof2 * k * 2 + rem));
    EXPECT_EQ(count_kind(rdb, OpKind::put), static_cast<std::size_t>(rem));
  }
}

TEST(Collectives, RingChunksCoverTheVectorAndRabenseifnerHalves) {
  // 1000 doubles over 7 ranks: chunks of 143 (6 of them) and 142 elements.
  std::int64_t sum = 0;
  for (int c = 0; c < 7; ++c) sum += chunk_bytes(8000, Datatype::float64, 7, c);
  EXPECT_EQ(sum, 8000);
  EXPECT_EQ(chunk_bytes(8000, Datatype::float64, 7, 0), 143 * 8);
  EXPECT_EQ(chunk_bytes(8000, Datatype::float64, 7, 6), 142 * 8);
  // Rabenseifner on 8 ranks, 8 KiB: the reduce-scatter sends 4, 2, 1 KiB per rank.
  auto s = build_schedule("allreduce", "rabenseifner", {.ranks = 8, .bytes = 8192});
  std::vector<std::int64_t> remote_atomics;
  for (const Op& o : s.ops())
    if (o.rank == 0 && o.kind == OpKind::atomic && o.peer != 0) remote_atomics.push_back(o.bytes);
  EXPECT_EQ(remote_atomics, (std::vector<std::int64_t>{4096, 2048, 1024}));
}

TEST(Collectives, KnomialTreeMatchesHandDrawnTree) {
  // P = 10, k = 3, root 2: relative ranks 0..9; parent clears the lowest base-3 digit.
  // vr 0 children (largest first): 9, 3, 6, 1, 2; vr 3: 4, 5; vr 6: 7, 8.
  const auto t = detail::knomial_tree(10, 2, 3);
  auto real = [](int vr) { return (vr + 2) % 10; };
  EXPECT_EQ(t.children[static_cast<std::size_t>(real(0))],
            (std::vector<Rank>{real(9), real(3), real(6), real(1), real(2)}));
  EXPECT_EQ(t.children[static_cast<std::size_t>(real(3))], (std::vector<Rank>{real(4), real(5)}));
  EXPECT_EQ(t.parent[static_cast<std::size_t>(real(8))], real(6));
  EXPECT_EQ(t.parent[static_cast<std::size_t>(real(9))], real(0));
  EXPECT_EQ(t.parent[static_cast<std::size_t>(real(0))], kNoRank);
}

TEST(Collectives, OrderedChannelsChainArrivalsFromTheSamePeer) {
  auto s = build_schedule("allreduce", "ring", {.ranks = 4, .ordered_channels = true});
  // Rank 1 receives 6 arrivals from rank 0; each but the first lists the previous one.
  std::vector<OpId> arr;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s.op(static_cast<OpId>(i)).kind == OpKind::arrival && s.op(static_cast<OpId>(i)).rank == 1)
      arr.push_back(static_cast<OpId>(i));
  ASSERT_EQ(arr.size(), 6u);
  EXPECT_TRUE(s.after(arr[0]).empty());
  for (std::size_t k = 1; k < arr.size(); ++k) {
    ASSERT_EQ(s.after(arr[k]).size(), 1u);
    EXPECT_EQ(s.after(arr[k])[0], arr[k - 1]);
  }
}

TEST(Collectives, UncountedSendsLeaveSendsOutOfEveryDependence) {
  for (const auto& a : algorithms()) {
    BuildOptions o{.ranks = 6};
    o.count_send_completions = false;
    const Schedule s = build_schedule(a.collective, a.algorithm, o);
    for (std::size_t i = 0; i < s.size(); ++i)
      for (OpId d : s.deps(static_cast<OpId>(i))) {
        const Op& p = s.op(d);
        if (s.op(static_cast<OpId>(i)).kind != OpKind::arrival) {
          EXPECT_FALSE(is_data_op(p.kind) && p.peer != p.rank)
              << a.collective << "/" << a.algorithm << ": op " << i << " waits on send " << d;
        }
      }
  }
}

TEST(Collectives, BadOptionsAreRejectedWithClearMessages) {
  EXPECT_EQ(fabriclab::testing::input_error_of([] { build_schedule("allreduse", "ring", {.ranks = 4}); }),
            "unknown collective 'allreduse' (expected one of: allreduce, bcast, reduce, "
            "barrier, allgather, reduce_scatter, alltoall)");
  EXPECT_EQ(fabriclab::testing::input_error_of([] { build_schedule("allreduce", "tree", {.ranks = 4}); }),
            "unknown algorithm 'tree' for allreduce (expected one of: recursive_doubling, ring, "
            "binomial, rabenseifner)");
  EXPECT_EQ(fabriclab::testing::input_error_of([] { build_schedule("allreduce", "ring", {.ranks = 1}); }),
            "ranks must be at least 2 (got 1)");
  EXPECT_EQ(fabriclab::testing::input_error_of([] { build_schedule("bcast", "binomial", {.ranks = 4, .root = 4}); }),
            "root 4 is outside 0..3");
  EXPECT_EQ(fabriclab::testing::input_error_of([] { build_schedule("bcast", "knomial", {.ranks = 4, .radix = 1}); }),
            "radix must be at least 2 (got 1)");
  EXPECT_EQ(fabriclab::testing::input_error_of(
                [] { build_schedule("allgather", "ring", {.ranks = 4, .bytes = std::int64_t{1} << 62}); }),
            "bytes must be in 0..1099511627776 (1 TiB; got 4611686018427387904)");
  EXPECT_EQ(fabriclab::testing::input_error_of([] { build_schedule("allreduce", "ring", {.ranks = 100000}); }),
            "allreduce ring on 100000 ranks would have about 39999700000 operations, more than "
            "the 33554432 this tool builds (the closed-form estimates have no such limit)");
  EXPECT_EQ(fabriclab::testing::input_error_of([] { build_schedule("allreduce", "ring", {.ranks = 4, .root = 1}); }),
            "allreduce ring has no root; --root does not apply");
  EXPECT_EQ(fabriclab::testing::input_error_of([] { parse_datatype("complex"); }),
            "unknown datatype 'complex' (expected: int64, double, float)");
}

}  // namespace
}  // namespace fabriclab::offload
