#include "fabric/reorder_metrics.h"

#include <algorithm>
#include <set>
#include <unordered_set>

namespace fabriclab::fabric {

double ReorderMetrics::n_reordering(std::uint32_t n) const {
  if (received == 0) return 0.0;
  std::uint64_t k = 0;
  for (std::size_t e = std::max<std::uint32_t>(n, 1); e < extent_count.size(); ++e) k += extent_count[e];
  return static_cast<double>(k) / static_cast<double>(received);
}

ReorderMetrics reorder_metrics(const std::vector<Arrival>& arrivals) {
  ReorderMetrics m;
  std::unordered_set<std::uint32_t> seen;
  // First arrivals only, with their running maximum PSN: the earliest packet before
  // index i with a larger PSN than s is the first index whose prefix maximum exceeds s.
  std::vector<Arrival> first;
  std::vector<std::uint32_t> prefix_max;
  std::set<std::uint32_t> held;  // the ideal re-sequencer's buffer
  std::uint32_t expected = 0;
  for (const Arrival& a : arrivals) {
    if (!seen.insert(a.psn).second) {
      ++m.duplicates;
      continue;
    }
    const std::size_t i = first.size();
    const bool reordered = !first.empty() && a.psn < prefix_max.back() + 1;  // s < NextExp
    if (reordered) {
      ++m.reordered;
      const auto j = static_cast<std::size_t>(std::upper_bound(prefix_max.begin(), prefix_max.end(), a.psn) -
                                              prefix_max.begin());
      const auto extent = static_cast<std::uint32_t>(i - j);
      if (m.extent_count.size() <= extent) m.extent_count.resize(extent + 1, 0);
      ++m.extent_count[extent];
      m.max_extent = std::max(m.max_extent, extent);
      m.max_late = std::max(m.max_late, a.at - first[j].at);
    }
    ++m.displacement[static_cast<std::int64_t>(i) - static_cast<std::int64_t>(a.psn)];
    first.push_back(a);
    prefix_max.push_back(prefix_max.empty() ? a.psn : std::max(prefix_max.back(), a.psn));

    if (a.psn == expected) {
      ++expected;
      while (!held.empty() && *held.begin() == expected) {
        held.erase(held.begin());
        ++expected;
      }
    } else if (a.psn > expected) {
      held.insert(a.psn);
    }
    if (m.occupancy.size() <= held.size()) m.occupancy.resize(held.size() + 1, 0);
    ++m.occupancy[held.size()];
  }
  m.received = first.size();
  return m;
}

}  // namespace fabriclab::fabric
