#include "fabric/counters.h"

#include <algorithm>

namespace fabriclab::fabric {

PortCounters& PortCounters::operator+=(const PortCounters& o) {
  tx_bytes += o.tx_bytes;
  tx_packets += o.tx_packets;
  drops += o.drops;
  ecn_marks += o.ecn_marks;
  pfc_pause_sent += o.pfc_pause_sent;
  pfc_pause_received += o.pfc_pause_received;
  pfc_resume_sent += o.pfc_resume_sent;
  pfc_resume_received += o.pfc_resume_received;
  paused += o.paused;
  max_queue_bytes = std::max(max_queue_bytes, o.max_queue_bytes);
  rerouted += o.rerouted;
  trimmed += o.trimmed;
  return *this;
}

PortCounters PortCounters::since(const PortCounters& e) const {
  PortCounters d;
  d.tx_bytes = tx_bytes - e.tx_bytes;
  d.tx_packets = tx_packets - e.tx_packets;
  d.drops = drops - e.drops;
  d.ecn_marks = ecn_marks - e.ecn_marks;
  d.pfc_pause_sent = pfc_pause_sent - e.pfc_pause_sent;
  d.pfc_pause_received = pfc_pause_received - e.pfc_pause_received;
  d.pfc_resume_sent = pfc_resume_sent - e.pfc_resume_sent;
  d.pfc_resume_received = pfc_resume_received - e.pfc_resume_received;
  d.paused = paused - e.paused;
  d.rerouted = rerouted - e.rerouted;
  d.trimmed = trimmed - e.trimmed;
  return d;
}

const std::array<PortCounterField, 12>& port_counter_fields() {
  using C = PortCounters;
  static const std::array<PortCounterField, 12> fields{{
      {"tx_bytes", [](const C& c) { return static_cast<std::int64_t>(c.tx_bytes); }},
      {"tx_packets", [](const C& c) { return static_cast<std::int64_t>(c.tx_packets); }},
      {"drops", [](const C& c) { return static_cast<std::int64_t>(c.drops); }},
      {"ecn_marks", [](const C& c) { return static_cast<std::int64_t>(c.ecn_marks); }},
      {"pfc_pause_sent", [](const C& c) { return static_cast<std::int64_t>(c.pfc_pause_sent); }},
      {"pfc_pause_received", [](const C& c) { return static_cast<std::int64_t>(c.pfc_pause_received); }},
      {"pfc_resume_sent", [](const C& c) { return static_cast<std::int64_t>(c.pfc_resume_sent); }},
      {"pfc_resume_received", [](const C& c) { return static_cast<std::int64_t>(c.pfc_resume_received); }},
      {"paused_ns", [](const C& c) { return c.paused.ps(); }, true},
      {"max_queue_bytes", [](const C& c) { return c.max_queue_bytes; }},
      {"rerouted", [](const C& c) { return static_cast<std::int64_t>(c.rerouted); }},
      {"trimmed", [](const C& c) { return static_cast<std::int64_t>(c.trimmed); }},
  }};
  return fields;
}

}  // namespace fabriclab::fabric
