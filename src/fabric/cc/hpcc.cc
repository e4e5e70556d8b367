#include "fabric/cc/hpcc.h"

#include <algorithm>

#include "core/error.h"
#include "fabric/params.h"

namespace fabriclab::fabric {

HpccParams HpccParams::preset_named(const std::string& name) {
  HpccParams p;
  p.preset = name;
  if (name == "paper") return p;
  if (name == "ns3") {
    p.max_stage = 0;
    return p;
  }
  throw InputError("unknown nic.hpcc.preset '" + name + "' (expected: paper, ns3)");
}

void HpccParams::validate() const { params::validate(hpcc_table(), *this); }

Hpcc::Hpcc(const HpccParams& p, const CcContext& ctx)
    : RateWithWindow(ctx, p.min_rate, CcWindow::rate_bdp),
      p_(p),
      t_ps_(static_cast<double>(ctx.base_rtt.ps())),
      rai_(p.rai.bps() > 0 ? p.rai.bps() : ctx.line.bps() / 2500),
      reference_(ctx.line.bps()) {
  if (ctx.base_rtt <= Time()) throw std::logic_error("hpcc: a QP without a base RTT");
  if (p.feedback == HpccFeedback::pint) {
    pint_.emplace(p.pint_log_base);
    pint_threshold_ = static_cast<std::uint32_t>(65536 * p.pint_prob);  // (the model's SetPintSmplThresh)
    if (pint_threshold_ < 65536)
      pint_rng_.emplace(ctx.seed,
                        "hpcc-pint/host" + std::to_string(ctx.tie_source) + "/qp" + std::to_string(ctx.serial));
  }
}

void Hpcc::update(double u, bool per_rtt) {
  const double c = u / p_.eta;
  std::int64_t r;
  std::uint32_t stage;
  if (c >= 1 || stage_ >= p_.max_stage) {
    // (U > 0: see the header; beyond the line the rate is the line)
    r = static_cast<std::int64_t>(std::min(static_cast<double>(reference_) / c, static_cast<double>(line_bps()))) +
        rai_;
    stage = 0;
  } else {
    r = reference_ + rai_;
    stage = stage_ + 1;
  }
  set_rate(r);
  if (per_rtt) {
    reference_ = rate().bps();
    stage_ = stage;
  }
}

void Hpcc::on_pint_ack(const AckInfo& a) {
  if (pint_rng_ && pint_rng_->below(65536) >= pint_threshold_) return;  // not sampled
  const bool per_rtt = a.acked > update_psn_;
  if (!have_last_) {  // the first: where the first round trip ends
    have_last_ = true;
    update_psn_ = a.next_psn;
    return;
  }
  if (!per_rtt && !p_.fast_react) return;
  u_ = pint_->decode(a.telemetry->pint);
  update(u_, per_rtt);
  if (per_rtt && a.next_psn > update_psn_) update_psn_ = a.next_psn;
}

void Hpcc::on_ack(Time /*now*/, const AckInfo& a) {
  if (pint_) {
    if (a.telemetry) on_pint_ack(a);
    return;
  }
  if (!a.telemetry || a.telemetry->hops == 0) return;
  const IntStack& now = *a.telemetry;
  const bool per_rtt = a.acked > update_psn_;
  if (!have_last_) {  // the first stack: the reference, nothing to compare it with
    last_ = now;
    have_last_ = true;
    update_psn_ = a.next_psn;
    return;
  }
  if (!per_rtt && !p_.fast_react) return;
  if (now.hops != last_.hops) {
    last_ = now;
  } else {
    double u_max = 0, tau = 0;
    bool read = false;
    for (std::uint32_t i = 0; i < now.hops; ++i) {
      const IntHop& h = now.hop[i];
      const IntHop& l = last_.hop[i];
      if (h.at <= l.at || h.tx_bytes < l.tx_bytes) continue;
      const double dt = static_cast<double>((h.at - l.at).ps());
      const double b = static_cast<double>(h.rate.bps()) * 1e-12;  // bits per ps
      const double tx = static_cast<double>(h.tx_bytes - l.tx_bytes) * 8 / dt;
      const double u = tx / b + static_cast<double>(std::min(h.qlen, l.qlen)) * 8 / (b * t_ps_);
      read = true;
      if (u > u_max) {
        u_max = u;
        tau = dt;
      }
    }
    last_ = now;
    if (read) {
      tau = std::min(tau, t_ps_);
      u_ = (u_ * (t_ps_ - tau) + u_max * tau) / t_ps_;
      update(u_, per_rtt);
    }
  }
  if (per_rtt && a.next_psn > update_psn_) update_psn_ = a.next_psn;
}

}  // namespace fabriclab::fabric
