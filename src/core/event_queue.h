// Pending-event sets for the simulator, ordered by (time, sequence number): events at
// the same time leave in the order they were scheduled, so identical inputs give
// identical runs. Two designs, benchmarked in bench/event_queue_benchmark.cc:
//
// - QuadHeap: an implicit 4-ary min-heap in one vector (shallower than a binary heap,
//   and a node's four children share a cache line or two).
// - CalendarQueue: Brown's calendar queue (CACM 31(10), 1988): buckets of a fixed time
//   width indexed by time modulo the "year", each kept sorted earliest first (ties and
//   later events append in O(1), an earlier one is placed by binary search and the
//   later ones move up); O(1)
//   expected per operation when the width matches
//   the spacing of distinct instants; resized (and its width re-estimated) as the
//   population doubles or halves, or when pops start walking many empty days.
//
// Both take events only at or after the last one popped (a simulator never schedules
// into the past) and throw std::logic_error otherwise.
//
//   QuadHeap<int> q;
//   q.push(ns(5), 42);
//   auto e = q.pop();   // e.time == ns(5), e.payload == 42
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/units.h"

namespace fabriclab {

template <typename Payload>
struct Event {
  Time time;
  std::uint64_t seq;
  Payload payload;
  bool before(const Event& o) const { return time < o.time || (time == o.time && seq < o.seq); }
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
  // later than everything in its bucket -- the usual case, and every event of a burst
  // at one instant -- is appended in O(1).
  class Bucket {
   public:
    bool empty() const { return head_ == ev_.size(); }
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
    void insert(Event<Payload> e) {
      const auto first = ev_.begin() + static_cast<std::ptrdiff_t>(head_);
      // Usually the event goes at the end or a few places before it: walk back a little,
      // then search (a bucket can hold thousands of ties at a later instant, as many
      // hosts acting in lockstep produce).
      auto it = ev_.end();
      for (int step = 0; step < 8 && it != first && e.before(*(it - 1)); ++step) --it;
      if (it != first && e.before(*(it - 1)))
        it = std::upper_bound(first, it, e, [](const Event<Payload>& a, const Event<Payload>& b) { return a.before(b); });
      ev_.insert(it, std::move(e));
    }
    template <typename F>
    void take_all(F&& f) {
      for (std::size_t i = head_; i < ev_.size(); ++i) f(std::move(ev_[i]));
      ev_.clear();
      head_ = 0;
    }

   private:
    std::vector<Event<Payload>> ev_;
    std::size_t head_ = 0;
  };

 public:
  CalendarQueue() { rebuild(2, 1000); }

  void push(Time t, Payload p) {
    if (t < now_) throw std::logic_error("event scheduled in the past");
    // The walk may stand past now (after a resize or a top() that looked ahead): an event
    // before the current day would be missed for a whole year, so rewind to its day.
    if (t.ps() < day_end_ - width_) {
      cur_ = index(t);
      day_end_ = (t.ps() / width_ + 1) * width_;
    }
    insert({t, next_seq_++, std::move(p)});
    found_ = kNotFound;
    if (++size_ > 2 * buckets_.size()) resize(2 * buckets_.size());
  }

  Event<Payload> pop() {
    const std::size_t b = found_ != kNotFound ? found_ : find_min_bucket();
    found_ = kNotFound;
    Event<Payload> out = buckets_[b].pop_front();
    now_ = out.time;
    if (--size_ < buckets_.size() / 2 && buckets_.size() > 2) {
      resize(buckets_.size() / 2);
    } else if (++pops_ == kCheckEvery) {
      // The population can stay level while the spacing of events changes (a network
      // filling up): when pops walk many empty days, re-estimate the width.
      if (walked_ > 4 * kCheckEvery) resize(buckets_.size());
      pops_ = walked_ = 0;
    }
    return out;
  }
  // The earliest event; a pop() right after it does not search again.
  const Event<Payload>& top() {
    found_ = find_min_bucket();
    return buckets_[found_].front();
  }
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }

 private:
  void insert(Event<Payload> e) { buckets_[index(e.time)].insert(std::move(e)); }

  std::size_t index(Time t) const {
    return static_cast<std::size_t>((t.ps() / width_) & static_cast<std::int64_t>(buckets_.size() - 1));
  }

  // The bucket holding the earliest event: walk the calendar from the current day; an
  // event belongs to today only if it falls before today's end (else it is in a later
  // year). After a whole year with nothing due, search directly.
  std::size_t find_min_bucket() {
    if (size_ == 0) throw std::logic_error("pop from an empty event queue");
    const std::size_t n = buckets_.size();
    for (std::size_t step = 0; step < n; ++step) {
      ++walked_;
      const auto& bucket = buckets_[cur_];
      if (!bucket.empty() && bucket.front().time.ps() < day_end_) return cur_;
      cur_ = (cur_ + 1) & (n - 1);
      day_end_ += width_;
    }
    std::size_t best = n;
    for (std::size_t b = 0; b < n; ++b)
      if (!buckets_[b].empty() && (best == n || buckets_[b].front().before(buckets_[best].front()))) best = b;
    const std::int64_t t = buckets_[best].front().time.ps();
    cur_ = best;
    day_end_ = (t / width_ + 1) * width_;
    return best;
  }

  // Brown's width estimate, three times the mean separation of the earliest events,
  // taken over distinct instants: a network simulator schedules bursts at one instant
  // (ports of equal rate finishing frames together), and counting their zero gaps would
  // shrink the width until every pop walked many empty days. A tie costs nothing in a
  // bucket (it is appended), so buckets should hold a few instants, not a few events.
  std::int64_t estimate_width() {
    const std::size_t sample = size_ < 64 ? size_ : 64;
    if (sample < 2) return width_;
    std::vector<Event<Payload>> taken;
    taken.reserve(sample);
    std::size_t distinct = 0;
    for (std::size_t k = 0; k < sample; ++k) {
      const std::size_t b = find_min_bucket();
      taken.push_back(buckets_[b].pop_front());
      --size_;
      if (k == 0 || taken[k].time != taken[k - 1].time) ++distinct;
    }
    size_ += taken.size();
    const std::int64_t span = taken.back().time.ps() - taken.front().time.ps();
    for (auto& e : taken) insert(std::move(e));
    if (distinct < 2) return width_;
    const std::int64_t w = 3 * span / static_cast<std::int64_t>(distinct - 1);
    return w > 0 ? w : 1;
  }

  void resize(std::size_t n) {
    found_ = kNotFound;
    const std::int64_t w = estimate_width();
    std::vector<Bucket> old;
    old.swap(buckets_);
    rebuild(n, w);
    for (auto& b : old) b.take_all([&](Event<Payload>&& e) { insert(std::move(e)); });
    // Restart the walk at the earliest event.
    std::size_t best = buckets_.size();
    for (std::size_t b = 0; b < buckets_.size(); ++b)
      if (!buckets_[b].empty() && (best == buckets_.size() || buckets_[b].front().before(buckets_[best].front()))) best = b;
    if (best < buckets_.size()) {
      cur_ = best;
      day_end_ = (buckets_[best].front().time.ps() / width_ + 1) * width_;
    }
  }

  void rebuild(std::size_t n, std::int64_t width) {
    buckets_.assign(n, {});
    width_ = width;
    cur_ = index(now_);
    day_end_ = (now_.ps() / width_ + 1) * width_;
  }

  std::vector<Bucket> buckets_;  // size is a power of two
  std::int64_t width_ = 1000;                          // ps per bucket
  std::size_t cur_ = 0;
  std::int64_t day_end_ = 0;  // end of the current bucket's day, in ps
  std::size_t size_ = 0;
  std::uint64_t next_seq_ = 0;
  static constexpr std::uint64_t kCheckEvery = 4096;
  static constexpr std::size_t kNotFound = ~std::size_t{0};
  std::size_t found_ = kNotFound;  // the bucket top() found, until the queue changes
  std::uint64_t pops_ = 0, walked_ = 0;  // since the last check of the width
  Time now_;
};

// The simulator's pending-event set: the faster design in bench/event_queue_benchmark
// (2-core Debian 12 machine, per pop+push). Hold model, exponential 1 us gaps: calendar
// 78 / 86 / 140 / 329 ns versus 4-ary heap 120 / 148 / 173 / 490 ns at 1k / 10k / 100k /
// 1M pending events. Lockstep (ties, as ports of equal rate produce): calendar 14 / 13 /
// 28 ns versus heap 60 / 73 / 83 ns at 100 / 1k / 10k. Re-run it before changing this.
template <typename Payload>
using PendingEvents = CalendarQueue<Payload>;

}  // namespace fabriclab
