// NIC resources for the timed NIC model (shared/docs/triggered-ops.md section 6): the pool
// of hardware counters and triggered-operation slots that offloaded collectives hold from
// their start until the host has seen them complete, and the counter cache in front of
// the counters. The event-driven model that uses them comes next; these are its parts.
//
//   NicPool pool(/*counters=*/16, /*slots=*/64);
//   if (pool.try_acquire(now, 6, 12)) { ... pool.release(later, 6, 12); }
//
//   CounterCache cache(8);
//   if (!cache.access(key)) delay += miss_penalty;
#pragma once

#include <cstdint>
#include <vector>

#include "core/stats.h"
#include "core/units.h"

namespace fabriclab::nicmodel {

// Counters and triggered-operation slots of one NIC. Acquiring is all or nothing: a
// collective starts with every counter and slot its assignment uses, or not at all.
// Occupancy over time is kept for the metrics (time-weighted means).
class NicPool {
 public:
  NicPool(std::int64_t counters, std::int64_t slots);

  std::int64_t counters() const { return counters_; }
  std::int64_t slots() const { return slots_; }
  std::int64_t counters_in_use() const { return counters_used_; }
  std::int64_t slots_in_use() const { return slots_used_; }
  bool fits(std::int64_t counters, std::int64_t slots) const {
    return counters_used_ + counters <= counters_ && slots_used_ + slots <= slots_;
  }

  // Takes the resources at time `now` if they are free; false (and nothing taken) if not.
  // Throws std::invalid_argument for a request larger than the whole NIC (it can never
  // fit: the caller must fall back) or a negative one.
  bool try_acquire(Time now, std::int64_t counters, std::int64_t slots);
  // Gives resources back; throws std::logic_error when more is released than is held
  // (an impossible state of the model, reported loudly).
  void release(Time now, std::int64_t counters, std::int64_t slots);

  double mean_counters_in_use(Time now) const { return counters_tw_.mean(now); }
  double mean_slots_in_use(Time now) const { return slots_tw_.mean(now); }
  std::int64_t peak_counters_in_use() const { return counters_peak_; }

 private:
  std::int64_t counters_, slots_;
  std::int64_t counters_used_ = 0, slots_used_ = 0, counters_peak_ = 0;
  TimeWeighted counters_tw_, slots_tw_;
};

// A least-recently-used cache of `entries` counters in front of the NIC's counter memory:
// an operation that touches a counter not in the cache pays a miss (the model adds the
// penalty) and the counter displaces the least recently used entry. Keys name a counter
// of a collective instance (the caller packs them). Fixed storage: no allocation after
// construction.
class CounterCache {
 public:
  explicit CounterCache(std::int32_t entries);

  // Touches `key`; true on a hit. On a miss the key is inserted, evicting the least
  // recently used entry when the cache is full.
  bool access(std::uint64_t key);
  // Drops `key` (its counter was released), freeing its entry; no-op when absent.
  void erase(std::uint64_t key);
  // Drops every key in [first, last] (the counters of one collective instance).
  void erase_range(std::uint64_t first, std::uint64_t last);
  bool contains(std::uint64_t key) const { return find(key) >= 0; }

  std::int32_t entries() const { return static_cast<std::int32_t>(nodes_.size()); }
  std::int32_t size() const { return size_; }
  std::uint64_t hits() const { return hits_; }
  std::uint64_t misses() const { return misses_; }
  std::uint64_t evictions() const { return evictions_; }
  // The counts of this cache's copy in the process that ran its NIC (a run over several).
  void set_counts(std::uint64_t hits, std::uint64_t misses, std::uint64_t evictions) {
    hits_ = hits;
    misses_ = misses;
    evictions_ = evictions;
  }
  double hit_rate() const {
    const auto n = hits_ + misses_;
    return n == 0 ? 0.0 : static_cast<double>(hits_) / static_cast<double>(n);
  }

 private:
  static constexpr std::int32_t kNone = -1;
  struct Node {
    std::uint64_t key = 0;
    std::int32_t prev = kNone, next = kNone;  // recency list, most recent at head_
  };
  std::size_t home(std::uint64_t key) const;
  std::int32_t find(std::uint64_t key) const;
  void unlink(std::int32_t n);
  void push_front(std::int32_t n);
  void table_insert(std::uint64_t key, std::int32_t n);
  void table_erase(std::uint64_t key);

  std::vector<Node> nodes_;
  std::vector<std::int32_t> free_;
  // Open addressing (linear probing, backward-shift deletion) from key to node.
  std::vector<std::int32_t> table_;
  int shift_ = 0;  // 64 - log2(table size)
  std::int32_t head_ = kNone, tail_ = kNone, size_ = 0;
  std::uint64_t hits_ = 0, misses_ = 0, evictions_ = 0;
};

}  // namespace fabriclab::nicmodel
