// Pending-event sets for the simulator, ordered by (time, sequence number): events at
// the same time leave in the order they were scheduled, so identical inputs give
// identical runs. Two designs, benchmarked in bench/event_queue_benchmark.cc:
//
// - QuadHeap: an implicit 4-ary min-heap in one vector (shallower than a binary heap,
//   and a node's four children share a cache line or two).
// - CalendarQueue: Brown's calendar queue (CACM 31(10), 1988): buckets of a fixed time
//   width indexed by time modulo the "year", each kept sorted; O(1) expected per
//   operation when the width matches the event density; resized (and its width
//   re-estimated) as the population doubles or halves.
//
// Both take events only at or after the last one popped (a simulator never schedules
// into the past) and throw std::logic_error otherwise.
//
//   QuadHeap<int> q;
//   q.push(ns(5), 42);
//   auto e = q.pop();   // e.time == ns(5), e.payload == 42
#pragma once

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
    if (++size_ > 2 * buckets_.size()) resize(2 * buckets_.size());
  }

  Event<Payload> pop() {
    const std::size_t b = find_min_bucket();
    Event<Payload> out = std::move(buckets_[b].back());
    buckets_[b].pop_back();
    now_ = out.time;
    if (--size_ < buckets_.size() / 2 && buckets_.size() > 2) resize(buckets_.size() / 2);
    return out;
  }
  const Event<Payload>& top() { return buckets_[find_min_bucket()].back(); }
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }

 private:
  // Each bucket is sorted with its earliest event last.
  void insert(Event<Payload> e) {
    auto& bucket = buckets_[index(e.time)];
    auto it = bucket.end();
    while (it != bucket.begin() && (it - 1)->before(e)) --it;
    bucket.insert(it, std::move(e));
  }

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
      const auto& bucket = buckets_[cur_];
      if (!bucket.empty() && bucket.back().time.ps() < day_end_) return cur_;
      cur_ = (cur_ + 1) & (n - 1);
      day_end_ += width_;
    }
    std::size_t best = n;
    for (std::size_t b = 0; b < n; ++b)
      if (!buckets_[b].empty() && (best == n || buckets_[b].back().before(buckets_[best].back()))) best = b;
    const std::int64_t t = buckets_[best].back().time.ps();
    cur_ = best;
    day_end_ = (t / width_ + 1) * width_;
    return best;
  }

  // Brown's width estimate: three times the mean gap between the earliest events. A
  // network simulator schedules bursts at identical times (ports of equal rate finishing
  // together): when the earliest sample spans no time at all the sample grows until it
  // does, else a width of 1 ps would make every pop walk a whole empty year.
  std::int64_t estimate_width() {
    std::size_t sample = size_ < 25 ? size_ : 25;
    if (sample < 2) return width_;
    std::vector<Event<Payload>> taken;
    std::int64_t span = 0;
    while (true) {
      while (taken.size() < sample) {
        const std::size_t b = find_min_bucket();
        taken.push_back(std::move(buckets_[b].back()));
        buckets_[b].pop_back();
        --size_;
      }
      span = taken.back().time.ps() - taken.front().time.ps();
      if (span > 0 || sample == size_ + taken.size()) break;
      sample = std::min(2 * sample, size_ + taken.size());
    }
    size_ += taken.size();
    for (auto& e : taken) insert(std::move(e));
    if (span == 0) return width_;
    const std::int64_t w = 3 * span / static_cast<std::int64_t>(sample - 1);
    return w > 0 ? w : 1;
  }

  void resize(std::size_t n) {
    const std::int64_t w = estimate_width();
    std::vector<std::vector<Event<Payload>>> old;
    old.swap(buckets_);
    rebuild(n, w);
    for (auto& b : old)
      for (auto& e : b) insert(std::move(e));
    // Restart the walk at the earliest event.
    std::size_t best = buckets_.size();
    for (std::size_t b = 0; b < buckets_.size(); ++b)
      if (!buckets_[b].empty() && (best == buckets_.size() || buckets_[b].back().before(buckets_[best].back()))) best = b;
    if (best < buckets_.size()) {
      cur_ = best;
      day_end_ = (buckets_[best].back().time.ps() / width_ + 1) * width_;
    }
  }

  void rebuild(std::size_t n, std::int64_t width) {
    buckets_.assign(n, {});
    width_ = width;
    cur_ = index(now_);
    day_end_ = (now_.ps() / width_ + 1) * width_;
  }

  std::vector<std::vector<Event<Payload>>> buckets_;  // size is a power of two
  std::int64_t width_ = 1000;                          // ps per bucket
  std::size_t cur_ = 0;
  std::int64_t day_end_ = 0;  // end of the current bucket's day, in ps
  std::size_t size_ = 0;
  std::uint64_t next_seq_ = 0;
  Time now_;
};

// The simulator's pending-event set: the faster design in bench/event_queue_benchmark
// (hold model, exponential 1 us gaps, 2-core Debian 12 machine): per pop+push, calendar
// 63 / 68 / 109 / 249 ns versus 4-ary heap 137 / 195 / 233 / 353 ns at 1k / 10k / 100k /
// 1M pending events. Re-run the benchmark before changing this.
template <typename Payload>
using PendingEvents = CalendarQueue<Payload>;

}  // namespace fabriclab
