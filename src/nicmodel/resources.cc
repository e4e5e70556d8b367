#include "nicmodel/resources.h"

#include <fmt/format.h>

#include <bit>
#include <stdexcept>

namespace fabriclab::nicmodel {

NicPool::NicPool(std::int64_t counters, std::int64_t slots) : counters_(counters), slots_(slots) {
  if (counters < 0 || slots < 0) throw std::invalid_argument("NicPool: counters and slots must not be negative");
}

bool NicPool::try_acquire(Time now, std::int64_t counters, std::int64_t slots) {
  if (counters < 0 || slots < 0) throw std::invalid_argument("NicPool::try_acquire: negative request");
  if (counters > counters_ || slots > slots_)
    throw std::invalid_argument(
        fmt::format("NicPool::try_acquire: {} counters and {} slots can never fit a NIC with {} and {}", counters,
                    slots, counters_, slots_));
  if (!fits(counters, slots)) return false;
  counters_used_ += counters;
  slots_used_ += slots;
  counters_peak_ = std::max(counters_peak_, counters_used_);
  counters_tw_.set(now, static_cast<double>(counters_used_));
  slots_tw_.set(now, static_cast<double>(slots_used_));
  return true;
}

void NicPool::release(Time now, std::int64_t counters, std::int64_t slots) {
  if (counters < 0 || slots < 0 || counters > counters_used_ || slots > slots_used_)
    throw std::logic_error(fmt::format("NicPool::release: releasing {} counters and {} slots, but {} and {} are held",
                                       counters, slots, counters_used_, slots_used_));
  counters_used_ -= counters;
  slots_used_ -= slots;
  counters_tw_.set(now, static_cast<double>(counters_used_));
  slots_tw_.set(now, static_cast<double>(slots_used_));
}

CounterCache::CounterCache(std::int32_t entries) {
  if (entries < 1) throw std::invalid_argument("CounterCache: at least one entry");
  nodes_.resize(static_cast<std::size_t>(entries));
  free_.reserve(static_cast<std::size_t>(entries));
  for (std::int32_t i = entries - 1; i >= 0; --i) free_.push_back(i);
  // At most a quarter full: probe chains stay about one slot long.
  const std::size_t slots = std::bit_ceil(static_cast<std::size_t>(entries) * 4);
  table_.assign(slots, kNone);
  shift_ = 64 - std::countr_zero(slots);
}

// Fibonacci hashing: the top bits of key * 2^64 / phi spread packed (job, counter) keys.
std::size_t CounterCache::home(std::uint64_t key) const {
  return static_cast<std::size_t>((key * 0x9e3779b97f4a7c15ull) >> shift_);
}

std::int32_t CounterCache::find(std::uint64_t key) const {
  const std::size_t mask = table_.size() - 1;
  for (std::size_t i = home(key);; i = (i + 1) & mask) {
    const std::int32_t n = table_[i];
    if (n == kNone) return kNone;
    if (nodes_[static_cast<std::size_t>(n)].key == key) return n;
  }
}

void CounterCache::table_insert(std::uint64_t key, std::int32_t n) {
  const std::size_t mask = table_.size() - 1;
  std::size_t i = home(key);
  while (table_[i] != kNone) i = (i + 1) & mask;
  table_[i] = n;
}

void CounterCache::table_erase(std::uint64_t key) {
  const std::size_t mask = table_.size() - 1;
  std::size_t i = home(key);
  while (nodes_[static_cast<std::size_t>(table_[i])].key != key) i = (i + 1) & mask;
  // Backward-shift deletion keeps every probe chain unbroken.
  for (std::size_t j = (i + 1) & mask; table_[j] != kNone; j = (j + 1) & mask) {
    const std::size_t h = home(nodes_[static_cast<std::size_t>(table_[j])].key);
    // Move j into the hole at i when its home is not in (i, j] (cyclically).
    const bool between = i <= j ? (h > i && h <= j) : (h > i || h <= j);
    if (!between) {
      table_[i] = table_[j];
      i = j;
    }
  }
  table_[i] = kNone;
}

void CounterCache::unlink(std::int32_t n) {
  Node& x = nodes_[static_cast<std::size_t>(n)];
  if (x.prev != kNone) nodes_[static_cast<std::size_t>(x.prev)].next = x.next;
  else head_ = x.next;
  if (x.next != kNone) nodes_[static_cast<std::size_t>(x.next)].prev = x.prev;
  else tail_ = x.prev;
  x.prev = x.next = kNone;
}

void CounterCache::push_front(std::int32_t n) {
  Node& x = nodes_[static_cast<std::size_t>(n)];
  x.prev = kNone;
  x.next = head_;
  if (head_ != kNone) nodes_[static_cast<std::size_t>(head_)].prev = n;
  head_ = n;
  if (tail_ == kNone) tail_ = n;
}

bool CounterCache::access(std::uint64_t key) {
  if (const std::int32_t n = find(key); n != kNone) {
    ++hits_;
    if (n != head_) {
      unlink(n);
      push_front(n);
    }
    return true;
  }
  ++misses_;
  std::int32_t n;
  if (!free_.empty()) {
    n = free_.back();
    free_.pop_back();
    ++size_;
  } else {
    n = tail_;  // the least recently used
    table_erase(nodes_[static_cast<std::size_t>(n)].key);
    unlink(n);
    ++evictions_;
  }
  nodes_[static_cast<std::size_t>(n)].key = key;
  table_insert(key, n);
  push_front(n);
  return false;
}

void CounterCache::erase(std::uint64_t key) {
  const std::int32_t n = find(key);
  if (n == kNone) return;
  table_erase(key);
  unlink(n);
  free_.push_back(n);
  --size_;
}

void CounterCache::erase_range(std::uint64_t first, std::uint64_t last) {
  for (std::int32_t n = head_; n != kNone;) {
    const Node& x = nodes_[static_cast<std::size_t>(n)];
    const std::int32_t next = x.next;
    if (x.key >= first && x.key <= last) {
      table_erase(x.key);
      unlink(n);
      free_.push_back(n);
      --size_;
    }
    n = next;
  }
}

}  // namespace fabriclab::nicmodel
