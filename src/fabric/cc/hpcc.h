// HPCC (Li et al., SIGCOMM 2019): a sending QP's window and rate from the in-band
// telemetry (telemetry.h) its ACKs echo, per Algorithm 1 of the paper, as the HPCC ns-3
// model runs it (rdma-hw.cc, CC_MODE 3: a rate R, the window W = R x T).
//
// T is the base RTT (nic.base_rtt or the longest path's), B a hop's line rate, L the last
// stack the QP read (the reference). Per ACK or NAK with a stack of the same hops as L:
//   for each hop i:  tau_i = ts_i - L.ts_i,  txRate_i = (txBytes_i - L.txBytes_i) / tau_i
//                    u_i = min(qlen_i, L.qlen_i) / (B_i T) + txRate_i / B_i
//   u = max_i u_i, tau = that hop's tau_i, capped at T
//   U = (1 - tau/T) U + (tau/T) u                   (U starts at 1)
//   if U / eta >= 1 or incStage >= max_stage:  R = Rc / (U / eta) + rai,  stage 0
//   else:                                      R = Rc + rai,              stage + 1
//   R within [min_rate, line]; L = this stack
// and only the first ACK past the PSN sent at the last update (acked > lastUpdatePsn, a
// round trip on) also sets Rc = R, incStage, and lastUpdatePsn = next PSN: the paper's
// per-RTT reference window Wc = Rc T. The others react without moving the reference
// (fast_react; off: they change nothing). The first ACK only takes its stack as L. rai is
// W_AI / T (the additive step as a rate). A hop whose clock did not advance since L, or
// whose byte count went back (another path: packets sprayed, a route changed), counts for
// nothing this time; a stack with another number of hops than L replaces it without an
// update. A reading of u = 0 on every hop leaves U as it was (tau stays 0, as in the
// model), so U stays above 0. A QP that crossed no switch has no stack to read and stays
// at the line rate.
//
// HPCC-PINT (feedback = "pint"; the model's CC_MODE 10, HandleAckHpPint): the ACK
// carries no records but one PINT code (pint.h) of the largest utilization a switch on
// the path estimated (Switch::pint_dequeue: its own EWMA per port over T); the sender
// takes each ACK with probability pint_prob (a draw from the QP's own stream) and, past
// the first, uses U = decode(code) directly -- no EWMA of its own, no reference stack --
// in the same update: U / eta >= 1 or incStage >= max_stage: R = Rc / (U / eta) + rai,
// else R = Rc + rai; Rc and incStage move once per RTT as above.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/random.h"
#include "core/units.h"
#include "fabric/cc/rate_window.h"
#include "fabric/pint.h"
#include "fabric/telemetry.h"

namespace fabriclab::fabric {

// What the switches report: a record per hop (INT), or PINT's one value.
enum class HpccFeedback : std::uint8_t { int_stack, pint };
inline constexpr params::EnumNames<HpccFeedback, 2> kHpccFeedbackNames{
    {{HpccFeedback::int_stack, "int"}, {HpccFeedback::pint, "pint"}}};

struct HpccParams {
  std::string preset = "paper";
  double eta = 0.95;            // target utilization
  std::uint32_t max_stage = 5;  // additive rounds before a multiplicative step (maxStage)
  BitRate rai;                  // W_AI / T; 0 = line / 2500 (the model's run.py: 10 x bw / 25 Mb/s)
  BitRate min_rate = BitRate::from_bps(1'000'000'000);
  bool fast_react = true;  // every ACK reacts, not only one per round trip
  HpccFeedback feedback = HpccFeedback::int_stack;
  double pint_log_base = 1.05;  // PINT's code: powers of this (1.05: 8 bits, the model's default)
  double pint_prob = 1;         // PINT: the share of ACKs the sender reads (the model's pint_prob)

  // paper: the values above (eta 95 %, maxStage 5); ns3: the HPCC model's run.py
  // (MI_THRESH 0: every update multiplicative).
  static HpccParams preset_named(const std::string& name);
  void validate() const;
};

class Hpcc final : public RateWithWindow {
 public:
  Hpcc(const HpccParams& p, const CcContext& ctx);

  void on_ack(Time now, const AckInfo& ack) override;
  // The utilization estimate U, for time series (qps.csv's alpha column).
  double alpha(Time /*now*/) const override { return u_; }
  BitRate target_rate() const override { return BitRate::from_bps(reference_); }
  const char* name() const override { return "hpcc"; }

  std::uint32_t stage() const { return stage_; }
  // The last stack read (L), nullptr before the first.
  const IntStack* reference() const { return have_last_ ? &last_ : nullptr; }

 private:
  const HpccParams& p_;
  double t_ps_;             // T
  std::int64_t rai_;        // bps
  std::int64_t reference_;  // Rc, bps
  double u_ = 1;
  std::uint32_t stage_ = 0;
  std::uint32_t update_psn_ = 0;
  bool have_last_ = false;
  IntStack last_;  // L
  // HPCC-PINT: the code, the ACKs read out of 65536 (65536: all), the samples' stream.
  std::optional<PintCode> pint_;
  std::uint32_t pint_threshold_ = 65536;
  std::optional<RandomStream> pint_rng_;
  // Rate and stage from U against eta (both variants' step).
  void update(double u, bool per_rtt);
  // HPCC-PINT's reading of an ACK.
  void on_pint_ack(const AckInfo& ack);
};

}  // namespace fabriclab::fabric
