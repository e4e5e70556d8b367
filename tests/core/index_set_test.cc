#include "core/index_set.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <utility>
#include <vector>

namespace fabriclab {
namespace {

std::vector<std::size_t> members(const DynBitset& b) {
  std::vector<std::size_t> out;
  b.for_each([&](std::size_t x) { out.push_back(x); });
  return out;
}

// Ranges across word boundaries, worked out by hand: bits 3, 63, 64, 65, 127, 128, 199.
TEST(DynBitset, CountsAndVisitsARangeAcrossWords) {
  DynBitset b(200);
  for (std::size_t x : {3, 63, 64, 65, 127, 128, 199}) b.set(x);
  EXPECT_EQ(b.count_range(0, 200), 7u);
  EXPECT_EQ(b.count_range(4, 63), 0u);
  EXPECT_EQ(b.count_range(63, 65), 2u);    // 63, 64
  EXPECT_EQ(b.count_range(63, 129), 5u);   // 63, 64, 65, 127, 128
  EXPECT_EQ(b.count_range(128, 128), 0u);  // empty
  EXPECT_EQ(b.count_range(199, 200), 1u);
  DynBitset mask(200);
  for (std::size_t x : {3, 64, 100, 128}) mask.set(x);
  EXPECT_EQ(b.count_and_range(mask, 0, 200), 3u);   // 3, 64, 128
  EXPECT_EQ(b.count_and_range(mask, 4, 128), 1u);   // 64
  EXPECT_EQ(b.count_and_range(mask, 64, 129), 2u);  // 64, 128
  std::vector<std::size_t> seen;
  b.for_each_in(64, 128, [&](std::size_t x) { seen.push_back(x); });
  EXPECT_EQ(seen, (std::vector<std::size_t>{64, 65, 127}));
  DynBitset r(200);
  r.set_range(62, 130);
  EXPECT_EQ(r.count(), 68u);
  EXPECT_FALSE(r.test(61));
  EXPECT_TRUE(r.test(62));
  EXPECT_TRUE(r.test(129));
  EXPECT_FALSE(r.test(130));
  r.set_range(5, 6);
  EXPECT_EQ(members(r).front(), 5u);
  EXPECT_EQ(r.count(), 69u);
}

TEST(IndexSet, KeepsRunsOfAChainAndCountsThem) {
  IndexSet s(100);
  for (std::size_t x : {3, 4, 5, 9}) s.push_back(x);
  s.push_back_run(20, 30);
  EXPECT_FALSE(s.dense());
  ASSERT_EQ(s.runs().size(), 3u);  // [3, 6), [9, 10), [20, 30)
  EXPECT_EQ(s.runs()[0].lo, 3u);
  EXPECT_EQ(s.runs()[0].hi, 6u);
  EXPECT_EQ(s.count(), 14u);
  EXPECT_EQ(s.count_range(4, 25), 2u + 1u + 5u);
  EXPECT_EQ(s.count_range(25, 4), 0u);  // an empty range, not a wrapped count
  EXPECT_TRUE(s.test(5));
  EXPECT_FALSE(s.test(6));
  EXPECT_TRUE(s.test(29));
  EXPECT_FALSE(s.test(30));
  s.insert(6);  // [3, 6) grows to [3, 7)
  s.insert(8);  // [8, 10)
  s.insert(7);  // [3, 10)
  ASSERT_EQ(s.runs().size(), 2u);
  EXPECT_EQ(s.runs()[0].hi, 10u);
}

// A set with more runs than n / 64 (at least 8) turns into a bitset and keeps its members.
TEST(IndexSet, BecomesABitsetWhenRunsOutgrowIt) {
  IndexSet s(64);
  for (std::size_t x = 0; x < 16; x += 2) s.push_back(x);  // 8 runs: still runs
  EXPECT_FALSE(s.dense());
  s.push_back(20);
  EXPECT_TRUE(s.dense());
  EXPECT_EQ(s.count(), 9u);
  EXPECT_EQ(s.count_range(0, 10), 5u);
  std::vector<std::pair<std::size_t, std::size_t>> runs;
  s.for_each_run([&](std::size_t lo, std::size_t hi) { runs.emplace_back(lo, hi); });
  ASSERT_EQ(runs.size(), 9u);
  EXPECT_EQ(runs.back(), (std::pair<std::size_t, std::size_t>{20, 21}));
}

// Random unions, inserts and appends against std::set, through both forms.
TEST(IndexSet, AgreesWithAnOrderedSet) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 300; ++round) {
    const std::size_t n = 1 + rng() % 700;
    std::vector<IndexSet> sets(4, IndexSet(n));
    std::vector<std::set<std::size_t>> ref(4);
    for (int step = 0; step < 40; ++step) {
      const auto k = rng() % 4;
      switch (rng() % 3) {
        case 0: {  // append a run after every member
          const std::size_t from = ref[k].empty() ? 0 : *ref[k].rbegin() + 1 + rng() % 3;
          if (from >= n) break;
          const std::size_t to = std::min(n, from + 1 + rng() % 20);
          sets[k].push_back_run(from, to);
          for (auto x = from; x < to; ++x) ref[k].insert(x);
          break;
        }
        case 1: {
          const std::size_t x = rng() % n;
          sets[k].insert(x);
          ref[k].insert(x);
          break;
        }
        default: {
          const auto j = rng() % 4;
          sets[k].unite(sets[j]);
          ref[k].insert(ref[j].begin(), ref[j].end());
        }
      }
      const auto& s = sets[k];
      ASSERT_EQ(s.count(), ref[k].size());
      std::vector<std::size_t> got;
      s.for_each([&](std::size_t x) { got.push_back(x); });
      ASSERT_EQ(got, std::vector<std::size_t>(ref[k].begin(), ref[k].end()));
      const std::size_t lo = rng() % n, hi = lo + rng() % (n - lo + 1), x = rng() % n;
      std::size_t in_range = 0;
      for (auto y : ref[k]) in_range += y >= lo && y < hi;
      ASSERT_EQ(s.count_range(lo, hi), in_range);
      ASSERT_EQ(s.test(x), ref[k].count(x) == 1);
      ASSERT_EQ(members(s.to_bits()), got);
      if (!s.dense()) {
        ASSERT_LE(s.runs().size(), std::max<std::size_t>(8, n / 64));
        for (std::size_t r = 1; r < s.runs().size(); ++r) ASSERT_LT(s.runs()[r - 1].hi, s.runs()[r].lo);
      }
    }
    for (std::size_t a = 0; a < 4; ++a)
      for (std::size_t b = 0; b < 4; ++b) ASSERT_EQ(sets[a] == sets[b], ref[a] == ref[b]);
  }
}

}  // namespace
}  // namespace fabriclab
