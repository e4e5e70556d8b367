// The congestion-control interface of a sending QP: the rate the QP may send at, and the
// signals that move it (CNPs, ACKs, bytes sent). One object per QP, chosen once when the
// QP is set up, so no mode switch sits on the per-packet path. Policies: `none` (line
// rate, here) and `dcqcn` (fabric/dcqcn.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/simulator.h"
#include "core/units.h"

namespace fabriclab::fabric {

class CongestionControl {
 public:
  virtual ~CongestionControl() = default;
  // The current sending rate; at or above the port rate means unpaced.
  virtual BitRate rate() const = 0;
  // For time series: the rate it recovers toward, and its congestion estimate in [0, 1].
  virtual BitRate target_rate() const { return rate(); }
  virtual double alpha(Time /*now*/) const { return 0; }
  virtual void on_sent(Time /*now*/, std::uint32_t /*wire_bytes*/) {}
  virtual void on_ack(Time /*now*/) {}
  virtual void on_cnp(Time /*now*/) {}
  virtual const char* name() const = 0;
};

// `none`: always the line rate.
class LineRate final : public CongestionControl {
 public:
  explicit LineRate(BitRate line) : line_(line) {}
  BitRate rate() const override { return line_; }
  const char* name() const override { return "none"; }

 private:
  BitRate line_;
};

struct DcqcnParams;
class RateListener;

// What a policy may use: the clock and timers, the port's rate, its parameters, and whom
// to tell when the rate rises (the NIC, keyed by `qp`).
struct CcContext {
  Simulator& sim;
  BitRate line;
  const DcqcnParams* dcqcn = nullptr;  // for `dcqcn`
  RateListener* listener = nullptr;
  std::uint32_t qp = 0;
};

// Makes the policy named `name` for one QP; throws InputError naming the known policies.
std::unique_ptr<CongestionControl> make_congestion_control(const std::string& name, const CcContext& ctx);

}  // namespace fabriclab::fabric
