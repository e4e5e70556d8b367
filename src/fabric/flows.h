// Flows and their outcome: what the traffic asked for (src, dst, bytes, start, priority,
// QPs, the flows it waits for) and what happened (start and finish time, bytes delivered,
// retransmissions). Hosts update the table as packets arrive; outputs read it.
//
// A flow with `after` starts `after_delay` after the last of those flows has finished
// (every byte placed at its receiver, or with nic.flow_end = last_ack_received every QP's
// last packet acknowledged at its sender), but not before `start`: a step of a collective
// that needs the previous step's data, or a compute phase between two transfers.
#pragma once

#include <cstdint>
#include <vector>

#include "core/bytes.h"
#include "core/units.h"

namespace fabriclab::fabric {

struct FlowSpec {
  std::uint32_t src = 0, dst = 0;  // host indices
  std::uint64_t bytes = 0;
  Time start;
  std::uint8_t priority = 3;
  // The flow's label as the HPCC ns-3 model's flow.txt gives it (its "dport": 100 for the
  // traffic generator's flows, another value to tell a class apart), written in fct.txt
  // only; every frame still goes to RoCEv2's UDP port 4791.
  std::uint16_t dport = 100;
  std::uint32_t qps = 1;
  std::vector<std::uint32_t> after = {};  // flows (listed before this one) to wait for
  Time after_delay = {};                  // then wait this long
};

// Flows made on demand (a load's: workload::LoadGenerator), in start order; the network
// takes them shortly before they start (Network::feed_flows).
class FlowSource {
 public:
  virtual ~FlowSource() = default;
  // The next flow; false when there are no more.
  virtual bool next(FlowSpec& out) = 0;
  // About how many it will make (0: unknown): the flow table is sized for them once.
  virtual double expected_flows() const { return 0; }
};

// Line-aligned: a flow's receiver writes `delivered` for every packet, and in a
// partitioned run the flows listed next to it may be received on another thread.
struct alignas(64) FlowState {
  FlowSpec spec;
  std::uint64_t delivered = 0;      // payload bytes placed at the receiver
  std::uint64_t retransmitted = 0;  // packets sent more than once
  std::uint32_t qps_done = 0;
  Time started = Time::max();  // when its QPs began (start, or after its dependences)
  Time finish = Time::max();   // when it finished (nic.flow_end); max() = unfinished
  bool finished() const { return finish != Time::max(); }
};

using FlowTable = std::vector<FlowState>;

// Told when a flow has finished (the network starts the flows waiting on it).
class FlowEvents {
 public:
  virtual ~FlowEvents() = default;
  virtual void flow_finished(std::uint32_t flow) = 0;
};

// Messages on connections (Network::open_connection): RDMA WRITE messages posted one after
// another on one QP during the run, each named by a 32-bit tag that its packets carry
// (simulator metadata, as the sending QP is). Told, at the host where it happens:
//   message_arrived        the message's last byte has been placed at the receiver, in
//                          order (the target NIC can count it);
//   message_completed      the sender knows it is done: the ACK covering its last packet
//                          came back (RC), or its last packet left (UC, which has no ACKs);
//   message_retransmitted  one of its packets was sent again (go-back-N).
// A handler must not post on the calling host from inside these calls; it schedules.
class MessageEvents {
 public:
  virtual ~MessageEvents() = default;
  virtual void message_arrived(std::uint32_t tag) = 0;
  virtual void message_completed(std::uint32_t tag) = 0;
  virtual void message_retransmitted(std::uint32_t tag) = 0;
};

// Work that acts across the whole network at instants it chooses (the NIC engine: a
// collective's offload decision, its completion seen by the host, the next one's
// issue). The network runs every part up to such an instant, then calls step() while
// no part runs, so the work sees one consistent state however the run is split.
//   begin()         once the network is prepared (its parts made, before any event);
//   next_step(idle) the next instant step() must run at, after every event at or before
//                   it (Time::max(): none); `idle`: no event is pending and no frame is
//                   on its way anywhere, so only this work can make anything happen;
//   step(at)        every part has run every event at or before `at` and none after;
//                   it may schedule events at `at` or later in any part;
//   after_step(at)  right after step(at), no event between, once every process has
//                   read the others' shares written after it (take_shared; one process:
//                   at once); may schedule events as step() may, and returns whether
//                   it did (an idle network then is not).
// Over several processes (Network::set_partitions with an Exchange), every process keeps
// a copy of the work, runs the events of its own parts only, and steps its copy at the
// same instants; the copies agree because, after every window and every step, each
// process sends the others what its parts did that step() and next_step() read:
//   share(out)           this process's parts' part of that state, written;
//   take_shared(in)      another process's, read (every other process's, in rank order);
// and at the end, rank 0 gathers what the other processes' parts kept for the results:
//   share_results(out)   written by every process but rank 0;
//   take_results(in)     read by rank 0, once per other process, in rank order.
class Coordinator {
 public:
  virtual ~Coordinator() = default;
  virtual void begin() = 0;
  virtual Time next_step(bool idle) = 0;
  virtual void step(Time at) = 0;
  virtual bool after_step(Time /*at*/) { return false; }
  virtual void share(ByteWriter& /*out*/) const {}
  virtual void take_shared(ByteReader& /*in*/) {}
  virtual void share_results(ByteWriter& /*out*/) const {}
  virtual void take_results(ByteReader& /*in*/) {}
};

// Packets of a connection carry this bit in Packet::flow (with the connection's index):
// they belong to no flow of the FlowTable.
inline constexpr std::uint32_t kConnectionFlow = 1u << 31;

}  // namespace fabriclab::fabric
