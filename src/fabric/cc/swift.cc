#include "fabric/cc/swift.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "fabric/params.h"

namespace fabriclab::fabric {

SwiftParams SwiftParams::preset_named(const std::string& name) {
  SwiftParams p;
  p.preset = name;
  if (name == "default") return p;
  throw InputError("unknown nic.swift.preset '" + name + "' (expected: default)");
}

void SwiftParams::validate() const {
  params::validate(swift_table(), *this);
  if (fs_min_cwnd >= fs_max_cwnd) throw InputError("nic.swift.fs_min_cwnd must be below nic.swift.fs_max_cwnd");
  if (min_cwnd > max_cwnd) throw InputError("nic.swift.min_cwnd must not be above nic.swift.max_cwnd");
}

Swift::Swift(const SwiftParams& p, const CcContext& ctx)
    : p_(p),
      listener_(ctx.listener),
      qp_(ctx.qp),
      line_(ctx.line.bps()),
      mtu_(ctx.mtu),
      packet_wire_bytes_(ctx.packet_wire_bytes),
      fs_a_(static_cast<double>(p.fs_range.ps()) / (1 / std::sqrt(p.fs_min_cwnd) - 1 / std::sqrt(p.fs_max_cwnd))),
      fs_b_(-fs_a_ / std::sqrt(p.fs_max_cwnd)),
      f_{std::clamp(p.initial_cwnd, p.min_cwnd, p.max_cwnd), Time()},
      e_{std::clamp(p.initial_cwnd, p.min_cwnd, p.max_cwnd), Time()} {}

BitRate Swift::rate() const {
  const double c = cwnd();
  if (c >= 1 || rtt_ == Time::max()) return BitRate::from_bps(line_);
  // One packet per rtt / cwnd: its wire bits over that time.
  const double bps = static_cast<double>(packet_wire_bytes_) * 8 * c / (static_cast<double>(rtt_.ps()) * 1e-12);
  return BitRate::from_bps(std::clamp<std::int64_t>(static_cast<std::int64_t>(bps), 1, line_));
}

std::uint64_t Swift::window() const {
  const double c = cwnd();
  return c < 1 ? 1 : static_cast<std::uint64_t>(c * mtu_);
}

Time Swift::target(std::uint32_t hops) const {
  const double fs = std::clamp(fs_a_ / std::sqrt(f_.w) + fs_b_, 0.0, static_cast<double>(p_.fs_range.ps()));
  return p_.base_target + Time::from_ps(p_.hop_scaling.ps() * hops) + Time::from_ps(std::llround(fs));
}

void Swift::clamp_and_note(Window& win, Time now, double before) {
  win.w = std::clamp(win.w, p_.min_cwnd, p_.max_cwnd);
  if (win.w <= before) win.last_decrease = now;
}

void Swift::decrease(Window& win, Time now, double factor) {
  if (now - win.last_decrease < rtt_) return;
  const double before = win.w;
  win.w *= factor;
  clamp_and_note(win, now, before);
}

void Swift::update(Window& win, Time now, Time delay, Time target, std::uint32_t acked) {
  if (delay < target) {
    const double before = win.w;
    win.w += win.w >= 1 ? p_.ai * acked / win.w : p_.ai * acked;
    clamp_and_note(win, now, before);
  } else {
    const double d = static_cast<double>(delay.ps()), t = static_cast<double>(target.ps());
    decrease(win, now, std::max(1 - p_.beta * (d - t) / d, 1 - p_.max_mdf));
  }
}

void Swift::on_ack(Time now, const AckInfo& a) {
  const double before = cwnd();
  if (a.nak) {
    if (rtt_ != Time::max()) decrease(f_, now, 1 - p_.max_mdf);  // fast recovery
  } else if (a.rtt != Time::max()) {
    timeouts_ = 0;
    rtt_ = std::max(a.rtt, Time::from_ps(1));
    const Time endpoint = a.remote_hold + a.local_hold;
    const Time fabric = a.rtt - endpoint;
    update(f_, now, fabric, target(a.hops), a.newly_acked);
    update(e_, now, endpoint, p_.endpoint_target, a.newly_acked);
  }
  if (cwnd() > before && listener_) listener_->rate_raised(qp_);
}

void Swift::on_timeout(Time now) {
  const double before = f_.w;
  if (++timeouts_ >= p_.retx_reset) {
    f_.w = p_.min_cwnd;
    clamp_and_note(f_, now, before);
  } else if (rtt_ != Time::max()) {
    decrease(f_, now, 1 - p_.max_mdf);
  }
}

}  // namespace fabriclab::fabric
