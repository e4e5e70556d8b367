// DCTCP (Alizadeh et al., SIGCOMM 2010) for RDMA, as the HPCC ns-3 model runs it
// (rdma-hw.cc, CC_MODE 8): a sending QP's rate, cut by the fraction of its packets that
// came back ECN-echoed, and a window of the bytes one base RTT carries at that rate.
//
// Per ACK or NAK (AckInfo; PSNs where the model counts bytes):
//   marked += ecn_echo
//   if acked > U (a round trip since the last update; U = 0: none yet):
//     the first time: U = next_psn, B = next_psn + 1
//     then: F = min(1, marked / B); alpha = (1 - g) alpha + g F;
//           U = next_psn; marked = 0; B = next_psn - acked + 1
//   if in CWR and acked > H: leave CWR
//   if ecn_echo and not in CWR: R = max(min_rate, R (1 - alpha/2)); enter CWR, H = next_psn
//   if not in CWR and the update above ran: R = min(line, R + rate_ai)
// The window (window = rate_bdp, the model's VAR_WIN): W = max(1, BDP R / line) bytes,
// BDP = line x base RTT; a QP with W or more bytes in flight waits for an ACK.
// Starts at the line rate with alpha = initial_alpha (1, as the model).
#pragma once

#include <cstdint>
#include <string>

#include "core/units.h"
#include "fabric/cc/rate_window.h"

namespace fabriclab::fabric {

struct DctcpParams {
  std::string preset = "default";
  double g = 1.0 / 16;                                  // EWMA gain of alpha (the DCTCP paper's 1/16)
  double initial_alpha = 1;                             // alpha of a new QP
  BitRate rate_ai;                                      // additive increase per round trip; 0 = one MTU per base RTT
  BitRate min_rate = BitRate::from_bps(1'000'000'000);  // floor of a cut
  CcWindow window = CcWindow::rate_bdp;

  // default: the values above; ns3: the HPCC model's run.py (rate_ai = 615 Mb/s, its one
  // KB MTU per 13 us RTT).
  static DctcpParams preset_named(const std::string& name);
  void validate() const;
};

class Dctcp final : public RateWithWindow {
 public:
  Dctcp(const DctcpParams& p, const CcContext& ctx);

  double alpha(Time /*now*/) const override { return alpha_; }
  void on_ack(Time now, const AckInfo& ack) override;
  const char* name() const override { return "dctcp"; }

  bool in_cwr() const { return cwr_; }

 private:
  const DctcpParams& p_;
  std::int64_t ai_;  // bps
  double alpha_;
  std::uint32_t update_psn_ = 0, high_psn_ = 0;
  std::uint32_t marked_ = 0, batch_ = 0;
  bool cwr_ = false;
};

}  // namespace fabriclab::fabric
