#include "core/event_queue.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "core/random.h"

namespace fabriclab {
namespace {

// Drives a queue and a reference (std::set ordered by (time, seq)) with the same random
// pushes and pops; every pop must agree. Gaps: ties (0), small, and rare huge jumps
// that leave the calendar empty for many years.
template <typename Queue>
void differential(std::uint64_t seed, std::int64_t mean_gap, std::uint64_t tie_percent = 2) {
  Queue q;
  std::set<std::tuple<std::int64_t, std::uint64_t, int>> ref;
  RandomStream rng(seed, "event-queue-test");
  std::uint64_t seq = 0;
  std::int64_t now = 0;
  int next_payload = 0;
  for (int step = 0; step < 200000; ++step) {
    const bool push = ref.empty() || rng.below(100) < (step < 100000 ? 60u : 40u);
    if (push) {
      std::int64_t gap = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(2 * mean_gap + 1)));
      if (rng.below(100) < tie_percent) gap = 0;            // a tie
      if (rng.below(1000) == 0) gap *= 100000;               // a long silence
      const std::int64_t t = now + gap;
      q.push(Time::from_ps(t), next_payload);
      ref.emplace(t, seq++, next_payload++);
    } else {
      const auto want = *ref.begin();
      ref.erase(ref.begin());
      const auto got = q.pop();
      ASSERT_EQ(got.time.ps(), std::get<0>(want)) << "step " << step;
      ASSERT_EQ(got.seq, std::get<1>(want)) << "step " << step;
      ASSERT_EQ(got.payload, std::get<2>(want)) << "step " << step;
      now = got.time.ps();
    }
    ASSERT_EQ(q.size(), ref.size());
  }
}

TEST(EventQueue, QuadHeapPopsInTimeThenScheduleOrder) {
  for (std::int64_t gap : {1, 1000, 1000000}) differential<QuadHeap<int>>(1, gap);
}

TEST(EventQueue, CalendarQueuePopsInTimeThenScheduleOrder) {
  for (std::int64_t gap : {1, 1000, 1000000}) differential<CalendarQueue<int>>(2, gap);
}

TEST(EventQueue, CalendarQueueSurvivesBurstsAtOneInstant) {
  // A network's ports finish frames together: most events tie. The width estimate must
  // not collapse (it samples past the ties), and order must hold.
  differential<CalendarQueue<int>>(3, 300000, 95);
}

TEST(EventQueue, SameTimeEventsLeaveInScheduleOrder) {
  CalendarQueue<int> c;
  QuadHeap<int> h;
  for (int i = 0; i < 100; ++i) {
    c.push(ns(7), i);
    h.push(ns(7), i);
  }
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(c.pop().payload, i);
    EXPECT_EQ(h.pop().payload, i);
  }
}

TEST(EventQueue, RefusesToScheduleIntoThePast) {
  QuadHeap<int> h;
  h.push(ns(10), 1);
  h.pop();
  EXPECT_THROW(h.push(ns(9), 2), std::logic_error);
  CalendarQueue<int> c;
  c.push(ns(10), 1);
  c.pop();
  EXPECT_THROW(c.push(ns(9), 2), std::logic_error);
  EXPECT_THROW(c.pop(), std::logic_error);
}

}  // namespace
}  // namespace fabriclab
