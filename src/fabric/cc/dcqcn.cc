#include "fabric/cc/dcqcn.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/error.h"
#include "fabric/params.h"

namespace fabriclab::fabric {

namespace {
constexpr std::int64_t kUs = 1'000'000;  // ps
}  // namespace

DcqcnParams DcqcnParams::nvidia() { return DcqcnParams{}; }

DcqcnParams DcqcnParams::paper() {
  DcqcnParams p;
  p.preset = "paper";
  p.rate_reduce_monitor_period = 0;  // cut at each CNP
  p.initial_alpha_value = 1023;      // alpha starts at 1
  p.rate_to_set_on_first_cnp = {};
  p.rpg_gd = 11;           // Rc (1 - alpha/2)
  p.rpg_min_dec_fac = 50;  // alpha <= 1: never binding
  p.rpg_min_rate = Mbps(1);
  p.dce_tcp_rtt = 55;                        // K = 55 us
  p.dce_tcp_g = 1020;                        // g = 1/256 = (1024 - 1020)/1024
  p.rpg_time_reset = 55;                     // T_inc = 55 us
  p.rpg_byte_reset = 10 * 1024 * 1024 / 64;  // B = 10 MiB, in 64-byte units
  p.rpg_threshold = 5;                       // F
  p.rpg_ai_rate = Mbps(40);                  // R_AI = 40 Mb/s
  p.rpg_hai_rate = Mbps(200);                // R_HAI = 200 Mb/s
  p.rpg_max_rate = {};
  p.clamp_tgt_rate = true;  // Rt = Rc at every CNP
  p.clamp_tgt_rate_after_time_inc = true;
  return p;
}

// The DCQCN of the ns-3 RDMA model (HPCC's simulation/src/point-to-point/model/rdma-hw.cc,
// CC_MODE 1, "Mellanox's version of DCQCN", and the values of its simulation/run.py for
// `--cc dcqcn`, at 100 Gb/s), parameter by parameter in docs/fabric.md.
DcqcnParams DcqcnParams::ns3_mlx() {
  DcqcnParams p;
  p.preset = "ns3-mlx";
  p.rate_reduce_monitor_period = 4;                   // RATE_DECREASE_INTERVAL 4 (us)
  p.initial_alpha_value = 1024;                       // the first CNP sets m_alpha = 1
  p.rate_to_set_on_first_cnp = {};                    // RateOnFirstCnp 1.0: the current rate
  p.rpg_gd = 11;                                      // m_rate * (1 - m_alpha / 2)
  p.rpg_min_dec_fac = 50;                             // no cap in the model; alpha <= 1 never reaches it
  p.rpg_min_rate = Mbps(1000);                        // MIN_RATE 1000Mb/s
  p.dce_tcp_rtt = 1;                                  // ALPHA_RESUME_INTERVAL 1 (us)
  p.dce_tcp_g = 1020;                                 // EWMA_GAIN 0.00390625 = 4/1024
  p.rpg_time_reset = 300;                             // RP_TIMER 300 (us)
  p.rpg_byte_reset = 0;                               // no byte counter
  p.rpg_threshold = 1;                                // FAST_RECOVERY_TIMES 1
  p.rpg_ai_rate = Mbps(20);                           // RATE_AI = 5 x bw / 25 Mb/s, at bw = 100
  p.rpg_hai_rate = Mbps(200);                         // RATE_HAI = 50 x bw / 25 Mb/s, at bw = 100
  p.rpg_max_rate = {};                                // the NIC's rate
  p.clamp_tgt_rate = false;                           // CLAMP_TARGET_RATE 0 ...
  p.clamp_tgt_rate_after_time_inc = true;             // ... so Rt = Rc only if m_rpTimeStage != 0
  p.stage_compare = StageCompare::before_increment;   // RateIncEventMlx, then m_rpTimeStage++
  p.increase_stages = IncreaseStages::timer;          // the timer's stage alone
  p.hyper_increase = HyperIncrease::constant;         // m_targetRate += m_rhai
  p.alpha_after_recovery = AlphaAfterRecovery::keep;  // m_first_cnp is cleared for good
  p.cut_grid = CutGrid::first_cnp;                    // alpha and decrease events from the first CNP
  p.cut_alpha = CutAlpha::exact;                      // a double m_alpha
  return p;
}

CnpParams CnpParams::ns3_mlx() {
  CnpParams p;
  p.form = CnpForm::becn;       // the ACK's CNP flag (qbbHeader::FLAG_CNP)
  p.min_time_between_cnps = 0;  // set on every ACK of a CE-marked packet
  p.per_qp = true;              // (no interval to share)
  p.pacing = CnpPacing::since_last;
  return p;
}

CnpParams CnpParams::paper() {
  CnpParams p;
  p.min_time_between_cnps = 50;  // the paper's N = 50 us
  p.per_qp = true;               // its NP keeps one interval per flow
  return p;
}

const std::vector<DcqcnPreset>& dcqcn_presets() {
  static const std::vector<DcqcnPreset> presets{{"nvidia", DcqcnParams::nvidia(), CnpParams::nvidia()},
                                                {"paper", DcqcnParams::paper(), CnpParams::paper()},
                                                {"ns3-mlx", DcqcnParams::ns3_mlx(), CnpParams::ns3_mlx()}};
  return presets;
}

const DcqcnPreset& dcqcn_preset(std::string_view name) {
  std::string known;
  for (const auto& p : dcqcn_presets()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + std::string(p.name);
  }
  throw InputError("unknown DCQCN preset '" + std::string(name) + "' (expected: " + known + ")");
}

DcqcnParams DcqcnParams::preset_named(const std::string& name) { return dcqcn_preset(name).rp; }

void DcqcnParams::validate() const {
  params::validate(dcqcn_table(), *this);
  if (rpg_max_rate.bps() != 0 && rpg_max_rate.bps() < rpg_min_rate.bps())
    throw InputError("roce_rp.rpg_max_rate: expected 0 (line rate) or at least rpg_min_rate");
  if (increase_stages == IncreaseStages::timer && rpg_byte_reset != 0)
    throw InputError(
        "roce_rp.increase_stages = timer: expected rpg_byte_reset = 0 (the phases are read off the timer alone, so "
        "the byte counter must be off)");
}

Dcqcn::Dcqcn(const DcqcnParams& params, Simulator& sim, BitRate line, RateListener* listener, std::uint32_t qp)
    : p_(params),
      sim_(sim),
      listener_(listener),
      qp_(qp),
      max_(params.rpg_max_rate.bps() ? std::min(line.bps(), params.rpg_max_rate.bps()) : line.bps()),
      min_(std::min(params.rpg_min_rate.bps(), max_)),
      rc_(max_),
      rt_(max_),
      alpha_period_(Time::from_ps(params.dce_tcp_rtt * kUs)),
      alpha_(params.initial_alpha_value / 1024.0) {}

double Dcqcn::alpha_update(double a, bool cnp_seen) const {
  const double g = p_.dce_tcp_g;
  const double next = (g * a + (1024.0 - g) * (cnp_seen ? 1.0 : 0.0)) / 1024.0;
  return next < 1e-12 ? 0.0 : next;  // no denormal crawl toward zero
}

double Dcqcn::alpha(Time now) const {
  double a = alpha_;
  std::int64_t n = (now - alpha_ref_).ps() / alpha_period_.ps();
  if (n <= 0) return a;
  a = alpha_update(a, cnp_in_period_);
  for (--n; n > 0 && a > 0; --n) a = alpha_update(a, false);
  return a;
}

void Dcqcn::advance_alpha(Time now) {
  const std::int64_t n = (now - alpha_ref_).ps() / alpha_period_.ps();
  if (n <= 0) return;
  alpha_ = alpha(now);
  cnp_in_period_ = false;
  alpha_ref_ += Time::from_ps(n * alpha_period_.ps());
}

void Dcqcn::on_cnp(Time now) {
  ++cnps_;
  const bool first_ever = !seen_cnp_;
  seen_cnp_ = true;
  if (first_ever && p_.cut_grid == CutGrid::first_cnp) {
    alpha_ref_ = now;
    cnp_in_period_ = false;
    grid_origin_ = now + ns(1);
  } else {
    advance_alpha(now);
  }
  const bool first = p_.alpha_after_recovery == AlphaAfterRecovery::keep ? first_ever : !limited_;
  // Whether it counts as a CNP of the alpha period it falls in: on a QP's own clock, a CNP
  // that sets alpha does not.
  const bool sample = !(first && p_.cut_grid == CutGrid::first_cnp);
  limited_ = true;
  if (first) {  // the first CNP (at full rate, or ever)
    alpha_ = p_.initial_alpha_value / 1024.0;
    if (p_.rate_to_set_on_first_cnp.bps()) {
      rt_ = rc_;
      rc_ = std::clamp(p_.rate_to_set_on_first_cnp.bps(), min_, max_);
      t_ = bc_ = 0;
      bytes_ = 0;
      restart_timer(now);
      return;
    }
  }
  if (p_.rate_reduce_monitor_period == 0) {
    // The paper: the cut is now, by the alpha before this CNP; then alpha moves and its
    // decay period restarts.
    cut(now);
    if (sample) alpha_ = alpha_update(alpha_, true);
    alpha_ref_ = now;
    cnp_in_period_ = false;
    return;
  }
  if (sample) cnp_in_period_ = true;
  cnp_pending_ = true;
  if (monitor_due_ == Time::max()) {
    monitor_due_ = next_check(now);
    sim_.schedule_at(monitor_due_, *this, kMonitor);
  }
}

Time Dcqcn::next_check(Time now) const {
  // The first grid point after `now`, at least one period past the origin (a QP's own
  // grid has no check at its first CNP).
  const std::int64_t m = static_cast<std::int64_t>(p_.rate_reduce_monitor_period) * kUs;
  const std::int64_t since = (now - grid_origin_).ps();
  const std::int64_t k = since < 0 ? 1 : since / m + 1;
  return grid_origin_ + Time::from_ps(k * m);
}

void Dcqcn::cut(Time now) {
  ++cuts_;
  limited_ = true;  // also when the rate had recovered between the CNP and the monitor's check
  if (p_.clamp_tgt_rate || (p_.clamp_tgt_rate_after_time_inc && t_ > 0)) rt_ = rc_;
  const double alpha_raw = p_.cut_alpha == CutAlpha::quantized
                               ? static_cast<double>(static_cast<std::int64_t>(alpha_ * 1024.0))
                               : alpha_ * 1024.0;
  const double by_alpha = static_cast<double>(rc_) * alpha_raw / static_cast<double>(1u << p_.rpg_gd);
  const double cap = static_cast<double>(rc_) * (100 - p_.rpg_min_dec_fac) / 100.0;
  const auto dec = static_cast<std::int64_t>(std::min(by_alpha, cap));
  rc_ = std::max(min_, rc_ - dec);
  t_ = bc_ = 0;
  bytes_ = 0;
  restart_timer(now);
}

void Dcqcn::restart_timer(Time now) {
  timer_due_ = now + Time::from_ps(static_cast<std::int64_t>(p_.rpg_time_reset) * kUs);
  sim_.schedule_at(timer_due_, *this, kIncreaseTimer);
  timer_last_ = timer_due_;
}

void Dcqcn::increase(std::uint32_t t, std::uint32_t bc) {
  const std::uint32_t f = p_.rpg_threshold;
  const bool timer_only = p_.increase_stages == IncreaseStages::timer;
  const std::uint32_t high = timer_only ? t : std::max(t, bc), low = timer_only ? t : std::min(t, bc);
  const std::int64_t before = rc_;
  if (high < f) {
    // fast recovery: toward the target only
  } else if (low > f) {
    const std::int64_t steps = p_.hyper_increase == HyperIncrease::growing ? low - f : 1;
    rt_ += steps * p_.rpg_hai_rate.bps();
  } else {
    rt_ += p_.rpg_ai_rate.bps();
  }
  rt_ = std::min(rt_, max_);
  rc_ = std::min((rt_ + rc_ + 1) / 2, max_);
  if (rc_ == max_ && rt_ == max_) {  // recovered: no timers until the next CNP
    limited_ = false;
    timer_due_ = Time::max();
  }
  if (rc_ > before && listener_) listener_->rate_raised(qp_);
}

void Dcqcn::on_sent(Time /*now*/, std::uint32_t wire_bytes) {
  if (!limited_ || p_.rpg_byte_reset == 0) return;
  bytes_ += wire_bytes;
  const std::uint64_t stage = std::uint64_t{p_.rpg_byte_reset} * 64;
  while (limited_ && bytes_ >= stage) {
    bytes_ -= stage;
    const std::uint32_t was = bc_++;
    increase(t_, p_.stage_compare == StageCompare::before_increment ? was : bc_);
  }
}

void Dcqcn::on_event(std::uint64_t tag) {
  const Time now = sim_.now();
  if (tag == kMonitor) {
    monitor_due_ = Time::max();
    if (!cnp_pending_) return;
    cnp_pending_ = false;
    advance_alpha(now);
    cut(now);
    return;
  }
  if (tag != kIncreaseTimer) throw std::logic_error("Dcqcn: unknown event tag");
  if (now != timer_due_) return;  // superseded by a cut
  const std::uint32_t was = t_++;
  increase(p_.stage_compare == StageCompare::before_increment ? was : t_, bc_);
  if (limited_) restart_timer(now);
}

}  // namespace fabriclab::fabric
