// What the rate policies that read ACKs share (DCTCP, TIMELY, HPCC): a rate between a floor and
// the line, whose rises wake the NIC (RateListener), and optionally the HPCC ns-3 model's
// variable window at that rate (VAR_WIN): W = max(1, BDP x R / line) bytes, BDP = line x
// base RTT.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/params.h"
#include "core/units.h"
#include "fabric/cc/congestion.h"

namespace fabriclab::fabric {

// A policy's window: the bytes one base RTT carries at its current rate, or none.
enum class CcWindow : std::uint8_t { rate_bdp, off };
inline constexpr params::EnumNames<CcWindow, 2> kCcWindowNames{
    {{CcWindow::rate_bdp, "rate_bdp"}, {CcWindow::off, "off"}}};

class RateWithWindow : public CongestionControl {
 public:
  BitRate rate() const override { return BitRate::from_bps(rate_); }
  std::uint64_t window() const override { return window_ == CcWindow::off ? 0 : rate_bdp_window(bdp_, rate_, line_); }

 protected:
  // Starts at the line rate; `min_rate` above the line is the line.
  RateWithWindow(const CcContext& ctx, BitRate min_rate, CcWindow window)
      : listener_(ctx.listener),
        qp_(ctx.qp),
        line_(ctx.line.bps()),
        rate_(ctx.line.bps()),
        min_(std::min(min_rate.bps(), ctx.line.bps())),
        bdp_(static_cast<std::uint64_t>(bytes_in(ctx.line, ctx.base_rtt).count())),
        window_(window) {}
  // R = min(line, R + step), and the NIC told if it rose.
  void raise(std::int64_t step) { set_rate(rate_ + step); }
  // R = max(floor, R x factor), truncated to the bit per second.
  void cut(double factor) { rate_ = std::max(min_, static_cast<std::int64_t>(static_cast<double>(rate_) * factor)); }
  // R = `bps` within [floor, line], and the NIC told if it rose.
  void set_rate(std::int64_t bps) {
    const std::int64_t before = rate_;
    rate_ = std::clamp(bps, min_, line_);
    if (rate_ > before && listener_) listener_->rate_raised(qp_);
  }
  std::int64_t line_bps() const { return line_; }

 private:
  RateListener* listener_;
  std::uint32_t qp_;
  std::int64_t line_, rate_, min_;  // bps
  std::uint64_t bdp_;               // bytes: line x base RTT
  CcWindow window_;
};

}  // namespace fabriclab::fabric
