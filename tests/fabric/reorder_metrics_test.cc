// RFC 4737 / RFC 5236 reordering metrics on hand-made arrival sequences; every expected
// value below was worked out by hand from the definitions in fabric/reorder_metrics.h.
#include "fabric/reorder_metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

namespace fabriclab::fabric {
namespace {

// Arrivals one microsecond apart, in the order given.
std::vector<Arrival> seq(std::initializer_list<std::uint32_t> psns) {
  std::vector<Arrival> a;
  std::int64_t t = 0;
  for (std::uint32_t p : psns) a.push_back({p, us(++t)});
  return a;
}

TEST(ReorderMetrics, InOrderHasNothingReordered) {
  const ReorderMetrics m = reorder_metrics(seq({0, 1, 2, 3}));
  EXPECT_EQ(m.received, 4u);
  EXPECT_EQ(m.reordered, 0u);
  EXPECT_EQ(m.max_extent, 0u);
  EXPECT_EQ(m.displacement, (std::map<std::int64_t, std::uint64_t>{{0, 4}}));
  EXPECT_EQ(m.occupancy, (std::vector<std::uint64_t>{4}));
}

// 0 1 3 2 4: 2 arrives after 3 (NextExp was 4): one reordered packet, extent 1 (3 came
// one arrival earlier), late by 1 us. Displacements i - s: 0 0 -1 1 0. The ideal
// re-sequencer holds 3 for one arrival.
TEST(ReorderMetrics, OneSwap) {
  const ReorderMetrics m = reorder_metrics(seq({0, 1, 3, 2, 4}));
  EXPECT_EQ(m.received, 5u);
  EXPECT_EQ(m.reordered, 1u);
  EXPECT_DOUBLE_EQ(m.ratio(), 0.2);
  EXPECT_EQ(m.max_extent, 1u);
  EXPECT_EQ(m.max_late, us(1));
  EXPECT_DOUBLE_EQ(m.n_reordering(1), 0.2);
  EXPECT_DOUBLE_EQ(m.n_reordering(2), 0.0);
  EXPECT_EQ(m.displacement, (std::map<std::int64_t, std::uint64_t>{{-1, 1}, {0, 3}, {1, 1}}));
  EXPECT_EQ(m.occupancy, (std::vector<std::uint64_t>{4, 1}));
}

// 0 3 1 2: 1 and 2 are both reordered against 3 (arrival index 1): extents 1 and 2, late
// by 1 and 2 us. 1-reordering 2/4, 2-reordering 1/4. The re-sequencer holds 3 while 1
// and 2 arrive: occupancies 0 1 1 0.
TEST(ReorderMetrics, OneEarlyPacketDelaysTwo) {
  const ReorderMetrics m = reorder_metrics(seq({0, 3, 1, 2}));
  EXPECT_EQ(m.reordered, 2u);
  EXPECT_EQ(m.max_extent, 2u);
  EXPECT_EQ(m.extent_count, (std::vector<std::uint64_t>{0, 1, 1}));
  EXPECT_EQ(m.max_late, us(2));
  EXPECT_DOUBLE_EQ(m.n_reordering(1), 0.5);
  EXPECT_DOUBLE_EQ(m.n_reordering(2), 0.25);
  EXPECT_DOUBLE_EQ(m.n_reordering(3), 0.0);
  // i - s: 0-0, 1-3, 2-1, 3-2
  EXPECT_EQ(m.displacement, (std::map<std::int64_t, std::uint64_t>{{-2, 1}, {0, 1}, {1, 2}}));
  EXPECT_EQ(m.occupancy, (std::vector<std::uint64_t>{2, 2}));
}

// 4 0 1 2 3: one packet 4 places early. Each of 0..3 is reordered against 4 (index 0):
// extents 1, 2, 3, 4. Occupancy: 4 is held through four arrivals, released by 3.
TEST(ReorderMetrics, LatePacketsBehindAnEarlyOne) {
  const ReorderMetrics m = reorder_metrics(seq({4, 0, 1, 2, 3}));
  EXPECT_EQ(m.reordered, 4u);
  EXPECT_EQ(m.max_extent, 4u);
  EXPECT_EQ(m.max_late, us(4));
  EXPECT_DOUBLE_EQ(m.n_reordering(3), 0.4);
  EXPECT_EQ(m.occupancy, (std::vector<std::uint64_t>{1, 4}));
}

// A retransmission of a PSN already received is a duplicate, not a reordered packet; a
// packet lost and resent late is reordered once, with the extent of its late arrival.
// 0 2 3 1 2: the second 2 is a duplicate; 1 arrives at index 3, and the earliest packet
// before it with a larger PSN is 2, at index 1: extent 2.
TEST(ReorderMetrics, DuplicatesAreLeftOut) {
  const ReorderMetrics m = reorder_metrics(seq({0, 2, 3, 1, 2}));
  EXPECT_EQ(m.received, 4u);
  EXPECT_EQ(m.duplicates, 1u);
  EXPECT_EQ(m.reordered, 1u);
  EXPECT_EQ(m.max_extent, 2u);
}

TEST(ReorderMetrics, EmptySequence) {
  const ReorderMetrics m = reorder_metrics({});
  EXPECT_EQ(m.received, 0u);
  EXPECT_DOUBLE_EQ(m.ratio(), 0.0);
  EXPECT_DOUBLE_EQ(m.n_reordering(1), 0.0);
}

// The streaming tracker against the definitions applied literally, by brute force over
// the whole history (quadratic, independent of the tracker's bookkeeping): random
// sequences with local reordering, repeats and PSNs that never arrive.
TEST(ReorderMetrics, TrackerAgreesWithTheDefinitionsByBruteForce) {
  std::mt19937 rng(11);
  for (int round = 0; round < 20; ++round) {
    std::vector<std::uint32_t> psns;
    for (std::uint32_t i = 0; i < 400; ++i)
      if (rng() % 20 != 0) psns.push_back(i);  // about 5 % never arrive
    for (std::size_t i = 0; i + 10 < psns.size(); i += 1 + rng() % 4) std::swap(psns[i], psns[i + rng() % 10]);
    for (int k = 0; k < 20; ++k) psns.insert(psns.begin() + rng() % psns.size(), psns[rng() % psns.size()]);

    ReorderTracker t;
    std::vector<std::uint32_t> first;  // first arrivals so far
    std::set<std::uint32_t> seen;
    std::uint64_t reordered = 0, duplicates = 0;
    std::vector<std::uint64_t> extents;
    std::map<std::int64_t, std::uint64_t> displacement;
    for (std::uint32_t s : psns) {
      t.add(s, Time());
      if (!seen.insert(s).second) {
        ++duplicates;
        continue;
      }
      const std::size_t i = first.size();
      if (!first.empty() && s < *std::max_element(first.begin(), first.end()) + 1) {
        ++reordered;
        std::size_t j = 0;
        while (first[j] <= s) ++j;  // the earliest packet before it with a larger PSN
        if (extents.size() <= i - j) extents.resize(i - j + 1, 0);
        ++extents[i - j];
      }
      ++displacement[static_cast<std::int64_t>(i) - s];
      first.push_back(s);
    }
    const ReorderMetrics& m = t.metrics();
    EXPECT_EQ(m.received, first.size());
    EXPECT_EQ(m.duplicates, duplicates);
    EXPECT_EQ(m.reordered, reordered);
    EXPECT_EQ(m.extent_count, extents);
    EXPECT_EQ(m.displacement, displacement);
    // Missing: PSNs below the largest received that never arrived.
    const std::uint32_t top = *seen.rbegin();
    EXPECT_EQ(t.missing(), top + 1 - seen.size());
  }
}

// A finite re-sequencer (max_held 2) gives up a PSN that stays missing: 0 then 2 3 4
// arrive without 1. Holding 2 and 3 is allowed; with 4 it would hold 3, so 1 is given up
// and 2 3 4 are released. A late 1 then counts as a duplicate.
TEST(ReorderMetrics, AFiniteWindowGivesUpMissingPsns) {
  ReorderTracker t(2);
  for (std::uint32_t s : {0u, 2u, 3u, 4u}) t.add(s, Time());
  EXPECT_EQ(t.abandoned(), 1u);
  EXPECT_EQ(t.missing(), 0u);
  EXPECT_EQ(t.metrics().occupancy, (std::vector<std::uint64_t>{2, 1, 1}));
  t.add(1, Time());
  EXPECT_EQ(t.metrics().duplicates, 1u);
  EXPECT_EQ(t.metrics().received, 4u);
}

}  // namespace
}  // namespace fabriclab::fabric
