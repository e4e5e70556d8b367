// Typed object pools: the simulator's per-packet objects come from here, so that the
// steady state allocates nothing. Storage grows in blocks and is never returned while
// the pool lives; released slots are reused last-in first-out (warm in cache).
// check_no_leaks() at shutdown throws, naming the type and the count, when objects were
// acquired and never released; the destructor reports a leak on stderr as well.
//
//   Pool<Packet> packets("Packet");
//   Packet* p = packets.acquire(args...);
//   packets.release(p);
//   packets.check_no_leaks();
#pragma once

#include <algorithm>
#include <cstdio>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fabriclab {

template <typename T>
class Pool {
 public:
  explicit Pool(std::string name, std::size_t block = 1024) : name_(std::move(name)), block_(block) {}
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool() {
    if (live_ != 0)
      std::fprintf(stderr, "fabriclab: pool of %s destroyed with %zu object(s) never released\n",
                   name_.c_str(), live_);
    for (T* b : blocks_) std::allocator<T>().deallocate(b, block_);
  }

  template <typename... Args>
  T* acquire(Args&&... args) {
    if (free_.empty()) grow();
    T* slot = free_.back();
    free_.pop_back();
    new (slot) T(std::forward<Args>(args)...);
    if (++live_ > peak_) peak_ = live_;
    return slot;
  }

  void release(T* p) {
    p->~T();
    free_.push_back(p);
    --live_;
  }

  std::size_t live() const { return live_; }
  std::size_t peak() const { return peak_; }
  std::size_t capacity() const { return blocks_.size() * block_; }

  void check_no_leaks() const {
    if (live_ != 0)
      throw std::logic_error("pool of " + name_ + ": " + std::to_string(live_) +
                             " object(s) acquired and never released");
  }

 private:
  void grow() {
    T* b = std::allocator<T>().allocate(block_);
    blocks_.push_back(b);
    // The free list can come to hold every slot: it grows with the capacity, doubling
    // (reserving the exact capacity at every block copied it each time: the second half
    // of fat_tree_128's run, as its queues filled, allocated 38.6 MB instead of 8.5).
    if (free_.capacity() < capacity()) free_.reserve(std::max(capacity(), 2 * free_.capacity()));
    for (std::size_t i = block_; i-- > 0;) free_.push_back(b + i);
  }

  std::string name_;
  std::size_t block_;
  std::vector<T*> blocks_;
  std::vector<T*> free_;
  std::size_t live_ = 0, peak_ = 0;
};

}  // namespace fabriclab
