// The congestion-control interface of a sending QP: the rate the QP may send at, and the
// signals that move it (CNPs, ACKs, bytes sent). One object per QP, chosen once when the
// QP is set up, so no mode switch sits on the per-packet path.
//
// Policies are listed in cc_policies() (policies.cc): a name, the feedback they read, a
// check of their parameters and a maker. What the NIC does for them, once for all:
//   - CNPs (`cnp`): the notification point answers CE marks as nic.roce_np says;
//   - ECN echo (`ecn_echo`): every ACK or NAK says whether a packet it acknowledges was
//     CE-marked (the BECN bit of its BTH, unpaced), and no CNPs are sent;
//   - RTT samples (`rtt`): the sender keeps each PSN's send time and an ACK of PSN n gives
//     now - sent(n) (NIC timestamps, as TIMELY takes them; none if n was sent again:
//     Karn's rule), so the receiver's ACK coalescing is part of the sample;
//   - a window (`window()` above 0): a QP sends a new packet only while its bytes in
//     flight (sent, not yet acknowledged) are below it, paced at rate() as well;
//   - endpoint delays (`endpoint`): every ACK carries how long the receiver held the
//     packet it answers (its receive buffer's wait) and the switches that packet crossed
//     (from its TTL); the sender adds its own hold of the ACK.
//   - INT (`int`): every data packet collects a record per switch (telemetry.h) and the ACK
//     or NAK that answers it echoes them.
// A new policy is its own files in this folder (its class; its parameter struct, a
// NicConfig field, and its table in fabric/params.cc) and one entry in that list;
// make_congestion_control() and the NIC stay as they are.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/simulator.h"
#include "core/units.h"
#include "fabric/telemetry.h"

namespace fabriclab::fabric {

// The HPCC ns-3 model's variable window: the share rate/line of `bdp` bytes, at least 1.
inline std::uint64_t rate_bdp_window(std::uint64_t bdp, std::int64_t rate_bps, std::int64_t line_bps) {
  __extension__ using I128 = __int128;
  const auto w = static_cast<std::uint64_t>(static_cast<I128>(bdp) * rate_bps / line_bps);
  return w > 0 ? w : 1;
}

// What an ACK or NAK told the sender, as a policy reads it.
struct AckInfo {
  std::uint32_t acked = 0;              // the PSN the receiver expects next: all before it arrived
  std::uint32_t next_psn = 0;           // the sender's next PSN to send (snd_nxt) as the ACK arrives
  Time rtt = Time::max();               // the RTT sample it gives (max: none, e.g. a NAK or a duplicate)
  bool ecn_echo = false;                // a packet it acknowledges was CE-marked (ecn_echo policies)
  bool nak = false;                     // a NAK: the receiver saw a gap at `acked`
  std::uint32_t newly_acked = 0;        // packets it acknowledged that none had before
  std::uint32_t delivered = 0;          // packets it showed received that none had before: newly_acked,
                                        // or under selective repeat those SACKed or cumulatively
                                        // acknowledged without an earlier SACK
  bool trimmed = false;                 // a NACK of a packet a switch trimmed (that packet lost)
  std::uint64_t in_flight = 0;          // window policies: the bytes in flight after it (as the window counts them)
  std::uint8_t hops = 0;                // endpoint policies: switches the data it answers crossed
  Time remote_hold;                     // endpoint policies: the receiver's hold of that data (to 1 ns)
  Time local_hold;                      // the sender's hold of the ACK (its receive buffer's wait)
  const IntStack* telemetry = nullptr;  // int policies: the INT stack the ACK echoes (none: nullptr)
};

class CongestionControl {
 public:
  virtual ~CongestionControl() = default;
  // The current sending rate; at or above the port rate means unpaced.
  virtual BitRate rate() const = 0;
  // For time series: the rate it recovers toward, and its congestion estimate in [0, 1].
  virtual BitRate target_rate() const { return rate(); }
  virtual double alpha(Time /*now*/) const { return 0; }
  virtual void on_sent(Time /*now*/, std::uint32_t /*wire_bytes*/) {}
  // The bytes a QP may have in flight; 0 = no window (the rate alone limits it).
  virtual std::uint64_t window() const { return 0; }
  // The last RTT sample the policy used (Time::max(): none), for time series.
  virtual Time rtt() const { return Time::max(); }
  virtual void on_ack(Time /*now*/, const AckInfo& /*ack*/) {}
  // A retransmission timeout went back to the oldest unacknowledged packet.
  virtual void on_timeout(Time /*now*/) {}
  virtual void on_cnp(Time /*now*/) {}
  virtual const char* name() const = 0;
  // Whether an event of its own is still due after `now`, and, when its QP is freed with
  // some due (a load's finished flow, Host::free_send_qp), the end of its reports to the
  // QP (RateListener): its events run on as they would have, telling no one.
  virtual bool has_pending_events(Time /*now*/) const { return false; }
  virtual void retire() {}
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
  Time base_rtt;  // the network's unloaded RTT (Network: nic.base_rtt or the longest path's)
  std::uint32_t mtu = 0;
  RateListener* listener = nullptr;
  std::uint32_t qp = 0;
  std::uint32_t tie_source = 0;         // the host's (Simulator: its events order ties as the host's do)
  std::uint32_t packet_wire_bytes = 0;  // a full packet's bytes on the wire (frame and gap)
  std::uint64_t seed = 0;               // the run's (a policy's random stream: named by host and `serial`)
  std::uint32_t serial = 0;             // the QP's number among those its host made (its QPN unless recycled)
};

// The feedback a policy reads (bits of CcPolicy::feedback; see the top of this file).
enum CcFeedback : std::uint8_t {
  kFeedbackCnp = 1,
  kFeedbackEcnEcho = 2,
  kFeedbackRtt = 4,
  kFeedbackWindow = 8,
  kFeedbackEndpoint = 16,
  kFeedbackInt = 32,
};
// A policy with any of these reads its ACKs: it is told of every one (on_ack), needs the
// reliable transport and, by default, an ACK per packet (ack_every_of).
inline constexpr std::uint8_t kFeedbackFromAcks = kFeedbackEcnEcho | kFeedbackRtt | kFeedbackWindow |
                                                  kFeedbackEndpoint | kFeedbackInt;

struct CcPolicy {
  std::string_view name;
  std::uint8_t feedback;  // CcFeedback bits; kFeedbackWindow: its QPs may have a window
  // Throws InputError when the NIC's parameters of this policy cannot work together.
  void (*check)(const NicConfig& nic);
  // One instance for one QP; it may keep references into `nic`, which outlives it.
  std::unique_ptr<CongestionControl> (*make)(const CcContext& ctx, const NicConfig& nic);
  // kFeedbackInt policies: the log base of PINT's code when the NIC's parameters ask the
  // switches for it instead of a record per hop (0: records; nullptr: never PINT).
  double (*pint_log_base)(const NicConfig& nic) = nullptr;
};
const std::vector<CcPolicy>& cc_policies();
// The policy named `name`; throws InputError naming the known ones.
const CcPolicy& cc_policy(std::string_view name);

// Makes the policy named `name` for one QP.
std::unique_ptr<CongestionControl> make_congestion_control(std::string_view name, const CcContext& ctx,
                                                           const NicConfig& nic);

}  // namespace fabriclab::fabric
