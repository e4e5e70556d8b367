// The congestion-control interface of a sending QP: the rate the QP may send at, and the
// signals that move it (CNPs, ACKs, bytes sent). One object per QP, chosen once when the
// QP is set up, so no mode switch sits on the per-packet path. This issue ships `none`
// (line rate); DCQCN plugs in behind the same interface.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/units.h"

namespace fabriclab::fabric {

class CongestionControl {
 public:
  virtual ~CongestionControl() = default;
  // The current sending rate; at or above the port rate means unpaced.
  virtual BitRate rate() const = 0;
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

// Makes the policy named `name` for a QP on a port of rate `line`; throws InputError
// naming the known policies.
std::unique_ptr<CongestionControl> make_congestion_control(const std::string& name, BitRate line);

}  // namespace fabriclab::fabric
