// Swift (Kumar et al., SIGCOMM 2020): windows from delay. Each QP keeps a fabric window
// fcwnd and an endpoint window ecwnd, in packets, and may have min(fcwnd, ecwnd) in flight
// (at least one packet); below one packet it sends one per rtt / cwnd (pacing).
//
// Per ACK with an RTT sample (cc/congestion.h: the round trip of the packet it answers):
//   endpoint_delay = remote_hold + local_hold   (the receiver's hold of the data before
//                    its ACK left, echoed on the ACK; the sender's of the ACK)
//   fabric_delay   = rtt - endpoint_delay
//   target         = base_target + hops x hop_scaling + flow_scaling(fcwnd)
//   flow_scaling(c)= clamp(a / sqrt(c) + b, 0, fs_range),
//                    a = fs_range / (1/sqrt(fs_min_cwnd) - 1/sqrt(fs_max_cwnd)), b = -a / sqrt(fs_max_cwnd)
//   each window w against its delay d and target t (fabric: fabric_delay, target;
//   endpoint: endpoint_delay, endpoint_target):
//     d < t:  w += ai x acked / w  (w >= 1),  w += ai x acked  (w < 1)
//     else, if now - last_decrease(w) >= rtt:  w *= max(1 - beta (d - t) / d, 1 - max_mdf)
//     w = clamp(w, min_cwnd, max_cwnd); if w did not grow, last_decrease(w) = now
// `acked` is the packets the ACK newly acknowledged; `hops` the switches the data crossed
// (its TTL, echoed on the ACK). A NAK (go-back-N's loss signal, Swift's fast recovery)
// cuts fcwnd by 1 - max_mdf at most once per RTT; a retransmission timeout does too, and
// the retx_reset-th in a row without an ACK between sets fcwnd to min_cwnd.
//
// Sources (docs/fabric.md): the paper's Algorithm 1 and section 3; the values it does not
// publish are those of Google's Falcon simulator (isekai) defaults, as noted per key.
#pragma once

#include <cstdint>
#include <string>

#include "core/params.h"
#include "core/units.h"
#include "fabric/cc/congestion.h"

namespace fabriclab::fabric {

struct SwiftParams {
  std::string preset = "default";
  Time base_target = Time::from_ps(25'000'000);       // fabric target before scaling
  Time hop_scaling = Time::from_ps(1'000'000);        // added per switch crossed
  Time fs_range = Time::from_ps(100'000'000);         // the most flow scaling adds
  double fs_min_cwnd = 0.1, fs_max_cwnd = 256;        // flow scaling's window range
  Time endpoint_target = Time::from_ps(100'000'000);  // of the endpoint window
  double ai = 1;                                      // packets per window's worth of ACKs
  double beta = 0.8;                                  // multiplicative decrease factor
  double max_mdf = 0.5;                               // the most one decrease takes
  double min_cwnd = 0.01, max_cwnd = 256;             // packets
  double initial_cwnd = 32;                           // packets, both windows
  std::uint32_t retx_reset = 5;                       // timeouts in a row that reset fcwnd

  static SwiftParams preset_named(const std::string& name);
  void validate() const;
};

class Swift final : public CongestionControl {
 public:
  Swift(const SwiftParams& p, const CcContext& ctx);

  BitRate rate() const override;
  std::uint64_t window() const override;
  Time rtt() const override { return rtt_; }
  void on_ack(Time now, const AckInfo& ack) override;
  void on_timeout(Time now) override;
  const char* name() const override { return "swift"; }

  double fcwnd() const { return f_.w; }
  double ecwnd() const { return e_.w; }
  // The fabric target for `hops` switches at the current fcwnd.
  Time target(std::uint32_t hops) const;

 private:
  struct Window {
    double w;            // packets
    Time last_decrease;  // when it last did not grow
  };
  // One window's AI/MD against `delay` and `target`.
  void update(Window& win, Time now, Time delay, Time target, std::uint32_t acked);
  // w *= factor if the last decrease is an RTT old, clamped, the time noted.
  void decrease(Window& win, Time now, double factor);
  void clamp_and_note(Window& win, Time now, double before);
  double cwnd() const { return f_.w < e_.w ? f_.w : e_.w; }

  const SwiftParams& p_;
  RateListener* listener_;
  std::uint32_t qp_;
  std::int64_t line_;
  std::uint32_t mtu_, packet_wire_bytes_;
  double fs_a_, fs_b_;  // flow scaling's a and b, in ps
  Window f_, e_;        // fabric, endpoint
  Time rtt_ = Time::max();
  std::uint32_t timeouts_ = 0;
};

}  // namespace fabriclab::fabric
