// Reordering metrics of one receiver's arrival sequence (RFC 4737, RFC 5236), named as in
// ../shared/docs/roce-fabric.md section 5. Input: the packets of one QP in arrival order,
// each with its sequence number (PSN) and arrival time. Only the first arrival of a PSN
// counts (a retransmission of a PSN already received is left out); a packet lost and
// retransmitted counts once, when it finally arrives.
//
//   reordered        s < NextExp, NextExp = 1 + the largest PSN seen before it (Type-P-Reordered)
//   ratio            reordered / received
//   extent           of a reordered packet at arrival index i: i - j, j the arrival index of
//                    the earliest packet before it with a larger PSN
//   late time        its arrival time minus that packet's
//   n-reordering     share of received packets reordered with extent >= n
//   displacement     arrival index - PSN, over all received packets (RFC 5236 reorder
//                    density; with PSNs from 0 and nothing lost it is the packet's early
//                    (< 0) or late (> 0) distance)
//   buffer occupancy packets an ideal re-sequencer holds after each arrival (RFC 5236
//                    reorder buffer-occupancy density): it releases PSNs in order; a PSN
//                    that never arrives keeps everything after it held
//
//   std::vector<Arrival> a = {{0, t0}, {1, t1}, {3, t2}, {2, t3}};
//   ReorderMetrics m = reorder_metrics(a);  // m.reordered == 1, m.max_extent == 1
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/units.h"

namespace fabriclab::fabric {

struct Arrival {
  std::uint32_t psn;
  Time at;
};

struct ReorderMetrics {
  std::uint64_t received = 0;    // distinct PSNs
  std::uint64_t duplicates = 0;  // arrivals of a PSN already received
  std::uint64_t reordered = 0;
  std::uint32_t max_extent = 0;
  Time max_late;
  std::vector<std::uint64_t> extent_count;             // [e] = reordered packets of extent e
  std::map<std::int64_t, std::uint64_t> displacement;  // arrival index - PSN -> packets
  std::vector<std::uint64_t> occupancy;                // [k] = arrivals after which k packets were held

  double ratio() const { return received ? static_cast<double>(reordered) / static_cast<double>(received) : 0.0; }
  // Share of received packets reordered with extent >= n (n >= 1).
  double n_reordering(std::uint32_t n) const;
};

ReorderMetrics reorder_metrics(const std::vector<Arrival>& arrivals);

}  // namespace fabriclab::fabric
