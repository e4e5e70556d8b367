// The congestion-control policies a NIC can run, by name: the one list to extend.
#include <fmt/format.h>

#include "core/error.h"
#include "fabric/cc/congestion.h"
#include "fabric/cc/dcqcn.h"
#include "fabric/cc/dctcp.h"
#include "fabric/cc/hpcc.h"
#include "fabric/cc/nscc.h"
#include "fabric/cc/swift.h"
#include "fabric/cc/timely.h"
#include "fabric/host.h"
#include "fabric/port.h"

namespace fabriclab::fabric {

const std::vector<CcPolicy>& cc_policies() {
  static const std::vector<CcPolicy> policies{
      {"none", kFeedbackCnp, [](const NicConfig&) {},
       [](const CcContext& ctx, const NicConfig&) -> std::unique_ptr<CongestionControl> {
         return std::make_unique<LineRate>(ctx.line);
       }},
      {"dcqcn", kFeedbackCnp, [](const NicConfig& nic) { nic.dcqcn.validate(); },
       [](const CcContext& ctx, const NicConfig& nic) -> std::unique_ptr<CongestionControl> {
         auto cc = std::make_unique<Dcqcn>(nic.dcqcn, ctx.sim, ctx.line, ctx.listener, ctx.qp);
         cc->set_tie_source(ctx.tie_source);
         return cc;
       }},
      {"dctcp", kFeedbackEcnEcho | kFeedbackWindow, [](const NicConfig& nic) { nic.dctcp.validate(); },
       [](const CcContext& ctx, const NicConfig& nic) -> std::unique_ptr<CongestionControl> {
         return std::make_unique<Dctcp>(nic.dctcp, ctx);
       }},
      {"hpcc", kFeedbackInt | kFeedbackWindow, [](const NicConfig& nic) { nic.hpcc.validate(); },
       [](const CcContext& ctx, const NicConfig& nic) -> std::unique_ptr<CongestionControl> {
         return std::make_unique<Hpcc>(nic.hpcc, ctx);
       },
       [](const NicConfig& nic) { return nic.hpcc.feedback == HpccFeedback::pint ? nic.hpcc.pint_log_base : 0.0; }},
      {"nscc", kFeedbackEcnEcho | kFeedbackRtt | kFeedbackWindow, [](const NicConfig& nic) { nic.nscc.validate(); },
       [](const CcContext& ctx, const NicConfig& nic) -> std::unique_ptr<CongestionControl> {
         return std::make_unique<Nscc>(nic.nscc, ctx);
       }},
      {"swift", kFeedbackRtt | kFeedbackWindow | kFeedbackEndpoint, [](const NicConfig& nic) { nic.swift.validate(); },
       [](const CcContext& ctx, const NicConfig& nic) -> std::unique_ptr<CongestionControl> {
         return std::make_unique<Swift>(nic.swift, ctx);
       }},
      {"timely", kFeedbackRtt | kFeedbackWindow, [](const NicConfig& nic) { nic.timely.validate(); },
       [](const CcContext& ctx, const NicConfig& nic) -> std::unique_ptr<CongestionControl> {
         return std::make_unique<Timely>(nic.timely, ctx);
       }},
  };
  return policies;
}

const CcPolicy& cc_policy(std::string_view name) {
  std::vector<std::string_view> known;
  for (const CcPolicy& p : cc_policies()) {
    if (p.name == name) return p;
    known.push_back(p.name);
  }
  throw InputError(fmt::format("unknown congestion control '{}' (expected: {})", name, fmt::join(known, ", ")));
}

std::unique_ptr<CongestionControl> make_congestion_control(std::string_view name, const CcContext& ctx,
                                                           const NicConfig& nic) {
  return cc_policy(name).make(ctx, nic);
}

}  // namespace fabriclab::fabric
