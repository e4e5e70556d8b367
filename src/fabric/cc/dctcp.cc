#include "fabric/cc/dctcp.h"

#include <algorithm>

#include "core/error.h"
#include "fabric/params.h"

namespace fabriclab::fabric {

DctcpParams DctcpParams::preset_named(const std::string& name) {
  DctcpParams p;
  p.preset = name;
  if (name == "default") return p;
  if (name == "ns3") {
    p.rate_ai = Mbps(615);
    return p;
  }
  throw InputError("unknown nic.dctcp.preset '" + name + "' (expected: default, ns3)");
}

void DctcpParams::validate() const { params::validate(dctcp_table(), *this); }

Dctcp::Dctcp(const DctcpParams& p, const CcContext& ctx)
    : RateWithWindow(ctx, p.min_rate, p.window),
      p_(p),
      // 0: one MTU per base RTT (what run.py's 615 Mb/s is for its 1 KB and 13 us).
      ai_(p.rate_ai.bps() > 0 ? p.rate_ai.bps()
                              : rate_of(Bytes::from_count(ctx.mtu), std::max(ctx.base_rtt, Time::from_ps(1))).bps()),
      alpha_(p.initial_alpha) {}

void Dctcp::on_ack(Time /*now*/, const AckInfo& a) {
  marked_ += a.ecn_echo ? 1 : 0;
  bool updated = false;
  if (a.acked > update_psn_) {
    updated = true;
    if (update_psn_ == 0) {
      batch_ = a.next_psn + 1;
    } else {
      const double f = std::min(1.0, static_cast<double>(marked_) / batch_);
      alpha_ = (1 - p_.g) * alpha_ + p_.g * f;
      marked_ = 0;
      batch_ = a.next_psn - a.acked + 1;
    }
    update_psn_ = a.next_psn;
  }
  if (cwr_ && a.acked > high_psn_) cwr_ = false;
  if (a.ecn_echo && !cwr_) {
    cut(1 - alpha_ / 2);
    cwr_ = true;
    high_psn_ = a.next_psn;
  }
  if (!cwr_ && updated) raise(ai_);
}

}  // namespace fabriclab::fabric
