#include "fabric/reorder_metrics.h"

#include <algorithm>

namespace fabriclab::fabric {

double ReorderMetrics::n_reordering(std::uint32_t n) const {
  if (received == 0) return 0.0;
  std::uint64_t k = 0;
  for (std::size_t e = std::max<std::uint32_t>(n, 1); e < extent_count.size(); ++e) k += extent_count[e];
  return static_cast<double>(k) / static_cast<double>(received);
}

void ReorderTracker::release_in_order() {
  while (!held_.empty() && *held_.begin() == expected_) {
    held_.erase(held_.begin());
    ++expected_;
  }
  while (first_record_ < records_.size() && records_[first_record_].seq < expected_) ++first_record_;
  if (first_record_ == records_.size()) {
    records_.clear();
    first_record_ = 0;
  } else if (first_record_ >= 64 && first_record_ * 2 >= records_.size()) {  // amortised: half of it is dropped
    records_.erase(records_.begin(), records_.begin() + static_cast<std::ptrdiff_t>(first_record_));
    first_record_ = 0;
  }
}

std::uint64_t ReorderTracker::missing() const { return m_.received ? highest_ + 1 - expected_ - held_.size() : 0; }

void ReorderTracker::add(std::uint64_t seq, Time at) {
  if (seq < expected_ || held_.contains(seq)) {
    ++m_.duplicates;
    return;
  }
  const std::uint64_t i = m_.received++;
  const bool first = i == 0;
  // s < NextExp: the largest PSN seen so far is at least s.
  if (!first && seq < highest_ + 1) {
    ++m_.reordered;
    // The first record above seq exists: the record that set highest_ is above it.
    const auto j = std::upper_bound(records_.begin() + static_cast<std::ptrdiff_t>(first_record_), records_.end(), seq,
                                    [](std::uint64_t s, const Record& r) { return s < r.seq; });
    const auto extent = static_cast<std::uint32_t>(i - j->index);
    if (m_.extent_count.size() <= extent) m_.extent_count.resize(extent + 1, 0);
    ++m_.extent_count[extent];
    m_.max_extent = std::max(m_.max_extent, extent);
    m_.max_late = std::max(m_.max_late, at - j->at);
  }
  ++m_.displacement[static_cast<std::int64_t>(i) - static_cast<std::int64_t>(seq)];
  if (first || seq > highest_) {
    records_.push_back({seq, i, at});
    highest_ = seq;
  }
  if (seq == expected_) {
    ++expected_;
    release_in_order();
  } else {
    held_.insert(seq);
    if (held_.size() > max_held_) {  // give up the PSNs missing below the first one held
      abandoned_ += *held_.begin() - expected_;
      expected_ = *held_.begin();
      release_in_order();
    }
  }
  if (m_.occupancy.size() <= held_.size()) m_.occupancy.resize(held_.size() + 1, 0);
  ++m_.occupancy[held_.size()];
}

ReorderMetrics reorder_metrics(const std::vector<Arrival>& arrivals) {
  ReorderTracker t;
  for (const Arrival& a : arrivals) t.add(a.psn, a.at);
  return t.metrics();
}

}  // namespace fabriclab::fabric
