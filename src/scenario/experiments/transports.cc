// The transports experiment: every congestion-control policy on three scenarios, with and
// without PFC.
#include "scenario/experiments/experiment.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "scenario/report/files.h"
#include "scenario/report/gnuplot.h"
#include "scenario/report/markdown.h"

namespace fabriclab::scenario::experiments {

namespace fs = std::filesystem;

namespace {

// The policies compared, each with its default values (docs/fabric.md gives them).
constexpr const char* kPolicies[] = {"none", "dcqcn", "dctcp", "timely", "swift", "hpcc"};

struct Shape {
  const char* name;
  const char* what;
};
constexpr Shape kScenarios[] = {
    {"incast", "16 senders into one receiver on one switch"},
    {"permutation", "a random permutation on the scenario's leaf-spine"},
    {"training", "data-parallel training (distribution, then a ring allreduce of flows) on the leaf-spine"},
};

// The --set lines that turn the shipped leaf-spine permutation into scenario `s`.
std::vector<std::string> scenario_sets(const std::string& s) {
  if (s == "incast")
    return {"topology.kind=single_switch", "topology.hosts=17", "traffic.pattern=incast", "traffic.incast.receiver=0",
            "traffic.incast.senders=16",
            // the receiver's port and every host's, sampled for the queue and pause plots
            "output.timeseries_interval=5us", "output.timeseries_ports=sw0:0,h*"};
  if (s == "training") return {"traffic.pattern=training", "traffic.training.algorithm=flows"};
  return {"traffic.pattern=permutation"};
}

std::string label_of(const std::string& scenario, const std::string& policy, bool pfc) {
  return fmt::format("{}-{}-{}", scenario, policy, pfc ? "pfc" : "lossy");
}

std::vector<Variant> transport_variants(const Config&) {
  std::vector<Variant> v;
  for (const Shape& s : kScenarios)
    for (const bool pfc : {true, false})
      for (const char* policy : kPolicies) {
        std::vector<std::string> sets = scenario_sets(s.name);
        sets.push_back(std::string("nic.congestion_control=") + policy);
        if (!pfc) sets.emplace_back("switch.pfc.enabled=false");
        v.push_back({label_of(s.name, policy, pfc),
                     fmt::format("{}, {}, {}", s.what, policy, pfc ? "PFC on the RoCE priority" : "no PFC (lossy)"),
                     std::move(sets)});
      }
  return v;
}

struct Row {
  std::string scenario, policy;
  bool pfc = true;
  double finished = 0, flows = 0;
  double p50 = 0, p99 = 0, max = 0;  // FCT, us
  double makespan = 0, goodput = 0;  // us, Gb/s of payload into the receivers
  double queue = 0, pfc_frames = 0, paused = 0, drops = 0, retransmitted = 0, marks = 0, cnps = 0;
};

Row row_of(const Ran& run, const std::string& scenario, const std::string& policy, bool pfc) {
  Row r{scenario, policy, pfc};
  const auto& s = run.summary;
  const FlowStats f = flow_stats(run);
  r.flows = f.flows;
  r.finished = f.finished;
  r.p50 = f.p50;
  r.p99 = f.p99;
  r.max = f.max;
  r.makespan = f.makespan;
  r.goodput = f.goodput;
  r.queue = metric(s, "totals", "max_switch_queue_bytes");
  r.pfc_frames = metric(s, "totals", "pfc_pause_frames");
  r.paused = metric(s, "totals", "paused_ns_all_ports") / 1000;
  r.drops = metric(s, "totals", "drops");
  r.retransmitted = metric(s, "flows", "retransmitted_packets");
  r.marks = metric(s, "totals", "ecn_marks");
  r.cnps = metric(s, "congestion_control", "cnps_sent");
  return r;
}

// A number for a table, "--" when there is none (flows left unfinished).
std::string num(double x, int decimals = 1) { return std::isnan(x) ? "--" : fmt::format("{:.{}f}", x, decimals); }

void analyze_transports(const Config& base, const std::vector<Ran>& runs, const fs::path& out, Report& r) {
  if (base.text("topology.kind") != "leaf_spine")
    throw InputError("experiment transports: the scenario must have topology.kind = \"leaf_spine\"");
  r.varied = fmt::format(
      "The congestion-control policy of every NIC ({}), each with its default values, on three scenarios: a 16:1 "
      "incast on one switch; a permutation of {} flows on a {}-leaf, {}-spine leaf-spine ({} hosts per leaf at {}, "
      "{} uplink(s) of {} per spine: {:.0f}:1); and data-parallel training on it ({} iteration(s): {} to each GPU, "
      "then a ring allreduce of {} as flows) -- each with PFC on the RoCE priority and without it (lossy: a full "
      "buffer drops, go-back-N recovers). ECN marking is WRED's, {} to {} at {} %, for the policies that read it.",
      fmt::join(kPolicies, ", "), base.shown("traffic.bytes"), base.integer("topology.leaves"),
      base.integer("topology.spines"), base.integer("topology.hosts_per_leaf"), base.shown("topology.host_rate"),
      base.integer("topology.uplinks"), base.shown("topology.fabric_rate"),
      static_cast<double>(base.integer("topology.hosts_per_leaf")) *
          static_cast<double>(base.rate("topology.host_rate").bps()) /
          (static_cast<double>(base.integer("topology.spines") * base.integer("topology.uplinks")) *
           static_cast<double>(base.rate("topology.fabric_rate").bps())),
      base.integer("traffic.training.iterations"), base.shown("traffic.training.distribution_bytes"),
      base.shown("traffic.bytes"), base.shown("switch.wred.green_min_threshold"),
      base.shown("switch.wred.green_max_threshold"), base.shown("switch.wred.green_drop_probability"));
  r.measured =
      "Flow completion times (p50, p99, max), the makespan (first start to last finish) and the goodput it gives, "
      "the deepest switch queue, PFC pause frames and the time ports spent paused, drops and retransmitted packets, "
      "ECN marks and CNPs; on the incast, every 5 us, the receiver's port queue and the time the hosts' ports "
      "have been paused so far. \"--\": flows left unfinished at sim.stop_time.";
  // The runs in the order transport_variants made them.
  std::map<std::string, Row> rows;
  std::size_t next = 0;
  for (const Shape& s : kScenarios)
    for (const bool pfc : {true, false})
      for (const char* policy : kPolicies) {
        const Ran& run = runs.at(next++);
        rows[run.v.label] = row_of(run, s.name, policy, pfc);
      }
  std::string csv =
      "scenario,policy,pfc,flows,finished,fct_p50_us,fct_p99_us,fct_max_us,makespan_us,goodput_gbps,max_queue_bytes,"
      "pfc_frames,paused_us,drops,retransmitted_packets,ecn_marks,cnps\n";
  nlohmann::ordered_json jv = nlohmann::ordered_json::array();
  for (const Shape& s : kScenarios) {
    std::string dat = "# policy pfc lossy\n";
    std::vector<std::vector<std::string>> table;
    for (const char* policy : kPolicies) {
      const Row& on = rows.at(label_of(s.name, policy, true));
      const Row& off = rows.at(label_of(s.name, policy, false));
      // (no bar where flows were left unfinished: their p99 is of the finished ones only)
      const auto bar = [](const Row& w) { return w.finished == w.flows ? w.p99 : 0.0; };
      dat += fmt::format("{} {} {}\n", policy, bar(on), bar(off));
      for (const Row* w : {&on, &off}) {
        csv += fmt::format(
            "{},{},{},{:.0f},{:.0f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.0f},{:.0f},{:.3f},{:.0f},{:.0f},"
            "{:.0f},{:.0f}\n",
            w->scenario, w->policy, w->pfc ? "on" : "off", w->flows, w->finished, w->p50, w->p99, w->max, w->makespan,
            w->goodput, w->queue, w->pfc_frames, w->paused, w->drops, w->retransmitted, w->marks, w->cnps);
        table.push_back({policy, w->pfc ? "on" : "off", fmt::format("{:.0f} of {:.0f}", w->finished, w->flows),
                         num(w->p50), num(w->p99), num(w->makespan), num(w->goodput), num(w->queue / 1024, 0),
                         fmt::format("{:.0f}", w->pfc_frames), fmt::format("{:.0f}", w->drops),
                         fmt::format("{:.0f}", w->retransmitted)});
        jv.push_back({{"scenario", w->scenario},
                      {"policy", w->policy},
                      {"pfc", w->pfc},
                      {"flows", w->flows},
                      {"finished", w->finished},
                      {"fct_p50_us", w->p50},
                      {"fct_p99_us", w->p99},
                      {"fct_max_us", w->max},
                      {"makespan_us", w->makespan},
                      {"goodput_gbps", w->goodput},
                      {"max_queue_bytes", w->queue},
                      {"pfc_frames", w->pfc_frames},
                      {"paused_us", w->paused},
                      {"drops", w->drops},
                      {"retransmitted_packets", w->retransmitted},
                      {"ecn_marks", w->marks},
                      {"cnps", w->cnps}});
      }
    }
    // The headline of a scenario: the lowest p99 FCT with PFC and without (every policy
    // within 0.1 % of it), among the runs that finished every flow.
    for (const bool pfc : {true, false}) {
      double lowest = 0;
      for (const char* policy : kPolicies) {
        const Row& w = rows.at(label_of(s.name, policy, pfc));
        if (w.finished == w.flows && (lowest == 0 || w.p99 < lowest)) lowest = w.p99;
      }
      std::vector<std::string> best;
      for (const char* policy : kPolicies) {
        const Row& w = rows.at(label_of(s.name, policy, pfc));
        if (lowest > 0 && w.finished == w.flows && w.p99 <= lowest * 1.001)
          best.push_back(fmt::format("{} ({:.0f} pause frames, {:.0f} drops, deepest queue {:.0f} KiB)", policy,
                                     w.pfc_frames, w.drops, w.queue / 1024));
      }
      r.headlines.push_back(
          best.empty() ? fmt::format("{} {}: no policy finished every flow", s.name, pfc ? "with PFC" : "without PFC")
                       : fmt::format("{} {}: lowest p99 FCT {:.1f} us: {}", s.name, pfc ? "with PFC" : "without PFC",
                                     lowest, fmt::join(best, "; ")));
    }
    const std::string stem = std::string(s.name) + "_fct";
    write_file(out / (stem + ".dat"), dat);
    draw_plot(out, stem,
              histogram(fmt::format("{}: p99 flow completion time per policy (log scale)", s.name), "p99 FCT (us)",
                        stem + ".dat", {"PFC", "no PFC"}, std::size(kPolicies), "set logscale y\nset yrange [1:*]\n"));
    r.body += fmt::format("## {}\n\n{}.\n\n", s.name, s.what) +
              markdown_table({"policy", "PFC", "finished", "FCT p50 (us)", "FCT p99 (us)", "makespan (us)",
                              "goodput (Gb/s)", "deepest queue (KiB)", "pause frames", "drops", "retransmitted"},
                             table) +
              "\n" +
              plot_line(stem + ".png",
                        std::string(s.name) +
                            ": p99 FCT per policy, with and without PFC (no bar: flows left unfinished)");
  }
  // The incast over time, per policy, with PFC: the receiver's port queue, and the time
  // the hosts' ports (the senders') have been paused, summed.
  std::string queue_lines, pause_lines;
  std::size_t series = 0;
  for (const char* policy : kPolicies) {
    const Ran* run = nullptr;
    for (const Ran& x : runs)
      if (x.v.label == label_of("incast", policy, true)) run = &x;
    if (!run || !fs::exists(run->dir / "queues.csv")) continue;
    const CsvTable q = read_csv(run->dir / "queues.csv");
    std::string queue, pause;
    std::map<double, double> paused;  // time (us) -> paused time of every host port (us)
    for (std::size_t i = 0; i < q.rows(); ++i) {
      const double t = q.number(i, "time_ns") / 1000;
      if (q.text(i, "node") == "sw0") queue += fmt::format("{:.3f} {:.1f}\n", t, q.number(i, "queue_bytes") / 1024);
      else paused[t] += q.number(i, "paused_ns") / 1000;
    }
    for (const auto& [t, us] : paused) pause += fmt::format("{:.3f} {:.3f}\n", t, us);
    const std::string queue_file = fmt::format("incast_queue_{}.dat", policy);
    const std::string pause_file = fmt::format("incast_pause_{}.dat", policy);
    write_file(out / queue_file, queue);
    write_file(out / pause_file, pause);
    const char* sep = series++ ? ", " : "";
    queue_lines += fmt::format("{}'{}' using 1:2 with lines lw 2 title '{}'", sep, queue_file, policy);
    pause_lines += fmt::format("{}'{}' using 1:2 with lines lw 2 title '{}'", sep, pause_file, policy);
  }
  if (series > 0) {
    draw_plot(out, "incast_queue",
              "set title 'incast, PFC on: the receiver port queue'\nset xlabel 'time (us)'\n"
              "set ylabel 'queue (KiB)'\nset grid\nset key top right\nplot " +
                  queue_lines);
    r.body += plot_line("incast_queue.png", "incast: the receiver's port queue over time, per policy (PFC on)");
    draw_plot(out, "incast_pause",
              "set title 'incast, PFC on: time the hosts have been paused'\nset xlabel 'time (us)'\n"
              "set ylabel 'paused so far, summed over the hosts (us)'\nset grid\nset key top left\nplot " +
                  pause_lines);
    r.body += plot_line("incast_pause.png",
                        "incast: the time the hosts' ports have been paused so far, summed, per policy (PFC on; a "
                        "flat line at 0: never paused)");
  }
  write_file(out / "results.csv", csv);
  r.results["runs"] = jv;
}

}  // namespace

Definition transports() {
  return {"transports", "Congestion control compared: DCQCN, DCTCP, TIMELY, Swift, HPCC and none, with and without PFC",
          transport_variants, analyze_transports};
}

}  // namespace fabriclab::scenario::experiments
