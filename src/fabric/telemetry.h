// In-band network telemetry (INT), as HPCC reads it: a data packet of a QP whose policy
// asks for it (CcFeedback kFeedbackInt) collects one record per switch it leaves, taken
// when it starts onto the egress link (the HPCC ns-3 model's SwitchNotifyDequeue): the
// time, the bytes the port had sent before it, the bytes still queued at the port (every
// priority) and the port's rate. The receiver echoes the stack on the ACK (or NAK) that
// answers the packet, if one does (a NAK sent by a timer answers none); the sender's
// policy reads it there.
//
// The stacks live beside the packets, in a per-partition Telemetry store, so that the
// 64-byte Packet carries only a 32-bit handle (Packet::telemetry, 0 = none): every path
// that returns a packet to its pool goes through release_packet() (context.h), which
// frees its stack, and the end of a run checks that none was left. A packet copied (a
// link duplicating it) gets a copy of its stack; one crossing to another partition takes
// its stack with it (Outbox).
//
// On the wire a stack is HPCC's INT header: a 2-byte hop count, then wire.int_max_hops
// slots of 8 bytes (the header has a fixed size, as the ns-3 model's: 42 bytes for 5
// hops), on every data packet of such a QP and the ACK or NAK that echoes its stack. A
// packet about to cross more switches
// than there are slots stops the run with an error naming wire.int_max_hops (the ns-3
// model wraps around and its HPCC then ignores the ACK: a silent wrong answer).
//
// HPCC-PINT (nic.hpcc.feedback = "pint") uses the same stacks for one value instead of
// the records: PINT's code of the largest utilization on the path, 1 or 2 bytes on the
// wire (pint.h), on a path of any length (no slots: wire.int_max_hops does not apply).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/units.h"

namespace fabriclab::fabric {

// The most hops a stack has room for (wire.int_max_hops is at most this).
inline constexpr std::uint32_t kIntHopSlots = 8;
// HPCC's encoding on the wire: a hop count, then 8 bytes per slot.
inline constexpr std::uint32_t kIntHeaderBytes = 2;
inline constexpr std::uint32_t kIntHopBytes = 8;

struct IntHop {
  Time at;                     // the packet started leaving the port
  std::uint64_t tx_bytes = 0;  // bytes the port had spent on the wire before it (frames and gaps)
  std::uint64_t qlen = 0;      // bytes queued at the port then, every priority, the packet not counted
  BitRate rate;                // the port's line rate
};

struct IntStack {
  std::array<IntHop, kIntHopSlots> hop{};
  std::uint8_t hops = 0;  // records taken (at most the configured slots)
  // HPCC-PINT (wire.pint_log_base set): no records, the largest code of a utilization a
  // switch on the path computed (pint.h; switch.h's Switch::pint_dequeue).
  std::uint16_t pint = 0;
};

// A stack as a frame's INT header shows it (wire.h's encode_frame): the header's slots,
// or PINT's code in `pint_bytes`.
struct IntOnWire {
  const IntStack* stack = nullptr;  // none: no header
  std::uint32_t slots = 0;
  std::uint32_t pint_bytes = 0;  // PINT: the code's bytes (1 or 2) instead of slots
};

// The stacks of one partition, by handle (1..; 0 is "none"). Storage grows in chunks of
// kChunk stacks that never move (a reference stays valid while new stacks are taken: a
// policy reading an ACK's stack may make the NIC send, which takes one) and is reused, so
// the steady state allocates nothing; a handle stays valid until released, and releasing
// one twice throws.
class Telemetry {
 public:
  std::uint32_t acquire() {
    ++live_;
    if (free_.empty()) {
      if (size_ % kChunk == 0) chunks_.push_back(std::make_unique<IntStack[]>(kChunk));
      taken_.push_back(1);
      return ++size_;  // index + 1
    }
    const std::uint32_t h = free_.back();
    free_.pop_back();
    at(h) = IntStack{};
    taken_[h - 1] = 1;
    return h;
  }
  // A new handle with the same records as `h`.
  std::uint32_t copy(std::uint32_t h) { return adopt(at(h)); }
  // A new handle holding `s` (a stack that came from another partition).
  std::uint32_t adopt(const IntStack& s) {
    const std::uint32_t n = acquire();
    at(n) = s;
    return n;
  }
  void release(std::uint32_t h) {
    if (h == 0 || h > size_ || !taken_[h - 1])
      throw std::logic_error("telemetry: INT stack " + std::to_string(h) + " released but not taken");
    taken_[h - 1] = 0;
    free_.push_back(h);
    --live_;
  }
  IntStack& at(std::uint32_t h) { return chunks_[(h - 1) / kChunk][(h - 1) % kChunk]; }
  const IntStack& at(std::uint32_t h) const { return chunks_[(h - 1) / kChunk][(h - 1) % kChunk]; }
  // Adds a switch's record to the stack `h` of a packet; false (and nothing added) when
  // its `slots` are all taken.
  [[nodiscard]] bool push(std::uint32_t h, const IntHop& rec, std::uint32_t slots) {
    IntStack& s = at(h);
    if (s.hops >= slots) return false;
    s.hop[s.hops++] = rec;
    return true;
  }
  std::size_t live() const { return live_; }
  // Throws when a stack was taken and never released (a packet left without release_packet).
  void check_no_leaks() const {
    if (live_ != 0)
      throw std::logic_error("telemetry: " + std::to_string(live_) + " INT stack(s) taken and never released");
  }

 private:
  static constexpr std::uint32_t kChunk = 1024;
  std::vector<std::unique_ptr<IntStack[]>> chunks_;
  std::uint32_t size_ = 0;           // stacks in the chunks, taken or free
  std::vector<std::uint8_t> taken_;  // per handle: acquired, not yet released
  std::vector<std::uint32_t> free_;
  std::size_t live_ = 0;
};

}  // namespace fabriclab::fabric
