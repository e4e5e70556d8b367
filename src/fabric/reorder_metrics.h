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
// ReorderTracker computes them as the packets arrive, in memory that grows with what the
// ideal re-sequencer holds (not with the packets seen): the simulator's reorder recorder
// and `fabriclab analyze` (captures of any length) both use it.
//
//   std::vector<Arrival> a = {{0, t0}, {1, t1}, {3, t2}, {2, t3}};
//   ReorderMetrics m = reorder_metrics(a);  // m.reordered == 1, m.max_extent == 1
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <set>
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

// The metrics of one QP's arrivals, fed in arrival order; sequence numbers count from 0
// (a capture's QP: PSNs unwrapped, relative to the first one seen).
class ReorderTracker {
 public:
  // `max_held`: when the re-sequencer would hold more than this, the PSNs still missing
  // below what it holds are given up as lost (counted in `abandoned`) and it releases what
  // follows them -- what a real receiver's finite reorder window does; with the default
  // nothing is given up, however long a PSN stays missing.
  explicit ReorderTracker(std::uint64_t max_held = std::numeric_limits<std::uint64_t>::max()) : max_held_(max_held) {}
  void add(std::uint64_t seq, Time at);
  const ReorderMetrics& metrics() const { return m_; }
  // PSNs still missing below the highest received (not counting those given up).
  std::uint64_t missing() const;
  // PSNs given up as lost because the re-sequencer was full (see max_held).
  std::uint64_t abandoned() const { return abandoned_; }

 private:
  void release_in_order();

  struct Record {  // an arrival that raised the largest PSN seen
    std::uint64_t seq, index;
    Time at;
  };
  ReorderMetrics m_;
  std::uint64_t max_held_;
  std::uint64_t expected_ = 0;  // every PSN below it was received (or given up)
  std::set<std::uint64_t> held_;
  // Records with a PSN >= expected_, in arrival order (so ascending PSN): the earliest
  // packet before a new one with a larger PSN is the first record above it; records below
  // expected_ can never be that packet again. They are records_[first_record_..]: a vector
  // dropping its front lazily (an empty deque alone takes 576 bytes, and a capture may
  // track half a million QPs).
  std::vector<Record> records_;
  std::size_t first_record_ = 0;
  std::uint64_t highest_ = 0;  // the largest PSN received (once any was)
  std::uint64_t abandoned_ = 0;
};

ReorderMetrics reorder_metrics(const std::vector<Arrival>& arrivals);

}  // namespace fabriclab::fabric
