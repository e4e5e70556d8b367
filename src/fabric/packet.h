// The simulator's packet: a small plain struct of header fields (RoCEv2 data, ACK, NAK,
// CNP and PFC frames), linked intrusively into the FIFO it waits in, taken from and
// returned to a Pool so that the steady state allocates nothing. Bytes on the wire are
// never materialized here; frame_bytes() gives their count, pcap output synthesizes them.
//
// Sizes follow the wire: Ethernet (14) + 802.1Q tag (4, carries the priority) + IPv4 (20)
// + UDP (8) + BTH (12) + RETH (16, first/only of a WRITE) or AETH (4, ACK/NAK) + payload
// (padded to 4 bytes, as the BTH pad count says) + ICRC (4) + FCS (4), at least 64. A port
// serializes the frame plus 20 bytes of preamble, start delimiter and inter-frame gap.
// WireFormat (`wire.*`) changes these counts to match a model with another frame format:
// the frames' sizes then count for everything (queues, buffers, ports.csv, time on the
// wire); pcap files still show real RoCEv2 frames.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/units.h"

namespace fabriclab::fabric {

// Frame sizes in bytes (see the top of this file).
inline constexpr std::uint32_t kRoceHeaderBytes = 14 + 4 + 20 + 8 + 12 + 4 + 4;  // eth, 802.1Q, IP, UDP, BTH, ICRC, FCS
inline constexpr std::uint32_t kRethBytes = 16;
inline constexpr std::uint32_t kAethBytes = 4;
inline constexpr std::uint32_t kMinFrameBytes = 64;      // and a PFC frame's by default (wire.pfc_frame_bytes)
inline constexpr std::uint32_t kWireOverheadBytes = 20;  // preamble, start delimiter, inter-frame gap

// The frame format the network counts (wire.*; the defaults are RoCEv2 over tagged
// Ethernet): bytes of headers and trailers every RoCE frame has besides its payload and
// its RETH, AETH or CNP fields; the smallest frame; the bytes a port spends between frames
// (preamble, start delimiter, inter-frame gap); how times on the wire are rounded.
struct WireFormat {
  std::uint32_t header_bytes = kRoceHeaderBytes;
  std::uint32_t min_frame_bytes = kMinFrameBytes;
  std::uint32_t gap_bytes = kWireOverheadBytes;
  WireRounding rounding = WireRounding::ps_up;
  // A PFC frame's size: a 64-byte MAC control frame (the ns-3 RDMA model's is 43 bytes:
  // its PPP framing 14, an IPv4 header 20 and its pause header 9).
  std::uint32_t pfc_frame_bytes = kMinFrameBytes;
  // INT (telemetry.h): the hop slots of the header, and the bytes it adds to every data
  // packet and ACK that carries one -- set by the Network from the slots when the
  // congestion-control policy reads INT, 0 otherwise.
  std::uint32_t int_max_hops = 5;
  std::uint32_t int_bytes = 0;
  // HPCC-PINT: the header is PINT's code of that log base (pint.h) instead of the slots,
  // int_bytes its 1 or 2 bytes; 0 = not PINT.
  double pint_log_base = 0;
  bool operator==(const WireFormat&) const = default;
};

// A RoCE frame's bytes (the gap not included): the format's headers, the opcode's own
// field (`extension`: RETH, AETH or a CNP's reserved bytes), the payload padded to 4 bytes
// (BTH's pad count), the INT header if it carries one; at least the format's minimum.
constexpr std::uint32_t frame_bytes_of(std::uint32_t extension, std::uint32_t payload, bool with_int,
                                       const WireFormat& w) {
  const std::uint32_t n = w.header_bytes + extension + payload + (4 - payload % 4) % 4 + (with_int ? w.int_bytes : 0);
  return n < w.min_frame_bytes ? w.min_frame_bytes : n;
}
// The largest frame a NIC sends with `mtu` bytes of payload: a WRITE's first packet (RETH),
// with an INT header if the format has one.
constexpr std::uint32_t max_frame_bytes(std::uint32_t mtu, const WireFormat& w = {}) {
  return frame_bytes_of(kRethBytes, mtu, true, w);
}

// InfiniBand BTH opcodes (RoCEv2), as tshark shows them.
enum class Opcode : std::uint8_t {
  rc_write_first = 6,
  rc_write_middle = 7,
  rc_write_last = 8,
  rc_write_only = 10,
  rc_ack = 17,  // ACK and NAK (AETH syndrome tells them apart)
  uc_write_first = 0x26,
  uc_write_middle = 0x27,
  uc_write_last = 0x28,
  uc_write_only = 0x2a,
  cnp = 0x81,
  pfc = 0xff,  // not a BTH opcode: an 802.1Qbb MAC control frame
};

inline bool is_data(Opcode op) { return op != Opcode::rc_ack && op != Opcode::cnp && op != Opcode::pfc; }
inline bool has_reth(Opcode op) {
  return op == Opcode::rc_write_first || op == Opcode::rc_write_only || op == Opcode::uc_write_first ||
         op == Opcode::uc_write_only;
}
inline bool is_last(Opcode op) {
  return op == Opcode::rc_write_last || op == Opcode::rc_write_only || op == Opcode::uc_write_last ||
         op == Opcode::uc_write_only;
}

inline constexpr std::uint8_t kAethAck = 0x00;     // AETH syndrome: ACK (credits unused)
inline constexpr std::uint8_t kAethNakSeq = 0x60;  // NAK: PSN sequence error
// IRN's NACK for a trimmed packet (switch.trim): that PSN is lost. A NAK code RoCE leaves
// reserved (0x65); an IRN NACK of either kind names its PSN in src_qp, which an ACK has no
// other use for (a real NACK carries it in a header field of its own).
inline constexpr std::uint8_t kAethNakTrimmed = 0x65;
// UET's receiver credits (nic.uet.rccc), as ACK-format frames with syndromes RoCE leaves
// reserved: a pull (receiver -> sender: the cumulative credit granted, in pull units, in
// src_qp) and a request to send (sender -> receiver: its pull target, as a data packet
// carries it in `syndrome`, in psn).
inline constexpr std::uint8_t kAethPull = 0x40;
inline constexpr std::uint8_t kAethRts = 0x41;
inline constexpr std::uint8_t kEcnNotEct = 0, kEcnEct0 = 2, kEcnCe = 3;
inline constexpr std::uint16_t kRoceUdpPort = 4791;
inline constexpr std::uint32_t kPsnMask = 0xffffff;  // PSNs are 24 bits

struct alignas(64) Packet {
  Packet* next = nullptr;           // the FIFO this packet waits in
  std::uint32_t flow = 0;           // the flow it belongs to (statistics only)
  std::uint32_t src = 0;            // source host (its IPv4 address is derived from it)
  std::uint32_t dst = 0;            // destination host
  std::uint32_t dst_qp = 0;         // BTH destination QP
  std::uint32_t src_qp = 0;         // data: the sender's QP (a real BTH does not carry it; ACKs need
                                    // it); an IRN NACK: the PSN it is about
  std::uint32_t psn = 0;            // 24-bit PSN
  std::uint32_t payload = 0;        // RDMA payload bytes
  std::uint32_t message_bytes = 0;  // RETH DMA length (first/only); an ACK under Swift: the data's hops
  std::uint32_t hash_key = 0;       // the 5-tuple's part of the ECMP hash (flow_hash_key)
  std::uint32_t tag = 0;            // data on a connection: its message's tag (MessageEvents); an
                                    // ACK under Swift: the receiver's hold of the data, in ns
  std::uint32_t telemetry = 0;      // its INT stack in the partition's Telemetry (0 = none): data of
                                    // a QP whose policy reads INT, and the ACK that echoes it
  std::uint16_t udp_sport = 0;      // RoCEv2 entropy: chosen per QP
  std::uint16_t ingress = 0;        // switch: the local port it arrived on (MMU accounting)
  std::uint16_t frame = 0;          // frame bytes, set by seal() once the headers are chosen
  Opcode opcode = Opcode::rc_write_only;
  std::uint8_t priority = 0;         // 802.1p / traffic class 0..7
  std::uint8_t syndrome = kAethAck;  // AETH (ACK/NAK)
  std::uint8_t ttl = 64;             // IPv4 TTL: each switch takes one; 0 = dropped (a routing loop)
  // The IPv4 TOS byte, as on the wire: ECN and DSCP (pcap only: switches queue by `priority`).
  std::uint8_t ecn : 2 = kEcnNotEct;
  std::uint8_t dscp : 6 = 0;
  bool corrupted : 1 = false;  // damaged on a link: the receiving MAC discards it
  bool becn : 1 = false;       // BTH BECN on an ACK/NAK: a congestion notification (roce_np.cnp_form)
  bool trimmed : 1 = false;    // data cut to its headers by a switch (switch.trim): its payload is gone

  // The frame's size from its opcode and payload (and its INT header, if it carries a
  // stack), in format `w`; every hop reads `frame`, so it is computed once, by whoever
  // builds the packet. A PFC frame is the format's pfc_frame_bytes (a 64-byte MAC control
  // frame by default).
  void seal(const WireFormat& w = {}) {
    if (opcode == Opcode::pfc) {
      frame = static_cast<std::uint16_t>(w.pfc_frame_bytes);
      return;
    }
    const std::uint32_t extension = opcode == Opcode::rc_ack ? kAethBytes
                                    : opcode == Opcode::cnp  ? 16u  // reserved
                                    : has_reth(opcode)       ? kRethBytes
                                                             : 0u;
    frame = static_cast<std::uint16_t>(frame_bytes_of(extension, payload, telemetry != 0, w));
  }
  std::uint32_t frame_bytes() const { return frame; }
  // Bytes a port spends on the frame: the frame plus the format's gap.
  std::uint32_t wire_bytes(const WireFormat& w = {}) const { return frame + w.gap_bytes; }

  // A PFC frame has no PSN: its word holds the priority and the pause time in quanta
  // (0 = XON, resume).
  void set_pause(std::uint8_t prio, std::uint16_t quanta) { psn = static_cast<std::uint32_t>(prio) << 16 | quanta; }
  std::uint8_t pause_class() const { return static_cast<std::uint8_t>(psn >> 16); }
  std::uint16_t pause_quanta() const { return static_cast<std::uint16_t>(psn); }
};
static_assert(sizeof(Packet) <= 64, "a packet should fit one cache line");

// A FIFO of packets linked through Packet::next: push and pop in O(1), no allocation.
class PacketFifo {
 public:
  bool empty() const { return head_ == nullptr; }
  Packet* front() const { return head_; }
  std::uint32_t size() const { return size_; }
  void push(Packet* p) {
    p->next = nullptr;
    if (tail_) tail_->next = p;
    else head_ = p;
    tail_ = p;
    ++size_;
  }
  Packet* pop() {
    Packet* p = head_;
    head_ = p->next;
    if (!head_) tail_ = nullptr;
    p->next = nullptr;
    --size_;
    return p;
  }
  // Empties the FIFO and returns its first packet, still linked to the others (for
  // for_each_in_turns; nullptr when it was empty).
  Packet* take_all() {
    Packet* p = head_;
    head_ = tail_ = nullptr;
    size_ = 0;
    return p;
  }

 private:
  Packet* head_ = nullptr;
  Packet* tail_ = nullptr;
  std::uint32_t size_ = 0;
};

// Calls f(p) for every packet of the lists linked through Packet::next that start at
// `heads` (nullptr: an empty list), taking up to 16 lists in turns rather than one after
// another. A list's next packet is known only once its current one has been read, so one
// list at a time waits out one cache miss after another; lists in turns overlap them.
// `f` may release `p` (its `next` is read before). For the end of a run: the audit and
// release of the packets queued in switches (about 213 000 in fat_tree_128 after 1 ms).
template <typename P, typename F>
void for_each_in_turns(const std::vector<P*>& heads, F&& f) {
  constexpr std::size_t kTurns = 16;
  std::array<P*, kTurns> at{};
  std::size_t n = 0, next = 0;
  for (;;) {
    for (; n < kTurns && next < heads.size(); ++next)
      if (heads[next]) at[n++] = heads[next];
    if (n == 0) return;
    for (std::size_t i = 0; i < n;) {
      P* p = at[i];
      P* after = p->next;
      f(p);
      if (after) at[i++] = after;
      else at[i] = at[--n];  // that list is done: the last one takes its place
    }
  }
}

}  // namespace fabriclab::fabric
