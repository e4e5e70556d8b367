// RFC 4737 / RFC 5236 reordering metrics on hand-made arrival sequences; every expected
// value below was worked out by hand from the definitions in fabric/reorder_metrics.h.
#include "fabric/reorder_metrics.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace fabriclab::fabric
