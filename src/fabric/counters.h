// What each port did over a run: PortCounters, whose fields are listed once in
// port_counter_fields() (their names are the columns of ports.csv and the keys of the
// summary's port totals). Why packets were dropped is counted in the Ledger by
// DropReason (context.h).
//
// Components keep their counters where their hot paths want them (a port's transmit
// counts beside its serializer, a switch port's marks beside its queues) and emit them
// into a PortCounters when asked: Port::emit_counters, then Node::emit_counters for what
// the port's owner counted.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "core/units.h"

namespace fabriclab::fabric {

// One port's counts over a run.
struct PortCounters {
  std::uint64_t tx_bytes = 0;  // frame bytes
  std::uint64_t tx_packets = 0;
  std::uint64_t drops = 0;      // at this port, any reason (its link, its MAC, its queues, its NIC)
  std::uint64_t ecn_marks = 0;  // CE set by this (switch) port's queues
                                // PFC frames, every one (pause_*: as 802.1Qbb calls them all), and of those the resumes
  // (XON: zero quanta); the pauses proper (XOFF) are the difference.
  std::uint64_t pfc_pause_sent = 0, pfc_pause_received = 0;
  std::uint64_t pfc_resume_sent = 0, pfc_resume_received = 0;
  Time paused;                       // any priority paused (union), to the run's end
  std::int64_t max_queue_bytes = 0;  // a switch port's egress queues, at most
  std::uint64_t rerouted = 0;        // a switch port's packets whose flow's previous one left by another port
  std::uint64_t trimmed = 0;         // data packets a switch port's queues took cut to their headers

  PortCounters& operator+=(const PortCounters& o);
  // What the port counted since `earlier`, a reading of the same port: each count's
  // difference; max_queue_bytes, a maximum rather than a count, is 0.
  PortCounters since(const PortCounters& earlier) const;
};

// The fields in output order: the column name and the value (a time in ps when `time`,
// which outputs show in ns).
struct PortCounterField {
  std::string_view name;
  std::int64_t (*value)(const PortCounters&);
  bool time = false;
};
const std::array<PortCounterField, 12>& port_counter_fields();

}  // namespace fabriclab::fabric
