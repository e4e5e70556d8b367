// Flows and their outcome: what the traffic asked for (src, dst, bytes, start, priority,
// QPs) and what happened (bytes delivered, finish time, retransmissions). Hosts update
// the table as packets arrive; outputs read it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/units.h"

namespace fabriclab::fabric {

struct FlowSpec {
  std::uint32_t src = 0, dst = 0;   // host indices
  std::uint64_t bytes = 0;
  Time start;
  std::uint8_t priority = 3;
  std::uint32_t qps = 1;
};

struct FlowState {
  FlowSpec spec;
  std::uint64_t delivered = 0;      // payload bytes placed at the receiver
  std::uint64_t retransmitted = 0;  // packets sent more than once
  std::uint32_t qps_done = 0;
  Time finish = Time::max();        // when the last byte was placed; max() = unfinished
  bool finished() const { return finish != Time::max(); }
};

using FlowTable = std::vector<FlowState>;

}  // namespace fabriclab::fabric
