// What the fabric's components share: the simulator, the packet pool and the ledger of
// data bytes that lets a run prove conservation (sent = arrived + dropped + in flight).
#pragma once

#include <array>
#include <cstdint>

#include "core/params.h"
#include "core/pool.h"
#include "core/simulator.h"
#include "fabric/flows.h"
#include "fabric/packet.h"
#include "fabric/telemetry.h"

namespace fabriclab::fabric {

enum class DropReason : std::uint8_t {
  link_loss,     // lost on a link (reorder box)
  corrupted,     // failed the FCS/ICRC at the receiving MAC
  buffer_full,   // a switch's MMU refused it
  watchdog,      // a PFC watchdog in a storm, action drop
  ttl,           // TTL ran out: a routing loop
  nic_rx_full,   // a NIC's receive buffer was full
  misdelivered,  // at a host it was not for (a static route sent it there)
};
inline constexpr std::size_t kDropReasons = 7;
inline constexpr params::EnumNames<DropReason, kDropReasons> kDropReasonNames{{
    {DropReason::link_loss, "link_loss"},
    {DropReason::corrupted, "corrupted"},
    {DropReason::buffer_full, "buffer_full"},
    {DropReason::watchdog, "watchdog"},
    {DropReason::ttl, "ttl"},
    {DropReason::nic_rx_full, "nic_rx_full"},
    {DropReason::misdelivered, "misdelivered"},
}};

struct Ledger {
  std::uint64_t data_packets_sent = 0, data_bytes_sent = 0;              // by NICs, incl. retransmissions
  std::uint64_t data_packets_arrived = 0, data_bytes_arrived = 0;        // at NICs, accepted or discarded
  std::uint64_t data_packets_dropped = 0, data_bytes_dropped = 0;        // in switches or on links
  std::uint64_t data_packets_duplicated = 0, data_bytes_duplicated = 0;  // copies made on links
  std::uint64_t data_packets_trimmed = 0, data_bytes_trimmed = 0;        // cut to their headers in switches
                                                                         // (the payload bytes cut; the
                                                                         // headers go on and arrive)
  std::uint64_t lossless_drops = 0;                                      // drops on a lossless priority
  std::uint64_t control_packets_sent = 0;                                // ACK, NAK, CNP, PFC
  std::array<std::uint64_t, kDropReasons> drops{};                       // every packet dropped, by DropReason

  std::uint64_t dropped(DropReason why) const { return drops[static_cast<std::size_t>(why)]; }

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
    data_packets_trimmed += o.data_packets_trimmed;
    data_bytes_trimmed += o.data_bytes_trimmed;
    lossless_drops += o.lossless_drops;
    control_packets_sent += o.control_packets_sent;
    for (std::size_t i = 0; i < kDropReasons; ++i) drops[i] += o.drops[i];
    return *this;
  }
};

struct FabricContext {
  Simulator& sim;
  Pool<Packet>& packets;
  Ledger& ledger;
  std::uint64_t flows_left = 0;                    // the run stops when the last flow has finished
                                                   // (and the work held here is done: Network::hold_in)
  std::uint64_t work_held = 0, work_released = 0;  // Network::hold_in / release_in
  Time last_done = Time();                         // when flows_left last went down
  bool stop_at_last_flow = true;                   // false in a partition: the network decides at a window's end
  FlowEvents* flow_events = nullptr;
  MessageEvents* message_events = nullptr;  // connections' messages (none: no connections)
  WireFormat wire = {};                     // the frame format every node and port counts
  std::uint64_t seed = 0;                   // the run's seed (the streams of HPCC-PINT's samples)
  Telemetry telemetry = {};                 // the INT stacks of this partition's packets
};

// Returns `p` to the pool, and its INT stack, if any, to the store: every packet leaves
// through here.
inline void release_packet(FabricContext& ctx, Packet* p) {
  if (p->telemetry) [[unlikely]]
    ctx.telemetry.release(p->telemetry);
  ctx.packets.release(p);
}

// A copy of `p` from the pool (a link duplicating a frame), with a copy of its INT stack.
inline Packet* copy_packet(FabricContext& ctx, const Packet& p) {
  Packet* c = ctx.packets.acquire(p);
  c->next = nullptr;
  if (c->telemetry) [[unlikely]]
    c->telemetry = ctx.telemetry.copy(c->telemetry);
  return c;
}

// Counts `p` as dropped for `why` (data packets' bytes too; on a priority in `lossless`,
// a lossless drop, which fails the run) and returns it to the pool.
inline void drop(FabricContext& ctx, Packet* p, DropReason why, std::uint8_t lossless = 0) {
  ++ctx.ledger.drops[static_cast<std::size_t>(why)];
  if (is_data(p->opcode)) {
    ++ctx.ledger.data_packets_dropped;
    ctx.ledger.data_bytes_dropped += p->payload;
  }
  if ((lossless >> p->priority) & 1) ++ctx.ledger.lossless_drops;
  release_packet(ctx, p);
}

}  // namespace fabriclab::fabric
