#include "core/simulator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/pool.h"
#include "core/stats.h"

namespace fabriclab {
namespace {

// Two components that wake each other: A after 10 ns wakes B, B after 5 ns wakes A.
struct PingPong : EventHandler {
  Simulator* sim;
  PingPong* other = nullptr;
  Time delay;
  std::vector<std::int64_t>* log;
  std::int64_t mark;
  PingPong(Simulator& s, Time d, std::vector<std::int64_t>& l, std::int64_t m) : sim(&s), delay(d), log(&l), mark(m) {}
  void on_event(std::uint64_t) override {
    log->push_back(mark * 1'000'000 + sim->now().ps() / 1000);
    sim->schedule_in(delay, *other);
  }
};

TEST(Simulator, RunsEventsAtHandComputedTimes) {
  Simulator sim;
  std::vector<std::int64_t> log;
  PingPong a(sim, ns(10), log, 1), b(sim, ns(5), log, 2);
  a.other = &b;
  b.other = &a;
  sim.schedule_at(ns(0), a);
  // A at 0, 15, 30, ..., 90; B at 10, 25, ..., 100: 14 events up to 100 ns.
  EXPECT_EQ(sim.run(ns(100)), 14u);
  EXPECT_EQ(sim.now(), ns(100));
  const std::vector<std::int64_t> want = {1'000'000, 2'000'010, 1'000'015, 2'000'025, 1'000'030, 2'000'040, 1'000'045,
                                          2'000'055, 1'000'060, 2'000'070, 1'000'075, 2'000'085, 1'000'090, 2'000'100};
  EXPECT_EQ(log, want);
  EXPECT_EQ(sim.pending(), 1u);  // A at 115 ns
}

struct Recorder : EventHandler {
  std::string* out;
  char name;
  Recorder(std::string& o, char n) : out(&o), name(n) {}
  void on_event(std::uint64_t tag) override { *out += name + std::to_string(tag); }
};

TEST(Simulator, SameTimeEventsFromOneSourceRunInScheduleOrderAndFingerprintTheTrajectory) {
  auto run = [](bool swap) {
    Simulator sim;
    std::string out;
    Recorder x(out, 'x'), y(out, 'y');
    x.set_tie_source(1);
    y.set_tie_source(2);
    sim.schedule_at(ns(3), swap ? y : x, 1);
    sim.schedule_at(ns(3), swap ? x : y, 2);
    sim.schedule_at(ns(1), x, 3);
    sim.run();
    return std::pair{out, sim.fingerprint()};
  };
  EXPECT_EQ(run(false).first, "x3x1y2");
  EXPECT_EQ(run(true).first, "x3y1x2");
  EXPECT_EQ(run(false).second, run(false).second);  // deterministic
  EXPECT_NE(run(false).second, run(true).second);   // a different trajectory
}

// Schedules, when it runs, one event for each of `targets` at `at` (from its own source).
struct Fanout : EventHandler {
  Simulator* sim;
  std::vector<EventHandler*> targets;
  Time at;
  EventHandler* acts_for = nullptr;
  Fanout(Simulator& s, std::vector<EventHandler*> t, Time a) : sim(&s), targets(std::move(t)), at(a) {}
  void on_event(std::uint64_t tag) override {
    if (acts_for) sim->act_for(*acts_for);
    for (EventHandler* h : targets) sim->schedule_at(at, *h, tag);
  }
};

TEST(Simulator, TiesRunInTheOrderOfTheirSourcesNotOfScheduling) {
  // Two sources schedule for 5 ns; source 2 runs first (at 1 ns) and source 1 later (at
  // 2 ns), yet at 5 ns source 1's events come first: keys are (source, the source's
  // count), whatever the order of scheduling -- the order a split run, whose parts
  // schedule independently, can reproduce. The simulator's own source (0) comes first.
  Simulator sim;
  std::string out;
  Recorder a(out, 'a'), b(out, 'b'), c(out, 'c');
  Fanout one(sim, {&a, &b}, ns(5)), two(sim, {&c, &a}, ns(5));
  one.set_tie_source(1);
  two.set_tie_source(2);
  sim.schedule_at(ns(2), one, 1);
  sim.schedule_at(ns(1), two, 2);
  sim.schedule_at(ns(5), b, 0);  // the simulator's own key
  sim.run();
  EXPECT_EQ(out, "b0a1b1c2a2");
  EXPECT_EQ(sim.events(), 7u);
}

TEST(Simulator, AnEventActingForAnotherDrawsThatSourcesKeys) {
  // `two` acts for source 1 (as a frame's arrival acts for the receiving node): its
  // events draw source 1's keys, after those `one` drew before, so they run after one's.
  Simulator sim;
  std::string out;
  Recorder a(out, 'a'), b(out, 'b');
  Fanout one(sim, {&a}, ns(5)), two(sim, {&b}, ns(5)), helper(sim, {}, ns(0));
  one.set_tie_source(3);
  two.set_tie_source(1);
  helper.set_tie_source(3);
  two.acts_for = &helper;
  sim.schedule_at(ns(2), two, 2);
  sim.schedule_at(ns(1), one, 1);
  sim.run();
  EXPECT_EQ(out, "a1b2");  // without act_for, two's source 1 would come first: "b2a1"
}

TEST(Simulator, TieSourcesAreBelowTwoToThe24) {
  std::string out;
  Recorder r(out, 'r');
  EXPECT_NO_THROW(r.set_tie_source((1u << 24) - 1));
  EXPECT_THROW(r.set_tie_source(1u << 24), std::logic_error);
}

struct Stopper : EventHandler {
  Simulator* sim;
  explicit Stopper(Simulator& s) : sim(&s) {}
  void on_event(std::uint64_t) override { sim->stop(); }
};

TEST(Simulator, StopsAndRefusesThePast) {
  Simulator sim;
  Stopper s(sim);
  std::string out;
  Recorder r(out, 'r');
  sim.schedule_at(ns(1), s);
  sim.schedule_at(ns(2), r);
  EXPECT_EQ(sim.run(), 1u);
  EXPECT_EQ(sim.now(), ns(1));
  EXPECT_THROW(sim.schedule_at(ps(999), r), std::logic_error);
  EXPECT_EQ(sim.run(), 1u);
  EXPECT_EQ(out, "r0");
}

TEST(Pool, ReusesSlotsAndReportsLeaks) {
  struct Packet {
    int psn;
    explicit Packet(int p) : psn(p) {}
  };
  Pool<Packet> pool("Packet", 4);
  Packet* a = pool.acquire(1);
  Packet* b = pool.acquire(2);
  EXPECT_EQ(pool.live(), 2u);
  pool.release(a);
  EXPECT_EQ(pool.acquire(3), a);  // last released, first reused
  EXPECT_EQ(a->psn, 3);
  EXPECT_EQ(pool.capacity(), 4u);
  // Steady state: acquire/release cycles allocate no more blocks.
  for (int i = 0; i < 1000; ++i) pool.release(pool.acquire(i));
  EXPECT_EQ(pool.capacity(), 4u);
  try {
    pool.check_no_leaks();
    ADD_FAILURE() << "no leak reported";
  } catch (const std::logic_error& e) {
    EXPECT_STREQ(e.what(), "pool of Packet: 2 object(s) acquired and never released");
  }
  pool.release(a);
  pool.release(b);
  EXPECT_NO_THROW(pool.check_no_leaks());
  // a and b were live during the cycles above, each of which held a third.
  EXPECT_EQ(pool.peak(), 3u);
}

// Blocks double from the first one's size to 2 MiB, then stay at 2 MiB, aligned to it
// (a huge page). 64-byte objects from a first block of 8192 (512 KiB): 8192, then 16384
// (1 MiB), then 32768 (2 MiB) at every block.
TEST(Pool, BlocksDoubleToTwoMebibytesAlignedToThem) {
  struct alignas(64) Line {
    char bytes[64];
  };
  Pool<Line> pool("Line", 8192);
  std::vector<Line*> held;
  auto take_until = [&](std::size_t n) {
    while (held.size() < n) held.push_back(pool.acquire());
  };
  take_until(1);
  EXPECT_EQ(pool.capacity(), 8192u);
  take_until(8193);
  EXPECT_EQ(pool.capacity(), 8192u + 16384u);
  take_until(8192 + 16384);
  EXPECT_EQ(pool.capacity(), 8192u + 16384u);
  take_until(8192 + 16384 + 1);  // the first huge block; its first slot comes first
  EXPECT_EQ(pool.capacity(), 8192u + 16384u + 32768u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(held.back()) % (2u << 20), 0u);
  take_until(8192 + 16384 + 32768 + 1);
  EXPECT_EQ(pool.capacity(), 8192u + 16384u + 2 * 32768u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(held.back()) % (2u << 20), 0u);
  for (Line* l : held) pool.release(l);
  EXPECT_NO_THROW(pool.check_no_leaks());
}

TEST(Stats, TimeWeightedMeanByHand) {
  // 10 for 3 us, then 20 for 1 us: (30 + 20) / 4 = 12.5.
  TimeWeighted q;
  q.set(us(0), 10);
  q.set(us(3), 20);
  EXPECT_DOUBLE_EQ(q.mean(us(4)), 12.5);
  EXPECT_THROW(q.set(us(2), 0), std::logic_error);
}

TEST(Stats, HistogramBinsAndQuantiles) {
  Histogram h(0, 10, 5);  // [0,10) ... [40,50), overflow >= 50
  for (double x : {1.0, 2.0, 15.0, 25.0, 26.0, 27.0, 49.9, 50.0, -1.0}) h.add(x);
  EXPECT_EQ(h.underflow(), 1);
  EXPECT_EQ(h.bin(0), 2);
  EXPECT_EQ(h.bin(2), 3);
  EXPECT_EQ(h.bin(4), 1);
  EXPECT_EQ(h.overflow(), 1);
  // 9 values; the median is the 5th: -1, 1, 2, 15, [25] -> its bin [20, 30) has upper edge 30.
  EXPECT_DOUBLE_EQ(h.quantile_upper(0.5), 30);
  Summary s;
  for (double x : {2.0, 4.0, 9.0}) s.add(x);
  EXPECT_DOUBLE_EQ(s.mean(), 5.0);
  EXPECT_DOUBLE_EQ(s.min(), 2.0);
  EXPECT_DOUBLE_EQ(s.max(), 9.0);
}

}  // namespace
}  // namespace fabriclab
