#include "fabric/resequencer.h"

#include <algorithm>

#include "core/error.h"

namespace fabriclab::fabric {

Resequencer::Resequencer(FabricContext& ctx, Port& sender, ResequencerConfig cfg)
    : ctx_(ctx), sender_(sender), cfg_(cfg) {
  if (cfg_.buffer == 0) throw InputError("resequencer: the buffer must hold at least one packet");
  if (cfg_.timeout <= Time()) throw InputError("resequencer: the timeout must be positive");
}

void Resequencer::on_arrival(Packet* p) {
  if (!is_data(p->opcode)) {
    sender_.deliver_now(p);
    return;
  }
  const std::uint64_t k = key(*p);
  Qp& q = qps_[k];
  if (q.flow != p->flow) {
    // A load's QP numbers are reused by later flows (higher ids): a late copy of an earlier
    // flow's packet passes, as that flow's own state (every packet passed) would let it;
    // a later flow starts the number over.
    if (q.flow != kNoFlow && p->flow < q.flow) {
      sender_.deliver_now(p);
      return;
    }
    if (!q.held.empty()) give_up(q);
    q.expected = 0;
    q.flow = p->flow;
  }
  const std::uint32_t psn = p->psn;
  if (psn < q.expected || q.held.count(psn)) {  // a retransmission, or a copy of one held
    sender_.deliver_now(p);
    return;
  }
  if (psn == q.expected) {
    sender_.deliver_now(p);
    ++q.expected;
    release_in_order(q);
    arm(q, k);
    return;
  }
  const Time now = ctx_.sim.now();
  if (psn - q.expected > cfg_.buffer || occupancy_ >= cfg_.buffer) {
    // No room: everything for this QP leaves in PSN order, this packet among them.
    ++give_ups_full_;
    q.held.emplace(psn, Held{p, now});
    ++occupancy_;
    give_up(q);
    return;
  }
  q.held.emplace(psn, Held{p, now});
  ++held_total_;
  max_occupancy_ = std::max(max_occupancy_, ++occupancy_);
  arm(q, k);
}

void Resequencer::release_in_order(Qp& q) {
  while (!q.held.empty() && q.held.begin()->first == q.expected) {
    sender_.deliver_now(q.held.begin()->second.packet);
    q.held.erase(q.held.begin());
    --occupancy_;
    ++q.expected;
  }
}

void Resequencer::give_up(Qp& q) {
  for (auto& [psn, h] : q.held) {
    sender_.deliver_now(h.packet);
    q.expected = psn + 1;
  }
  occupancy_ -= static_cast<std::uint32_t>(q.held.size());
  q.held.clear();
  q.due = Time::max();
}

// The timeout check follows the oldest packet still held (at most `buffer` to look at).
void Resequencer::arm(Qp& q, std::uint64_t k) {
  if (q.held.empty()) {
    q.due = Time::max();
    return;
  }
  Time oldest = Time::max();
  for (const auto& [psn, h] : q.held) oldest = std::min(oldest, h.since);
  const Time due = oldest + cfg_.timeout;
  if (due == q.due) return;
  q.due = due;
  ctx_.sim.schedule_at(due, *this, k);
}

void Resequencer::on_event(std::uint64_t tag) {
  const auto it = qps_.find(tag);
  if (it == qps_.end()) return;
  Qp& q = it->second;
  if (q.due != ctx_.sim.now() || q.held.empty()) return;  // superseded
  ++give_ups_timeout_;
  give_up(q);
}

void Resequencer::drain() {
  for (auto& [k, q] : qps_) {
    for (auto& [psn, h] : q.held) release_packet(ctx_, h.packet);
    q.held.clear();
  }
  occupancy_ = 0;
}

}  // namespace fabriclab::fabric
