// A set of positions in [0, n) for the offload analyses' ancestor and descendant sets:
// sorted disjoint runs while they are few, a bitset once the runs would take more room
// than n bits. An operation of a chain has one run of ancestors and one of descendants,
// so a rank of 100 000 chained operations needs a few MB instead of the 2.5 GB of two
// bitsets per operation; a tangled graph costs what the bitsets cost.
//
//   fabriclab::IndexSet s(100);
//   s.push_back(3); s.push_back(4); s.push_back(9);  // runs [3, 5) and [9, 10)
//   s.count_range(0, 5);  // 2
#pragma once

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "core/bitset.h"

namespace fabriclab {

class IndexSet {
 public:
  struct Run {
    std::uint32_t lo, hi;  // [lo, hi)
  };

  IndexSet() = default;
  explicit IndexSet(std::size_t n) : n_(n) {
    if (n > std::numeric_limits<std::uint32_t>::max()) throw std::length_error("IndexSet: universe beyond 2^32");
  }

  bool dense() const { return dense_; }
  const DynBitset& bits() const { return bits_; }         // dense only
  const std::vector<Run>& runs() const { return runs_; }  // sparse only

  bool test(std::size_t x) const {
    if (dense_) return bits_.test(x);
    const auto it = first_run_ending_after(x);  // the only run that can hold x
    return it != runs_.end() && it->lo <= x;
  }

  std::size_t count() const { return count_range(0, n_); }

  // |this ∩ [lo, hi)|
  std::size_t count_range(std::size_t lo, std::size_t hi) const {
    if (lo >= hi) return 0;
    if (dense_) return bits_.count_range(lo, hi);
    std::size_t c = 0;
    for (auto it = first_run_ending_after(lo); it != runs_.end() && it->lo < hi; ++it)
      c += std::min<std::size_t>(it->hi, hi) - std::max<std::size_t>(it->lo, lo);
    return c;
  }

  // Adds x, which must be larger than every member (building in increasing order).
  void push_back(std::size_t x) { push_back_run(x, x + 1); }
  // Adds [lo, hi), which must start at or after the end of every member.
  void push_back_run(std::size_t lo, std::size_t hi) {
    if (lo >= hi) return;
    assert(hi <= n_ && (dense_ || runs_.empty() || runs_.back().hi <= lo));
    if (dense_) return bits_.set_range(lo, hi);
    if (!runs_.empty() && runs_.back().hi == lo) {
      runs_.back().hi = static_cast<std::uint32_t>(hi);
      return;
    }
    runs_.push_back({static_cast<std::uint32_t>(lo), static_cast<std::uint32_t>(hi)});
    if (runs_.size() > max_runs()) densify();
  }

  // Frees room that appends reserved beyond the runs.
  void shrink_to_fit() { runs_.shrink_to_fit(); }

  // Adds x anywhere: joins the runs it touches, in place.
  void insert(std::size_t x) {
    if (dense_) return bits_.set(x);
    const auto i = static_cast<std::size_t>(first_run_ending_after(x) - runs_.cbegin());
    if (i < runs_.size() && runs_[i].lo <= x) return;  // a member
    const bool after_prev = i > 0 && runs_[i - 1].hi == x, before_next = i < runs_.size() && runs_[i].lo == x + 1;
    const auto x32 = static_cast<std::uint32_t>(x);
    if (after_prev && before_next) {
      runs_[i - 1].hi = runs_[i].hi;
      runs_.erase(runs_.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (after_prev) {
      runs_[i - 1].hi = x32 + 1;
    } else if (before_next) {
      runs_[i].lo = x32;
    } else {
      runs_.insert(runs_.begin() + static_cast<std::ptrdiff_t>(i), Run{x32, x32 + 1});
      if (runs_.size() > max_runs()) densify();
    }
  }

  // this ∪= o (same universe).
  void unite(const IndexSet& o) {
    if (o.dense_ && !dense_) densify();
    if (dense_) {
      if (o.dense_) bits_ |= o.bits_;
      else
        for (const Run& r : o.runs_) bits_.set_range(r.lo, r.hi);
      return;
    }
    if (o.runs_.empty()) return;
    if (runs_.empty()) {
      runs_ = o.runs_;
      return;
    }
    // Two passes: the merged size first, so that the runs take no more room than they
    // need (sets outlive their construction by far).
    const auto merge = [&](auto&& emit) {
      auto a = runs_.cbegin(), b = o.runs_.cbegin();
      Run cur{0, 0};
      bool open = false;
      while (a != runs_.cend() || b != o.runs_.cend()) {
        const bool take_a = b == o.runs_.cend() || (a != runs_.cend() && a->lo <= b->lo);
        const Run r = take_a ? *a++ : *b++;
        if (open && r.lo <= cur.hi) {
          cur.hi = std::max(cur.hi, r.hi);
          continue;
        }
        if (open) emit(cur);
        cur = r;
        open = true;
      }
      emit(cur);
    };
    std::size_t count = 0;
    merge([&](const Run&) { ++count; });
    if (count > max_runs()) {
      densify();
      for (const Run& r : o.runs_) bits_.set_range(r.lo, r.hi);
      return;
    }
    std::vector<Run> out;
    out.reserve(count);
    merge([&](const Run& r) { out.push_back(r); });
    runs_ = std::move(out);
  }

  // f(lo, hi) for the maximal runs of members, in increasing order.
  template <typename F>
  void for_each_run(F&& f) const {
    if (!dense_) {
      for (const Run& r : runs_) f(std::size_t{r.lo}, std::size_t{r.hi});
      return;
    }
    std::size_t lo = 0, hi = 0;
    bits_.for_each([&](std::size_t x) {
      if (x != hi) {
        if (hi > lo) f(lo, hi);
        lo = x;
      }
      hi = x + 1;
    });
    if (hi > lo) f(lo, hi);
  }

  template <typename F>
  void for_each(F&& f) const {
    if (dense_) return bits_.for_each(f);
    for (const Run& r : runs_)
      for (std::size_t x = r.lo; x < r.hi; ++x) f(x);
  }

  DynBitset to_bits() const {
    if (dense_) return bits_;
    DynBitset b(n_);
    for (const Run& r : runs_) b.set_range(r.lo, r.hi);
    return b;
  }

  // The same members, whichever form each side has.
  bool operator==(const IndexSet& o) const {
    if (n_ != o.n_) return false;
    if (!dense_ && !o.dense_)
      return runs_.size() == o.runs_.size() &&
             std::equal(runs_.begin(), runs_.end(), o.runs_.begin(),
                        [](const Run& x, const Run& y) { return x.lo == y.lo && x.hi == y.hi; });
    return to_bits() == o.to_bits();
  }

 private:
  // Beyond this many runs (8 bytes each) a bitset of n bits is smaller.
  std::size_t max_runs() const { return std::max<std::size_t>(8, n_ / 64); }

  std::vector<Run>::const_iterator first_run_ending_after(std::size_t x) const {
    return std::upper_bound(runs_.begin(), runs_.end(), x, [](std::size_t v, const Run& r) { return v < r.hi; });
  }

  void densify() {
    bits_ = to_bits();
    dense_ = true;
    runs_ = {};
  }

  std::size_t n_ = 0;
  bool dense_ = false;
  std::vector<Run> runs_;
  DynBitset bits_;
};

}  // namespace fabriclab
