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
// Variants, where devices and reference models differ (roce_rp.* keys; the first value of
// each is the default, the reading above; docs/fabric.md gives the sources):
//   stage_compare        after_increment: an increase event raises its stage counter, then
//                        compares it with F (F - 1 fast-recovery steps after a cut);
//                        before_increment: compares first (F steps; ns-3's RDMA model).
//   increase_stages      both_counters: the phase is read off max(T, BC) and min(T, BC);
//                        timer: off T alone (fast while T < F, additive at T = F, hyper
//                        past it), which needs the byte counter off (rpg_byte_reset = 0).
//   hyper_increase       growing: Rt += (stage - F) R_HAI; constant: Rt += R_HAI.
//   alpha_after_recovery reset: the first CNP at full rate sets alpha (and the rate to set)
//                        again; keep: only the QP's first CNP ever does.
//   cut_grid             global: rate checks at multiples of the monitor period on the
//                        simulator's clock, alpha periods from the QP's creation;
//                        first_cnp: both clocks start at the QP's first CNP (alpha periods
//                        from it, checks 1 ns after each period's end, as ns-3 orders its
//                        check after the alpha update of the same instant); a CNP that
//                        sets alpha is not also a sample of its alpha period (nor, when
//                        cutting at each CNP, an update of alpha).
//   cut_alpha            quantized: the cut reads alpha in 1/1024 steps (the firmware's
//                        integer alpha); exact: alpha as it is.
//
// Alpha decays lazily (computed when read, period by period, from the last update), so an
// idle QP costs no events; the increase timer and the monitor period are events, only
// while the QP is rate-limited.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/params.h"
#include "core/simulator.h"
#include "core/units.h"
#include "fabric/cc/congestion.h"

namespace fabriclab::fabric {

enum class StageCompare : std::uint8_t { after_increment, before_increment };
enum class IncreaseStages : std::uint8_t { both_counters, timer };
enum class HyperIncrease : std::uint8_t { growing, constant };
enum class AlphaAfterRecovery : std::uint8_t { reset, keep };
enum class CutGrid : std::uint8_t { global, first_cnp };
enum class CutAlpha : std::uint8_t { quantized, exact };

inline constexpr params::EnumNames<StageCompare, 2> kStageCompareNames{
    {{StageCompare::after_increment, "after_increment"}, {StageCompare::before_increment, "before_increment"}}};
inline constexpr params::EnumNames<IncreaseStages, 2> kIncreaseStagesNames{
    {{IncreaseStages::both_counters, "both_counters"}, {IncreaseStages::timer, "timer"}}};
inline constexpr params::EnumNames<HyperIncrease, 2> kHyperIncreaseNames{
    {{HyperIncrease::growing, "growing"}, {HyperIncrease::constant, "constant"}}};
inline constexpr params::EnumNames<AlphaAfterRecovery, 2> kAlphaAfterRecoveryNames{
    {{AlphaAfterRecovery::reset, "reset"}, {AlphaAfterRecovery::keep, "keep"}}};
inline constexpr params::EnumNames<CutGrid, 2> kCutGridNames{
    {{CutGrid::global, "global"}, {CutGrid::first_cnp, "first_cnp"}}};
inline constexpr params::EnumNames<CutAlpha, 2> kCutAlphaNames{
    {{CutAlpha::quantized, "quantized"}, {CutAlpha::exact, "exact"}}};

struct DcqcnParams {
  std::string preset = "nvidia";
  std::uint32_t rate_reduce_monitor_period = 4;  // us; 0: cut at each CNP as it arrives
  std::uint32_t initial_alpha_value = 1023;      // out of 1024
  BitRate rate_to_set_on_first_cnp;              // 0 = keep the current rate
  std::uint32_t rpg_gd = 11;                     // cut = Rc alpha_raw / 2^rpg_gd
  std::uint32_t rpg_min_dec_fac = 50;            // percent: a cut keeps at least this share
  BitRate rpg_min_rate = BitRate::from_bps(1'000'000);
  std::uint32_t dce_tcp_rtt = 1;         // us: alpha update period
  std::uint32_t dce_tcp_g = 1019;        // out of 1024: weight of the old alpha
  std::uint32_t rpg_time_reset = 300;    // us: increase timer
  std::uint32_t rpg_byte_reset = 32767;  // 64-byte units: byte counter (0 = off)
  std::uint32_t rpg_threshold = 1;       // F
  // The rates are whole Mb/s on a ConnectX (its sysfs files); finer where a model needs it.
  BitRate rpg_ai_rate = BitRate::from_bps(5'000'000);
  BitRate rpg_hai_rate = BitRate::from_bps(50'000'000);
  BitRate rpg_max_rate;  // 0 = line rate
  bool clamp_tgt_rate = false;
  bool clamp_tgt_rate_after_time_inc = true;
  StageCompare stage_compare = StageCompare::after_increment;
  IncreaseStages increase_stages = IncreaseStages::both_counters;
  HyperIncrease hyper_increase = HyperIncrease::growing;
  AlphaAfterRecovery alpha_after_recovery = AlphaAfterRecovery::reset;
  CutGrid cut_grid = CutGrid::global;
  CutAlpha cut_alpha = CutAlpha::quantized;

  static DcqcnParams nvidia();
  static DcqcnParams paper();
  static DcqcnParams ns3_mlx();
  // The preset named `name`; throws InputError naming the known ones.
  static DcqcnParams preset_named(const std::string& name);
  // Throws InputError naming the first parameter out of its declared range
  // (fabric/params.h) or in conflict with another.
  void validate() const;
};

// How the notification point tells the sender (roce_np.cnp_form): a CNP frame (RoCEv2
// Annex A17), or the BECN bit of the BTH on the next ACK or NAK to the QP (InfiniBand's
// backward notification; the "CNP flag on the ACK" of ns-3's RDMA model), which needs
// the reliable transport.
enum class CnpForm : std::uint8_t { frame, becn };
// How notifications are paced (roce_np.cnp_pacing), per port or per QP: at most one within
// min_time_between_cnps of the last (since_last), or at most one per fixed window of that
// length on the simulator's clock, at the window's first marked packet (windows: what
// fluid models of DCQCN assume).
enum class CnpPacing : std::uint8_t { since_last, windows };
inline constexpr params::EnumNames<CnpForm, 2> kCnpFormNames{{{CnpForm::frame, "frame"}, {CnpForm::becn, "becn"}}};
inline constexpr params::EnumNames<CnpPacing, 2> kCnpPacingNames{
    {{CnpPacing::since_last, "since_last"}, {CnpPacing::windows, "windows"}}};

// The notification point (the receiving NIC): CNPs for CE-marked packets.
struct CnpParams {
  bool enabled = true;
  std::uint32_t min_time_between_cnps = 4;  // us
  bool per_qp = false;                      // false: one interval per port (ConnectX)
  CnpForm form = CnpForm::frame;
  CnpPacing pacing = CnpPacing::since_last;
  std::uint8_t cnp_802p_prio = 6;
  std::uint8_t cnp_dscp = 48;

  static CnpParams nvidia() { return CnpParams{}; }
  static CnpParams paper();    // one CNP interval per QP, 50 us
  static CnpParams ns3_mlx();  // BECN on the ACK of every marked packet
};

// A named set of DCQCN values, for both ends: what `nic.roce_rp.preset` selects.
struct DcqcnPreset {
  std::string_view name;
  DcqcnParams rp;
  CnpParams np;
};
// nvidia, paper, ns3-mlx.
const std::vector<DcqcnPreset>& dcqcn_presets();
// The preset named `name`; throws InputError naming the known ones.
const DcqcnPreset& dcqcn_preset(std::string_view name);

class Dcqcn final : public CongestionControl, public EventHandler {
 public:
  // `params` must outlive this object (the NIC's configuration). Alpha's first decay
  // period starts at the run's start, for a QP made during the run too (a load's flow fed
  // then is the QP it would have been had every flow been made before the run).
  Dcqcn(const DcqcnParams& params, Simulator& sim, BitRate line, RateListener* listener, std::uint32_t qp);

  BitRate rate() const override { return BitRate::from_bps(rc_); }
  BitRate target_rate() const override { return BitRate::from_bps(rt_); }
  double alpha(Time now) const override;
  void on_sent(Time now, std::uint32_t wire_bytes) override;
  void on_cnp(Time now) override;
  const char* name() const override { return "dcqcn"; }
  void retire() override { listener_ = nullptr; }
  bool has_pending_events(Time now) const override {
    return monitor_due_ != Time::max() || (timer_last_ != Time::max() && timer_last_ > now);
  }
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
  // An increase event; `t` and `bc` are the stages its phase is read off.
  void increase(std::uint32_t t, std::uint32_t bc);
  void restart_timer(Time now);
  Time next_check(Time now) const;

  const DcqcnParams& p_;
  Simulator& sim_;
  RateListener* listener_;
  std::uint32_t qp_;
  std::int64_t max_, min_;  // bps
  std::int64_t rc_, rt_;    // bps
  Time alpha_period_;
  double alpha_ = 0;
  Time alpha_ref_;  // start of the alpha period in progress (the run's, at first)
  bool cnp_in_period_ = false;
  bool limited_ = false;      // below the maximum rate (or Rt below it) since a CNP
  bool cnp_pending_ = false;  // a CNP since the last monitor check
  bool seen_cnp_ = false;     // any CNP yet
  Time grid_origin_;          // rate checks at grid_origin_ + k period, k >= 1
  std::uint32_t t_ = 0, bc_ = 0;
  std::uint64_t bytes_ = 0;
  Time timer_due_ = Time::max(), monitor_due_ = Time::max();
  // The latest increase-timer event scheduled (a recovery by bytes clears timer_due_ with
  // one still queued, which then does nothing; scheduled times only grow).
  Time timer_last_ = Time::max();
  std::uint64_t cnps_ = 0, cuts_ = 0;
};

}  // namespace fabriclab::fabric
