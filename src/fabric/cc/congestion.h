// The congestion-control interface of a sending QP: the rate the QP may send at, and the
// signals that move it (CNPs, ACKs, bytes sent). One object per QP, chosen once when the
// QP is set up, so no mode switch sits on the per-packet path.
//
// Policies are listed in cc_policies() (policies.cc): a name, a check of their parameters
// and a maker. A new policy is its own files in this folder (its class; its parameter
// struct, a NicConfig field, and its table in fabric/params.cc) and one entry in that
// list; make_congestion_control() and the NIC stay as they are.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

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

// Told when a QP's rate went up between its packets, so that a sender waiting on the old
// pacing gap can go earlier.
class RateListener {
 public:
  virtual ~RateListener() = default;
  virtual void rate_raised(std::uint32_t qp) = 0;
};

struct NicConfig;

// What a policy may use: the clock and timers, the port's rate, and whom to tell when the
// rate rises (the NIC, keyed by `qp`); its parameters are the NIC's (NicConfig).
struct CcContext {
  Simulator& sim;
  BitRate line;
  RateListener* listener = nullptr;
  std::uint32_t qp = 0;
  std::uint32_t tie_source = 0;  // the host's (Simulator: its events order ties as the host's do)
};

struct CcPolicy {
  std::string_view name;
  // Throws InputError when the NIC's parameters of this policy cannot work together.
  void (*check)(const NicConfig& nic);
  // One instance for one QP; it may keep references into `nic`, which outlives it.
  std::unique_ptr<CongestionControl> (*make)(const CcContext& ctx, const NicConfig& nic);
};
const std::vector<CcPolicy>& cc_policies();
// The policy named `name`; throws InputError naming the known ones.
const CcPolicy& cc_policy(std::string_view name);

// Makes the policy named `name` for one QP.
std::unique_ptr<CongestionControl> make_congestion_control(std::string_view name, const CcContext& ctx,
                                                           const NicConfig& nic);

}  // namespace fabriclab::fabric
