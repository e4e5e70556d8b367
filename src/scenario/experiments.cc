#include "scenario/experiments.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include "core/error.h"
#include "scenario/batch/sweep.h"
#include "scenario/fabric_scenario.h"
#include "scenario/report/csv_table.h"
#include "scenario/report/files.h"
#include "scenario/report/gnuplot.h"
#include "scenario/report/markdown.h"
#include "workload/traffic.h"

namespace fabriclab::scenario {

namespace fs = std::filesystem;

namespace {

struct Variant {
  std::string label;  // a directory name and a plot label: no spaces
  std::string what;   // one line for the report
  std::vector<std::string> sets;
};

struct Ran {
  Variant v;
  fs::path dir;
  nlohmann::json summary;
  CsvTable flows, ports;
};

struct Report {
  std::string title;
  std::string varied, measured;  // markdown paragraphs
  std::vector<std::string> headlines;
  std::string body;              // markdown sections: tables, plots
  nlohmann::ordered_json results;
};

struct Definition {
  std::string name, title;
  std::function<std::vector<Variant>(const Config&)> variants;
  std::function<void(const Config&, const std::vector<Ran>&, const fs::path&, Report&)> analyze;
};

std::string f1(double x) { return fmt::format("{:.1f}", x); }
std::string f2(double x) { return fmt::format("{:.2f}", x); }
std::string pct(double x) { return fmt::format("{:.0f} %", 100.0 * x); }
double us_of_ns(double ns) { return ns / 1000.0; }

// Gb/s of `bytes` over `ns`.
double gbps(double bytes, double ns) { return ns > 0 ? bytes * 8.0 / ns : 0.0; }

std::uint32_t host_index(const std::string& name) {
  if (name.size() < 2 || name[0] != 'h') throw std::logic_error("not a host name: " + name);
  return static_cast<std::uint32_t>(std::stoul(name.substr(1)));
}

double metric(const nlohmann::json& summary, const char* section, const char* key) {
  const auto& v = summary.at(section).at(key);
  return v.is_string() ? std::stod(v.get<std::string>()) : v.get<double>();
}

// A clustered bar chart of `dat` (first column: labels; then one column per series).
std::string histogram(const std::string& title, const std::string& ylabel, const std::string& dat,
                      const std::vector<std::string>& series, std::size_t rows, const std::string& extra = "") {
  std::string cols;
  for (std::size_t i = 0; i < series.size(); ++i)
    cols += fmt::format("{}'{}' using {}{} title '{}'", i ? ", " : "", dat, i + 2, i ? "" : ":xtic(1)", series[i]);
  return fmt::format("set title '{}'\nset ylabel '{}'\nset style data histogram\n"
                     "set style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
                     "set xrange [-0.6:{:.1f}]\nset yrange [0:*]\nset grid ytics\nset key top right\n{}plot {}",
                     title, ylabel, static_cast<double>(rows) - 0.4, extra, cols);
}

std::string plot_line(const std::string& img, const std::string& caption) {
  return fmt::format("![{}]({})\n\n", caption, img);
}

// ------------------------------------------------------------------------------------
// training: data-parallel iterations (distribution elephants, then a ring allreduce)

std::vector<Variant> training_variants(const Config&) {
  return {
      {"pfc-only", "no congestion control: PFC alone keeps the fabric lossless", {"nic.congestion_control=none"}},
      {"dcqcn-nvidia", "DCQCN, ConnectX defaults (CNP interval 4 us per port)",
       {"nic.congestion_control=dcqcn", "nic.roce_rp.preset=nvidia"}},
      {"dcqcn-paper", "DCQCN, the SIGCOMM 2015 values (CNP interval 50 us per QP)",
       {"nic.congestion_control=dcqcn", "nic.roce_rp.preset=paper"}},
  };
}

void analyze_training(const Config& base, const std::vector<Ran>& runs, const fs::path& out, Report& r) {
  if (base.text("traffic.pattern") != "training")
    throw InputError("experiment training: the scenario must have traffic.pattern = \"training\"");
  const auto n = runs.front().summary.at("network").at("hosts").get<std::uint32_t>();
  workload::TrafficSpec t;
  t.iterations = static_cast<std::uint32_t>(base.integer("traffic.training.iterations"));
  t.distribution_bytes = base.bytes("traffic.training.distribution_bytes");
  const workload::TrainingLayout l = workload::training_layout(t, n);
  const double s_bytes = static_cast<double>(base.bytes("traffic.bytes").count());
  const double factor = 2.0 * (n - 1) / n;
  const double link_gbytes = static_cast<double>(base.rate("topology.host_rate").bps()) / 8e9;

  r.varied = fmt::format(
      "The congestion control of every NIC: none (PFC only), DCQCN with NVIDIA's ConnectX defaults, and DCQCN "
      "with the paper's values. Everything else is the scenario's: {} GPUs (one per host) on a {} topology, {} "
      "iterations, each a distribution phase ({} to every GPU from the GPU half the cluster away) and then a ring "
      "allreduce of {} ({} steps, chunks of {}), the next step of a GPU starting when it has received the previous "
      "chunk and sent its own.",
      n, base.text("topology.kind"), l.iterations, base.shown("traffic.training.distribution_bytes"),
      base.shown("traffic.bytes"), l.steps(), to_string(Bytes::from_count(static_cast<std::int64_t>(std::ceil(s_bytes / n)))));
  r.measured =
      "Per iteration: its time (first transfer started to last allreduce step delivered), the distribution phase, "
      "the allreduce (first step started to last step delivered), and the allreduce's bandwidth by the nccl-tests "
      "convention: algbw = bytes / time, busbw = algbw x 2(n-1)/n, in GB/s (10^9 bytes/s). A GPU's link carries at "
      "most " + f2(link_gbytes) + " GB/s of frames, a little less of payload. Also: PFC pause frames, CNPs and ECN "
      "marks over the whole run.";

  std::string csv = "variant,iteration,iteration_us,distribution_us,allreduce_us,algbw_GBps,busbw_GBps,finished\n";
  std::vector<std::vector<std::string>> table;
  std::string busbw_dat = "# variant";
  for (std::uint32_t it = 0; it < l.iterations; ++it) busbw_dat += fmt::format(" iteration{}", it + 1);
  busbw_dat += "\n";
  nlohmann::ordered_json jv = nlohmann::ordered_json::array();
  for (const Ran& run : runs) {
    const CsvTable& f = run.flows;
    const auto start = [&](std::uint32_t id) { return f.number(id, "start_ns", -1); };
    const auto finish = [&](std::uint32_t id) { return f.number(id, "finish_ns", -1); };
    busbw_dat += run.v.label;
    nlohmann::ordered_json iters = nlohmann::ordered_json::array();
    for (std::uint32_t it = 0; it < l.iterations; ++it) {
      double first = 1e300, dist_end = 0, ar_first = 1e300, last = 0;
      bool done = true;
      for (std::uint32_t i = 0; i < n; ++i) {
        const std::uint32_t head = l.distribution ? l.dist(it, i) : l.step(it, 0, i);
        const std::uint32_t tail = l.step(it, l.steps() - 1, i);
        if (start(head) < 0 || finish(tail) < 0 || start(l.step(it, 0, i)) < 0) {
          done = false;
          continue;
        }
        first = std::min(first, start(head));
        if (l.distribution) dist_end = std::max(dist_end, finish(l.dist(it, i)));
        ar_first = std::min(ar_first, start(l.step(it, 0, i)));
        last = std::max(last, finish(tail));
      }
      const double iter_ns = done ? last - first : 0, ar_ns = done ? last - ar_first : 0;
      const double dist_ns = done && l.distribution ? dist_end - first : 0;
      const double algbw = done ? s_bytes / ar_ns : 0;  // bytes per ns = GB/s
      const double busbw = algbw * factor;
      csv += fmt::format("{},{},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{}\n", run.v.label, it + 1, us_of_ns(iter_ns),
                         us_of_ns(dist_ns), us_of_ns(ar_ns), algbw, busbw, done ? 1 : 0);
      table.push_back({run.v.label, std::to_string(it + 1), done ? f1(us_of_ns(iter_ns)) : "unfinished",
                       done ? f1(us_of_ns(dist_ns)) : "", done ? f1(us_of_ns(ar_ns)) : "", done ? f2(algbw) : "",
                       done ? f2(busbw) : ""});
      busbw_dat += fmt::format(" {:.3f}", busbw);
      iters.push_back({{"iteration", it + 1},
                       {"finished", done},
                       {"iteration_us", us_of_ns(iter_ns)},
                       {"distribution_us", us_of_ns(dist_ns)},
                       {"allreduce_us", us_of_ns(ar_ns)},
                       {"algbw_GBps", algbw},
                       {"busbw_GBps", busbw}});
    }
    busbw_dat += "\n";
    const auto& tot = run.summary.at("totals");
    const auto& cc = run.summary.at("congestion_control");
    jv.push_back({{"variant", run.v.label},
                  {"iterations", iters},
                  {"pfc_pause_frames", tot.at("pfc_pause_frames")},
                  {"cnps", cc.at("cnps_sent")},
                  {"ecn_marks", tot.at("ecn_marks")}});
  }
  write_file(out / "results.csv", csv);
  write_file(out / "busbw.dat", busbw_dat);
  r.results["gpus"] = n;
  r.results["allreduce_bytes"] = s_bytes;
  r.results["variants"] = jv;

  // The step-completion distribution: the tail that stretches every step of the ring.
  std::string cdf_plot;
  for (const Ran& run : runs) {
    std::vector<double> fct;
    for (std::uint32_t it = 0; it < l.iterations; ++it)
      for (std::uint32_t k = 0; k < l.steps(); ++k)
        for (std::uint32_t i = 0; i < n; ++i) {
          const double v = run.flows.number(l.step(it, k, i), "fct_ns", -1);
          if (v >= 0) fct.push_back(v / 1000.0);
        }
    std::sort(fct.begin(), fct.end());
    std::string dat;
    for (std::size_t i = 0; i < fct.size(); ++i)  // the share of steps that took at least this long
      dat += fmt::format("{:.3f} {:.6f}\n", fct[i], static_cast<double>(fct.size() - i) / static_cast<double>(fct.size()));
    write_file(out / ("step_fct_" + run.v.label + ".dat"), dat);
    cdf_plot += fmt::format("{}'step_fct_{}.dat' using 1:2 with lines lw 2 title '{}'", cdf_plot.empty() ? "" : ", ",
                            run.v.label, run.v.label);
  }
  std::vector<std::string> series;
  for (std::uint32_t it = 0; it < l.iterations; ++it) series.push_back(fmt::format("iteration {}", it + 1));
  draw_plot(out, "busbw",
            histogram(fmt::format("Ring allreduce bus bandwidth, {} GPUs", n), "busbw (GB/s)", "busbw.dat", series,
                      runs.size(),
                      fmt::format("set yrange [0:{:.2f}]\nset arrow from graph 0, first {:.3f} to graph 1, first {:.3f} "
                                  "nohead dt 2 lw 2\nset label 'link rate' at graph 0.02, first {:.3f} offset 0,0.7\n",
                                  link_gbytes * 1.15, link_gbytes, link_gbytes, link_gbytes)));
  draw_plot(out, "step_fct",
            "set title 'Allreduce steps taking at least x (all GPUs, all iterations)'\n"
            "set xlabel 'step completion time (us)'\nset ylabel 'share of steps'\nset logscale xy\n"
            "set grid\nset key top right\nplot " + cdf_plot);

  r.body += "## Results\n\n" +
            markdown_table({"variant", "iteration", "iteration (us)", "distribution (us)", "allreduce (us)",
                            "algbw (GB/s)", "busbw (GB/s)"},
                           table) +
            "\n";
  std::vector<std::vector<std::string>> totals;
  for (const auto& v : jv)
    totals.push_back({v["variant"].get<std::string>(), v["pfc_pause_frames"].dump(), v["cnps"].dump(),
                      v["ecn_marks"].dump()});
  r.body += markdown_table({"variant", "PFC pause frames", "CNPs", "ECN marks"}, totals) + "\n";
  r.body += plot_line("busbw.png", "bus bandwidth per variant and iteration");
  r.body += plot_line("step_fct.png", "share of allreduce steps taking at least a given time (the tail that stretches the ring)");
  for (const auto& v : jv) {
    const auto& last = v["iterations"].back();
    r.headlines.push_back(fmt::format("{}: allreduce of {} over {} GPUs in {:.1f} us, busbw {:.2f} GB/s (last "
                                      "iteration {:.1f} us); {} PFC pause frames",
                                      v["variant"].get<std::string>(), base.shown("traffic.bytes"), n,
                                      last["allreduce_us"].get<double>(), last["busbw_GBps"].get<double>(),
                                      last["iteration_us"].get<double>(), v["pfc_pause_frames"].dump()));
  }
}

// ------------------------------------------------------------------------------------
// congestion-spreading: an incast on S2 pauses the S1-S2 link and a victim behind it

std::vector<Variant> spreading_variants(const Config&) {
  return {
      {"pfc-only", "no congestion control: PFC alone", {"nic.congestion_control=none"}},
      {"dcqcn-nvidia", "DCQCN, ConnectX defaults (one CNP per 4 us per port)",
       {"nic.congestion_control=dcqcn", "nic.roce_rp.preset=nvidia"}},
      {"dcqcn-nvidia-qp", "DCQCN, ConnectX defaults with one CNP per 4 us per QP",
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

void analyze_spreading(const Config& base, const std::vector<Ran>& runs, const fs::path& out, Report& r) {
  if (base.text("topology.kind") != "two_switches")
    throw InputError("experiment congestion-spreading: the scenario must have topology.kind = \"two_switches\"");
  const CsvTable& f0 = runs.front().flows;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> flows;
  std::map<std::uint32_t, int> into;
  for (std::size_t i = 0; i < f0.rows(); ++i) {
    flows.emplace_back(host_index(f0.text(i, "src")), host_index(f0.text(i, "dst")));
    ++into[flows.back().second];
  }
  const std::uint32_t target =
      std::max_element(into.begin(), into.end(), [](const auto& a, const auto& b) { return a.second < b.second; })->first;
  std::vector<std::size_t> culprits, victims;
  for (std::size_t i = 0; i < flows.size(); ++i) (flows[i].second == target ? culprits : victims).push_back(i);
  if (victims.empty() || culprits.size() < 2)
    throw InputError("experiment congestion-spreading: the flows must be an incast into one host (the culprits) "
                     "and at least one flow to another host (the victim)");
  const auto s1 = static_cast<std::uint32_t>(base.integer("topology.s1_hosts"));
  const auto hosts = s1 + static_cast<std::uint32_t>(base.integer("topology.s2_hosts"));
  const double host_gbps = static_cast<double>(base.rate("topology.host_rate").bps()) / 1e9;
  const double inter_gbps = static_cast<double>(base.rate("topology.fabric_rate").bps()) / 1e9 *
                            static_cast<double>(base.integer("topology.inter_switch_links"));
  const std::vector<double> fair = max_min_two_switches(flows, s1, hosts, host_gbps, inter_gbps);
  const auto mean_of = [](const std::vector<std::size_t>& ids, const std::function<double(std::size_t)>& g) {
    double s = 0;
    for (std::size_t i : ids) s += g(i);
    return s / static_cast<double>(ids.size());
  };
  const double victim_fair = mean_of(victims, [&](std::size_t i) { return fair[i]; });
  const double culprit_fair = mean_of(culprits, [&](std::size_t i) { return fair[i]; });

  r.varied =
      "The congestion control of every NIC: none (PFC alone), DCQCN with NVIDIA's defaults (CNPs paced per port), "
      "the same with CNPs paced per QP, and DCQCN with the paper's values. The scenario: " +
      std::to_string(culprits.size()) + " culprits send to h" + std::to_string(target) +
      " on S2 (an incast); the victim flow" + (victims.size() > 1 ? "s go" : " goes") +
      " to other hosts, crossing the S1-S2 link the culprits on S1 also use. ECN marking: Kmin " +
      base.shown("switch.wred.green_min_threshold") + ", Kmax " + base.shown("switch.wred.green_max_threshold") +
      ", Pmax " + base.shown("switch.wred.green_drop_probability") + " %.";
  r.measured = fmt::format(
      "Goodput of the victim and the culprits (bytes / completion time), against their max-min fair shares ({} and "
      "{} Gb/s: the victim's bottleneck is the S1-S2 link, the culprits' the incast port); PFC pause frames; the "
      "pause tree (every port that received a pause); paused time per port. PFC runs on priority {} only "
      "(switch.pfc.lossless), so a port's paused time is that priority's.",
      f1(victim_fair), f1(culprit_fair), base.text("switch.pfc.lossless"));

  std::string csv = "variant,victim_gbps,victim_fair_gbps,victim_share,culprit_gbps,culprit_fair_gbps,"
                    "pfc_pause_frames,ports_paused,paused_us_all_ports,cnps\n";
  std::string bars = "# variant victim culprits\n";
  std::vector<std::vector<std::string>> table;
  std::vector<std::string> tree_ports;  // every port paused in any variant, in file order
  std::map<std::string, std::map<std::string, double>> paused_us;  // variant -> port -> us
  nlohmann::ordered_json jv = nlohmann::ordered_json::array();
  for (const Ran& run : runs) {
    const double victim = mean_of(victims, [&](std::size_t i) { return run.flows.number(i, "goodput_gbps", 0); });
    const double culprit = mean_of(culprits, [&](std::size_t i) { return run.flows.number(i, "goodput_gbps", 0); });
    std::vector<std::string> tree;
    double paused_total = 0;
    for (std::size_t p = 0; p < run.ports.rows(); ++p) {
      const double received = run.ports.number(p, "pfc_pause_received");
      const double us = run.ports.number(p, "paused_ns") / 1000.0;
      if (received <= 0) continue;
      const std::string name = run.ports.text(p, "node") + ":" + run.ports.text(p, "port");
      tree.push_back(name);
      paused_us[run.v.label][name] = us;
      paused_total += us;
      if (std::find(tree_ports.begin(), tree_ports.end(), name) == tree_ports.end()) tree_ports.push_back(name);
    }
    const double frames = run.summary.at("totals").at("pfc_pause_frames").get<double>();
    const double cnps = run.summary.at("congestion_control").at("cnps_sent").get<double>();
    csv += fmt::format("{},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{},{},{:.3f},{}\n", run.v.label, victim, victim_fair,
                       victim / victim_fair, culprit, culprit_fair, frames, tree.size(), paused_total, cnps);
    bars += fmt::format("{} {:.3f} {:.3f}\n", run.v.label, victim, culprit);
    std::string tree_text;
    for (const auto& t : tree) tree_text += (tree_text.empty() ? "" : ", ") + t;
    table.push_back({run.v.label, f1(victim), pct(victim / victim_fair), f1(culprit), fmt::format("{:.0f}", frames),
                     std::to_string(tree.size()), tree_text.empty() ? "-" : tree_text, f1(paused_total)});
    jv.push_back({{"variant", run.v.label},
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
  write_file(out / "results.csv", csv);
  write_file(out / "throughput.dat", bars);
  r.results["victim_fair_gbps"] = victim_fair;
  r.results["culprit_fair_gbps"] = culprit_fair;
  r.results["variants"] = jv;

  std::string paused_dat = "# port";
  for (const Ran& run : runs) paused_dat += " " + run.v.label;
  paused_dat += "\n";
  for (const auto& p : tree_ports) {
    paused_dat += p;
    for (const Ran& run : runs) {
      const auto& m = paused_us[run.v.label];
      const auto it = m.find(p);
      paused_dat += fmt::format(" {:.3f}", it == m.end() ? 0.0 : it->second);
    }
    paused_dat += "\n";
  }
  write_file(out / "paused.dat", paused_dat);
  draw_plot(out, "throughput",
            histogram("Victim and culprit goodput", "Gb/s", "throughput.dat", {"victim", "culprits (mean)"}, runs.size(),
                      fmt::format("set arrow from graph 0, first {0:.3f} to graph 1, first {0:.3f} nohead dt 2 lw 2\n"
                                  "set label 'victim fair share' at graph 0.02, first {0:.3f} offset 0,0.7\n",
                                  victim_fair)));
  if (!tree_ports.empty()) {
    std::vector<std::string> labels;
    for (const Ran& run : runs) labels.push_back(run.v.label);
    draw_plot(out, "paused",
              histogram("Paused time per port (the pause tree)", "paused (us)", "paused.dat", labels, tree_ports.size(),
                        "set xtics rotate by -30\n"));
  }
  r.body += "## Results\n\n" +
            markdown_table({"variant", "victim (Gb/s)", "of fair share", "culprits (Gb/s)", "pause frames",
                            "ports paused", "pause tree", "paused time, all ports (us)"},
                           table) +
            "\n" + plot_line("throughput.png", "victim and culprit goodput");
  if (!tree_ports.empty()) r.body += plot_line("paused.png", "paused time per port");
}

// ------------------------------------------------------------------------------------
// ecn-cnp-pfc: marking, CNP interval and RP values against the switch buffer

struct Wred {
  const char* label;
  const char* kmin;
  const char* kmax;
  const char* pmax;
};
constexpr Wred kWred[] = {{"5KB-200KB-1", "5KB", "200KB", "1"},
                          {"100KB-400KB-5", "100KB", "400KB", "5"},
                          {"1MiB-2MiB-5", "1MiB", "2MiB", "5"}};
constexpr const char* kCnpUs[] = {"10", "50", "100"};
constexpr const char* kPresets[] = {"nvidia", "paper"};
constexpr const char* kBuffers[] = {"2MiB", "8MiB"};

std::vector<Variant> tuning_variants(const Config&) {
  std::vector<Variant> v;
  for (const char* buf : kBuffers)
    for (const Wred& w : kWred)
      for (const char* cnp : kCnpUs)
        for (const char* preset : kPresets)
          v.push_back({fmt::format("{}_{}_cnp{}us_{}", buf, w.label, cnp, preset),
                       fmt::format("buffer {}, WRED {}/{}/{} %, CNP every {} us per QP, {} RP", buf, w.kmin, w.kmax,
                                   w.pmax, cnp, preset),
                       {"nic.congestion_control=dcqcn", std::string("nic.roce_rp.preset=") + preset,
                        std::string("switch.buffer=") + buf, std::string("switch.wred.green_min_threshold=") + w.kmin,
                        std::string("switch.wred.green_max_threshold=") + w.kmax,
                        std::string("switch.wred.green_drop_probability=") + w.pmax,
                        std::string("nic.roce_np.min_time_between_cnps=") + cnp, "nic.roce_np.cnp_scope=qp"}});
  return v;
}

void analyze_tuning(const Config& base, const std::vector<Ran>& runs, const fs::path& out, Report& r) {
  r.varied = fmt::format(
      "Switch buffer ({}), ECN marking (Kmin/Kmax/Pmax: 5 KB/200 KB/1 % as in the DCQCN paper, 100 KB/400 KB/5 %, "
      "and SONiC's lossless profile 1 MiB/2 MiB/5 %), the CNP interval (10, 50, 100 us, per QP) and the RP values "
      "(DCQCN presets nvidia and paper): {} runs of the scenario ({} traffic, {} per flow).",
      "2 MiB, 8 MiB", runs.size(), base.text("traffic.pattern"), base.shown("traffic.bytes"));
  r.measured =
      "Throughput into the receivers (all bytes / time until the last flow finished), FCT percentiles, the "
      "largest switch queue, CNPs, ECN marks and PFC pause frames. \"PFC-free\" marks the settings where no pause "
      "frame was sent; the best throughput among them is the headline.";
  std::string csv =
      "variant,buffer,wred,cnp_interval_us,preset,throughput_gbps,fct_p50_us,fct_p99_us,max_queue_bytes,cnps,"
      "ecn_marks,pfc_pause_frames,pfc_free\n";
  struct Row {
    std::string label, buffer, wred, cnp, preset;
    double thr, p50, p99, queue, cnps, marks, frames;
  };
  std::vector<Row> rows;
  std::size_t i = 0;
  for (const char* buf : kBuffers)
    for (const Wred& w : kWred)
      for (const char* cnp : kCnpUs)
        for (const char* preset : kPresets) {
          const Ran& run = runs.at(i++);
          double first = 1e300, last = 0, bytes = 0;
          for (std::size_t fi = 0; fi < run.flows.rows(); ++fi) {
            first = std::min(first, run.flows.number(fi, "start_ns", 1e300));
            last = std::max(last, run.flows.number(fi, "finish_ns", 0));
            bytes += run.flows.number(fi, "bytes");
          }
          double queue = 0;
          for (std::size_t p = 0; p < run.ports.rows(); ++p) queue = std::max(queue, run.ports.number(p, "max_queue_bytes"));
          const auto& s = run.summary;
          rows.push_back({run.v.label, buf, w.label, cnp, preset, gbps(bytes, last - first),
                          metric(s, "flows", "fct_ns_p50") / 1000, metric(s, "flows", "fct_ns_p99") / 1000, queue,
                          s.at("congestion_control").at("cnps_sent").get<double>(),
                          s.at("totals").at("ecn_marks").get<double>(),
                          s.at("totals").at("pfc_pause_frames").get<double>()});
        }
  nlohmann::ordered_json jv = nlohmann::ordered_json::array();
  std::vector<std::vector<std::string>> table;
  const Row* best = nullptr;
  std::size_t pfc_free = 0;
  std::string dat_free, dat_pfc;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const Row& x = rows[k];
    const bool free = x.frames == 0;
    pfc_free += free;
    if (free && (!best || x.thr > best->thr)) best = &x;
    csv += fmt::format("{},{},{},{},{},{:.3f},{:.3f},{:.3f},{:.0f},{:.0f},{:.0f},{:.0f},{}\n", x.label, x.buffer, x.wred,
                       x.cnp, x.preset, x.thr, x.p50, x.p99, x.queue, x.cnps, x.marks, x.frames, free ? 1 : 0);
    table.push_back({x.buffer, x.wred, x.cnp, x.preset, f1(x.thr), f1(x.p50), f1(x.p99),
                     fmt::format("{:.0f}", x.queue / 1024), fmt::format("{:.0f}", x.cnps),
                     fmt::format("{:.0f}", x.frames), free ? "yes" : ""});
    (free ? dat_free : dat_pfc) += fmt::format("{} {:.3f} {:.0f}\n", k, x.thr, x.frames);
    jv.push_back({{"variant", x.label}, {"buffer", x.buffer}, {"wred", x.wred}, {"cnp_interval_us", x.cnp},
                  {"preset", x.preset}, {"throughput_gbps", x.thr}, {"fct_p50_us", x.p50}, {"fct_p99_us", x.p99},
                  {"max_queue_bytes", x.queue}, {"cnps", x.cnps}, {"pfc_pause_frames", x.frames},
                  {"pfc_free", free}});
  }
  write_file(out / "results.csv", csv);
  write_file(out / "pfc_free.dat", dat_free.empty() ? "-1 0 0\n" : dat_free);
  write_file(out / "pfc.dat", dat_pfc.empty() ? "-1 0 0\n" : dat_pfc);
  r.results["points"] = jv;
  r.results["pfc_free_points"] = pfc_free;
  r.results["best_pfc_free"] = best ? nlohmann::ordered_json(best->label) : nlohmann::ordered_json(nullptr);
  // Settings come in groups of (CNP interval x preset) per marking, per buffer: label the
  // groups on the x axis and the buffers above them.
  const std::size_t per_marking = std::size(kCnpUs) * std::size(kPresets);
  const std::size_t per_buffer = per_marking * std::size(kWred);
  std::string tics, marks;
  for (std::size_t b = 0; b < std::size(kBuffers); ++b) {
    for (std::size_t w = 0; w < std::size(kWred); ++w)
      tics += fmt::format("{}'{}' {:.1f}", tics.empty() ? "" : ", ", kWred[w].label,
                          static_cast<double>(b * per_buffer + w * per_marking) + (per_marking - 1) / 2.0);
    marks += fmt::format("set label 'buffer {}' at {:.1f}, graph 0.95 center\n", kBuffers[b],
                         static_cast<double>(b * per_buffer) + (per_buffer - 1) / 2.0);
    if (b > 0)
      marks += fmt::format("set arrow from {0:.1f}, graph 0 to {0:.1f}, graph 1 nohead dt 2\n",
                           static_cast<double>(b * per_buffer) - 0.5);
  }
  draw_plot(out, "throughput",
            fmt::format("set title 'Throughput per setting (green: PFC never fired)'\nset ylabel 'throughput (Gb/s)'\n"
                        "set xlabel 'marking Kmin-Kmax-Pmax; in each group CNP every 10, 50, 100 us x RP nvidia, paper'\n"
                        "set xrange [-1:{}]\nset yrange [0:125]\nset ytics 0,20,100\nset grid ytics\n"
                        "set style fill solid 0.8\nset boxwidth 0.7\nset xtics ({})\nset key top left horizontal\n{}"
                        "plot 'pfc_free.dat' using 1:2 with boxes lc rgb '#2ca02c' title 'PFC-free', "
                        "'pfc.dat' using 1:2 with boxes lc rgb '#d62728' title 'PFC fired'",
                        rows.size(), tics, marks));
  r.body += "## Results\n\nEvery setting; \"PFC-free\" = no pause frame sent.\n\n" +
            markdown_table({"buffer", "marking", "CNP (us)", "RP", "throughput (Gb/s)", "FCT p50 (us)", "FCT p99 (us)",
                            "max queue (KiB)", "CNPs", "pause frames", "PFC-free"},
                           table) +
            "\n" + plot_line("throughput.png", "throughput per setting");
  r.headlines.push_back(fmt::format("{} of {} settings never fired PFC", pfc_free, rows.size()));
  if (best)
    r.headlines.push_back(fmt::format("best PFC-free setting: buffer {}, marking {}, CNP every {} us, {} RP: {:.1f} "
                                      "Gb/s, FCT p99 {:.1f} us, largest queue {:.0f} KiB",
                                      best->buffer, best->wred, best->cnp, best->preset, best->thr, best->p99,
                                      best->queue / 1024));
  const auto worst = std::max_element(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.frames < b.frames; });
  r.headlines.push_back(fmt::format("most pauses: buffer {}, marking {}, CNP every {} us, {} RP: {:.0f} pause frames, "
                                    "{:.1f} Gb/s",
                                    worst->buffer, worst->wred, worst->cnp, worst->preset, worst->frames, worst->thr));
}

// ------------------------------------------------------------------------------------
// ecmp-vs-spray: elephants with few QPs on a leaf-spine

std::vector<Variant> lb_variants(const Config& base) {
  const auto spines = base.integer("topology.spines"), uplinks = base.integer("topology.uplinks");
  const std::string w = base.shown("nic.reorder_window");
  return {
      {"ecmp-1-tier", fmt::format("ECMP, {} spines x 1 link: one hashing decision (at the leaf)", spines * uplinks),
       {"switch.lb=ecmp", fmt::format("topology.spines={}", spines * uplinks), "topology.uplinks=1"}},
      {"ecmp-2-tiers-same-seed",
       fmt::format("ECMP, {} spines x {} links, leaf and spine hash alike (same function and seed)", spines, uplinks),
       {"switch.lb=ecmp", "switch.ecmp.seed_per_switch=false"}},
      {"ecmp-2-tiers", fmt::format("ECMP, {} spines x {} links, a seed per switch", spines, uplinks),
       {"switch.lb=ecmp", "switch.ecmp.seed_per_switch=true"}},
      {"spray-window", "packet spraying (round-robin), receiver reorder window W = " + w,
       {"switch.lb=spray_rr"}},
      {"spray-go-back-n", "packet spraying (round-robin), no reorder window (go-back-N)",
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
    jv.push_back({{"variant", run.v.label}, {"uplink_max_over_mean", ui}, {"uplink_idle", idle(up)},
                  {"downlink_max_over_mean", di}, {"downlink_idle", idle(down)}, {"fct_p50_us", p50},
                  {"fct_p99_us", p99}, {"fct_max_us", mx}, {"retransmitted_packets", rtx},
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

// ------------------------------------------------------------------------------------
// reorder: generator -> spraying switch -> reorder box -> re-sequencing receiver

struct Receiver {
  const char* label;
  const char* what;
  std::vector<std::string> sets;
};
const std::vector<Receiver>& reorder_receivers() {
  static const std::vector<Receiver> r = {
      {"nic-go-back-n", "NIC, go-back-N (no reorder window)", {"nic.reorder_window=0"}},
      {"nic-window-32", "NIC, reorder window W = 32 packets", {"nic.reorder_window=32"}},
      {"nic-window-128", "NIC, reorder window W = 128 packets", {"nic.reorder_window=128"}},
      {"nic-window-128-timer", "NIC, W = 128, gives up on a gap after 10 us",
       {"nic.reorder_window=128", "nic.reorder_timeout=10us"}},
      {"switch-32", "switch egress re-sequencer, 32 packets, 50 us timeout; NIC go-back-N",
       {"nic.reorder_window=0", "reseq.buffer=32", "reseq.timeout=50us"}},
      {"switch-128", "switch egress re-sequencer, 128 packets, 50 us timeout; NIC go-back-N",
       {"nic.reorder_window=0", "reseq.buffer=128", "reseq.timeout=50us"}},
  };
  return r;
}
struct Impairment {
  std::string label, what;
  std::vector<std::string> sets;
  std::uint32_t depth = 0;  // hold by this many packets of the impaired path (0: not a depth point)
};
const std::vector<Impairment>& reorder_impairments() {
  static const std::vector<Impairment> all = [] {
    std::vector<Impairment> v;
    for (std::uint32_t k : {1u, 2u, 4u, 8u, 16u, 32u, 64u})
      v.push_back({fmt::format("hold{}", k), fmt::format("1 % of the packets held for {} packets of the path", k),
                   {"impair.reorder_probability=0.01", fmt::format("impair.reorder_packets={}", k)}, k});
    v.push_back({"delay2us", "1 % delayed 2 us", {"impair.reorder_probability=0.01", "impair.reorder_delay=2us"}, 0});
    v.push_back({"delay20us", "1 % delayed 20 us", {"impair.reorder_probability=0.01", "impair.reorder_delay=20us"}, 0});
    v.push_back({"drop1e-3", "0.1 % dropped", {"impair.drop_probability=0.001"}, 0});
    v.push_back({"corrupt1e-3", "0.1 % corrupted", {"impair.corrupt_probability=0.001"}, 0});
    return v;
  }();
  return all;
}

std::vector<Variant> reorder_variants(const Config& base) {
  const std::string at = base.text("output.reorder_metrics");
  if (at.empty() || split_list(at).size() != 1)
    throw InputError("experiment reorder: output.reorder_metrics must name the one port toward the receiver "
                     "(NODE:PORT), where re-sequencing happens and the order is measured");
  if (base.text("impair.link").empty())
    throw InputError("experiment reorder: the scenario needs a reorder box (impair.link)");
  std::vector<Variant> v;
  for (const Receiver& r : reorder_receivers())
    for (const Impairment& i : reorder_impairments()) {
      Variant x{std::string(r.label) + "_" + i.label, std::string(r.what) + "; " + i.what, r.sets};
      if (std::string(r.label).rfind("switch", 0) == 0) x.sets.push_back("reseq.link=" + at);
      // Every impairment starts from none: the scenario's own box settings are replaced.
      for (const char* k : {"impair.reorder_probability=0", "impair.reorder_delay=0ps", "impair.drop_probability=0",
                            "impair.corrupt_probability=0"})
        x.sets.push_back(k);
      x.sets.insert(x.sets.end(), i.sets.begin(), i.sets.end());
      v.push_back(std::move(x));
    }
  return v;
}

void analyze_reorder(const Config& base, const std::vector<Ran>& runs, const fs::path& out, Report& r) {
  const auto& receivers = reorder_receivers();
  const auto& imps = reorder_impairments();
  r.varied = fmt::format(
      "The receiver's re-sequencing ({} ways) against the impairment ({} kinds) -- {} runs. The scenario: one QP of "
      "{} from a line-rate generator, sprayed round-robin by s1 over {} links to s2; the reorder box on {} impairs "
      "one of them; re-sequencing at the NIC or at {} (the egress toward the receiver). Hold depths count packets "
      "of the impaired path, which carries every other packet of the flow: a hold of K shows as an extent of about "
      "2K.",
      receivers.size(), imps.size(), runs.size(), base.shown("traffic.bytes"),
      base.integer("topology.inter_switch_links"), base.text("impair.link"), base.text("output.reorder_metrics"));
  r.measured =
      "At the egress toward the receiver (what the re-sequencer, or the NIC behind it, is offered), per RFC "
      "4737/5236: received packets, reordered ratio (a packet is reordered if its PSN is below the highest seen "
      "so far + 1), the largest reordering extent (arrival index minus that of the earliest earlier packet with a "
      "larger PSN) and late time, n-reordering (in reorder.csv of each run, with the displacement and buffer-"
      "occupancy densities in reorder_density.csv). At the receiver: NAKs, give-ups, retransmitted packets, drops, "
      "goodput. **Reorder gap**: the largest extent a receiver absorbed without a NAK, a drop or a "
      "retransmission, over the hold depths; \"breaks at\": the first hold depth where it no longer did.";
  std::string csv = "variant,receiver,impairment,received,reordered_ratio,max_extent,max_late_ns,naks,give_ups,"
                    "timeouts,retransmitted_packets,drops,goodput_gbps,clean\n";
  std::vector<std::vector<std::string>> table;
  struct Cell {
    double extent = 0, goodput = 0;
    bool clean = false;
  };
  std::map<std::string, std::map<std::string, Cell>> grid;
  nlohmann::ordered_json jv = nlohmann::ordered_json::array();
  std::size_t k = 0;
  for (const Receiver& rc : receivers)
    for (const Impairment& im : imps) {
      const Ran& run = runs.at(k++);
      const CsvTable rt = read_csv(run.dir / "reorder.csv");
      if (rt.rows() != 1)
        throw InputError(fmt::format("experiment reorder: {}: expected one QP in reorder.csv, found {}", run.v.label,
                                     rt.rows()));
      const double extent = rt.number(0, "max_extent"), ratio = rt.number(0, "reordered_ratio");
      const double late = rt.number(0, "max_late_ns"), received = rt.number(0, "received");
      const auto& s = run.summary;
      const double naks = s.at("transport").at("naks_sent").get<double>();
      const double give_ups = s.at("transport").at("reorder_give_ups").get<double>() +
                              (s.contains("resequencer") ? s.at("resequencer").at("give_ups_full").get<double>() +
                                                               s.at("resequencer").at("give_ups_timeout").get<double>()
                                                         : 0.0);
      const double rtx = s.at("flows").at("retransmitted_packets").get<double>();
      const double rto = s.at("transport").at("timeouts").get<double>();
      const double drops = s.at("totals").at("drops").get<double>();
      const double goodput = run.flows.number(0, "goodput_gbps", 0);
      const bool clean = naks == 0 && rtx == 0 && drops == 0;
      grid[rc.label][im.label] = {extent, goodput, clean};
      csv += fmt::format("{},{},{},{:.0f},{:.6f},{:.0f},{:.3f},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},{:.3f},{}\n",
                         run.v.label, rc.label, im.label, received, ratio, extent, late, naks, give_ups, rto, rtx,
                         drops, goodput, clean ? 1 : 0);
      table.push_back({rc.label, im.label, fmt::format("{:.2f} %", 100 * ratio), fmt::format("{:.0f}", extent),
                       f1(late / 1000), fmt::format("{:.0f}", naks), fmt::format("{:.0f}", give_ups),
                       fmt::format("{:.0f}", rto), fmt::format("{:.0f}", rtx), f1(goodput), clean ? "yes" : ""});
    }
  write_file(out / "results.csv", csv);

  std::vector<std::vector<std::string>> gaps;
  std::string gap_dat = "# receiver reorder_gap\n", goodput_dat = "# depth";
  for (const Receiver& rc : receivers) goodput_dat += std::string(" ") + rc.label;
  goodput_dat += "\n";
  for (const Impairment& im : imps) {
    if (im.depth == 0) continue;
    goodput_dat += std::to_string(im.depth);
    for (const Receiver& rc : receivers) goodput_dat += fmt::format(" {:.3f}", grid[rc.label][im.label].goodput);
    goodput_dat += "\n";
  }
  for (const Receiver& rc : receivers) {
    double gap = 0;
    std::string breaks = "never (up to the deepest hold)";
    double breaks_extent = -1;
    for (const Impairment& im : imps) {
      if (im.depth == 0) continue;
      const Cell& c = grid[rc.label][im.label];
      if (c.clean) gap = std::max(gap, c.extent);
      else if (breaks_extent < 0) {
        breaks_extent = c.extent;
        breaks = fmt::format("hold {} (extent {:.0f})", im.depth, c.extent);
      }
    }
    gap_dat += fmt::format("{} {:.0f}\n", rc.label, gap);
    gaps.push_back({rc.label, rc.what, fmt::format("{:.0f}", gap), breaks,
                    f1(grid[rc.label]["hold64"].goodput)});
    jv.push_back({{"receiver", rc.label}, {"reorder_gap", gap}, {"breaks_at", breaks},
                  {"breaks_at_extent", breaks_extent < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(breaks_extent)},
                  {"goodput_gbps_hold64", grid[rc.label]["hold64"].goodput}});
    r.headlines.push_back(fmt::format("{}: reorder gap {:.0f} packets; breaks at {}; goodput {:.1f} Gb/s at hold 64",
                                      rc.label, gap, breaks, grid[rc.label]["hold64"].goodput));
  }
  write_file(out / "reorder_gap.dat", gap_dat);
  write_file(out / "goodput.dat", goodput_dat);
  r.results["receivers"] = jv;
  draw_plot(out, "reorder_gap",
            histogram("Reorder gap: the largest extent absorbed without NAK, drop or retransmission", "packets",
                      "reorder_gap.dat", {"reorder gap"}, receivers.size(), "set xtics rotate by -20\nset key off\n"));
  std::string lines;
  for (std::size_t i = 0; i < receivers.size(); ++i)
    lines += fmt::format("{}'goodput.dat' using 1:{} with linespoints lw 2 title '{}'", i ? ", " : "", i + 2,
                         receivers[i].label);
  draw_plot(out, "goodput",
            "set title 'Goodput against the hold depth (1 % of one path held back)'\nset xlabel 'hold depth "
            "(packets of the impaired path)'\nset ylabel 'goodput (Gb/s)'\nset logscale x 2\nset yrange [0:*]\n"
            "set grid\nset key bottom left\nplot " + lines);
  r.body += "## Reorder gap per receiver\n\n" +
            markdown_table({"receiver", "re-sequencing", "reorder gap (packets)", "breaks at", "goodput at hold 64 (Gb/s)"},
                           gaps) +
            "\n" + plot_line("reorder_gap.png", "reorder gap per receiver") +
            plot_line("goodput.png", "goodput against hold depth") + "## Every run\n\n" +
            markdown_table({"receiver", "impairment", "reordered", "max extent", "max late (us)", "NAKs", "give-ups",
                            "timeouts", "retransmitted", "goodput (Gb/s)", "clean"},
                           table) +
            "\n";
}

const std::vector<Definition>& definitions() {
  static const std::vector<Definition> d = {
      {"training", "Data-parallel training iterations on a leaf-spine", training_variants, analyze_training},
      {"congestion-spreading", "Congestion spreading: PFC pauses a victim behind an incast", spreading_variants,
       analyze_spreading},
      {"ecn-cnp-pfc", "ECN marking, CNP interval and DCQCN values against PFC", tuning_variants, analyze_tuning},
      {"ecmp-vs-spray", "ECMP polarization versus packet spraying", lb_variants, analyze_lb},
      {"reorder", "Reorder tolerance of re-sequencing receivers", reorder_variants, analyze_reorder},
  };
  return d;
}

}  // namespace

const std::vector<std::string>& experiment_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& d : definitions()) n.push_back(d.name);
    return n;
  }();
  return names;
}

ExperimentOutcome run_experiment(const ExperimentOptions& opt) {
  const auto def = std::find_if(definitions().begin(), definitions().end(),
                                [&](const Definition& d) { return d.name == opt.name; });
  if (def == definitions().end()) {
    std::string list;
    for (const auto& n : experiment_names()) list += (list.empty() ? "" : ", ") + n;
    throw InputError("unknown experiment '" + opt.name + "' (expected one of: " + list + ")");
  }
  const std::string scenario = opt.scenario.empty() ? "examples/" + opt.name + ".toml" : opt.scenario;
  if (!fs::exists(scenario))
    throw InputError(scenario + ": not found (run from the project root, or give --scenario FILE)");
  const fs::path out = opt.out_dir.empty() ? fs::path("results") / opt.name : fs::path(opt.out_dir);
  const Config base = fabric_parameters().resolve(scenario, opt.sets).config;
  const std::vector<Variant> variants = def->variants(base);

  std::vector<std::vector<std::string>> points;
  std::vector<std::string> dirs;
  for (const Variant& v : variants) {
    points.push_back(v.sets);
    dirs.push_back((out / "variants" / v.label).string());
  }
  std::error_code ec;
  fs::create_directories(out / "variants", ec);
  if (ec) throw InputError(fmt::format("{}: cannot create: {}", out.string(), ec.message()));
  const std::vector<int> status =
      run_scenario_points(scenario, opt.sets, points, dirs, opt.jobs, "experiment " + opt.name, opt.progress);

  ExperimentOutcome o;
  o.dir = out.string();
  std::vector<Ran> runs;
  std::vector<std::string> unsafe;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    if (status[i] >= 2)
      throw InputError(fmt::format("experiment {}: variant {} failed (exit {}; its message is above)", opt.name,
                                   variants[i].label, status[i]));
    if (status[i] == 1) unsafe.push_back(variants[i].label);
    const fs::path d = dirs[i];
    runs.push_back({variants[i], d, read_json(d / "summary.json"), read_csv(d / "flows.csv"), read_csv(d / "ports.csv")});
  }
  o.unsafe = !unsafe.empty();

  Report r;
  r.title = def->title;
  def->analyze(base, runs, out, r);

  std::string md = "# " + r.title + "\n\n";
  md += fmt::format("`fabriclab experiment {}` on `{}`", opt.name, scenario);
  for (const auto& s : opt.sets) md += " `--set " + s + "`";
  md += ". Every run's outputs are in `variants/`; the numbers below are in `results.csv` and `results.json`.\n\n";
  md += "## Headline\n\n";
  for (const auto& h : r.headlines) md += "- " + h + "\n";
  if (!unsafe.empty()) {
    md += "- **Lossless drops or a PFC deadlock** in:";
    for (const auto& u : unsafe) md += " " + u;
    md += " (see their summary.json).\n";
  }
  md += "\n## What was varied\n\n" + r.varied + "\n\n";
  std::vector<std::vector<std::string>> vt;
  for (const Variant& v : variants) {
    std::string sets;
    for (const auto& s : v.sets) sets += (sets.empty() ? "`" : " `") + s + "`";
    vt.push_back({v.label, v.what, sets});
  }
  if (variants.size() <= 12) md += markdown_table({"variant", "what", "settings"}, vt) + "\n";
  md += "## What was measured\n\n" + r.measured + "\n\n" + r.body;
  write_file(out / "report.md", md);

  r.results["experiment"] = opt.name;
  r.results["scenario"] = scenario;
  r.results["headlines"] = r.headlines;
  write_file(out / "results.json", r.results.dump(2) + "\n");
  o.headlines = r.headlines;
  o.results = r.results;
  return o;
}

}  // namespace fabriclab::scenario
