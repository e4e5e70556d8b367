// The spraying experiment: who reassembles when packets of a flow take many paths, and at
// what cost -- every load-balancing and transport design the fabric carries, on a
// permutation, an all-to-all, the same permutation with one uplink at half rate, and
// data-parallel training, on the scenario's fat-tree.
#include "scenario/experiments/experiment.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "core/error.h"
#include "scenario/report/files.h"
#include "scenario/report/gnuplot.h"
#include "scenario/report/markdown.h"

namespace fabriclab::scenario::experiments {

namespace fs = std::filesystem;

namespace {

struct Design {
  std::string name, what;
  std::vector<std::string> sets;
};

// The trim threshold of the design that trims: one BDP, as uet-htsim's queues with
// trimming -- the host rate over the fat-tree's longest round trip (six links out and
// back, a full frame out per hop), in whole KB.
std::int64_t trim_threshold_bytes(const Config& base) {
  const double rate = static_cast<double>(base.rate("topology.host_rate").bps());
  const double frame_s = (static_cast<double>(base.bytes("nic.mtu").count()) + 100) * 8 / rate;
  const double rtt_s = 12 * static_cast<double>(base.time("topology.link_delay").ps()) * 1e-12 + 6 * frame_s;
  return std::max<std::int64_t>(1, std::llround(rate * rtt_s / 8 / 1000)) * 1000;
}

// The designs compared (docs/experiments.md gives the reasons for each setting).
std::vector<Design> designs(const Config& base) {
  const std::string trim = fmt::format("{}B", trim_threshold_bytes(base));
  return {
      {"ecmp-gbn",
       "RoCE: ECMP per flow, go-back-N, PFC, DCQCN",
       {"switch.lb=ecmp", "nic.transport=rc", "nic.reorder_window=0", "nic.congestion_control=dcqcn"}},
      {"spray-window",
       "packet spraying (round-robin), RC with a reorder window of 64 packets, PFC, DCQCN",
       {"switch.lb=spray_rr", "nic.transport=rc", "nic.reorder_window=64", "nic.congestion_control=dcqcn"}},
      {"flowlet-window",
       "flowlet switching, RC with a reorder window of 64 packets, PFC, DCQCN",
       {"switch.lb=flowlet", "nic.transport=rc", "nic.reorder_window=64", "nic.congestion_control=dcqcn"}},
      {"ar-irn",
       "adaptive routing per packet, IRN (selective repeat, out-of-order placement) with a reorder tolerance of 16 "
       "packets, no PFC, DCQCN",
       {"switch.lb=adaptive", "nic.transport=irn", "nic.irn.reorder_tolerance=16", "switch.pfc.enabled=false",
        "nic.congestion_control=dcqcn"}},
      {"uet-nscc",
       "UET: entropies sprayed by ECMP, NSCC, PFC",
       {"switch.lb=ecmp", "nic.transport=uet", "nic.reorder_window=0", "nic.congestion_control=nscc"}},
      {"uet-rccc",
       "UET: entropies sprayed by ECMP, receiver credits (RCCC), PFC",
       {"switch.lb=ecmp", "nic.transport=uet", "nic.reorder_window=0", "nic.congestion_control=none",
        "nic.uet.rccc=true"}},
      {"uet-nscc-trim",
       "UET: entropies sprayed by ECMP, NSCC, trimming over " + trim + ", no PFC",
       {"switch.lb=ecmp", "nic.transport=uet", "nic.reorder_window=0", "nic.congestion_control=nscc",
        "switch.pfc.enabled=false", "switch.trim.threshold=" + trim}},
  };
}

struct Workload {
  std::string name, what;
  std::vector<std::string> sets;
};

std::vector<Workload> workloads(const Config& base) {
  const auto k = base.integer("topology.k");
  const std::int64_t hosts = k * k * k / 4;
  const std::int64_t bytes = base.bytes("traffic.bytes").count();
  // The all-to-all sends each host's permutation bytes in all, split over the others.
  const std::int64_t share = std::max<std::int64_t>(1, bytes / (hosts - 1));
  const std::string slow = fmt::format("edge0_0:{}={}", k / 2,
                                       to_string(BitRate::from_bps(base.rate("topology.fabric_rate").bps() / 2)));
  return {
      {"permutation",
       fmt::format("a random permutation of {} flows", base.shown("traffic.bytes")),
       {"traffic.pattern=permutation"}},
      {"all-to-all",
       fmt::format("all to all, {} bytes per pair ({} per host)", share, base.shown("traffic.bytes")),
       {"traffic.pattern=all_to_all", fmt::format("traffic.bytes={}B", share)}},
      {"asymmetric",
       fmt::format("the permutation with one uplink at half rate ({})", slow),
       {"traffic.pattern=permutation", "topology.link_rates=" + slow}},
      {"training",
       "data-parallel training: distribution, then a ring allreduce as flows",
       {"traffic.pattern=training", "traffic.training.algorithm=flows"}},
  };
}

std::string label_of(const std::string& workload, const std::string& design) { return workload + "-" + design; }

std::vector<Variant> spraying_variants(const Config& base) {
  if (base.text("topology.kind") != "fat_tree")
    throw InputError("experiment spraying: the scenario must have topology.kind = \"fat_tree\"");
  std::vector<Variant> v;
  for (const Workload& w : workloads(base))
    for (const Design& d : designs(base)) {
      std::vector<std::string> sets = w.sets;
      sets.insert(sets.end(), d.sets.begin(), d.sets.end());
      v.push_back({label_of(w.name, d.name), w.what + "; " + d.what, std::move(sets)});
    }
  return v;
}

struct Row : FlowStats {
  std::string workload, design;
  double retransmitted_bytes = 0, trimmed = 0, drops = 0, pfc_frames = 0, timeouts = 0;
  double reordered = 0, reassembly_peak = 0, rerouted = 0;
  double uplink_imbalance = 0, core_imbalance = 0;  // max / mean bytes: edge -> agg, agg -> core
  double wall = 0;
};

// max / mean of the bytes in `v` (1 = even); 0 for none.
double imbalance(const std::vector<double>& v) {
  if (v.empty()) return 0;
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  return mean > 0 ? *std::max_element(v.begin(), v.end()) / mean : 0.0;
}

Row row_of(const Ran& run, const std::string& workload, const std::string& design, std::int64_t half, double mtu) {
  Row r;
  static_cast<FlowStats&>(r) = flow_stats(run);
  r.workload = workload;
  r.design = design;
  const auto& s = run.summary;
  r.retransmitted_bytes = metric(s, "flows", "retransmitted_packets") * mtu;
  r.trimmed = metric(s, "totals", "trimmed");
  r.drops = metric(s, "totals", "drops");
  r.pfc_frames = metric(s, "totals", "pfc_pause_frames");
  r.rerouted = metric(s, "totals", "rerouted");
  r.timeouts = metric(s, "transport", "timeouts");
  r.reordered = metric(s, "transport", "reordered_accepted");
  r.reassembly_peak = metric(s, "transport", "reassembly_peak_packets");
  r.wall = s.at("run").at("wall_seconds").get<double>();
  std::vector<double> up, core;
  for (std::size_t p = 0; p < run.ports.rows(); ++p) {
    const std::string& node = run.ports.text(p, "node");
    const double port = run.ports.number(p, "port"), bytes = run.ports.number(p, "tx_bytes");
    if (port < static_cast<double>(half)) continue;  // down toward hosts or edges
    if (node.rfind("edge", 0) == 0) up.push_back(bytes);
    if (node.rfind("agg", 0) == 0) core.push_back(bytes);
  }
  r.uplink_imbalance = imbalance(up);
  r.core_imbalance = imbalance(core);
  return r;
}

std::string num(double x, int decimals = 1) { return std::isnan(x) ? "--" : fmt::format("{:.{}f}", x, decimals); }
nlohmann::ordered_json json_num(double x) {
  return std::isnan(x) ? nlohmann::ordered_json() : nlohmann::ordered_json(x);
}

void analyze_spraying(const Config& base, const std::vector<Ran>& runs, const fs::path& out, Report& r) {
  const auto k = base.integer("topology.k");
  const std::vector<Design> ds = designs(base);
  const std::vector<Workload> ws = workloads(base);
  r.varied = fmt::format(
      "The design that spreads a flow's packets and puts them back together, on a k = {} fat-tree ({} hosts at {}, "
      "every link {}, {} each): ECMP with go-back-N RC (RoCE as deployed), round-robin spraying with a reorder "
      "window, flowlet switching, adaptive routing with IRN's out-of-order placement, and the Ultra Ethernet "
      "transport (entropies sprayed by ECMP, reliable unordered delivery) with NSCC, with receiver credits (RCCC), "
      "and with NSCC and trimming (over {} bytes, one BDP) instead of PFC. Each on four workloads: {}; {}; {}; {}.",
      k, k * k * k / 4, base.shown("topology.host_rate"), base.shown("topology.fabric_rate"),
      base.shown("topology.link_delay"), trim_threshold_bytes(base), ws[0].what, ws[1].what, ws[2].what, ws[3].what);
  r.measured =
      "Flow completion times (p50, p99, max); the makespan (first start to last finish) and the goodput over it "
      "(payload bytes into all hosts); bytes retransmitted (packets x MTU), packets trimmed, drops, PFC pause "
      "frames and timeouts; packets the receivers accepted out of order and the most one NIC held placed out of "
      "order at once (the reassembly buffer the design needs); packets adaptive routing moved off their hashed "
      "port; and the load imbalance of the edge uplinks and of the aggregation uplinks (max / mean bytes sent; 1 = "
      "even). Wall time is this machine's.";
  const double mtu = static_cast<double>(base.bytes("nic.mtu").count());
  std::vector<Row> rows;
  std::size_t i = 0;
  for (const Workload& w : ws)
    for (const Design& d : ds) rows.push_back(row_of(runs.at(i++), w.name, d.name, k / 2, mtu));

  std::string csv =
      "workload,design,flows,finished,fct_p50_us,fct_p99_us,fct_max_us,makespan_us,goodput_gbps,retransmitted_bytes,"
      "trimmed,drops,pfc_pause_frames,timeouts,reordered_accepted,reassembly_peak_packets,rerouted,"
      "uplink_max_over_mean,core_max_over_mean,wall_seconds\n";
  nlohmann::ordered_json jv = nlohmann::ordered_json::array();
  for (const Row& x : rows) {
    csv += fmt::format("{},{},{:.0f},{:.0f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},"
                       "{:.0f},{:.0f},{:.0f},{:.3f},{:.3f},{:.3f}\n",
                       x.workload, x.design, x.flows, x.finished, x.p50, x.p99, x.max, x.makespan, x.goodput,
                       x.retransmitted_bytes, x.trimmed, x.drops, x.pfc_frames, x.timeouts, x.reordered,
                       x.reassembly_peak, x.rerouted, x.uplink_imbalance, x.core_imbalance, x.wall);
    jv.push_back({{"variant", label_of(x.workload, x.design)},
                  {"workload", x.workload},
                  {"design", x.design},
                  {"finished", x.finished},
                  {"flows", x.flows},
                  {"fct_p50_us", json_num(x.p50)},
                  {"fct_p99_us", json_num(x.p99)},
                  {"fct_max_us", json_num(x.max)},
                  {"makespan_us", json_num(x.makespan)},
                  {"goodput_gbps", json_num(x.goodput)},
                  {"retransmitted_bytes", x.retransmitted_bytes},
                  {"trimmed", x.trimmed},
                  {"drops", x.drops},
                  {"pfc_pause_frames", x.pfc_frames},
                  {"timeouts", x.timeouts},
                  {"reordered_accepted", x.reordered},
                  {"reassembly_peak_packets", x.reassembly_peak},
                  {"rerouted", x.rerouted},
                  {"uplink_max_over_mean", x.uplink_imbalance},
                  {"core_max_over_mean", x.core_imbalance}});
  }
  write_file(out / "results.csv", csv);
  r.results["variants"] = jv;

  // Per workload: a table, and the design that finished first.
  for (const Workload& w : ws) {
    std::vector<std::vector<std::string>> table;
    const Row* best = nullptr;
    for (const Row& x : rows) {
      if (x.workload != w.name) continue;
      table.push_back({x.design, fmt::format("{:.0f} of {:.0f}", x.finished, x.flows), num(x.p50), num(x.p99),
                       num(x.max), num(x.makespan), num(x.goodput, 0), num(x.retransmitted_bytes / 1e6, 2),
                       num(x.trimmed, 0), num(x.drops, 0), num(x.pfc_frames, 0), num(x.timeouts, 0),
                       num(x.reordered, 0), num(x.reassembly_peak, 0), num(x.uplink_imbalance, 2),
                       num(x.core_imbalance, 2), num(x.wall, 2)});
      if (!std::isnan(x.makespan) && (!best || x.makespan < best->makespan)) best = &x;
    }
    if (best)
      r.headlines.push_back(fmt::format("{}: done first with {}, in {} us (p99 FCT {} us, reassembly peak {:.0f} "
                                        "packets, edge uplinks max/mean {:.2f})",
                                        w.name, best->design, num(best->makespan), num(best->p99),
                                        best->reassembly_peak, best->uplink_imbalance));
    else r.headlines.push_back(w.name + ": no design finished every flow");
    r.body += "## " + w.name + ": " + w.what + "\n\n" +
              markdown_table({"design", "finished", "FCT p50 (us)", "FCT p99 (us)", "FCT max (us)", "makespan (us)",
                              "goodput (Gb/s)", "retransmitted (MB)", "trimmed", "drops", "PFC frames", "timeouts",
                              "out of order", "reassembly peak", "edge uplinks max/mean", "agg uplinks max/mean",
                              "wall (s)"},
                             table) +
              "\n";
  }

  // Plots: the makespan, the edge uplinks' imbalance and the reassembly peak per design,
  // a series per workload.
  std::string done = "# design", imb = "# design", peak = "# design";
  for (const Workload& w : ws) {
    done += " " + w.name;
    imb += " " + w.name;
    peak += " " + w.name;
  }
  done += "\n";
  imb += "\n";
  peak += "\n";
  for (const Design& d : ds) {
    done += d.name;
    imb += d.name;
    peak += d.name;
    for (const Workload& w : ws) {
      const Row& x = *std::find_if(rows.begin(), rows.end(),
                                   [&](const Row& y) { return y.workload == w.name && y.design == d.name; });
      done += " " + (std::isnan(x.makespan) ? std::string("0") : fmt::format("{:.3f}", x.makespan));
      imb += fmt::format(" {:.3f}", x.uplink_imbalance);
      peak += fmt::format(" {:.0f}", x.reassembly_peak);
    }
    done += "\n";
    imb += "\n";
    peak += "\n";
  }
  write_file(out / "makespan.dat", done);
  write_file(out / "imbalance.dat", imb);
  write_file(out / "reassembly.dat", peak);
  std::vector<std::string> series;
  for (const Workload& w : ws) series.push_back(w.name);
  const std::string rotate = "set xtics rotate by -20\n";
  draw_plot(out, "makespan",
            histogram("Time to finish every flow, per design (0: unfinished)", "us", "makespan.dat", series, ds.size(),
                      rotate));
  draw_plot(out, "imbalance",
            histogram("Edge uplink load imbalance (max / mean bytes; 1 = even)", "max / mean", "imbalance.dat", series,
                      ds.size(), rotate));
  draw_plot(out, "reassembly",
            histogram("Most packets one NIC held for reassembly", "packets", "reassembly.dat", series, ds.size(),
                      rotate));
  r.body += "## Plots\n\n" + plot_line("makespan.png", "time to finish every flow per design and workload") +
            plot_line("imbalance.png", "edge uplink imbalance") +
            plot_line("reassembly.png", "reassembly buffer per design");
}

}  // namespace

Definition spraying() {
  return {"spraying", "Spraying and reassembly: ECMP, spraying, flowlets, adaptive routing, IRN and UET",
          spraying_variants, analyze_spraying};
}

}  // namespace fabriclab::scenario::experiments
