#include "fabric/cc/nscc.h"

#include <algorithm>

#include "core/error.h"
#include "fabric/params.h"

namespace fabriclab::fabric {

namespace {
constexpr double kReferenceBdp = 150000;      // bytes: 100 Gb/s x 12 us
constexpr double kReferenceRtt = 12'000'000;  // ps
}  // namespace

void NsccParams::validate() const { params::validate(nscc_table(), *this); }

Nscc::Nscc(const NsccParams& p, const CcContext& ctx)
    : p_(p),
      listener_(ctx.listener),
      qp_(ctx.qp),
      line_(ctx.line.bps()),
      mss_(ctx.mtu),
      network_rtt_(static_cast<double>(ctx.base_rtt.ps())),
      target_(p.target_qdelay > Time() ? p.target_qdelay : Time::from_ps(ctx.base_rtt.ps() * 3 / 4)) {
  const double bytes_per_ps = static_cast<double>(line_) / 8e12;
  const double a = network_rtt_ * bytes_per_ps / kReferenceBdp;
  const double target = static_cast<double>(target_.ps());
  const double b = target / kReferenceRtt;
  alpha_ = target > 0 ? p.pi * mss_ * a * b / target : 0;
  fi_ = p.fair_increase * mss_ * a;
  eta_ = p.eta * mss_ * a;
  fi_scale_ = p.fast_increase_scale * a;
  qa_threshold_ = 4 * target;
  base_rtt_ = network_rtt_;
  maxwnd_ = p.max_window_bdp * base_rtt_ * bytes_per_ps;
  min_cwnd_ = mss_;
  maxwnd_ = std::max(maxwnd_, min_cwnd_);
  cwnd_ = maxwnd_;
}

void Nscc::clamp() { cwnd_ = std::clamp(cwnd_, min_cwnd_, maxwnd_); }

void Nscc::update_delay(double delay, bool ecn) {
  const double w = p_.delay_weight;
  // Without ECN a delay above target is the delay's spike, not the queue's: it enters as
  // a quarter of the base RTT.
  const double sample = !ecn && delay > static_cast<double>(target_.ps()) ? 0.25 * base_rtt_ : delay;
  avg_delay_ = w * sample + (1 - w) * avg_delay_;
}

bool Nscc::quick_adapt(Time now, bool loss, bool ecn, double delay, std::uint64_t in_flight) {
  if (!p_.quick_adapt) return false;
  bool done = false, ignore = false;
  if (bytes_ignored_ < bytes_to_ignore_ && ecn) {
    ignore = true;
  } else if (!epoch_started_ || now > qa_end_) {
    if (epoch_started_ && (trigger_qa_ || loss || delay > qa_threshold_) &&
        achieved_ < maxwnd_ / static_cast<double>(1u << p_.qa_gate)) {
      cwnd_ = std::max(achieved_, min_cwnd_);
      bytes_to_ignore_ = static_cast<double>(in_flight);
      bytes_ignored_ = 0;
      trigger_qa_ = false;
      done = true;
    }
    achieved_ = 0;
    epoch_started_ = true;
    qa_end_ = now + Time::from_ps(static_cast<std::int64_t>(base_rtt_)) + target_;
  }
  if (done || ignore) {
    inc_ = 0;
    received_ = 0;
  }
  return done || ignore;
}

void Nscc::fulfill(Time now) {
  cwnd_ += inc_ / cwnd_;
  if ((now - last_adjust_).ps() >= static_cast<std::int64_t>(network_rtt_)) {
    cwnd_ += eta_;
    last_adjust_ = now;
  }
  inc_ = 0;
  received_ = 0;
}

void Nscc::on_nack(Time now, std::uint64_t in_flight) {
  bytes_ignored_ += mss_;
  update_delay(network_rtt_, true);
  trigger_qa_ = true;
  if (quick_adapt(now, true, true, 0, in_flight)) return;
  cwnd_ -= mss_;
  clamp();
}

void Nscc::on_ack(Time now, const AckInfo& a) {
  const double before = cwnd_;
  const double bytes = static_cast<double>(a.delivered) * mss_;
  achieved_ += bytes;
  received_ += bytes;
  bytes_ignored_ += bytes;
  if (a.trimmed || a.nak) {
    on_nack(now, a.in_flight);
  } else {
    double delay = avg_delay_;
    if (a.rtt != Time::max()) {
      rtt_ = a.rtt;
      const auto raw = static_cast<double>(a.rtt.ps());
      if (raw < base_rtt_) {
        base_rtt_ = raw;
        maxwnd_ = std::max(p_.max_window_bdp * base_rtt_ * static_cast<double>(line_) / 8e12, min_cwnd_);
      }
      delay = raw - base_rtt_;
      update_delay(delay, a.ecn_echo);
    }
    const double target = static_cast<double>(target_.ps());
    if (!quick_adapt(now, false, a.ecn_echo, delay, a.in_flight)) {
      if (!a.ecn_echo && delay >= target) {
        inc_ += fi_ * bytes;  // fair increase
      } else if (!a.ecn_echo) {
        bool fast = false;
        if (delay < static_cast<double>(p_.fast_increase_below.ps())) {
          fi_count_ += bytes;
          if (fi_count_ > cwnd_ || increasing_) {
            cwnd_ += bytes * fi_scale_;
            fast = increasing_ = true;
          }
        } else {
          fi_count_ = 0;
        }
        if (!fast) {
          increasing_ = false;
          inc_ += alpha_ * bytes * (target - delay);  // proportional increase
        }
      } else if (delay >= target) {
        increasing_ = false;
        fi_count_ = 0;
        if (avg_delay_ > target && now - last_decrease_ > Time::from_ps(static_cast<std::int64_t>(base_rtt_))) {
          cwnd_ *= std::max(1 - p_.gamma * (avg_delay_ - target) / avg_delay_, 0.5);
          last_decrease_ = now;
        }
      }
      clamp();
      if (received_ > p_.adjust_packets * mss_ || (now - last_adjust_).ps() > static_cast<std::int64_t>(network_rtt_))
        fulfill(now);
      clamp();
    }
  }
  if (cwnd_ > before && listener_) listener_->rate_raised(qp_);
}

void Nscc::on_timeout(Time /*now*/) {
  cwnd_ -= mss_;
  clamp();
}

}  // namespace fabriclab::fabric
