// The reorder box: an impairment at the far end of a link that, by rule or by
// probability, holds a packet back for a number of later packets (a reorder of that
// extent, counted in later data packets; 1 = a swap with the next) or for a time, drops it, duplicates it, or corrupts
// it (the receiving MAC then discards it: a bad FCS at a switch, a bad ICRC at a NIC).
// Only data packets are impaired; ACKs, CNPs and PFC frames pass untouched.
//
// Rules name one transmission of one packet: "drop 0/5" is flow 0, PSN 5, its first
// transmission (every QP of a flow counts PSNs from 0: with several QPs per flow, the
// rule takes whichever QP's PSN 5 comes first, and occurrences count across them); "hold 0/7/2 3" holds the second
// transmission of PSN 7 for 3 later packets; "delay 0/9 2us"; "dup 0/11"; "corrupt 0/13". Rules are checked first; then
// each probability in turn (drop, corrupt, duplicate, reorder) with the box's own
// random stream. A held packet is released after its count of later packets has passed
// or after `max_hold`, whichever comes first, so a box never keeps a packet forever.
//
//   ImpairmentConfig c;
//   c.rules = parse_impairment_rules("drop 0/2; hold 0/5 3");
//   net.add_impairment(net.host(0).port(0), c);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/random.h"
#include "core/simulator.h"
#include "core/units.h"
#include "fabric/context.h"
#include "fabric/port.h"

namespace fabriclab::fabric {

struct ImpairmentRule {
  enum class Action : std::uint8_t { drop, hold, delay, duplicate, corrupt };
  Action action = Action::drop;
  std::uint32_t flow = 0, psn = 0, occurrence = 1;
  std::uint32_t packets = 0;  // hold: later packets to let by
  Time delay;                 // delay: how long
  std::string text;           // as written: "hold 0/7/2 3"
};

struct ImpairmentConfig {
  double drop = 0, corrupt = 0, duplicate = 0, reorder = 0;  // probabilities per data packet
  std::uint32_t reorder_packets = 1;                         // a reordered packet waits for this many later ones...
  Time reorder_delay;                                        // ...or, when positive, this long
  Time max_hold = Time::from_ps(100'000'000);                // 100 us
  std::vector<ImpairmentRule> rules;
};

// "drop 0/5; hold 0/7/2 3; delay 0/9 2us; dup 0/11; corrupt 0/13" (';' or ','
// separated). Throws InputError naming the rule and what was expected.
std::vector<ImpairmentRule> parse_impairment_rules(const std::string& text);

class ReorderBox final : public LinkImpairment, public EventHandler {
 public:
  // Impairs the link leaving `sender`.
  ReorderBox(FabricContext& ctx, Port& sender, ImpairmentConfig cfg, std::uint64_t seed);

  void on_arrival(Packet* p) override;
  void on_event(std::uint64_t tag) override;

  std::uint64_t dropped() const { return dropped_; }
  std::uint64_t corrupted() const { return corrupted_; }
  std::uint64_t duplicated() const { return duplicated_; }
  std::uint64_t held() const { return held_total_; }
  // The rules whose packet has not come (its flow has not sent that PSN that many times
  // through the box): what they say, and why none acted, for the run to report.
  std::vector<std::string> unmatched_rules() const;
  const Port& sender() const { return sender_; }

  template <typename F>
  void for_each_held(F&& f) const {
    for (const auto& h : holding_) f(*h.packet);
  }
  void drain();

 private:
  struct Held {
    Packet* packet;
    std::uint32_t remaining;  // later packets still to pass
    bool by_count;            // held for a count of packets (else for a time)
    Time release_at;          // the time limit (max_hold for a count)
  };
  void hold(Packet* p, std::uint32_t packets, Time delay);
  void duplicate(Packet* p);
  void pass(Packet* p);  // deliver, then count it against the held ones
  void release_due();
  void arm_timer();

  FabricContext& ctx_;
  Port& sender_;
  ImpairmentConfig cfg_;
  RandomStream rng_;
  std::vector<std::uint32_t> rule_seen_;  // transmissions of each rule's packet seen
  std::vector<Held> holding_;             // in hold order; small
  Time timer_at_ = Time::max();
  std::uint64_t dropped_ = 0, corrupted_ = 0, duplicated_ = 0, held_total_ = 0;
};

}  // namespace fabriclab::fabric
