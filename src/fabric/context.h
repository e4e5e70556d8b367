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

  // The partitions of a parallel run keep one ledger each; the run's is their sum.
  Ledger& operator+=(const Ledger& o) {
    data_packets_sent += o.data_packets_sent;
    data_bytes_sent += o.data_bytes_sent;
    data_packets_arrived += o.data_packets_arrived;
    data_bytes_arrived += o.data_bytes_arrived;
    data_packets_dropped += o.data_packets_dropped;
    data_bytes_dropped += o.data_bytes_dropped;
    data_packets_duplicated += o.data_packets_duplicated;
    data_bytes_duplicated += o.data_bytes_duplicated;
    lossless_drops += o.lossless_drops;
    ttl_drops += o.ttl_drops;
    control_packets_sent += o.control_packets_sent;
    return *this;
  }
};

struct FabricContext {
  Simulator& sim;
  Pool<Packet>& packets;
  Ledger& ledger;
  std::uint64_t flows_left = 0;  // the run stops when the last flow has been delivered
  bool stop_at_last_flow = true;  // false in a partition: the network decides at a window's end
  FlowEvents* flow_events = nullptr;
};

}  // namespace fabriclab::fabric
