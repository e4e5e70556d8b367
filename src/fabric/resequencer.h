// A re-sequencing stage on a link (the egress of a switch toward a receiver): data packets
// of each destination QP leave in PSN order. One that arrives ahead of the next expected
// PSN is held, in a buffer of `buffer` packets shared by all QPs; when the expected one
// comes, it and the held ones that follow it leave together. The stage gives up on a QP
// -- releases everything it holds for it in PSN order and expects the PSN after the last
// one -- when a packet would not fit (buffer full, or more than `buffer` PSNs ahead), or
// when the oldest held packet has waited `timeout`. Then the receiver sees the gap, and
// go-back-N (or its reorder window) takes over. Packets at or below the expected PSN
// (retransmissions after such a gap) and every non-data frame pass straight through.
//
//   Resequencer& r = net.add_resequencer(net.switch_at(1).port(1), {.buffer = 64, .timeout = us(20)});
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "core/simulator.h"
#include "core/units.h"
#include "fabric/context.h"
#include "fabric/port.h"

namespace fabriclab::fabric {

struct ResequencerConfig {
  std::uint32_t buffer = 64;                  // packets held at most (all QPs)
  Time timeout = Time::from_ps(100'000'000);  // 100 us: the longest a packet is held
};

class Resequencer final : public LinkImpairment, public EventHandler {
 public:
  // Re-sequences what the link leaving `sender` carries (InputError if buffer is 0).
  Resequencer(FabricContext& ctx, Port& sender, ResequencerConfig cfg);

  void on_arrival(Packet* p) override;
  void on_event(std::uint64_t tag) override;

  std::uint64_t held_total() const { return held_total_; }  // packets that waited here
  std::uint64_t give_ups_full() const { return give_ups_full_; }
  std::uint64_t give_ups_timeout() const { return give_ups_timeout_; }
  std::uint32_t max_occupancy() const { return max_occupancy_; }
  const Port& sender() const { return sender_; }

  template <typename F>
  void for_each_held(F&& f) const {
    for (const auto& [key, q] : qps_)
      for (const auto& [psn, h] : q.held) f(*h.packet);
  }
  void drain();

 private:
  struct Held {
    Packet* packet;
    Time since;
  };
  static constexpr std::uint32_t kNoFlow = 0xffffffff;
  struct Qp {
    std::uint32_t flow = kNoFlow;  // whose packets it orders (a QP number's flow may change)
    std::uint32_t expected = 0;
    std::map<std::uint32_t, Held> held;  // by PSN
    Time due = Time::max();              // the pending timeout check (the oldest held + timeout)
  };
  static std::uint64_t key(const Packet& p) { return std::uint64_t{p.dst} << 32 | p.dst_qp; }
  void release_in_order(Qp& q);
  void give_up(Qp& q);
  void arm(Qp& q, std::uint64_t k);

  FabricContext& ctx_;
  Port& sender_;
  ResequencerConfig cfg_;
  std::unordered_map<std::uint64_t, Qp> qps_;  // by key(): the timer's tag
  std::uint32_t occupancy_ = 0, max_occupancy_ = 0;
  std::uint64_t held_total_ = 0, give_ups_full_ = 0, give_ups_timeout_ = 0;
};

}  // namespace fabriclab::fabric
