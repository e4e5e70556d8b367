// The ecmp-vs-spray experiment: elephants with few QPs on a leaf-spine.
#include "scenario/experiments/experiment.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "core/error.h"
#include "scenario/report/files.h"
#include "scenario/report/gnuplot.h"
#include "scenario/report/markdown.h"

namespace fabriclab::scenario::experiments {

namespace fs = std::filesystem;

namespace {

std::vector<Variant> lb_variants(const Config& base) {
  const auto spines = base.integer("topology.spines"), uplinks = base.integer("topology.uplinks");
  const std::string w = base.shown("nic.reorder_window");
  return {
      {"ecmp-1-tier",
       fmt::format("ECMP, {} spines x 1 link: one hashing decision (at the leaf)", spines * uplinks),
       {"switch.lb=ecmp", fmt::format("topology.spines={}", spines * uplinks), "topology.uplinks=1"}},
      {"ecmp-2-tiers-same-seed",
       fmt::format("ECMP, {} spines x {} links, leaf and spine hash alike (same function and seed)", spines, uplinks),
       {"switch.lb=ecmp", "switch.ecmp.seed_per_switch=false"}},
      {"ecmp-2-tiers",
       fmt::format("ECMP, {} spines x {} links, a seed per switch", spines, uplinks),
       {"switch.lb=ecmp", "switch.ecmp.seed_per_switch=true"}},
      {"spray-window", "packet spraying (round-robin), receiver reorder window W = " + w, {"switch.lb=spray_rr"}},
      {"spray-go-back-n",
       "packet spraying (round-robin), no reorder window (go-back-N)",
       {"switch.lb=spray_rr", "nic.reorder_window=0"}},
  };
}

void analyze_lb(const Config& base, const std::vector<Ran>& runs, const fs::path& out, Report& r) {
  if (base.text("topology.kind") != "leaf_spine")
    throw InputError("experiment ecmp-vs-spray: the scenario must have topology.kind = \"leaf_spine\"");
  const auto hpl = base.integer("topology.hosts_per_leaf");
  r.varied = fmt::format(
      "How packets pick among equal-cost paths on a leaf-spine ({} leaves, {} spines x {} parallel links, {} hosts "
      "per leaf): ECMP with one hashing decision (as many spines, one link each), ECMP with two (leaf, then spine "
      "over its parallel downlinks) with the same hash function and seed everywhere or a seed per switch, and "
      "round-robin packet spraying with the receiver's reorder window (W = {}) or without one. Traffic: {} of {} "
      "flows with {} QP(s) each: few distinct hashes.",
      base.integer("topology.leaves"), base.integer("topology.spines"), base.integer("topology.uplinks"), hpl,
      base.shown("nic.reorder_window"), base.text("traffic.pattern"), base.shown("traffic.bytes"),
      base.shown("traffic.qps_per_flow"));
  r.measured =
      "Bytes sent on each leaf uplink and spine downlink: imbalance = max / mean over the links of a tier (1 = even); "
      "idle links; flow completion times; retransmitted packets; packets accepted out of order.";
  std::string csv = "variant,uplink_max_over_mean,uplink_idle,downlink_max_over_mean,downlink_idle,fct_p50_us,"
                    "fct_p99_us,fct_max_us,retransmitted_packets,reordered_accepted\n";
  std::string dat = "# variant uplinks downlinks\n";
  std::vector<std::vector<std::string>> table;
  nlohmann::ordered_json jv = nlohmann::ordered_json::array();
  for (const Ran& run : runs) {
    std::vector<double> up, down;
    for (std::size_t p = 0; p < run.ports.rows(); ++p) {
      const std::string& node = run.ports.text(p, "node");
      const double port = run.ports.number(p, "port"), bytes = run.ports.number(p, "tx_bytes");
      if (node.rfind("leaf", 0) == 0 && port >= static_cast<double>(hpl)) up.push_back(bytes);
      if (node.rfind("spine", 0) == 0) down.push_back(bytes);
    }
    const auto imbalance = [](const std::vector<double>& v) {
      const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
      return mean > 0 ? *std::max_element(v.begin(), v.end()) / mean : 0.0;
    };
    const auto idle = [](const std::vector<double>& v) {
      // a link that carried only control frames (ACKs, CNPs): under 1 % of the mean
      const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
      return static_cast<std::size_t>(std::count_if(v.begin(), v.end(), [&](double b) { return b < 0.01 * mean; }));
    };
    const auto& s = run.summary;
    const double p50 = metric(s, "flows", "fct_ns_p50") / 1000, p99 = metric(s, "flows", "fct_ns_p99") / 1000,
                 mx = metric(s, "flows", "fct_ns_max") / 1000;
    const double rtx = s.at("flows").at("retransmitted_packets").get<double>();
    const double ooo = s.at("transport").at("reordered_accepted").get<double>();
    const double ui = imbalance(up), di = imbalance(down);
    csv += fmt::format("{},{:.3f},{},{:.3f},{},{:.3f},{:.3f},{:.3f},{:.0f},{:.0f}\n", run.v.label, ui, idle(up), di,
                       idle(down), p50, p99, mx, rtx, ooo);
    dat += fmt::format("{} {:.3f} {:.3f}\n", run.v.label, ui, di);
    table.push_back({run.v.label, f2(ui), fmt::format("{} of {}", idle(up), up.size()), f2(di),
                     fmt::format("{} of {}", idle(down), down.size()), f1(p50), f1(p99), f1(mx),
                     fmt::format("{:.0f}", rtx), fmt::format("{:.0f}", ooo)});
    jv.push_back({{"variant", run.v.label},
                  {"uplink_max_over_mean", ui},
                  {"uplink_idle", idle(up)},
                  {"downlink_max_over_mean", di},
                  {"downlink_idle", idle(down)},
                  {"fct_p50_us", p50},
                  {"fct_p99_us", p99},
                  {"fct_max_us", mx},
                  {"retransmitted_packets", rtx},
                  {"reordered_accepted", ooo}});
    r.headlines.push_back(fmt::format("{}: uplinks max/mean {:.2f}, downlinks {:.2f} ({} of {} idle); FCT max {:.1f} "
                                      "us; {:.0f} packets retransmitted",
                                      run.v.label, ui, di, idle(down), down.size(), mx, rtx));
  }
  write_file(out / "results.csv", csv);
  write_file(out / "imbalance.dat", dat);
  r.results["variants"] = jv;
  draw_plot(out, "imbalance",
            histogram("Load imbalance per tier (max / mean bytes per link; 1 = even)", "max / mean", "imbalance.dat",
                      {"leaf uplinks", "spine downlinks"}, runs.size(), "set xtics rotate by -20\n"));
  r.body += "## Results\n\n" +
            markdown_table({"variant", "uplinks max/mean", "idle uplinks", "downlinks max/mean", "idle downlinks",
                            "FCT p50 (us)", "FCT p99 (us)", "FCT max (us)", "retransmitted", "accepted out of order"},
                           table) +
            "\n" + plot_line("imbalance.png", "imbalance per tier");
}

}  // namespace

Definition ecmp_vs_spray() {
  return {"ecmp-vs-spray", "ECMP polarization versus packet spraying", lb_variants, analyze_lb};
}

}  // namespace fabriclab::scenario::experiments
