// NSCC, the Ultra Ethernet transport's sender-side congestion control (UE 1.0 "network
// signal-based congestion control"), as uet-htsim (`htsim_uec`, uec.cpp) defines it: a
// window of bytes moved by the queueing delay of each ACK's RTT sample and its ECN echo.
// Bytes here are payload bytes (MSS = nic.mtu; uet-htsim counts 64 header bytes per
// packet besides).
//
// Set-up, from the network's RTT (the base RTT: nic.base_rtt or the longest path's) and
// the NIC's line rate, scaled against uet-htsim's reference network (100 Gb/s, 12 us):
//   network_bdp = line x network_rtt;  a = network_bdp / 150000 B;  b = target / 12 us
//   target = target_qdelay (0: 0.75 network_rtt, uet-htsim's with trimming)
//   alpha = pi x MSS a b / target;  fi = fair_increase x MSS a;  eta = eta x MSS a;
//   fi_scale = fast_increase_scale x a;  qa_threshold = 4 target
//   base_rtt = network_rtt;  maxwnd = max_window_bdp x line x base_rtt;  cwnd = maxwnd;  min = MSS
// Per ACK (b = the bytes it shows received anew, SACKed ones included; delay = its RTT
// sample - base_rtt, base_rtt lowered to a smaller sample (maxwnd with it); no sample:
// the average delay):
//   avg_delay: EWMA of weight delay_weight; a sample above target without ECN enters as
//              0.25 base_rtt instead
//   quick adapt first (below): if it acted, or the ACK is ECN-marked while the bytes in
//   flight at the last quick adapt are not yet acknowledged, nothing else
//   no ECN, delay >= target:  inc += fi b                             (fair increase)
//   no ECN, delay <  target:  delay < fast_increase_below (1 us) for more than a cwnd of
//                             bytes in a row: cwnd += fi_scale b at once (fast increase),
//                             else inc += alpha b (target - delay)     (proportional)
//   ECN, delay >= target:     if avg_delay > target, at most once per base_rtt:
//                             cwnd *= max(1 - gamma (avg_delay - target) / avg_delay, 0.5)
//   ECN, delay <  target:     nothing (the sender moves off that entropy)
//   then, once more than adjust_packets MSS were received since, or a network_rtt after
//   the last: cwnd += inc / cwnd, and eta if a network_rtt has passed since it was last
//   added; inc = 0.  cwnd stays within [min, maxwnd].
// Quick adapt, checked per ACK once an epoch of base_rtt + target has ended: if a trimmed
// packet's NACK, a loss or a delay above qa_threshold came in it, and the bytes
// acknowledged in it were below maxwnd / 2^qa_gate, cwnd = max(those bytes, min) and the
// ECN echoes of the bytes then in flight are ignored; a new epoch begins.
// A NACK of a trimmed packet (or a loss found) enters network_rtt as a delay sample, asks
// for quick adapt and, if none happens, takes one MSS off cwnd; a timeout takes one MSS off.
#pragma once

#include <cstdint>
#include <string>

#include "core/units.h"
#include "fabric/cc/congestion.h"

namespace fabriclab::fabric {

struct NsccParams {
  Time target_qdelay;                                   // 0 = 0.75 x the network's base RTT
  double pi = 4;                                        // proportional increase: alpha's factor
  double fair_increase = 5;                             // MSS at the reference BDP
  double eta = 0.15;                                    // MSS per network RTT at the reference BDP
  double fast_increase_scale = 0.25;                    // at the reference BDP
  Time fast_increase_below = Time::from_ps(1'000'000);  // 1 us
  double gamma = 0.8;                                   // multiplicative decrease
  double delay_weight = 0.0125;                         // EWMA of the delay
  double max_window_bdp = 1.5;                          // maxwnd (and the first cwnd) in BDPs
  std::uint32_t adjust_packets = 8;                     // increases applied every this many MSS received
  std::uint32_t qa_gate = 3;                            // quick adapt below maxwnd / 2^qa_gate
  bool quick_adapt = true;

  void validate() const;
};

class Nscc final : public CongestionControl {
 public:
  Nscc(const NsccParams& p, const CcContext& ctx);

  BitRate rate() const override { return BitRate::from_bps(line_); }
  std::uint64_t window() const override { return static_cast<std::uint64_t>(cwnd_); }
  Time rtt() const override { return rtt_; }
  void on_ack(Time now, const AckInfo& ack) override;
  void on_timeout(Time now) override;
  const char* name() const override { return "nscc"; }

  double cwnd() const { return cwnd_; }
  double max_window() const { return maxwnd_; }
  Time target() const { return target_; }
  Time avg_delay() const { return Time::from_ps(static_cast<std::int64_t>(avg_delay_)); }
  // Derived constants, for tests and time series.
  double increase_alpha() const { return alpha_; }  // proportional increase, per ps
  double fi() const { return fi_; }
  double eta() const { return eta_; }
  double fi_scale() const { return fi_scale_; }

 private:
  void update_delay(double delay, bool ecn);
  // Quick adapt's check; true when it acted or the ACK's ECN is ignored.
  bool quick_adapt(Time now, bool loss, bool ecn, double delay, std::uint64_t in_flight);
  void on_nack(Time now, std::uint64_t in_flight);
  void fulfill(Time now);
  void clamp();

  const NsccParams& p_;
  RateListener* listener_;
  std::uint32_t qp_;
  std::int64_t line_;
  double mss_;
  double network_rtt_;  // ps
  Time target_;
  double alpha_, fi_, eta_, fi_scale_, qa_threshold_;  // alpha per ps; qa_threshold in ps
  double base_rtt_, maxwnd_, cwnd_, min_cwnd_;         // ps, bytes
  double avg_delay_ = 0;                               // ps
  double inc_ = 0, received_ = 0, achieved_ = 0, fi_count_ = 0;
  double bytes_ignored_ = 0, bytes_to_ignore_ = 0;
  bool increasing_ = false, trigger_qa_ = false, epoch_started_ = false;
  Time qa_end_, last_decrease_, last_adjust_;
  Time rtt_ = Time::max();
};

}  // namespace fabriclab::fabric
