// A FIFO of small values in a ring that doubles when full (oldest first), so that once it
// has held as many as it ever will, pushing and popping allocate nothing.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace fabriclab {

template <typename T>
class GrowingRing {
 public:
  // Room for n values before the first doubling (rounded up to a power of two).
  void reserve(std::size_t n) {
    std::size_t c = 16;
    while (c < n) c *= 2;
    if (c <= ring_.size()) return;
    std::vector<T> bigger(c);
    for (std::size_t k = 0; k < count_; ++k) bigger[k] = ring_[(head_ + k) & (ring_.size() - 1)];
    ring_ = std::move(bigger);
    head_ = 0;
  }
  bool empty() const { return count_ == 0; }
  std::size_t size() const { return count_; }
  const T& front() const { return ring_[head_]; }
  void push_back(const T& v) {
    if (count_ == ring_.size()) reserve(ring_.size() * 2);  // full: double, oldest first
    ring_[(head_ + count_++) & (ring_.size() - 1)] = v;
  }
  T pop_front() {
    const T v = ring_[head_];
    head_ = (head_ + 1) & (ring_.size() - 1);
    --count_;
    return v;
  }

 private:
  std::vector<T> ring_;  // capacity a power of two
  std::size_t head_ = 0, count_ = 0;
};

}  // namespace fabriclab
