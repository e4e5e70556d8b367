// Pending-event sets for the simulator, ordered by (time, sequence number): events at
// the same time leave in the order they were scheduled, so identical inputs give
// identical runs. The calendar and the lanes also take events numbered by the caller
// (the simulator's tie keys, Simulator): ties then leave in the order of those numbers,
// whatever the order of pushing. Three designs, benchmarked in bench/event_queue_benchmark.cc:
//
// - QuadHeap: an implicit 4-ary min-heap in one vector (shallower than a binary heap,
//   and a node's four children share a cache line or two).
// - CalendarQueue: Brown's calendar queue (CACM 31(10), 1988): buckets of a fixed time
//   width indexed by time modulo the "year", each kept sorted earliest first (ties and
//   later events append in O(1), one a few places early is put in its place, others
//   are sorted in at once when their day comes); O(1) expected per operation when the
//   width matches the spacing of distinct instants; resized (and its width
//   re-estimated, from the median gap) as the population doubles or halves, when pops
//   walk many empty days, or when pushes land in crowded days.
// - LaneQueue: FIFO lanes for the few delays most events are scheduled with, in front of
//   a calendar queue (below).
//
// All take events only at or after the last one popped (a simulator never schedules
// into the past) and throw std::logic_error otherwise.
//
//   QuadHeap<int> q;
//   q.push(ns(5), 42);
//   auto e = q.pop();   // e.time == ns(5), e.payload == 42
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/units.h"

namespace fabriclab {

// The one order of pending events: by time, then by the sequence number of scheduling.
// Times of pending events are never negative (nothing is scheduled before time 0 or
// before the last event popped), so (time, seq) compares as one unsigned 128-bit key:
// no branch on ties.
inline bool earlier(Time t, std::uint64_t seq, Time other_t, std::uint64_t other_seq) {
  __extension__ using Key = unsigned __int128;
  const Key a = static_cast<Key>(static_cast<std::uint64_t>(t.ps())) << 64 | seq;
  const Key b = static_cast<Key>(static_cast<std::uint64_t>(other_t.ps())) << 64 | other_seq;
  return a < b;
}

template <typename Payload>
struct Event {
  Time time;
  std::uint64_t seq;
  Payload payload;
  bool before(const Event& o) const { return earlier(time, seq, o.time, o.seq); }
};

template <typename Payload>
class QuadHeap {
 public:
  void push(Time t, Payload p) {
    if (t < now_) throw std::logic_error("event scheduled in the past");
    heap_.push_back({t, next_seq_++, std::move(p)});
    sift_up(heap_.size() - 1);
  }
  const Event<Payload>& top() const { return heap_.front(); }
  Event<Payload> pop() {
    Event<Payload> out = std::move(heap_.front());
    heap_.front() = std::move(heap_.back());
    heap_.pop_back();
    if (!heap_.empty()) sift_down(0);
    now_ = out.time;
    return out;
  }
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  void reserve(std::size_t n) { heap_.reserve(n); }

 private:
  void sift_up(std::size_t i) {
    Event<Payload> e = std::move(heap_[i]);
    while (i > 0) {
      const std::size_t parent = (i - 1) / 4;
      if (!e.before(heap_[parent])) break;
      heap_[i] = std::move(heap_[parent]);
      i = parent;
    }
    heap_[i] = std::move(e);
  }
  void sift_down(std::size_t i) {
    const std::size_t n = heap_.size();
    Event<Payload> e = std::move(heap_[i]);
    while (true) {
      const std::size_t first = 4 * i + 1;
      if (first >= n) break;
      std::size_t best = first;
      const std::size_t last = first + 4 < n ? first + 4 : n;
      for (std::size_t c = first + 1; c < last; ++c)
        if (heap_[c].before(heap_[best])) best = c;
      if (!heap_[best].before(e)) break;
      heap_[i] = std::move(heap_[best]);
      i = best;
    }
    heap_[i] = std::move(e);
  }

  std::vector<Event<Payload>> heap_;
  std::uint64_t next_seq_ = 0;
  Time now_;
};

template <typename Payload>
class CalendarQueue {
  // A bucket keeps its events sorted earliest first, popped from a moving head: an event
  // later than everything in its bucket -- the usual case, and every event of a burst at
  // one instant numbered in order -- is appended in O(1), and one a few places early is
  // put in its place. Any other waits, unsorted, after the sorted events, until the
  // bucket's earliest is next needed: then the waiting ones are sorted and merged in at
  // once. A burst of ties numbered out of order (the simulator numbers ties by the node
  // that scheduled them, and nodes act in any order) costs a sort, not a move of the
  // block for each event.
  class Bucket {
   public:
    bool empty() const { return head_ == ev_.size(); }
    bool settled() const { return unsorted_ == 0; }
    // The earliest event, once settled.
    const Event<Payload>& front() const { return ev_[head_]; }
    Event<Payload> pop_front() {
      Event<Payload> e = std::move(ev_[head_++]);
      if (head_ == ev_.size()) {
        ev_.clear();
        head_ = 0;
      } else if (head_ >= 64 && head_ * 2 >= ev_.size()) {  // keep the dead prefix bounded
        ev_.erase(ev_.begin(), ev_.begin() + static_cast<std::ptrdiff_t>(head_));
        head_ = 0;
      }
      return e;
    }
    // Places the event in order, or after the sorted events to wait for settle(); returns
    // how many events it moved up.
    std::size_t insert(Event<Payload> e) {
      if (settled()) {
        const auto first = ev_.begin() + static_cast<std::ptrdiff_t>(head_);
        auto it = ev_.end();
        for (int step = 0; step < 8 && it != first && e.before(*(it - 1)); ++step) --it;
        if (it == first || !e.before(*(it - 1))) {
          const auto moved = static_cast<std::size_t>(ev_.end() - it);
          ev_.insert(it, std::move(e));
          return moved;
        }
      }
      ev_.push_back(std::move(e));
      ++unsorted_;
      return 0;
    }
    // Sorts the waiting events and merges them into the sorted ones, from the back, with
    // `scratch` for room; returns how many sorted events moved up.
    std::size_t settle(std::vector<Event<Payload>>& scratch) {
      const std::size_t sorted = ev_.size() - unsorted_;
      scratch.assign(std::make_move_iterator(ev_.begin() + static_cast<std::ptrdiff_t>(sorted)),
                     std::make_move_iterator(ev_.end()));
      std::sort(scratch.begin(), scratch.end(),
                [](const Event<Payload>& a, const Event<Payload>& b) { return a.before(b); });
      std::size_t i = sorted, j = scratch.size(), k = ev_.size();
      while (j > 0) {
        if (i > head_ && scratch[j - 1].before(ev_[i - 1])) ev_[--k] = std::move(ev_[--i]);
        else ev_[--k] = std::move(scratch[--j]);
      }
      const std::size_t moved = sorted - i;
      unsorted_ = 0;
      scratch.clear();
      return moved;
    }
    template <typename F>
    void for_each(F&& f) const {
      for (std::size_t i = head_; i < ev_.size(); ++i) f(ev_[i]);
    }
    template <typename F>
    void take_all(F&& f) {
      for (std::size_t i = head_; i < ev_.size(); ++i) f(std::move(ev_[i]));
      ev_.clear();
      head_ = unsorted_ = 0;
    }
    // Storage, traded by CalendarQueue::grow() and shrink().
    std::size_t capacity() const { return ev_.capacity(); }
    bool full() const { return ev_.size() == ev_.capacity(); }
    std::vector<Event<Payload>> release() { return std::exchange(ev_, {}); }     // when empty
    void adopt(std::vector<Event<Payload>>&& empty) { ev_ = std::move(empty); }  // when empty
    void move_to(std::vector<Event<Payload>>& bigger) {
      bigger.assign(std::make_move_iterator(ev_.begin() + static_cast<std::ptrdiff_t>(head_)),
                    std::make_move_iterator(ev_.end()));
      head_ = 0;
      ev_.swap(bigger);
      bigger.clear();
    }

   private:
    std::vector<Event<Payload>> ev_;
    std::size_t head_ = 0;
    std::size_t unsorted_ = 0;  // the last ones, waiting for settle(); those before are sorted
  };

 public:
  CalendarQueue() { rebuild(2, 1000); }

  void push(Time t, Payload p) { push(Event<Payload>{t, next_seq_++, std::move(p)}); }
  // An event numbered by the caller (LaneQueue numbers events across its lanes and this
  // calendar): ties leave in `seq` order.
  void push(Event<Payload> e) {
    const Time t = e.time;
    if (t < now_) throw std::logic_error("event scheduled in the past");
    // The walk may stand past now (after a resize or a top() that looked ahead): an event
    // before the current day would be missed for a whole year, so rewind to its day.
    if (t.ps() < day_end_ - width_) go_to_day_of(t.ps());
    // The earliest event found by top() stays the earliest unless this one comes before
    // it (LaneQueue reads the top before every push: a burst of ties pushed between
    // reads must not be merged into its bucket one at a time).
    if (found_ != kNotFound && e.before(buckets_[found_].front())) found_ = kNotFound;
    const std::size_t moved = insert(std::move(e));
    moves_ += moved;
    if (++size_ > 2 * n_) {
      resize(2 * n_);
    } else if (moved > 0 && crowded()) [[unlikely]] {
      reestimate();
    }
  }

  Event<Payload> pop() {
    const std::size_t b = found_ != kNotFound ? found_ : find_min_bucket();
    found_ = kNotFound;
    Event<Payload> out = buckets_[b].pop_front();
    if (buckets_[b].empty() && buckets_[b].capacity() > kKeep) shrink(buckets_[b]);
    now_ = out.time;
    // The population can stay level while the spacing of events changes (a network
    // filling up): re-estimate the width when pops walk many empty days, or when the days
    // are crowded (pushes and the walk's merges check that as they move events; this
    // catches the rest).
    if (--size_ < n_ / 2 && n_ > 2) {
      resize(n_ / 2);
    } else if (++pops_ == kCheckEvery) {
      if (walked_ > 4 * kCheckEvery) resize(n_);
      else if (crowded()) reestimate();
      pops_ = walked_ = 0;
      checked_moves_ = moves_;
    }
    return out;
  }
  // The earliest event; until the queue changes, neither top() nor pop() searches again.
  const Event<Payload>& top() {
    if (found_ == kNotFound) found_ = find_min_bucket();
    return buckets_[found_].front();
  }
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  // Events moved up to make room for earlier ones in their bucket (pushed, or merged in
  // by a settle), in all: a measure of crowding, for tests and benchmarks.
  std::uint64_t moves() const { return moves_; }

 private:
  std::size_t insert(Event<Payload> e) {
    Bucket& bucket = buckets_[index(e.time)];
    if (bucket.full() && bucket.capacity() >= kKeep) [[unlikely]]
      grow(bucket);
    return bucket.insert(std::move(e));
  }
  // Bursts of ties come to one bucket, then another, as the days go by. Were each bucket
  // to keep the storage of its largest burst, the calendar would hold the sum of those
  // bursts (a network of 8192 hosts: 24 MB for a population of 15 000 events); instead a
  // bucket keeps at most kKeep events' storage once empty, and larger vectors go round
  // the buckets through a pool of spares, so that no push allocates once warm.
  void grow(Bucket& bucket) {
    if (spares_.empty()) return;  // the vector grows itself
    std::vector<Event<Payload>> bigger = std::move(spares_.back());
    spares_.pop_back();
    if (bigger.capacity() <= bucket.capacity()) return;  // too small to serve: freed, and the vector grows itself
    bucket.move_to(bigger);
    // `bigger` now holds the bucket's former vector
    (bigger.capacity() > kKeep ? spares_ : smalls_).push_back(std::move(bigger));
  }
  // An empty bucket holding a large vector trades it for a small one (made new only while
  // warming up: a bucket that took a spare left a small one behind).
  void shrink(Bucket& bucket) {
    spares_.push_back(bucket.release());
    if (smalls_.empty()) {
      std::vector<Event<Payload>> small;
      small.reserve(kKeep);
      bucket.adopt(std::move(small));
    } else {
      bucket.adopt(std::move(smalls_.back()));
      smalls_.pop_back();
    }
  }

  std::size_t index(Time t) const { return index(t.ps()); }
  std::size_t index(std::int64_t ps) const {
    return static_cast<std::size_t>((ps / width_) & static_cast<std::int64_t>(n_ - 1));
  }

  void go_to_day_of(std::int64_t t) {
    cur_ = index(t);
    const std::int64_t start = t - t % width_;
    day_end_ = start > kLast - width_ ? kLast : start + width_;  // times up to Time::max()
  }
  void next_day() {
    cur_ = (cur_ + 1) & (n_ - 1);
    if (__builtin_add_overflow(day_end_, width_, &day_end_)) day_end_ = kLast;
  }
  // A width too wide for the events' spacing crowds the days, and events pushed or merged
  // into them move many others up. When the moves since the last check outnumber the
  // events by crowd_budget_ (so that the re-estimate, linear in the events, at most
  // doubles what the crowding cost), the width is re-estimated; the events are spread
  // anew only if it changed by more than half or double. Ties numbered out of order
  // crowd a day whatever its width (32 768 hosts: 2 549 re-estimates in 10 us, none of
  // which changed it, 15 % of the run): each re-estimate that changes nothing doubles
  // the budget for the next.
  bool crowded() const { return moves_ - checked_moves_ > crowd_budget_ + size_; }
  void reestimate() {
    checked_moves_ = moves_;
    times_.clear();
    for (std::size_t b = 0; b < n_; ++b)
      buckets_[b].for_each([&](const Event<Payload>& e) { times_.push_back(e.time.ps()); });
    const std::int64_t w = estimate_width();
    if (w >= width_ / 2 && w <= 2 * width_) {
      crowd_budget_ = std::min(2 * crowd_budget_, kMostCrowdBudget);
      return;
    }
    crowd_budget_ = kCrowdBudget;
    resize(n_, w);
  }
  void settle(Bucket& bucket) { moves_ += bucket.settle(merge_); }

  // The bucket holding the earliest event: walk the calendar from the current day; an
  // event belongs to today only if it falls before today's end (else it is in a later
  // year). After a whole year with nothing due, search directly.
  std::size_t find_min_bucket() {
    if (size_ == 0) throw std::logic_error("pop from an empty event queue");
    for (std::size_t step = 0; step < n_; ++step) {
      ++walked_;
      auto& bucket = buckets_[cur_];
      if (!bucket.empty()) {
        if (!bucket.settled()) [[unlikely]] {
          settle(bucket);
          if (crowded()) {
            reestimate();
            return find_min_bucket();
          }
        }
        if (bucket.front().time.ps() < day_end_) return cur_;
      }
      next_day();
    }
    std::size_t best = n_;
    for (std::size_t b = 0; b < n_; ++b) {
      auto& bucket = buckets_[b];
      if (bucket.empty()) continue;
      if (!bucket.settled()) settle(bucket);
      if (best == n_ || bucket.front().before(buckets_[best].front())) best = b;
    }
    go_to_day_of(buckets_[best].front().time.ps());
    return best;
  }

  // Brown's width estimate -- three times the separation of the earliest events -- from
  // the times in times_ (every event's: filled by resize() or reestimate()). Separations are taken over distinct
  // instants: a network simulator schedules bursts at one instant (ports of equal rate finishing frames together), and
  // counting their zero gaps would shrink the width until every pop walked many empty days; a tie costs nothing in a
  // bucket (it is appended), so buckets should hold a few instants, not a few events. And the typical separation is
  // their median, not their mean: a few far events among many near ones (timers every
  // host set for one instant, an event at the end of the run) would otherwise set a width
  // that put the near ones all in one day. (For exponential gaps the median is 0.69 of
  // the mean: 2.1 times the mean, as Brown's mean without the gaps above twice it gives.)
  std::int64_t estimate_width() {  // reorders times_
    if (times_.empty()) return width_;
    // Now and the earliest distinct instants after it, kSample in all: select the earliest
    // m times, sorted, and look further while ties leave too few distinct ones among
    // them. (Now counts: when every event ties -- ports of one rate in lockstep -- the
    // gap from now to them is the only one.)
    std::array<std::int64_t, kSample> first;
    std::size_t k = 0;
    for (std::size_t m = std::min(times_.size(), kSample);; m = std::min(times_.size(), 4 * m)) {
      const auto end = times_.begin() + static_cast<std::ptrdiff_t>(m);
      std::nth_element(times_.begin(), end - 1, times_.end());
      std::sort(times_.begin(), end);
      first[0] = now_.ps();
      k = 1;
      for (std::size_t i = 0; i < m && k < kSample; ++i)
        if (times_[i] != first[k - 1]) first[k++] = times_[i];
      if (k == kSample || m == times_.size()) break;
    }
    if (k < 2) return width_;
    std::array<std::int64_t, kSample - 1> gaps;
    for (std::size_t i = 1; i < k; ++i) gaps[i - 1] = first[i] - first[i - 1];
    const auto median = gaps.begin() + static_cast<std::ptrdiff_t>((k - 2) / 2);  // the lower one
    std::nth_element(gaps.begin(), median, gaps.begin() + static_cast<std::ptrdiff_t>(k - 1));
    constexpr std::int64_t kWidest = kLast / 8;
    return *median > kWidest / 3 ? kWidest : std::max<std::int64_t>(3 * *median, 1);
  }

  // Spreads the events over `n` buckets of a re-estimated width, the year starting with
  // the earliest event's day. The buckets' storage is kept (a bucket beyond `n` waits,
  // empty, for the calendar to grow again), so a queue whose population swings --
  // collectives' steps -- stops allocating once warm.
  void resize(std::size_t n, std::int64_t width = 0) {  // 0: estimate it
    found_ = kNotFound;
    checked_moves_ = moves_;
    spill_.clear();
    for (std::size_t b = 0; b < n_; ++b) {
      buckets_[b].take_all([&](Event<Payload>&& e) { spill_.push_back(std::move(e)); });
      if (buckets_[b].capacity() > kKeep) shrink(buckets_[b]);
    }
    if (buckets_.size() < n) buckets_.resize(n);
    n_ = n;
    if (width == 0) {
      times_.clear();
      for (const auto& e : spill_) times_.push_back(e.time.ps());
      width = estimate_width();
    }
    width_ = width;
    std::int64_t first = now_.ps();
    if (!spill_.empty()) {
      first = spill_.front().time.ps();
      for (const auto& e : spill_) first = std::min(first, e.time.ps());
    }
    go_to_day_of(first);
    for (auto& e : spill_) insert(std::move(e));
    spill_.clear();
  }

  void rebuild(std::size_t n, std::int64_t width) {
    buckets_.assign(n, {});
    n_ = n;
    width_ = width;
    go_to_day_of(now_.ps());
  }

  std::vector<Bucket> buckets_;                      // the first n_ are the calendar's; the rest keep their storage
  std::size_t n_ = 0;                                // a power of two
  std::vector<Event<Payload>> spill_;                // scratch for resize()
  std::vector<Event<Payload>> merge_;                // scratch for Bucket::settle()
  std::vector<std::vector<Event<Payload>>> spares_;  // storage for buckets growing past kKeep
  std::vector<std::vector<Event<Payload>>> smalls_;  // kKeep events' storage, for buckets giving a spare back
  std::vector<std::int64_t> times_;                  // scratch for estimate_width()
  std::int64_t width_ = 1000;                        // ps per bucket
  std::size_t cur_ = 0;
  std::int64_t day_end_ = 0;  // end of the current bucket's day, in ps
  std::size_t size_ = 0;
  std::uint64_t next_seq_ = 0;
  static constexpr std::uint64_t kCheckEvery = 4096;
  static constexpr std::size_t kSample = 64;  // distinct instants in the width estimate
  static constexpr std::size_t kKeep = 32;    // events' storage an empty bucket keeps
  static constexpr std::size_t kNotFound = ~std::size_t{0};
  static constexpr std::int64_t kLast = Time::max().ps();
  std::size_t found_ = kNotFound;        // the bucket top() found, until the queue changes
  std::uint64_t pops_ = 0, walked_ = 0;  // since the last check of the width
  std::uint64_t moves_ = 0;              // in all (moves())
  std::uint64_t checked_moves_ = 0;      // moves_ at the last check
  static constexpr std::uint64_t kCrowdBudget = 8 * kCheckEvery, kMostCrowdBudget = std::uint64_t{1} << 40;
  std::uint64_t crowd_budget_ = kCrowdBudget;
  Time now_;
};

// A calendar queue behind a few FIFO lanes, one per recurring delay. A network simulator
// schedules most events a fixed delay after now -- a frame's serialization time at one
// rate, a link's propagation delay, a control frame's time -- and since
// now never goes back, the events of one delay come due in the order they were pushed:
// a FIFO holds them, with an O(1) push and pop. pop() takes the earliest of the lanes'
// heads and the calendar's top, by (time, seq), with one sequence across them all, so
// the order is exactly the calendar's alone. Delays without a lane go to the calendar.
//
// A delay seen a second time lately is given a lane when one is empty, preferring the
// least used (a count of pushes, halved every 64k lane pushes so that a delay no longer
// seen gives its lane up); gaps that never repeat (random timers) stay in the calendar.
// A push finds its lane through a direct-mapped memo of the lanes' delays (one compare,
// inline); the earliest events of the non-empty lanes and of the calendar sit in a small
// heap, so a pop reads its source and the next time at the heap's top.
template <typename Payload>
class LaneQueue {
 public:
  static constexpr int kLanes = 8;

  void push(Time t, Payload p) { push(t, next_seq_++, std::move(p)); }
  // An event numbered `seq` by the caller: ties leave in `seq` order. Inline: a delay the
  // memo knows goes straight to its lane -- unless it ties with the lane's last event and
  // is numbered below it (one lane holds its events in order), when it goes to the
  // calendar; the rest is out of line.
  void push(Time t, std::uint64_t seq, Payload p) {
    if (t < now_) [[unlikely]]
      throw std::logic_error("event scheduled in the past");
    const std::int64_t delay = (t - now_).ps();
    const Memo& m = memo_[memo_slot(delay)];
    if (m.delay == delay) [[likely]] {
      to_lane_in_order(m.lane, {t, seq, std::move(p)});
      return;
    }
    push_slow(delay, {t, seq, std::move(p)});
  }

  // For events that arrive in batches mostly in order (the frames handed from one
  // partition of a parallel run to another, one window at a time): while the event is
  // no earlier than the last one pushed here, it joins a lane of its own, whatever its
  // delay; otherwise it is pushed as usual. Order is as with push().
  void push_in_order(Time t, std::uint64_t seq, Payload p) {
    if (t < now_) [[unlikely]]
      throw std::logic_error("event scheduled in the past");
    Lane& lane = lanes_[kOrdered];
    if (!lane.empty() && earlier(t, seq, lane.back().time, lane.back().seq)) {
      push(t, seq, std::move(p));
      return;
    }
    to_lane(kOrdered, {t, seq, std::move(p)});
  }
  void push_in_order(Time t, Payload p) { push_in_order(t, next_seq_++, std::move(p)); }

  LaneQueue() = default;
  // A lane points into its own storage: not copyable.
  LaneQueue(const LaneQueue&) = delete;
  LaneQueue& operator=(const LaneQueue&) = delete;

  // The earliest event, and its time alone (read from the heads, without touching the
  // event itself).
  const Event<Payload>& top() {
    if (size_ == 0) throw std::logic_error("top of an empty event queue");
    const int k = heads_.top().source;
    return k == kCalendar ? calendar_.top() : lanes_[k].front();
  }
  Time next_time() const {
    if (size_ == 0) throw std::logic_error("top of an empty event queue");
    return heads_.top().time;
  }

  Event<Payload> pop() {
    if (size_ == 0) throw std::logic_error("pop from an empty event queue");
    --size_;
    const int k = heads_.top().source;
    Event<Payload> e;
    if (k == kCalendar) [[unlikely]] {
      e = calendar_.pop();
      if (calendar_.empty()) {
        heads_.pop();
      } else {
        const auto& next = calendar_.top();
        heads_.replace_top(next.time, next.seq);
      }
    } else {
      Lane& lane = lanes_[k];
      e = lane.pop();
      if (lane.empty()) heads_.pop();
      else heads_.replace_top(lane.front().time, lane.front().seq);
    }
    now_ = e.time;
    return e;
  }

  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  // Pushes that went to a lane and to the calendar (for benchmarks and tuning).
  std::uint64_t lane_pushes() const { return lane_pushes_; }
  std::uint64_t calendar_pushes() const { return calendar_pushes_; }
  // Of those, events a lane would have taken but for their number (a tie numbered below
  // the lane's last event).
  std::uint64_t tie_detours() const { return tie_detours_; }

 private:
  // A FIFO ring of events, doubling when full (Payload must be default-constructible;
  // popped slots keep moved-from payloads until overwritten).
  class Lane {
   public:
    bool empty() const { return count_ == 0; }
    const Event<Payload>& front() const { return ring_[head_]; }
    const Event<Payload>& back() const { return ring_[(head_ + count_ - 1) & mask_]; }
    Event<Payload> pop() {
      Event<Payload> e = std::move(ring_[head_]);
      head_ = (head_ + 1) & mask_;
      --count_;
      return e;
    }
    void push(Event<Payload> e) {
      if (count_ == store_.size()) grow();
      ring_[(head_ + count_) & mask_] = std::move(e);
      ++count_;
    }

   private:
    void grow() {
      std::vector<Event<Payload>> bigger(store_.empty() ? 16 : 2 * store_.size());
      for (std::size_t i = 0; i < count_; ++i) bigger[i] = std::move(ring_[(head_ + i) & mask_]);
      store_.swap(bigger);
      ring_ = store_.data();
      mask_ = store_.size() - 1;
      head_ = 0;
    }
    Event<Payload>* ring_ = nullptr;
    std::size_t head_ = 0, count_ = 0, mask_ = 0;
    std::vector<Event<Payload>> store_;  // size is 0 or a power of two
  };

  // The earliest event of each non-empty source -- a lane, or the calendar -- in a binary
  // min-heap by (time, seq): a pop finds its source, and the next time, at the top.
  class Heads {
   public:
    struct Head {
      Time time;
      std::uint64_t seq;
      int source;
      bool before(const Head& o) const { return earlier(time, seq, o.time, o.seq); }
    };
    bool empty() const { return n_ == 0; }
    const Head& top() const { return h_[0]; }
    void insert(Head x) {
      int i = n_++;
      while (i > 0 && x.before(h_[(i - 1) / 2])) {
        h_[i] = h_[(i - 1) / 2];
        i = (i - 1) / 2;
      }
      h_[i] = x;
    }
    void pop() { sift_down(h_[--n_]); }
    void replace_top(Time t, std::uint64_t seq) { sift_down({t, seq, h_[0].source}); }
    // `source`'s head became earlier (an event pushed before the calendar's earliest).
    void decrease(int source, Time t, std::uint64_t seq) {
      int i = 0;
      while (h_[i].source != source) ++i;
      const Head x{t, seq, source};
      while (i > 0 && x.before(h_[(i - 1) / 2])) {
        h_[i] = h_[(i - 1) / 2];
        i = (i - 1) / 2;
      }
      h_[i] = x;
    }

   private:
    void sift_down(Head x) {
      int i = 0;
      while (true) {
        int c = 2 * i + 1;
        if (c >= n_) break;
        if (c + 1 < n_ && h_[c + 1].before(h_[c])) ++c;
        if (!h_[c].before(x)) break;
        h_[i] = h_[c];
        i = c;
      }
      h_[i] = x;
    }
    std::array<Head, kLanes + 2> h_{};
    int n_ = 0;
  };

  static constexpr std::int64_t kNoDelay = -1;
  static constexpr int kOrdered = kLanes;       // push_in_order's lane, after the delays' lanes
  static constexpr int kCalendar = kLanes + 1;  // the calendar's source number in the heads

  // A direct-mapped memo of the lanes' delays, so that a push finds its lane with one
  // compare. It always agrees with delay_: a lane's entry is cleared when the lane is
  // given to another delay.
  struct Memo {
    std::int64_t delay = kNoDelay;
    int lane = 0;
  };
  static constexpr int kMemoSlots = 32;
  static std::size_t memo_slot(std::int64_t delay) {
    return static_cast<std::uint64_t>(delay) * 0x9e3779b97f4a7c15ull >> 59;
  }

  // To lane k if the event is no earlier than its last, else to the calendar.
  void to_lane_in_order(int k, Event<Payload> e) {
    const Lane& lane = lanes_[k];
    if (!lane.empty() && e.before(lane.back())) [[unlikely]] {
      ++tie_detours_;
      to_calendar(std::move(e));
      return;
    }
    to_lane(k, std::move(e));
  }

  void to_lane(int k, Event<Payload> e) {
    ++size_;
    ++uses_[k];
    if ((++lane_pushes_ & 0xffff) == 0)
      for (auto& u : uses_) u /= 2;
    if (lanes_[k].empty()) heads_.insert({e.time, e.seq, k});
    lanes_[k].push(std::move(e));
  }

  // A delay the memo does not know: a lane whose memo entry a colliding delay took, a new
  // lane, or the calendar.
  [[gnu::noinline]] void push_slow(std::int64_t delay, Event<Payload> e) {
    int k = 0;
    while (k < kLanes && delay_[k] != delay) ++k;
    if (k == kLanes) {
      // A delay seen once is likely never seen again (a timer's random gap): only one
      // seen again recently gets a lane, the empty one least used.
      std::int64_t& seen = recent_[static_cast<std::uint64_t>(delay) * 0x9e3779b97f4a7c15ull >> 58];
      k = -1;
      if (seen == delay) {
        for (int j = 0; j < kLanes; ++j)
          if (lanes_[j].empty() && (k < 0 || uses_[j] < uses_[k])) k = j;
      } else {
        seen = delay;
      }
      if (k < 0) {
        to_calendar(std::move(e));
        return;
      }
      if (delay_[k] != kNoDelay) memo_[memo_slot(delay_[k])] = {};  // the lane's old delay
      delay_[k] = delay;
      uses_[k] = 0;
    }
    memo_[memo_slot(delay)] = {delay, k};
    to_lane_in_order(k, std::move(e));
  }

  void to_calendar(Event<Payload> e) {
    ++calendar_pushes_;
    ++size_;
    const Time t = e.time;
    const std::uint64_t seq = e.seq;
    if (calendar_.empty()) {
      calendar_.push(std::move(e));
      heads_.insert({t, seq, kCalendar});
      return;
    }
    const auto& first = calendar_.top();
    const bool earliest = earlier(t, seq, first.time, first.seq);
    calendar_.push(std::move(e));
    if (earliest) heads_.decrease(kCalendar, t, seq);
  }

  CalendarQueue<Payload> calendar_;
  std::array<Lane, kLanes + 1> lanes_;
  Heads heads_;
  std::array<std::int64_t, kLanes> delay_ = filled_delays();
  std::array<std::uint32_t, kLanes + 1> uses_{};  // the ordered lane's is never read
  std::array<Memo, kMemoSlots> memo_{};
  std::array<std::int64_t, 64> recent_ = {};  // delays lately sent to the calendar, by hash
  std::size_t size_ = 0;
  std::uint64_t next_seq_ = 0, lane_pushes_ = 0, calendar_pushes_ = 0, tie_detours_ = 0;
  Time now_;

  static std::array<std::int64_t, kLanes> filled_delays() {
    std::array<std::int64_t, kLanes> a;
    a.fill(kNoDelay);
    return a;
  }
};

// The simulator's pending-event set, by bench/event_queue_benchmark and bench/fabric_scale
// (2-core Debian 12 machine, per pop+push, medians of 3, 2026-12-03). Lockstep (ties, as
// ports of equal rate produce): lanes 15 ns versus calendar 25 / 25 / 25 ns and 4-ary
// heap 24 / 47 / 58 ns at 100 / 1k / 10k. Hold model (exponential 1 us gaps, none
// repeating, so all in the calendar behind the lane lookup): lanes 71 / 86 / 199 / 460 ns
// versus calendar 62 / 74 / 177 / 442 ns and heap 75 / 101 / 141 / 283 ns at 1k / 10k /
// 100k / 1M. The fabric's events are mostly of a few delays: fat_tree_128 over 3 ms runs
// 10-12 % faster on lanes than on the calendar alone, leaf_spine_1024 5-7 % faster with
// half the memory. Re-run both before changing this.
template <typename Payload>
using PendingEvents = LaneQueue<Payload>;

}  // namespace fabriclab
