// What every element with ports is to its ports: a Node hands its port the next packet
// to serialize (pull, so that nothing queues twice), hears when one has left, and takes
// the packets the port's link delivers. Switches and host NICs are Nodes; a Port never
// looks inside one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fabric/counters.h"
#include "fabric/packet.h"

namespace fabriclab::fabric {

class Port;

// What a node learns of a frame that has left one of its ports.
struct SentFrame {
  std::uint32_t frame_bytes = 0;
  std::uint16_t ingress = 0;  // the port it came in on (switches)
  std::uint8_t priority = 0;
  bool pfc = false;         // a PFC frame the node sent
  bool pfc_resume = false;  // ... with zero quanta (XON: resume)
};

class Node {
 public:
  explicit Node(std::string name) : name_(std::move(name)) {}
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // The next packet `port` should serialize now, or nullptr when none is eligible (empty,
  // paused or paced; the node then arranges a Port::wake_at when one becomes eligible).
  virtual Packet* next_packet(Port& port) = 0;
  // A frame has left `port` (its last bit is on the wire).
  virtual void transmitted(Port& /*port*/, const SentFrame& /*f*/) {}
  // A frame has started on `port` (its first bit is on the wire); told only by a port
  // whose node asked (Port::set_notify_start).
  virtual void started(Port& /*port*/, const SentFrame& /*f*/) {}
  // A packet has arrived on `port` (never a PFC frame: the port consumes those). The
  // node owns it now: forward it or release it to the pool.
  virtual void receive(Port& port, Packet* p) = 0;
  // Adds what this node counted for its port `port` (its queues' drops and marks, a NIC's
  // receive drops) to `c`; the port adds its own (Port::emit_counters).
  virtual void emit_counters(std::size_t /*port*/, PortCounters& /*c*/) const {}

  const std::string& name() const { return name_; }
  // Index in the network's node list (hosts first), set when the node is added.
  std::uint32_t id() const { return id_; }
  void set_id(std::uint32_t id) { id_ = id; }
  std::size_t port_count() const { return ports_.size(); }
  Port& port(std::size_t i) { return *ports_[i]; }
  const Port& port(std::size_t i) const { return *ports_[i]; }
  // Ports are created by the Network when it connects nodes.
  void add_port(std::unique_ptr<Port> p) { ports_.push_back(std::move(p)); }

 private:
  std::string name_;
  std::uint32_t id_ = 0;
  std::vector<std::unique_ptr<Port>> ports_;
};

}  // namespace fabriclab::fabric
