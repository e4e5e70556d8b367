// PFC deadlock detection: a cycle of switch egress queues, each holding packets and
// paused without a break for at least `persist`, where each waits on the next (queue u
// is paused because the switch downstream holds, in queue v, packets that came in over
// u's link). Found by depth-first search over the paused queues' wait-for graph.
#pragma once

#include <cstdint>
#include <functional>
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

// A candidate of the wait-for graph: an egress queue holding packets, paused without a
// break for `persist`, with the upstream ports (switch node id, port index) its packets
// came in from, in the order of the ingress ports they came over.
struct PausedQueue {
  std::uint32_t sw;  // node id
  std::uint16_t port;
  std::uint8_t prio;
  std::vector<std::pair<std::uint32_t, std::uint16_t>> upstream;
};

// The candidates of switches[i] for every i that `mine(i)` accepts (node ids
// first_switch_id + i), in (switch, port, priority) order.
std::vector<PausedQueue> paused_queues(const std::vector<std::unique_ptr<Switch>>& switches,
                                       std::uint32_t first_switch_id, Time now, Time persist,
                                       const std::function<bool(std::size_t)>& mine);

// The first cycle among the candidates, given in (switch, port, priority) order
// (processes that each collected some put theirs together in that order).
std::optional<DeadlockReport> find_cycle(const std::vector<PausedQueue>& queues,
                                         const std::vector<std::unique_ptr<Switch>>& switches,
                                         std::uint32_t first_switch_id, Time now);

// The first cycle among `switches` (node ids first_switch_id, first_switch_id + 1, ...)
// at `now`, or nothing.
std::optional<DeadlockReport> find_pfc_deadlock(const std::vector<std::unique_ptr<Switch>>& switches,
                                                std::uint32_t first_switch_id, Time now, Time persist);

}  // namespace fabriclab::fabric
