#include "fabric/cc/timely.h"

#include <algorithm>

#include "core/error.h"
#include "fabric/params.h"

namespace fabriclab::fabric {

TimelyParams TimelyParams::preset_named(const std::string& name) {
  TimelyParams p;
  p.preset = name;
  if (name == "paper") return p;
  if (name == "ns3" || name == "ns3-vwin") {
    p.ai = Mbps(100);
    p.hai_rate = Mbps(500);
    p.min_rate = Mbps(1000);
    p.update = TimelyUpdate::per_rtt;
    p.hai_count = TimelyHaiCount::increases;
    if (name == "ns3-vwin") p.window = CcWindow::rate_bdp;
    return p;
  }
  throw InputError("unknown nic.timely.preset '" + name + "' (expected: paper, ns3, ns3-vwin)");
}

void TimelyParams::validate() const {
  params::validate(timely_table(), *this);
  if (t_high < t_low)
    throw InputError("nic.timely.t_high (" + to_string(t_high) + ") must not be below nic.timely.t_low (" +
                     to_string(t_low) + ")");
}

Timely::Timely(const TimelyParams& p, const CcContext& ctx)
    : RateWithWindow(ctx, p.min_rate, p.window),
      p_(p),
      ai_(p.ai.bps()),
      // (N x ai beyond the line is the line: saturated before it could overflow)
      hai_(p.hai_rate.bps() > 0 ? p.hai_rate.bps()
                                : static_cast<std::int64_t>(std::min<double>(static_cast<double>(p.hai_after) *
                                                                                 static_cast<double>(p.ai.bps()),
                                                                             static_cast<double>(ctx.line.bps())))) {}

void Timely::on_ack(Time /*now*/, const AckInfo& a) {
  if (a.rtt == Time::max()) return;
  if (p_.update == TimelyUpdate::per_rtt) {
    if (a.acked <= update_psn_) return;  // the model's fast reaction: nothing
    update_psn_ = a.next_psn;
  }
  if (have_prev_) update(a.rtt);
  prev_ = a.rtt;
  have_prev_ = true;
}

void Timely::increase(std::int64_t step) {
  if (p_.hai_count == TimelyHaiCount::increases) ++streak_;
  raise(step);
}

void Timely::update(Time rtt) {
  const double diff = static_cast<double>(rtt.ps() - prev_.ps());
  rtt_diff_ = (1 - p_.alpha) * rtt_diff_ + p_.alpha * diff;
  const double gradient = rtt_diff_ / static_cast<double>(p_.min_rtt.ps());
  const bool by_increases = p_.hai_count == TimelyHaiCount::increases;
  if (!by_increases) streak_ = gradient <= 0 ? streak_ + 1 : 0;
  const bool hai = streak_ >= p_.hai_after;
  double c;
  if (rtt < p_.t_low) {
    increase(by_increases && hai ? hai_ : ai_);
    return;
  }
  if (rtt > p_.t_high) {
    c = 1 - p_.beta * (1 - static_cast<double>(p_.t_high.ps()) / static_cast<double>(rtt.ps()));
  } else if (gradient <= 0) {
    increase(hai ? hai_ : ai_);
    return;
  } else {
    c = std::max(0.0, 1 - p_.beta * gradient);
  }
  if (by_increases) streak_ = 0;
  cut(c);
}

}  // namespace fabriclab::fabric
