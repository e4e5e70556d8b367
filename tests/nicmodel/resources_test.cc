// NIC pool and counter cache of the timed NIC model, against hand-worked sequences and,
// for the cache, a plain list-based LRU as a second implementation.
#include "nicmodel/resources.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <list>

#include "core/random.h"

namespace fabriclab::nicmodel {
namespace {

TEST(NicPool, AcquiresAllOrNothingAndTracksOccupancy) {
  NicPool pool(16, 8);
  EXPECT_TRUE(pool.try_acquire(ns(0), 4, 2));
  EXPECT_TRUE(pool.try_acquire(ns(10), 8, 2));   // 12 counters, 4 slots held
  EXPECT_FALSE(pool.try_acquire(ns(10), 5, 1));  // 17 > 16 counters: nothing taken
  EXPECT_FALSE(pool.try_acquire(ns(10), 1, 5));  // 9 > 8 slots: nothing taken
  EXPECT_EQ(pool.counters_in_use(), 12);
  EXPECT_EQ(pool.slots_in_use(), 4);
  pool.release(ns(20), 4, 2);
  // Counters held: 4 on [0, 10), 12 on [10, 20), 8 on [20, 40): mean (40+120+160)/40 = 8.
  EXPECT_DOUBLE_EQ(pool.mean_counters_in_use(ns(40)), 8.0);
  // Slots: 2, 4, 2 on the same spans: (20 + 40 + 40) / 40 = 2.5.
  EXPECT_DOUBLE_EQ(pool.mean_slots_in_use(ns(40)), 2.5);
  EXPECT_EQ(pool.peak_counters_in_use(), 12);
}

TEST(NicPool, ImpossibleRequestsAndOverReleaseAreLoud) {
  NicPool pool(16, 8);
  EXPECT_THROW(pool.try_acquire(ns(0), 17, 1), std::invalid_argument);
  EXPECT_THROW(pool.try_acquire(ns(0), -1, 1), std::invalid_argument);
  ASSERT_TRUE(pool.try_acquire(ns(0), 2, 2));
  EXPECT_THROW(pool.release(ns(1), 3, 0), std::logic_error);
}

TEST(CounterCache, HandWorkedSequence) {
  // Two entries; a b a c b a. Recency after each access (most recent first):
  // a: miss [a]; b: miss [b a]; a: hit [a b]; c: miss, evicts b [c a];
  // b: miss, evicts a [b c]; a: miss, evicts c [a b]. One hit, five misses, three evictions.
  CounterCache c(2);
  const std::uint64_t a = 1, b = 2, k = 3;
  EXPECT_FALSE(c.access(a));
  EXPECT_FALSE(c.access(b));
  EXPECT_TRUE(c.access(a));
  EXPECT_FALSE(c.access(k));
  EXPECT_FALSE(c.contains(b));
  EXPECT_FALSE(c.access(b));
  EXPECT_FALSE(c.access(a));
  EXPECT_EQ(c.hits(), 1u);
  EXPECT_EQ(c.misses(), 5u);
  EXPECT_EQ(c.evictions(), 3u);
  EXPECT_TRUE(c.contains(a));
  EXPECT_TRUE(c.contains(b));
  EXPECT_FALSE(c.contains(k));
}

TEST(CounterCache, ErasingFreesAnEntryWithoutEviction) {
  CounterCache c(2);
  c.access(1);
  c.access(2);
  c.erase(1);  // released counter
  EXPECT_EQ(c.size(), 1);
  EXPECT_FALSE(c.access(3));  // fills the freed entry
  EXPECT_EQ(c.evictions(), 0u);
  EXPECT_TRUE(c.access(2));
  c.erase(42);  // absent: nothing happens
  EXPECT_EQ(c.size(), 2);
}

TEST(CounterCache, AgreesWithAListBasedLru) {
  // 200k random accesses, erasures and range erasures over 192 keys (128 shaped as the
  // model's, 64 differing only in their high bits).
  for (std::int32_t entries : {1, 3, 8, 31, 100}) {
    CounterCache c(entries);
    std::list<std::uint64_t> ref;  // most recent first
    std::uint64_t hits = 0, misses = 0;
    RandomStream rng(7, "lru");
    for (int i = 0; i < 200000; ++i) {
      // Keys shaped as the model packs them: (job << 32) | counter; or differing only in
      // their high bits.
      const std::uint64_t key = i % 2 ? (rng.below(8) << 32 | rng.below(16)) : rng.below(64) << 40;
      auto it = std::find(ref.begin(), ref.end(), key);
      if (rng.below(100) == 0) {  // a collective's counters leave: all of one job's keys
        const std::uint64_t a = rng.below(8) << 32, b = a | 0xffffffffull;
        ref.remove_if([&](std::uint64_t k) { return k >= a && k <= b; });
        c.erase_range(a, b);
      } else if (rng.below(10) == 0) {
        if (it != ref.end()) ref.erase(it);
        c.erase(key);
      } else {
        const bool hit = it != ref.end();
        if (hit) ref.erase(it);
        else if (static_cast<std::int32_t>(ref.size()) == entries) ref.pop_back();
        ref.push_front(key);
        hits += hit;
        misses += !hit;
        ASSERT_EQ(c.access(key), hit) << "entries " << entries << " step " << i;
      }
      ASSERT_EQ(c.size(), static_cast<std::int32_t>(ref.size()));
    }
    EXPECT_EQ(c.hits(), hits);
    EXPECT_EQ(c.misses(), misses);
    for (std::uint64_t k : ref) EXPECT_TRUE(c.contains(k));
  }
}

}  // namespace
}  // namespace fabriclab::nicmodel
