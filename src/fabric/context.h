// What the fabric's components share: the simulator, the packet pool and the ledger of
// data bytes that lets a run prove conservation (sent = arrived + dropped + in flight).
#pragma once

#include <cstdint>

#include "core/pool.h"
#include "core/simulator.h"
#include "fabric/flows.h"
#include "fabric/packet.h"

namespace fabriclab::fabric {

struct Ledger {
  std::uint64_t data_packets_sent = 0, data_bytes_sent = 0;        // by NICs, incl. retransmissions
  std::uint64_t data_packets_arrived = 0, data_bytes_arrived = 0;  // at NICs, accepted or discarded
  std::uint64_t data_packets_dropped = 0, data_bytes_dropped = 0;  // in switches or on links
  std::uint64_t data_packets_duplicated = 0, data_bytes_duplicated = 0;  // copies made on links
  std::uint64_t lossless_drops = 0;                                // drops on a lossless priority
  std::uint64_t ttl_drops = 0;                                     // TTL ran out (a routing loop)
  std::uint64_t control_packets_sent = 0;                          // ACK, NAK, CNP, PFC
};

struct FabricContext {
  Simulator& sim;
  Pool<Packet>& packets;
  Ledger& ledger;
  std::uint64_t flows_left = 0;  // the run stops when the last flow has been delivered
  FlowEvents* flow_events = nullptr;
};

}  // namespace fabriclab::fabric
