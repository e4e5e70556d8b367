// The congestion-spreading experiment: an incast on S2 pauses the S1-S2 link and a victim behind it.
#include "scenario/experiments/experiment.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>

#include "core/error.h"
#include "scenario/report/files.h"
#include "scenario/report/gnuplot.h"
#include "scenario/report/markdown.h"

namespace fabriclab::scenario::experiments {

namespace fs = std::filesystem;

namespace {

std::vector<Variant> spreading_variants(const Config&) {
  return {
      {"pfc-only", "no congestion control: PFC alone", {"nic.congestion_control=none"}},
      {"dcqcn-nvidia",
       "DCQCN, ConnectX defaults (one CNP per 4 us per port)",
       {"nic.congestion_control=dcqcn", "nic.roce_rp.preset=nvidia"}},
      {"dcqcn-nvidia-qp",
       "DCQCN, ConnectX defaults with one CNP per 4 us per QP",
       {"nic.congestion_control=dcqcn", "nic.roce_rp.preset=nvidia", "nic.roce_np.cnp_scope=qp"}},
      {"dcqcn-paper", "DCQCN, the SIGCOMM 2015 values", {"nic.congestion_control=dcqcn", "nic.roce_rp.preset=paper"}},
  };
}

// Max-min fair rates (Gb/s) of flows over the two-switch topology, by progressive filling:
// every flow crosses its source's uplink and its destination's downlink, and the
// inter-switch links (taken as one pipe) when its ends are on different switches.
std::vector<double> max_min_two_switches(const std::vector<std::pair<std::uint32_t, std::uint32_t>>& flows,
                                         std::uint32_t s1_hosts, std::uint32_t hosts, double host_gbps,
                                         double inter_gbps) {
  // Links: up(h) = h, down(h) = hosts + h, s1->s2 = 2 hosts, s2->s1 = 2 hosts + 1.
  std::vector<double> cap(2 * hosts + 2, host_gbps);
  cap[2 * hosts] = cap[2 * hosts + 1] = inter_gbps;
  std::vector<std::vector<std::size_t>> path(flows.size());
  for (std::size_t i = 0; i < flows.size(); ++i) {
    const auto [s, d] = flows[i];
    path[i] = {s, hosts + d};
    const bool s_on_1 = s < s1_hosts, d_on_1 = d < s1_hosts;
    if (s_on_1 && !d_on_1) path[i].push_back(2 * hosts);
    if (!s_on_1 && d_on_1) path[i].push_back(2 * hosts + 1);
  }
  std::vector<double> rate(flows.size(), 0);
  std::vector<bool> frozen(flows.size(), false);
  for (std::size_t left = flows.size(); left > 0;) {
    std::vector<std::size_t> users(cap.size(), 0);
    for (std::size_t i = 0; i < flows.size(); ++i)
      if (!frozen[i])
        for (std::size_t l : path[i]) ++users[l];
    double delta = 1e300;
    for (std::size_t l = 0; l < cap.size(); ++l)
      if (users[l]) delta = std::min(delta, cap[l] / static_cast<double>(users[l]));
    for (std::size_t i = 0; i < flows.size(); ++i)
      if (!frozen[i]) {
        rate[i] += delta;
        for (std::size_t l : path[i]) cap[l] -= delta;
      }
    for (std::size_t i = 0; i < flows.size(); ++i)
      if (!frozen[i])
        for (std::size_t l : path[i])
          if (cap[l] <= 1e-9) {
            frozen[i] = true;
            --left;
            break;
          }
  }
  return rate;
}

double mean_of(const std::vector<std::size_t>& ids, const std::function<double(std::size_t)>& g) {
  double s = 0;
  for (std::size_t i : ids) s += g(i);
  return s / static_cast<double>(ids.size());
}

// The incast the scenario holds: which flows are culprits and victims, and their fair shares.
struct Incast {
  std::uint32_t target = 0;                    // the host the culprits send to
  std::vector<std::size_t> culprits, victims;  // flow ids
  double victim_fair = 0, culprit_fair = 0;    // mean max-min fair rate, Gb/s
};

Incast incast_of(const Config& base, const std::vector<Ran>& runs) {
  if (base.text("topology.kind") != "two_switches")
    throw InputError("experiment congestion-spreading: the scenario must have topology.kind = \"two_switches\"");
  const CsvTable& f0 = runs.front().flows;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> flows;
  std::map<std::uint32_t, int> into;
  for (std::size_t i = 0; i < f0.rows(); ++i) {
    flows.emplace_back(host_index(f0.text(i, "src")), host_index(f0.text(i, "dst")));
    ++into[flows.back().second];
  }
  Incast c;
  c.target = std::max_element(into.begin(), into.end(), [](const auto& a, const auto& b) {
               return a.second < b.second;
             })->first;
  for (std::size_t i = 0; i < flows.size(); ++i) (flows[i].second == c.target ? c.culprits : c.victims).push_back(i);
  if (c.victims.empty() || c.culprits.size() < 2)
    throw InputError("experiment congestion-spreading: the flows must be an incast into one host (the culprits) "
                     "and at least one flow to another host (the victim)");
  const auto s1 = static_cast<std::uint32_t>(base.integer("topology.s1_hosts"));
  const auto hosts = s1 + static_cast<std::uint32_t>(base.integer("topology.s2_hosts"));
  const double host_gbps = static_cast<double>(base.rate("topology.host_rate").bps()) / 1e9;
  const double inter_gbps = static_cast<double>(base.rate("topology.fabric_rate").bps()) / 1e9 *
                            static_cast<double>(base.integer("topology.inter_switch_links"));
  const std::vector<double> fair = max_min_two_switches(flows, s1, hosts, host_gbps, inter_gbps);
  c.victim_fair = mean_of(c.victims, [&](std::size_t i) { return fair[i]; });
  c.culprit_fair = mean_of(c.culprits, [&](std::size_t i) { return fair[i]; });
  return c;
}

void describe(const Config& base, const Incast& c, Report& r) {
  r.varied =
      "The congestion control of every NIC: none (PFC alone), DCQCN with NVIDIA's defaults (CNPs paced per port), "
      "the same with CNPs paced per QP, and DCQCN with the paper's values. The scenario: " +
      std::to_string(c.culprits.size()) + " culprits send to h" + std::to_string(c.target) +
      " on S2 (an incast); the victim flow" + (c.victims.size() > 1 ? "s go" : " goes") +
      " to other hosts, crossing the S1-S2 link the culprits on S1 also use. ECN marking: Kmin " +
      base.shown("switch.wred.green_min_threshold") + ", Kmax " + base.shown("switch.wred.green_max_threshold") +
      ", Pmax " + base.shown("switch.wred.green_drop_probability") + " %.";
  r.measured = fmt::format(
      "Goodput of the victim and the culprits (bytes / completion time), against their max-min fair shares ({} and "
      "{} Gb/s: the victim's bottleneck is the S1-S2 link, the culprits' the incast port); PFC pause frames; the "
      "pause tree (every port that received a pause); paused time per port. PFC runs on priority {} only "
      "(switch.pfc.lossless), so a port's paused time is that priority's.",
      f1(c.victim_fair), f1(c.culprit_fair), base.text("switch.pfc.lossless"));
}

// Every run's figures: results.csv, throughput.dat, the report's table, the JSON
// variants, and the pause tree (the ports that received a pause, paused how long).
struct Tables {
  std::string csv, bars;
  std::vector<std::vector<std::string>> table;
  std::vector<std::string> tree_ports;                             // every port paused in any variant, in file order
  std::map<std::string, std::map<std::string, double>> paused_us;  // variant -> port -> us
  nlohmann::ordered_json jv = nlohmann::ordered_json::array();
};

// One run's row of each; its headline in r.
void add_run(const Incast& c, const Ran& run, Tables& t, Report& r) {
  const double victim = mean_of(c.victims, [&](std::size_t i) { return run.flows.number(i, "goodput_gbps", 0); });
  const double culprit = mean_of(c.culprits, [&](std::size_t i) { return run.flows.number(i, "goodput_gbps", 0); });
  std::vector<std::string> tree;
  double paused_total = 0;
  for (std::size_t p = 0; p < run.ports.rows(); ++p) {
    const double received = run.ports.number(p, "pfc_pause_received");
    const double us = run.ports.number(p, "paused_ns") / 1000.0;
    if (received <= 0) continue;
    const std::string name = run.ports.text(p, "node") + ":" + run.ports.text(p, "port");
    tree.push_back(name);
    t.paused_us[run.v.label][name] = us;
    paused_total += us;
    if (std::find(t.tree_ports.begin(), t.tree_ports.end(), name) == t.tree_ports.end()) t.tree_ports.push_back(name);
  }
  const double frames = run.summary.at("totals").at("pfc_pause_frames").get<double>();
  const double cnps = run.summary.at("congestion_control").at("cnps_sent").get<double>();
  const double victim_fair = c.victim_fair, culprit_fair = c.culprit_fair;
  t.csv += fmt::format("{},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{},{},{:.3f},{}\n", run.v.label, victim, victim_fair,
                       victim / victim_fair, culprit, culprit_fair, frames, tree.size(), paused_total, cnps);
  t.bars += fmt::format("{} {:.3f} {:.3f}\n", run.v.label, victim, culprit);
  std::string tree_text;
  for (const auto& x : tree) tree_text += (tree_text.empty() ? "" : ", ") + x;
  t.table.push_back({run.v.label, f1(victim), pct(victim / victim_fair), f1(culprit), fmt::format("{:.0f}", frames),
                     std::to_string(tree.size()), tree_text.empty() ? "-" : tree_text, f1(paused_total)});
  t.jv.push_back({{"variant", run.v.label},
                  {"victim_gbps", victim},
                  {"victim_fair_gbps", victim_fair},
                  {"culprit_gbps", culprit},
                  {"culprit_fair_gbps", culprit_fair},
                  {"pfc_pause_frames", frames},
                  {"ports_paused", tree.size()},
                  {"pause_tree", tree},
                  {"paused_us_all_ports", paused_total},
                  {"cnps", cnps}});
  r.headlines.push_back(fmt::format("{}: the victim gets {:.1f} Gb/s, {} of its fair {:.1f}; culprits {:.1f} Gb/s "
                                    "each; {:.0f} pause frames reached {} ports",
                                    run.v.label, victim, pct(victim / victim_fair), victim_fair, culprit, frames,
                                    tree.size()));
}

// How long `port` was paused in `variant` (0: not paused).
double paused_in(const Tables& t, const std::string& variant, const std::string& port) {
  const auto v = t.paused_us.find(variant);
  if (v == t.paused_us.end()) return 0.0;
  const auto p = v->second.find(port);
  return p == v->second.end() ? 0.0 : p->second;
}

// paused.dat: a row per port of the pause tree, a column per variant (0 where not paused).
std::string paused_dat(const std::vector<Ran>& runs, const Tables& t) {
  std::string dat = "# port";
  for (const Ran& run : runs) dat += " " + run.v.label;
  dat += "\n";
  for (const auto& p : t.tree_ports) {
    dat += p;
    for (const Ran& run : runs) dat += fmt::format(" {:.3f}", paused_in(t, run.v.label, p));
    dat += "\n";
  }
  return dat;
}

// The plots and report.md's table.
void draw_and_report(const Incast& c, const std::vector<Ran>& runs, const Tables& t, const fs::path& out, Report& r) {
  draw_plot(out, "throughput",
            histogram("Victim and culprit goodput", "Gb/s", "throughput.dat", {"victim", "culprits (mean)"},
                      runs.size(),
                      fmt::format("set arrow from graph 0, first {0:.3f} to graph 1, first {0:.3f} nohead dt 2 lw 2\n"
                                  "set label 'victim fair share' at graph 0.02, first {0:.3f} offset 0,0.7\n",
                                  c.victim_fair)));
  if (!t.tree_ports.empty()) {
    std::vector<std::string> labels;
    for (const Ran& run : runs) labels.push_back(run.v.label);
    draw_plot(out, "paused",
              histogram("Paused time per port (the pause tree)", "paused (us)", "paused.dat", labels,
                        t.tree_ports.size(), "set xtics rotate by -30\n"));
  }
  r.body += "## Results\n\n" +
            markdown_table({"variant", "victim (Gb/s)", "of fair share", "culprits (Gb/s)", "pause frames",
                            "ports paused", "pause tree", "paused time, all ports (us)"},
                           t.table) +
            "\n" + plot_line("throughput.png", "victim and culprit goodput");
  if (!t.tree_ports.empty()) r.body += plot_line("paused.png", "paused time per port");
}

void analyze_spreading(const Config& base, const std::vector<Ran>& runs, const fs::path& out, Report& r) {
  const Incast c = incast_of(base, runs);
  describe(base, c, r);
  Tables t;
  t.csv = "variant,victim_gbps,victim_fair_gbps,victim_share,culprit_gbps,culprit_fair_gbps,"
          "pfc_pause_frames,ports_paused,paused_us_all_ports,cnps\n";
  t.bars = "# variant victim culprits\n";
  for (const Ran& run : runs) add_run(c, run, t, r);
  write_file(out / "results.csv", t.csv);
  write_file(out / "throughput.dat", t.bars);
  r.results["victim_fair_gbps"] = c.victim_fair;
  r.results["culprit_fair_gbps"] = c.culprit_fair;
  r.results["variants"] = t.jv;
  write_file(out / "paused.dat", paused_dat(runs, t));
  draw_and_report(c, runs, t, out, r);
}

}  // namespace

Definition congestion_spreading() {
  return {"congestion-spreading", "Congestion spreading: PFC pauses a victim behind an incast", spreading_variants,
          analyze_spreading};
}

}  // namespace fabriclab::scenario::experiments
