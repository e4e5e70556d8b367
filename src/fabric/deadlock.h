// PFC deadlock detection: a cycle of switch egress queues, each holding packets and
// paused without a break for at least `persist`, where each waits on the next (queue u
// is paused because the switch downstream holds, in queue v, packets that came in over
// u's link). Found by depth-first search over the paused queues' wait-for graph.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/units.h"

namespace fabriclab::fabric {

class Switch;

struct DeadlockReport {
  Time detected_at;
  std::vector<std::string> cycle;  // "sw1 port 2 priority 3", in wait-for order
};

// The first cycle among `switches` (node ids first_switch_id, first_switch_id + 1, ...)
// at `now`, or nothing.
std::optional<DeadlockReport> find_pfc_deadlock(const std::vector<std::unique_ptr<Switch>>& switches,
                                                std::uint32_t first_switch_id, Time now, Time persist);

}  // namespace fabriclab::fabric
