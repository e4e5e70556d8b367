// DCQCN (Zhu et al., SIGCOMM 2015, and the ConnectX firmware's version of it) behind the
// congestion-control interface: the reaction point of a sending QP. Its parameters carry
// the sysfs names of `ecn/roce_rp/*` and `ecn/roce_np/*` in their units, so that a value
// read off a device means the same here; two presets give every value:
//
//   nvidia  ConnectX defaults: a CNP is noted; every `rate_reduce_monitor_period` (4 us)
//           a QP that saw one cuts Rc by min(Rc alpha/2, Rc (100 - rpg_min_dec_fac)%);
//           alpha is updated every `dce_tcp_rtt` (1 us) with the old alpha weighted
//           dce_tcp_g/1024 (1019): a time constant of about 0.2 ms.
//   paper   The SIGCOMM paper: each CNP cuts at once (rate_reduce_monitor_period = 0),
//           alpha += g(1 - alpha) at each CNP and decays every 55 us without one (g = 1/256,
//           i.e. dce_tcp_g = 1020): a time constant of about 14 ms.
//
// State per QP: current rate Rc, target rate Rt, alpha, timer stage T, byte stage BC. A cut
// sets Rt = Rc first (always with clamp_tgt_rate; with clamp_tgt_rate_after_time_inc only if
// the increase timer has fired since the last cut), then lowers Rc, floored at rpg_min_rate,
// and restarts T, BC, the byte counter and the increase timer. An increase event (the
// timer, every rpg_time_reset us: T += 1; or rpg_byte_reset bytes sent: BC += 1) does fast
// recovery while max(T, BC) < F (rpg_threshold), hyper increase Rt += (min(T, BC) - F)
// rpg_hai_rate once min(T, BC) > F, additive increase Rt += rpg_ai_rate otherwise; then
// Rc = (Rt + Rc)/2 (rounded up, so that Rc reaches Rt), both capped at the maximum rate.
// The first CNP of a QP at its maximum rate sets alpha = initial_alpha_value/1024 and, if
// rate_to_set_on_first_cnp is not 0, Rc to it. A QP back at its maximum rate with
// Rt = maximum stops its timers until its next CNP.
//
// Readings simulated where sources disagree (also written into summary.json):
//   dce_tcp_g       the weight of the OLD alpha, out of 1024:
//                   alpha = (g alpha + (1024 - g) cnp_seen) / 1024
//   rpg_byte_reset  in 64-byte units of frames sent (32767: 2 MiB per stage), not bytes.
//                   In bytes, a 32 KiB stage at 50 Gb/s would raise the rate every 5 us,
//                   60 times as often as the 300 us timer, and the default NVIDIA values
//                   would never bring an incast queue down; in 64-byte units the byte
//                   counter and the timer pace recovery alike near line rate, as a
//                   firmware default plausibly intends.
//
// Alpha decays lazily (computed when read, period by period, from the last update), so an
// idle QP costs no events; the increase timer and the monitor period are events, only
// while the QP is rate-limited.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/simulator.h"
#include "core/units.h"
#include "fabric/cc/congestion.h"

namespace fabriclab::fabric {

struct DcqcnParams {
  std::string preset = "nvidia";
  std::uint32_t rate_reduce_monitor_period = 4;  // us; 0: cut at each CNP as it arrives
  std::uint32_t initial_alpha_value = 1023;      // out of 1024
  std::uint32_t rate_to_set_on_first_cnp = 0;    // Mb/s; 0 = keep the current rate
  std::uint32_t rpg_gd = 11;                     // cut = Rc alpha_raw / 2^rpg_gd
  std::uint32_t rpg_min_dec_fac = 50;            // percent: a cut keeps at least this share
  std::uint32_t rpg_min_rate = 1;                // Mb/s
  std::uint32_t dce_tcp_rtt = 1;                 // us: alpha update period
  std::uint32_t dce_tcp_g = 1019;                // out of 1024: weight of the old alpha
  std::uint32_t rpg_time_reset = 300;            // us: increase timer
  std::uint32_t rpg_byte_reset = 32767;          // 64-byte units: byte counter (0 = off)
  std::uint32_t rpg_threshold = 1;               // F
  std::uint32_t rpg_ai_rate = 5;                 // Mb/s
  std::uint32_t rpg_hai_rate = 50;               // Mb/s
  std::uint32_t rpg_max_rate = 0;                // Mb/s; 0 = line rate
  bool clamp_tgt_rate = false;
  bool clamp_tgt_rate_after_time_inc = true;

  static DcqcnParams nvidia();
  static DcqcnParams paper();
  // The preset named `name`; throws InputError naming the known ones.
  static DcqcnParams preset_named(const std::string& name);
  // Throws InputError naming the first parameter out of its declared range
  // (fabric/params.h) or in conflict with another.
  void validate() const;
};

// The notification point (the receiving NIC): CNPs for CE-marked packets.
struct CnpParams {
  bool enabled = true;
  std::uint32_t min_time_between_cnps = 4;  // us
  bool per_qp = false;                      // false: one interval per port (ConnectX)
  std::uint8_t cnp_802p_prio = 6;
  std::uint8_t cnp_dscp = 48;

  static CnpParams nvidia() { return CnpParams{}; }
  static CnpParams paper();  // one CNP interval per QP, 50 us
};

// A named set of DCQCN values, for both ends: what `nic.roce_rp.preset` selects.
struct DcqcnPreset {
  std::string_view name;
  DcqcnParams rp;
  CnpParams np;
};
// nvidia, paper.
const std::vector<DcqcnPreset>& dcqcn_presets();
// The preset named `name`; throws InputError naming the known ones.
const DcqcnPreset& dcqcn_preset(std::string_view name);

class Dcqcn final : public CongestionControl, public EventHandler {
 public:
  // `params` must outlive this object (the NIC's configuration).
  Dcqcn(const DcqcnParams& params, Simulator& sim, BitRate line, RateListener* listener, std::uint32_t qp);

  BitRate rate() const override { return BitRate::from_bps(rc_); }
  BitRate target_rate() const override { return BitRate::from_bps(rt_); }
  double alpha(Time now) const override;
  void on_sent(Time now, std::uint32_t wire_bytes) override;
  void on_cnp(Time now) override;
  const char* name() const override { return "dcqcn"; }
  void on_event(std::uint64_t tag) override;

  std::uint64_t cnps() const { return cnps_; }
  std::uint64_t cuts() const { return cuts_; }
  std::uint32_t timer_stage() const { return t_; }
  std::uint32_t byte_stage() const { return bc_; }

 private:
  enum : std::uint64_t { kIncreaseTimer = 1, kMonitor = 2 };
  double alpha_update(double a, bool cnp_seen) const;
  void advance_alpha(Time now);
  void cut(Time now);
  void increase();
  void restart_timer(Time now);

  const DcqcnParams& p_;
  Simulator& sim_;
  RateListener* listener_;
  std::uint32_t qp_;
  std::int64_t max_, min_;  // bps
  std::int64_t rc_, rt_;    // bps
  Time alpha_period_;
  double alpha_ = 0;
  Time alpha_ref_;  // start of the alpha period in progress
  bool cnp_in_period_ = false;
  bool limited_ = false;      // below the maximum rate (or Rt below it) since a CNP
  bool cnp_pending_ = false;  // a CNP since the last monitor check
  std::uint32_t t_ = 0, bc_ = 0;
  std::uint64_t bytes_ = 0;
  Time timer_due_ = Time::max(), monitor_due_ = Time::max();
  std::uint64_t cnps_ = 0, cuts_ = 0;
};

}  // namespace fabriclab::fabric
