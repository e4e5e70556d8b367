// The interfaces a fabric component implements, gathered: start here to add one.
//
//   Node              a switch or a NIC: what its ports ask of it (node.h)
//   LinkImpairment    an element at the far end of a link: decides when and whether
//                     each frame reaches the peer (reorder_box.h, resequencer.h)
//   PortTap           an observer of a port's frames (scenario/pcap_writer.h,
//                     scenario/reorder_recorder.h)
//   CongestionControl the rate of a sending QP, one per QP (cc/congestion.h; the
//                     policies a NIC can run are listed in cc/policies.cc)
//   RateListener      told when a QP's rate rises (the NIC; cc/congestion.h)
//   EventHandler      anything woken by the simulator with a tag (core/simulator.h)
#pragma once

#include "fabric/cc/congestion.h"
#include "fabric/node.h"
#include "fabric/packet.h"

namespace fabriclab::fabric {

class Port;

// An impairment at the far end of a port's link (the reorder box, reorder_box.h): it
// receives every frame as it arrives and decides when, and whether, the peer gets it
// (Port::deliver_now), or loses it (Port::lose).
class LinkImpairment {
 public:
  virtual ~LinkImpairment() = default;
  virtual void on_arrival(Packet* p) = 0;
};

// An observer of the frames a port sends and receives (a pcap writer): called when a
// frame's last bit leaves the port (egress) or arrives at it (ingress). Not on any path
// unless set.
class PortTap {
 public:
  virtual ~PortTap() = default;
  virtual void on_frame(const Port& port, const Packet& p, bool egress) = 0;
};

}  // namespace fabriclab::fabric
