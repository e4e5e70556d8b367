// Statistics the simulator's observers keep: a running summary (count, sum, min, max,
// mean), a histogram with fixed-width bins and quantiles, a time-weighted mean (the
// average of a piecewise-constant signal such as a queue depth, weighted by how long
// each value held), and the nearest-rank percentile of a sample.
//
//   TimeWeighted depth;
//   depth.set(ns(0), 0); depth.set(us(3), 10); ...; depth.mean(us(10));
//   Time p99 = Time::from_ps(nearest_rank(fcts_ps, 0.99));
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/units.h"

namespace fabriclab {

class Summary {
 public:
  void add(double x) {
    ++n_;
    sum_ += x;
    min_ = std::min(min_, x);
    max_ = std::max(max_, x);
  }
  std::int64_t count() const { return n_; }
  double sum() const { return sum_; }
  double mean() const { return n_ ? sum_ / static_cast<double>(n_) : 0.0; }
  double min() const { return n_ ? min_ : 0.0; }
  double max() const { return n_ ? max_ : 0.0; }

 private:
  std::int64_t n_ = 0;
  double sum_ = 0, min_ = std::numeric_limits<double>::infinity(), max_ = -std::numeric_limits<double>::infinity();
};

// Bins [lo + k*width, lo + (k+1)*width) for k < bins, plus underflow and overflow.
class Histogram {
 public:
  Histogram(double lo, double width, std::size_t bins) : lo_(lo), width_(width), counts_(bins + 2, 0) {
    if (!(width > 0) || bins == 0) throw std::invalid_argument("histogram: width > 0 and bins > 0");
  }
  void add(double x) {
    std::size_t k;
    if (x < lo_) k = 0;
    else {
      const double b = (x - lo_) / width_;
      k = b >= static_cast<double>(counts_.size() - 2) ? counts_.size() - 1 : static_cast<std::size_t>(b) + 1;
    }
    ++counts_[k];
    ++n_;
  }
  std::int64_t count() const { return n_; }
  // Count in bin k (0-based, not counting under/overflow).
  std::int64_t bin(std::size_t k) const { return counts_[k + 1]; }
  std::int64_t underflow() const { return counts_.front(); }
  std::int64_t overflow() const { return counts_.back(); }
  // The upper edge of the bin in which the q-quantile falls (q in [0, 1]): an upper
  // bound on the quantile, exact to one bin width.
  double quantile_upper(double q) const {
    if (n_ == 0) return lo_;
    const auto rank = static_cast<std::int64_t>(q * static_cast<double>(n_ - 1)) + 1;
    std::int64_t seen = 0;
    for (std::size_t k = 0; k < counts_.size(); ++k) {
      seen += counts_[k];
      if (seen >= rank) {
        if (k == 0) return lo_;
        if (k == counts_.size() - 1) return std::numeric_limits<double>::infinity();
        return lo_ + static_cast<double>(k) * width_;
      }
    }
    return std::numeric_limits<double>::infinity();
  }

 private:
  double lo_, width_;
  std::vector<std::int64_t> counts_;
  std::int64_t n_ = 0;
};

// The mean over time of a value that changes at discrete instants.
class TimeWeighted {
 public:
  // The value becomes v at time t (t never decreases).
  void set(Time t, double v) {
    if (started_) {
      if (t < last_) throw std::logic_error("TimeWeighted: time went backwards");
      area_ += value_ * static_cast<double>((t - last_).ps());
    } else {
      start_ = t;
      started_ = true;
    }
    last_ = t;
    value_ = v;
  }
  // Mean over [first set, t].
  double mean(Time t) const {
    if (!started_ || t <= start_) return value_;
    const double area = area_ + value_ * static_cast<double>((t - last_).ps());
    return area / static_cast<double>((t - start_).ps());
  }
  double current() const { return value_; }

 private:
  bool started_ = false;
  Time start_, last_;
  double value_ = 0, area_ = 0;
};

// The q-quantile of `v` by nearest rank (q in [0, 1]): the element of rank ceil(q n) in
// sorted order, at least the first; 0 when v is empty. q n is a double: a product that
// lands within 1e-9 above an integer (0.07 x 100 = 7.000000000000001) is taken as that
// integer, so that a decimal q gets its exact rank.
// nearest_rank_sorted takes `v` already in order (several quantiles of one sort).
template <class T>
inline T nearest_rank_sorted(const std::vector<T>& v, double q) {
  if (v.empty()) return T{};
  const double rank = std::ceil(q * static_cast<double>(v.size()) - 1e-9);
  return v[rank < 1 ? 0 : std::min(static_cast<std::size_t>(rank), v.size()) - 1];
}
template <class T>
inline T nearest_rank(std::vector<T> v, double q) {
  std::sort(v.begin(), v.end());
  return nearest_rank_sorted(v, q);
}
// The same for integers, so that a braced list deduces ({30, 10, 20}).
inline std::int64_t nearest_rank(std::vector<std::int64_t> v, double q) {
  return nearest_rank<std::int64_t>(std::move(v), q);
}

}  // namespace fabriclab
