// TIMELY (Mittal et al., SIGCOMM 2015): a sending QP's rate from its RTT samples and
// their gradient. Per update, with the sample `rtt` and the one before it, `prev`:
//
//   rtt_diff = (1 - alpha) rtt_diff + alpha (rtt - prev)      (EWMA; rtt_diff starts at 0)
//   gradient = rtt_diff / min_rtt
//   rtt < t_low            R += ai                (or the HAI step, hai_count = increases)
//   rtt > t_high           R *= 1 - beta (1 - t_high / rtt)
//   gradient <= 0          R += ai, or the HAI step once N updates in a row counted
//   otherwise              R *= max(0, 1 - beta gradient)
//
// R stays within [min_rate, line]; the first sample only sets `prev`. The HAI step is
// hai_rate, or N ai when hai_rate is 0 (the paper's N = 5, hai_after). Readings
// (nic.timely.*; the presets set them, docs/fabric.md gives the sources):
//   update     per_ack: every ACK with a sample is a completion event (the paper's; its
//              segment is nic.ack_every packets); per_rtt: only the first ACK past the
//              PSN sent when the QP last updated (the HPCC ns-3 model's).
//   hai_count  gradient: N counts consecutive updates whose gradient was <= 0, and only
//              the gradient branch takes the HAI step (the paper); increases: N counts
//              consecutive increases of either branch, reset by a decrease, and both
//              increase branches take it (the model's m_incStage).
#pragma once

#include <cstdint>
#include <string>

#include "core/params.h"
#include "core/units.h"
#include "fabric/cc/rate_window.h"

namespace fabriclab::fabric {

enum class TimelyUpdate : std::uint8_t { per_ack, per_rtt };
enum class TimelyHaiCount : std::uint8_t { gradient, increases };
inline constexpr params::EnumNames<TimelyUpdate, 2> kTimelyUpdateNames{
    {{TimelyUpdate::per_ack, "per_ack"}, {TimelyUpdate::per_rtt, "per_rtt"}}};
inline constexpr params::EnumNames<TimelyHaiCount, 2> kTimelyHaiCountNames{
    {{TimelyHaiCount::gradient, "gradient"}, {TimelyHaiCount::increases, "increases"}}};

struct TimelyParams {
  std::string preset = "paper";
  Time t_low = Time::from_ps(50'000'000);
  Time t_high = Time::from_ps(500'000'000);
  Time min_rtt = Time::from_ps(20'000'000);  // normalizes the gradient
  double alpha = 0.875;                      // EWMA weight of the new RTT difference
  double beta = 0.8;                         // multiplicative decrease factor
  BitRate ai = BitRate::from_bps(10'000'000);
  BitRate hai_rate;  // 0 = hai_after x ai
  std::uint32_t hai_after = 5;
  BitRate min_rate = BitRate::from_bps(10'000'000);
  TimelyUpdate update = TimelyUpdate::per_ack;
  TimelyHaiCount hai_count = TimelyHaiCount::gradient;
  CcWindow window = CcWindow::off;

  // paper: the values above; ns3: the HPCC model's run.py at 100 Gb/s (ai 100 Mb/s, hai
  // 500 Mb/s, min_rate 1000 Mb/s, per_rtt, increases); ns3-vwin: with its window.
  static TimelyParams preset_named(const std::string& name);
  void validate() const;
};

class Timely final : public RateWithWindow {
 public:
  Timely(const TimelyParams& p, const CcContext& ctx);

  Time rtt() const override { return have_prev_ ? prev_ : Time::max(); }
  void on_ack(Time now, const AckInfo& ack) override;
  const char* name() const override { return "timely"; }

  double rtt_diff_ps() const { return rtt_diff_; }
  std::uint32_t streak() const { return streak_; }

 private:
  void update(Time rtt);
  void increase(std::int64_t step);

  const TimelyParams& p_;
  std::int64_t ai_, hai_;  // bps
  double rtt_diff_ = 0;    // ps
  Time prev_;
  bool have_prev_ = false;
  std::uint32_t update_psn_ = 0;
  std::uint32_t streak_ = 0;  // the HAI count (hai_count)
};

}  // namespace fabriclab::fabric
