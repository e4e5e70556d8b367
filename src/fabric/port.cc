#include "fabric/port.h"

#include <algorithm>
#include <stdexcept>

#include "fabric/pfc.h"

namespace fabriclab::fabric {

void Port::connect(Port& a, Port& b, BitRate rate, Time delay) {
  if (a.peer_ || b.peer_) throw std::logic_error("Port::connect: a port is already connected");
  if (rate.bps() <= 0) throw std::logic_error("Port::connect: the rate must be positive");
  a.peer_ = &b;
  b.peer_ = &a;
  a.rate_ = b.rate_ = rate;
  a.delay_ = b.delay_ = delay;
}

void Port::set_link_rate(Port& a, BitRate rate) {
  if (!a.peer_) throw std::logic_error("Port::set_link_rate: the port is not connected");
  if (rate.bps() <= 0) throw std::logic_error("Port::set_link_rate: the rate must be positive");
  a.rate_ = a.peer_->rate_ = rate;
  a.memo_bytes_ = a.peer_->memo_bytes_ = 0;
}

void Port::kick() {
  if (!on_wire_) start_next();
}

void Port::wake_at(Time t) {
  if (t >= wake_pending_ && wake_pending_ >= ctx_->sim.now()) return;  // an earlier wake will pull
  wake_pending_ = t;
  ctx_->sim.schedule_at(t, *this, kWake);
}

void Port::send_control(Packet* p) {
  control_.push(p);
  ++ctx_->ledger.control_packets_sent;
  kick();
}

Time Port::pause_quantum_time(std::uint32_t quanta) const { return pause_time(quanta, rate_); }

void Port::pause(std::uint8_t prio, std::uint16_t quanta) {
  const Time now = ctx_->sim.now();
  ++pfc_received_;
  if (quanta == 0) ++pfc_resume_received_;
  if (record_pfc_) pfc_records_.push_back({now, prio, quanta});
  last_pfc_rx_[prio] = now;
  if (pause_until_[prio] <= now) {  // not paused: the previous interval has ended
    paused_closed_[prio] += pause_until_[prio] - pause_start_[prio];
    pause_start_[prio] = now;
  }
  pause_until_[prio] = quanta == 0 ? now : pause_until_xon_ ? Time::max() : now + pause_quantum_time(quanta);
  pause_any_until_ = *std::max_element(pause_until_.begin(), pause_until_.end());
  if (quanta == 0) kick();
}

Time Port::paused_time(std::uint8_t prio, Time now) const {
  const Time end = std::min(pause_until_[prio], now);
  return paused_closed_[prio] + (end > pause_start_[prio] ? end - pause_start_[prio] : Time());
}

Time Port::paused_time(Time now) const {
  Time t;
  for (std::uint8_t c = 0; c < 8; ++c) t += paused_time(c, now);
  return t;
}

void Port::start_next() {
  Packet* p = control_.empty() ? owner_.next_packet(*this) : control_.pop();
  if (!p) return;
  if (p->frame == 0) throw std::logic_error(owner_.name() + ": a packet was sent without seal()");
  on_wire_ = p;
  const bool pfc = p->opcode == Opcode::pfc;
  sending_ = {p->frame_bytes(), p->ingress, p->priority, pfc, pfc && p->pause_quanta() == 0};
  // Most frames are MTU-sized: skip the 128-bit division when the size repeats.
  const std::uint32_t bytes = p->wire_bytes(ctx_->wire);
  if (bytes != memo_bytes_) {
    memo_bytes_ = bytes;
    memo_time_ = serialization_time(Bytes::from_count(bytes), rate_, ctx_->wire.rounding);
  }
  ctx_->sim.schedule_in(memo_time_, *this, kTxDone);
  // The owner may send through this port in turn (an XON on the link the frame came in
  // on): it queues behind the frame on the wire.
  if (notify_start_) owner_.started(*this, sending_);
}

void Port::on_event(std::uint64_t tag) {
  switch (tag) {
    case kTxDone: {
      // The frame's fields were read when it started (sending_): by now the packet has
      // usually left the cache, and only the tap needs it.
      Packet* p = on_wire_;
      on_wire_ = nullptr;
      const SentFrame sent = sending_;
      tx_bytes_ += sent.frame_bytes;
      ++tx_packets_;
      if (sent.pfc) ++pfc_sent_;
      if (sent.pfc_resume) ++pfc_resume_sent_;
      if (tap_) tap_->on_frame(*this, *p, true);
      if (cut_) [[unlikely]] {  // the peer is in another partition: it takes a copy
        send_across(p);
      } else {
        // Every frame's arrival is due one propagation delay from now: the simulator's
        // lane for this delay holds these events in order, as the link holds the frames.
        link_.push(p);
        ctx_->sim.schedule_in(delay_, *this, kArrive);
      }
      // The owner may react by sending through this very port (a switch whose buffer
      // release resumes the link the frame came in on sends XON here): that starts the
      // next frame, and then there is nothing left to start.
      owner_.transmitted(*this, sent);
      if (!on_wire_) start_next();
      return;
    }
    case kArrive: {
      // A frame's last bit reaches the peer: on a local link this port, the sender, holds
      // the event and the frame (and acts for the receiving node); on a cut link the
      // receiving port holds both (the same tag, so that a split run's events are the
      // undivided run's, fingerprint included).
      if (cut_) [[unlikely]] {
        Packet* p = crossed_.front();
        crossed_.pop();
        receive_frame(p);
        return;
      }
      Packet* p = link_.front();
      link_.pop();
      if (link_.size() > 0) __builtin_prefetch(link_.front());  // it arrives next: warm it up
      ctx_->sim.act_for(*peer_);
      deliver(p);
      return;
    }
    case kWake:
      if (wake_pending_ <= ctx_->sim.now()) wake_pending_ = Time::max();
      kick();
      return;
    default: throw std::logic_error("Port: unknown event tag");
  }
}

void Port::emit_counters(PortCounters& c, Time end) const {
  c.tx_bytes += tx_bytes_;
  c.tx_packets += tx_packets_;
  c.drops += link_drops_ + rx_errors_;
  c.pfc_pause_sent += pfc_sent_;
  c.pfc_pause_received += pfc_received_;
  c.pfc_resume_sent += pfc_resume_sent_;
  c.pfc_resume_received += pfc_resume_received_;
  c.paused += paused_time(end);
}

void Port::lose(Packet* p) {
  ++link_drops_;
  drop(*ctx_, p, DropReason::link_loss);
}

void Port::deliver(Packet* p) {
  if (impairment_) impairment_->on_arrival(p);
  else deliver_now(p);
}

void Port::deliver_now(Packet* p) { peer_->receive_frame(p); }

void Port::send_across(Packet* p) {
  Outbox::Buffer& out = *cut_->current;
  out.frames.push_back({ctx_->sim.now() + delay_, peer_, ctx_->sim.draw_key(), *p});
  if (p->telemetry) {
    out.stacks.push_back(ctx_->telemetry.at(p->telemetry));
    out.frames.back().packet.telemetry = static_cast<std::uint32_t>(out.stacks.size());
  }
  release_packet(*ctx_, p);
}

void Port::accept_crossing(Time at, std::uint64_t key, const Packet& p, const std::vector<IntStack>& stacks) {
  if (p.telemetry > stacks.size()) throw std::logic_error("Port::accept_crossing: a frame's INT stack is missing");
  Packet* copy = ctx_->packets.acquire(p);
  copy->next = nullptr;  // the original's queue link means nothing here
  if (copy->telemetry) copy->telemetry = ctx_->telemetry.adopt(stacks[copy->telemetry - 1]);
  crossed_.push(copy);
  ctx_->sim.schedule_drawn(at, *this, kArrive, key);  // from one part over one delay: in time order
}

void Port::receive_frame(Packet* p) {
  if (tap_) tap_->on_frame(*this, *p, false);
  if (p->corrupted) {  // fails the FCS/ICRC at the receiving MAC
    ++rx_errors_;
    drop(*ctx_, p, DropReason::corrupted);
    return;
  }
  if (p->opcode == Opcode::pfc) {
    pause(p->pause_class(), p->pause_quanta());
    release_packet(*ctx_, p);
    return;
  }
  owner_.receive(*this, p);
}

void Port::drain() {
  if (on_wire_) release_packet(*ctx_, std::exchange(on_wire_, nullptr));
  while (link_.size() > 0) {
    release_packet(*ctx_, link_.front());
    link_.pop();
  }
  while (crossed_.size() > 0) {
    release_packet(*ctx_, crossed_.front());
    crossed_.pop();
  }
  while (!control_.empty()) release_packet(*ctx_, control_.pop());
}

}  // namespace fabriclab::fabric
