#include "core/event_queue.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>
#include <vector>

#include "core/random.h"

namespace fabriclab {
namespace {

// Drives a queue and a reference (std::set ordered by (time, seq)) with the same random
// pushes and pops; every pop must agree. Gaps: ties (0), small, and rare huge jumps
// that leave the calendar empty for many years.
// With `recurring_percent`, that share of the gaps is one of a few fixed delays (a
// network's frame times and link delays), more than a LaneQueue has lanes for; or, with
// `many_delays`, one of that many (1000 + 7919 i ps).
// With `ordered_percent` (a LaneQueue), that share of pushes go through push_in_order:
// mostly a rising stream of times (frames handed over between partitions), sometimes a
// time below the stream's last, which push_in_order must send the usual way.
template <typename Queue>
void differential(std::uint64_t seed, std::int64_t mean_gap, std::uint64_t tie_percent = 2,
                  std::uint64_t recurring_percent = 0, std::size_t many_delays = 0, std::uint64_t ordered_percent = 0) {
  std::vector<std::int64_t> recurring = {335840, 1000000, 6720, 7040, 83200, 2000000, 12, 500000, 3, 99991, 40000};
  if (many_delays > 0) {
    recurring.clear();
    for (std::size_t i = 0; i < many_delays; ++i) recurring.push_back(1000 + 7919 * static_cast<std::int64_t>(i));
  }
  Queue q;
  std::set<std::tuple<std::int64_t, std::uint64_t, int>> ref;
  RandomStream rng(seed, "event-queue-test");
  std::uint64_t seq = 0;
  std::int64_t now = 0, stream = 0;
  int next_payload = 0;
  for (int step = 0; step < 200000; ++step) {
    const bool push = ref.empty() || rng.below(100) < (step < 100000 ? 60u : 40u);
    if (push) {
      std::int64_t gap = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(2 * mean_gap + 1)));
      if (rng.below(100) < tie_percent) gap = 0;  // a tie
      if (rng.below(1000) == 0) gap *= 100000;    // a long silence
      if (rng.below(100) < recurring_percent) gap = recurring[rng.below(recurring.size())];
      std::int64_t t = now + gap;
      if (rng.below(100) < ordered_percent) {
        if constexpr (requires { q.push_in_order(Time(), 0); }) {
          if (rng.below(10) != 0) {
            stream = std::max(stream, now) + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(mean_gap)));
            t = stream;
          }
          q.push_in_order(Time::from_ps(t), next_payload);
        } else {
          q.push(Time::from_ps(t), next_payload);
        }
      } else {
        q.push(Time::from_ps(t), next_payload);
      }
      ref.emplace(t, seq++, next_payload++);
    } else {
      if (rng.below(4) == 0) {
        // The simulator looks before it pops (top() may cache where the earliest is), and
        // a push between the two must be seen.
        const auto& top = q.top();
        ASSERT_EQ(top.time.ps(), std::get<0>(*ref.begin())) << "step " << step;
        ASSERT_EQ(top.seq, std::get<1>(*ref.begin())) << "step " << step;
        if (rng.below(2) == 0) {
          const std::int64_t t = now + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(mean_gap + 1)));
          q.push(Time::from_ps(t), next_payload);
          ref.emplace(t, seq++, next_payload++);
        }
      }
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

// Pushes numbered events into a calendar queue and a reference set, pops from both,
// and checks each pop. An event's number is its `rank` (below 2^40) then the count of
// pushes, so numbers are unique and ties leave by rank (rank 0 throughout: in the order
// of pushing, as with the queue's own numbers).
struct NumberedReference {
  CalendarQueue<int> q;
  std::set<std::tuple<std::int64_t, std::uint64_t, int>> ref;
  int payload = 0;
  void push(std::int64_t t, std::uint64_t rank) {
    const std::uint64_t seq = rank << 24 | static_cast<std::uint64_t>(payload);
    q.push(Event<int>{Time::from_ps(t), seq, payload});
    ref.emplace(t, seq, payload++);
  }
  std::int64_t pop() {
    const auto want = *ref.begin();
    ref.erase(ref.begin());
    const auto got = q.pop();
    EXPECT_EQ(std::tuple(got.time.ps(), got.seq, got.payload), want);
    return got.time.ps();
  }  // top() names the reference's earliest; returns its time.
  std::int64_t check_top() {
    const auto& top = q.top();
    EXPECT_EQ(std::tuple(top.time.ps(), top.seq), std::tuple(std::get<0>(*ref.begin()), std::get<1>(*ref.begin())));
    return top.time.ps();
  }
};

TEST(EventQueue, CalendarQueueInsertsBeforeABlockOfLaterTies) {
  // Thousands of hosts acting in lockstep leave a block of ties at a later instant in a
  // bucket; earlier events then go before it, at every distance from the head.
  NumberedReference r;
  RandomStream rng(9, "event-queue-ties");
  std::int64_t now = 0;
  for (int round = 0; round < 40; ++round) {
    const std::int64_t block = now + 1000 + static_cast<std::int64_t>(rng.below(1000));
    for (int i = 0; i < 2000; ++i) r.push(block, 0);
    for (int i = 0; i < 3000; ++i) {
      if (rng.below(3) == 0) now = r.pop();
      else r.push(now + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(block - now + 1))), 0);
      ASSERT_EQ(r.q.size(), r.ref.size());
    }
  }
  while (!r.ref.empty()) r.pop();
}

TEST(EventQueue, CalendarQueueSortsTiesNumberedOutOfOrderInOneGo) {
  // The simulator numbers ties by the node that scheduled them, and nodes act in any
  // order: bursts of thousands of ties arrive numbered out of order. Placing each in
  // turn would move a quarter of the burst up on average (n^2 / 4: 6 M moves a burst);
  // the bucket sorts them when its day comes, moving only the few sorted events they
  // land among.
  NumberedReference r;
  RandomStream rng(10, "event-queue-numbered-ties");
  std::int64_t now = 0;
  std::uint64_t pushes = 0;
  for (int burst = 0; burst < 10; ++burst) {
    const std::int64_t t = now + 5000;
    for (int i = 0; i < 5000; ++i, ++pushes) r.push(t, rng.below(1ull << 40));
    for (int i = 0; i < 100; ++i, ++pushes)
      r.push(now + static_cast<std::int64_t>(rng.below(20000)), rng.below(1ull << 40));
    while (r.ref.size() > 50) now = r.pop();
  }
  while (!r.ref.empty()) r.pop();
  EXPECT_LT(r.q.moves(), pushes);
}

TEST(EventQueue, CalendarQueueSortsTiesInOneGoWhenTopIsReadBetweenPushes) {
  // LaneQueue reads the calendar's top before every push to it: that read must not
  // merge each tie of a burst in on its own.
  NumberedReference r;
  RandomStream rng(15, "event-queue-numbered-ties-top");
  std::int64_t now = 0;
  std::uint64_t pushes = 0;
  for (int burst = 0; burst < 4; ++burst) {
    const std::int64_t t = now + 5000;
    for (int i = 0; i < 5000; ++i, ++pushes) {
      r.push(t, rng.below(1ull << 40));
      r.check_top();
    }
    while (!r.ref.empty()) now = r.pop();
  }
  // Only a tie numbered below the top makes the next top() merge what waits: a new
  // minimum of a random sequence, about ln n times a burst (H(5000) = 9.1), each merge
  // moving at most the burst -- below 10 moves a push, where merging each tie on its
  // own moved a quarter of the burst (1250) a push.
  EXPECT_LT(r.q.moves(), 10 * pushes);
}

TEST(EventQueue, CalendarQueueSeesNumberedPushesBetweenTopAndPop) {
  // Between a top() and its pop(): a tie numbered below the top, a tie that waits
  // unsorted, an event before the top (a rewind); bursts larger than a bucket keeps.
  for (std::uint64_t seed : {16u, 17u}) {
    NumberedReference r;
    RandomStream rng(seed, "event-queue-top-then-push");
    std::int64_t now = 0;
    for (int step = 0; step < 100000; ++step) {
      if (r.ref.empty() || rng.below(100) < 50) {
        const std::uint64_t span = rng.below(8) == 0 ? 100'000'000 : 20'000;
        const std::int64_t t = now + static_cast<std::int64_t>(rng.below(span));
        const int burst = rng.below(10) == 0 ? 33 + static_cast<int>(rng.below(300)) : 1;
        for (int i = 0; i < burst; ++i) r.push(t, rng.below(1ull << 40));
        continue;
      }
      const std::int64_t top_time = r.check_top();
      switch (rng.below(4)) {
        case 0: r.push(top_time, 0); break;
        case 1: r.push(top_time, rng.below(1ull << 40)); break;
        case 2:
          r.push(now + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(top_time - now + 1))),
                 rng.below(1ull << 40));
          break;
        default: break;
      }
      now = r.pop();
      ASSERT_EQ(r.q.size(), r.ref.size());
    }
    while (!r.ref.empty()) r.pop();
  }
}

TEST(EventQueue, CalendarQueueTakesTimesUpToTheLast) {
  // Times up to Time::max(): no overflow in the width, the days or the horizon.
  NumberedReference r;
  for (int i = 0; i < 4; ++i) r.push(1000, static_cast<std::uint64_t>(i));
  r.push(Time::max().ps(), 9);
  r.push(Time::max().ps() - 1, 8);
  for (int i = 0; i < 100; ++i) r.push(2000 + i, static_cast<std::uint64_t>(i));
  while (!r.ref.empty()) r.pop();
}

TEST(EventQueue, CalendarQueueIsNotCrowdedByAFewFarEvents) {
  // Every host sets a timer for the same far instant, and one a run-end event further
  // on, while packets come and go a few ps apart near now. A width set by the far events
  // (the first estimate sees only their instants and one near one) puts every near event
  // in the far block's day, where each push moves the block up; the width must follow
  // the near events (the median gap, re-estimated once pushes crowd a day).
  NumberedReference r;
  RandomStream rng(11, "event-queue-far-block");
  std::uint64_t seq = 0, pushes = 0;
  r.push(1'000'000'000, seq++);
  for (int i = 0; i < 4000; ++i, ++pushes) r.push(1000, seq++);
  for (int i = 0; i < 4000; ++i, ++pushes) r.push(160'000'000, seq++);
  std::int64_t now = 0;
  for (int step = 0; step < 200000; ++step) {
    now = r.pop();
    if (now >= 160'000'000) break;
    r.push(now + static_cast<std::int64_t>(rng.below(20000)), seq++);
    ++pushes;
  }
  while (!r.ref.empty()) r.pop();
  // With the width from the near events, about three instants share a day, and a push
  // moves the later events of its day: fewer than three on average (the far block shares
  // a near day once a year, B / n of a move a push on average). Had the block's day
  // been the near events' day, every push would move it: 4000 events.
  EXPECT_LT(r.q.moves(), 3 * pushes);
}

TEST(EventQueue, CalendarQueueNumberedPushesAmongFarJumps) {
  // Numbered pushes (ties out of order) with gaps of every scale: ties, near, a year or
  // two of the calendar ahead, and silences that leave only far events in it. Each pop
  // must agree with the reference.
  for (std::uint64_t seed : {12u, 13u, 14u}) {
    NumberedReference r;
    RandomStream rng(seed, "event-queue-numbered-far");
    std::int64_t now = 0;
    for (int step = 0; step < 100000; ++step) {
      if (r.ref.empty() || rng.below(100) < 55) {
        const int burst = rng.below(20) == 0 ? 1 + static_cast<int>(rng.below(40)) : 1;
        std::int64_t t = now;
        switch (rng.below(5)) {
          case 0: break;  // a tie with now
          case 1: t += static_cast<std::int64_t>(rng.below(1000)); break;
          case 2: t += static_cast<std::int64_t>(rng.below(1'000'000)); break;
          case 3: t += static_cast<std::int64_t>(rng.below(100'000'000)); break;
          default: t += static_cast<std::int64_t>(rng.below(10'000'000'000)); break;
        }
        for (int i = 0; i < burst; ++i) r.push(t, rng.below(1ull << 40));
      } else {
        if (rng.below(4) == 0) r.check_top();
        now = r.pop();
      }
      ASSERT_EQ(r.q.size(), r.ref.size());
    }
    while (!r.ref.empty()) r.pop();
  }
}

TEST(EventQueue, LaneQueuePopsInTimeThenScheduleOrder) {
  for (std::int64_t gap : {1, 1000, 1000000}) differential<LaneQueue<int>>(4, gap);
  // Mostly recurring delays (11 of them for 8 lanes, so lanes change hands), ties, and
  // random gaps between them.
  for (std::uint64_t recurring : {50u, 95u}) differential<LaneQueue<int>>(5, 300000, 5, recurring);
  differential<LaneQueue<int>>(6, 300000, 95, 4);
  // 40 recurring delays: more than the lane memo's 32 slots, so some share a slot
  // whatever its hash, and five times the lanes, so lanes keep changing hands.
  differential<LaneQueue<int>>(7, 300000, 2, 90, 40);
  // Half the pushes in order (with ties in the stream when the gap draws 0), among
  // recurring delays and random gaps.
  differential<LaneQueue<int>>(8, 300000, 5, 40, 0, 50);
}

TEST(EventQueue, LaneQueueServesRecurringDelaysFromLanes) {
  // Ports of one rate re-arming a frame time later, and arrivals a link delay later:
  // two delays, each sent to the calendar the first time it is seen and to a lane from
  // then on, and pops in (time, seq) order across the lanes and the calendar.
  LaneQueue<int> q;
  const Time frame = Time::from_ps(335840), link = ns(1000);
  for (int i = 0; i < 64; ++i) q.push(frame, i);
  Time last;
  std::uint64_t last_seq = 0;
  for (int step = 0; step < 100000; ++step) {
    auto e = q.pop();
    ASSERT_TRUE(e.time > last || (e.time == last && e.seq > last_seq)) << "step " << step;
    last = e.time;
    last_seq = e.seq;
    if (e.payload >= 0) {
      q.push(e.time + frame, e.payload);
      q.push(e.time + link, -1 - e.payload);  // its arrival
    }
  }
  EXPECT_EQ(q.calendar_pushes(), 2u);
  EXPECT_GT(q.lane_pushes(), 100000u);
}

TEST(EventQueue, LaneQueueOrdersTiesByTheCallersNumbers) {
  // Numbered pushes (the simulator's tie keys): ties leave by number whatever the order
  // of pushing. The first two make the delay's lane (seen twice); a tie numbered below
  // the lane's last event cannot join it and goes to the calendar, and still leaves first.
  LaneQueue<int> q;
  q.push(ns(5), 100, 1);
  q.push(ns(5), 200, 2);  // the lane for 5 ns
  q.push(ns(5), 150, 3);  // below 200: to the calendar
  q.push(ns(5), 300, 4);  // after 200: the lane
  q.push(ns(5), 50, 5);   // below all
  q.push_in_order(ns(5), 120, 6);
  q.push_in_order(ns(5), 110, 7);  // below the ordered lane's last: pushed as usual
  EXPECT_EQ(q.tie_detours(), 3u);
  std::vector<int> order;
  while (!q.empty()) order.push_back(q.pop().payload);
  EXPECT_EQ(order, (std::vector<int>{5, 1, 7, 6, 3, 2, 4}));
}

TEST(EventQueue, SameTimeEventsLeaveInScheduleOrder) {
  CalendarQueue<int> c;
  QuadHeap<int> h;
  LaneQueue<int> l;
  for (int i = 0; i < 100; ++i) {
    c.push(ns(7), i);
    h.push(ns(7), i);
    l.push(ns(7), i);
  }
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(c.pop().payload, i);
    EXPECT_EQ(h.pop().payload, i);
    EXPECT_EQ(l.pop().payload, i);
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
  LaneQueue<int> l;
  l.push(ns(10), 1);
  l.pop();
  EXPECT_THROW(l.push(ns(9), 2), std::logic_error);
  EXPECT_THROW(l.pop(), std::logic_error);
}

}  // namespace
}  // namespace fabriclab
