// The training experiment: data-parallel iterations (distribution elephants, then a ring allreduce).
#include "scenario/experiments/experiment.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "offload/estimates.h"
#include "scenario/fabric/collectives.h"
#include "scenario/report/files.h"
#include "scenario/report/gnuplot.h"
#include "scenario/report/markdown.h"
#include "workload/traffic.h"

namespace fabriclab::scenario::experiments {

namespace fs = std::filesystem;

namespace {

// The hosts of the scenario's topology, one GPU each.
std::int64_t gpus_of(const Config& base) {
  const std::string kind = base.text("topology.kind");
  const auto n = [&](const char* key) { return base.integer(std::string("topology.") + key); };
  if (kind == "leaf_spine") return n("leaves") * n("hosts_per_leaf");
  if (kind == "single_switch") return n("hosts");
  if (kind == "two_switches") return n("s1_hosts") + n("s2_hosts");
  if (kind == "fat_tree") return n("k") * n("k") * n("k") / 4;
  if (kind == "ring") return n("ring_switches") * n("hosts_per_switch");
  return 2;  // back_to_back
}

// What one bucket of the allreduce holds on a NIC (the optimized assignment's closed
// form, as the run assigns it).
std::int64_t bucket_counters(const Config& base, const std::string& algorithm, std::int64_t gpus) {
  offload::BuildOptions b;
  b.ranks = static_cast<offload::Rank>(gpus);
  b.bytes = base.bytes("traffic.bytes").count() / std::max<std::int64_t>(1, base.integer("traffic.training.buckets"));
  return offload::estimate_counters("allreduce", algorithm, b, offload::Strategy::optimized).max;
}

std::vector<Variant> training_variants(const Config& base) {
  const std::string algorithm = base.text("traffic.training.algorithm");
  const std::vector<Variant> cc = {
      {"pfc-only", "no congestion control: PFC alone keeps the fabric lossless", {"nic.congestion_control=none"}},
      {"dcqcn-nvidia",
       "DCQCN, ConnectX defaults (CNP interval 4 us per port)",
       {"nic.congestion_control=dcqcn", "nic.roce_rp.preset=nvidia"}},
      {"dcqcn-paper",
       "DCQCN, the SIGCOMM 2015 values (CNP interval 50 us per QP)",
       {"nic.congestion_control=dcqcn", "nic.roce_rp.preset=paper"}},
  };
  if (algorithm == "flows") return cc;  // the ring as flows: no NIC counters, no algorithm to change
  // Offloaded: the algorithms side by side, the congestion control on and off, and NIC
  // counters for every bucket at once or for one bucket only (stall, fallback).
  const std::string one_bucket = fmt::format("nic.counters={}", bucket_counters(base, algorithm, gpus_of(base)));
  std::vector<Variant> out = {
      {algorithm, "the scenario as given: " + algorithm + ", DCQCN, counters for every bucket at once", {}},
      {algorithm + "-no-cc",
       "no congestion control: PFC alone keeps the fabric lossless",
       {"nic.congestion_control=none"}},
  };
  for (const char* other : {"rabenseifner", "recursive_doubling"})
    if (algorithm != other) {
      std::string label = other;
      std::replace(label.begin(), label.end(), '_', '-');
      out.push_back({label,
                     std::string("the planner's ") + other + " allreduce instead",
                     {std::string("traffic.training.algorithm=") + other}});
    }
  out.push_back({algorithm + "-scarce-stall",
                 "counters for one bucket only (" + one_bucket.substr(one_bucket.find('=') + 1) +
                     " per NIC): the others wait for them",
                 {one_bucket, "traffic.training.policy=stall"}});
  out.push_back({algorithm + "-scarce-fallback",
                 "counters for one bucket only: the others run in software on the host",
                 {one_bucket, "traffic.training.policy=fallback"}});
  return out;
}

// The cluster and the collective the scenario describes.
struct Setup {
  std::uint32_t n = 0;  // GPUs, one per host
  workload::TrainingLayout l;
  double s_bytes = 0;     // the allreduce's bytes
  double factor = 0;      // busbw / algbw = 2(n-1)/n
  double link_GBps = 0;   // a GPU's link, GB/s
  std::string algorithm;  // traffic.training.algorithm: "flows", or the planner's run offloaded
  bool engine() const { return algorithm != "flows"; }
};

Setup setup_of(const Config& base, const std::vector<Ran>& runs) {
  if (base.text("traffic.pattern") != "training")
    throw InputError("experiment training: the scenario must have traffic.pattern = \"training\"");
  Setup s;
  const auto n = runs.front().summary.at("network").at("hosts").get<std::uint32_t>();
  s.n = n;
  workload::TrafficSpec t;
  t.iterations = static_cast<std::uint32_t>(base.integer("traffic.training.iterations"));
  t.distribution_bytes = base.bytes("traffic.training.distribution_bytes");
  s.l = workload::training_layout(t, n);
  s.s_bytes = static_cast<double>(base.bytes("traffic.bytes").count());
  s.factor = busbw_factor("allreduce", static_cast<std::int32_t>(n));  // nccl-tests: 2(n-1)/n
  s.link_GBps = static_cast<double>(base.rate("topology.host_rate").bps()) / 8e9;
  s.algorithm = base.text("traffic.training.algorithm");
  return s;
}

void describe(const Config& base, const Setup& s, Report& r) {
  if (s.engine()) {
    r.varied = fmt::format(
        "What a collective library chooses and what the NIC has: the planner's allreduce algorithm (`{}` as "
        "given, then the others), the congestion control (DCQCN as given, or none: PFC only), and the NIC's "
        "counters -- enough for every bucket at once (`nic.counters` = {}), or for one bucket only, the others "
        "waiting for them (`stall`) or running in software on the host (`fallback`). Everything else is the "
        "scenario's: {} GPUs (one per host) on a {} topology ({} spines of {} uplinks each per leaf), {} "
        "iterations, each a distribution phase ({} to every GPU from the GPU half the cluster away, across the "
        "spines), `training.compute` of compute, then an allreduce of {} as {} gradient buckets issued at once, "
        "offloaded: every NIC runs its triggered operations, each put an RDMA WRITE through the fabric.",
        s.algorithm, base.shown("nic.counters"), s.n, base.text("topology.kind"), base.shown("topology.spines"),
        base.shown("topology.uplinks"), s.l.iterations, base.shown("traffic.training.distribution_bytes"),
        base.shown("traffic.bytes"), base.shown("traffic.training.buckets"));
    r.measured =
        "Per iteration: its time (first distribution flow started to its last collective seen complete) and where "
        "it goes: the distribution phase, the compute, the allreduce (its buckets' first issue to their last "
        "completion, from collectives.csv) and what follows it (an all-to-all, if any); the allreduce's bandwidth "
        "by the nccl-tests convention: algbw = bytes / time, busbw = algbw x 2(n-1)/n, in GB/s (10^9 bytes/s, "
        "nccl-tests' unit); "
        "its buckets offloaded and in software, and their time stalled for counters. A GPU's link carries at most " +
        f2(s.link_GBps) + " GB/s of frames, a little less of payload. Also: PFC pause frames, CNPs and ECN marks.";
    return;
  }
  r.varied = fmt::format(
      "The congestion control of every NIC: none (PFC only), DCQCN with NVIDIA's ConnectX defaults, and DCQCN "
      "with the paper's values. Everything else is the scenario's: {} GPUs (one per host) on a {} topology, {} "
      "iterations, each a distribution phase ({} to every GPU from the GPU half the cluster away) and then a ring "
      "allreduce of {} ({} steps, chunks of {}), the next step of a GPU starting when it has received the previous "
      "chunk and sent its own.",
      s.n, base.text("topology.kind"), s.l.iterations, base.shown("traffic.training.distribution_bytes"),
      base.shown("traffic.bytes"), s.l.steps(),
      to_string(Bytes::from_count(static_cast<std::int64_t>(std::ceil(s.s_bytes / s.n)))));
  r.measured =
      "Per iteration: its time (first transfer started to last allreduce step delivered), the distribution phase, "
      "the allreduce (first step started to last step delivered), and the allreduce's bandwidth by the nccl-tests "
      "convention: algbw = bytes / time, busbw = algbw x 2(n-1)/n, in GB/s (10^9 bytes/s). A GPU's link carries at "
      "most " +
      f2(s.link_GBps) +
      " GB/s of frames, a little less of payload. Also: PFC pause frames, CNPs and ECN "
      "marks over the whole run.";
}

// One iteration of a run, in ns and GB/s (all 0 when some GPU did not finish it).
struct Iteration {
  bool done = true;
  double iter_ns = 0, dist_ns = 0, ar_ns = 0, algbw = 0, busbw = 0;
  double compute_ns = 0;  // from the distribution's end to the allreduce's issue
  double after_ns = 0;    // from the allreduce's end to the iteration's (the all-to-all)
  // Offloaded: the allreduce's buckets offloaded and in software, and their stall.
  std::uint32_t offloaded = 0, software = 0;
  double stall_ns = 0;
};

// Offloaded: the distribution flows (GPU i's of iteration t at t * n + i) and the
// iteration's row of collectives.csv.
Iteration engine_iteration_of(const Setup& s, const CsvTable& f, const CsvTable& c, std::uint32_t it) {
  Iteration x;
  double first = 1e300, dist_end = 0;
  if (s.l.distribution)
    for (std::uint32_t i = 0; i < s.n; ++i) {
      const double st = f.number(it * s.n + i, "start_ns", -1), fin = f.number(it * s.n + i, "finish_ns", -1);
      if (st < 0 || fin < 0) x.done = false;
      first = std::min(first, st);
      dist_end = std::max(dist_end, fin);
    }
  // The iteration's rows: its allreduce (one row, or one per bucket: "allreduce.B"),
  // and an all-to-all after it (training.alltoall_bytes).
  double issue = 1e300, done = -1, end = -1;
  bool any = false;
  for (std::size_t r = 0; r < c.rows(); ++r) {
    if (c.number(r, "iteration") != it) continue;
    const double d = c.number(r, "done_ns", -1);
    if (d < 0) x.done = false;
    end = std::max(end, d);
    if (c.text(r, "collective") != "allreduce") continue;
    any = true;
    issue = std::min(issue, c.number(r, "issue_ns", -1));
    done = std::max(done, d);
    (c.text(r, "path") == "software" ? x.software : x.offloaded) += 1;
    x.stall_ns += c.number(r, "stall_ns", 0);
  }
  if (!any || issue < 0 || done < 0) x.done = false;
  if (!x.done) return {false};
  if (!s.l.distribution) first = issue;
  x.iter_ns = end - first;
  x.dist_ns = s.l.distribution ? dist_end - first : 0;
  x.compute_ns = s.l.distribution ? issue - dist_end : 0;
  x.after_ns = end - done;
  x.ar_ns = done - issue;
  x.algbw = s.s_bytes / x.ar_ns;  // bytes per ns = GB/s
  x.busbw = x.algbw * s.factor;
  return x;
}

Iteration iteration_of(const Setup& s, const CsvTable& f, std::uint32_t it) {
  const workload::TrainingLayout& l = s.l;
  const auto start = [&](std::uint32_t id) { return f.number(id, "start_ns", -1); };
  const auto finish = [&](std::uint32_t id) { return f.number(id, "finish_ns", -1); };
  double first = 1e300, dist_end = 0, ar_first = 1e300, last = 0;
  bool done = true;
  for (std::uint32_t i = 0; i < s.n; ++i) {
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
  Iteration x;
  x.done = done;
  x.iter_ns = done ? last - first : 0;
  x.ar_ns = done ? last - ar_first : 0;
  x.dist_ns = done && l.distribution ? dist_end - first : 0;
  x.algbw = done ? s.s_bytes / x.ar_ns : 0;  // bytes per ns = GB/s
  x.busbw = x.algbw * s.factor;
  return x;
}

// Every run's iterations: results.csv, the report's table, busbw.dat, breakdown.dat (the
// last iteration's phases) and the JSON variants.
struct Tables {
  std::string csv, busbw_dat, breakdown_dat;
  std::vector<std::vector<std::string>> table;
  nlohmann::ordered_json jv = nlohmann::ordered_json::array();
};

Tables tabulate(const Setup& s, const std::vector<Ran>& runs) {
  Tables t;
  t.csv = "variant,iteration,iteration_us,distribution_us,compute_us,allreduce_us,after_us,algbw_GBps,busbw_GBps,"
          "buckets_offloaded,buckets_software,stall_us,finished\n";
  t.busbw_dat = "# variant";
  for (std::uint32_t it = 0; it < s.l.iterations; ++it) t.busbw_dat += fmt::format(" iteration{}", it + 1);
  t.busbw_dat += "\n";
  t.breakdown_dat = "# variant distribution_us compute_us allreduce_us after_us (the last iteration)\n";
  for (const Ran& run : runs) {
    t.busbw_dat += run.v.label;
    nlohmann::ordered_json iters = nlohmann::ordered_json::array();
    const CsvTable coll = s.engine() ? read_csv(run.dir / "collectives.csv") : CsvTable{};
    Iteration last;
    for (std::uint32_t it = 0; it < s.l.iterations; ++it) {
      const Iteration x = s.engine() ? engine_iteration_of(s, run.flows, coll, it) : iteration_of(s, run.flows, it);
      last = x;
      const bool done = x.done;
      t.csv += fmt::format("{},{},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{},{},{:.3f},{}\n", run.v.label,
                           it + 1, us_of_ns(x.iter_ns), us_of_ns(x.dist_ns), us_of_ns(x.compute_ns), us_of_ns(x.ar_ns),
                           us_of_ns(x.after_ns), x.algbw, x.busbw, x.offloaded, x.software, us_of_ns(x.stall_ns),
                           done ? 1 : 0);
      t.table.push_back({run.v.label, std::to_string(it + 1), done ? f1(us_of_ns(x.iter_ns)) : "unfinished",
                         done ? f1(us_of_ns(x.dist_ns)) : "", done ? f1(us_of_ns(x.ar_ns)) : "",
                         done ? f2(x.algbw) : "", done ? f2(x.busbw) : "",
                         done && s.engine() ? fmt::format("{} / {}", x.offloaded, x.software) : "",
                         done && s.engine() ? f1(us_of_ns(x.stall_ns)) : ""});
      t.busbw_dat += fmt::format(" {:.3f}", x.busbw);
      iters.push_back({{"iteration", it + 1},
                       {"finished", done},
                       {"iteration_us", us_of_ns(x.iter_ns)},
                       {"distribution_us", us_of_ns(x.dist_ns)},
                       {"compute_us", us_of_ns(x.compute_ns)},
                       {"allreduce_us", us_of_ns(x.ar_ns)},
                       {"after_us", us_of_ns(x.after_ns)},
                       {"algbw_GBps", x.algbw},
                       {"busbw_GBps", x.busbw},
                       {"buckets_offloaded", x.offloaded},
                       {"buckets_software", x.software},
                       {"stall_us", us_of_ns(x.stall_ns)}});
    }
    t.busbw_dat += "\n";
    t.breakdown_dat += fmt::format("{} {:.3f} {:.3f} {:.3f} {:.3f}\n", run.v.label, us_of_ns(last.dist_ns),
                                   us_of_ns(last.compute_ns), us_of_ns(last.ar_ns), us_of_ns(last.after_ns));
    const auto& tot = run.summary.at("totals");
    const auto& cc = run.summary.at("congestion_control");
    t.jv.push_back({{"variant", run.v.label},
                    {"what", run.v.what},
                    {"iterations", iters},
                    {"pfc_pause_frames", tot.at("pfc_pause_frames")},
                    {"cnps", cc.at("cnps_sent")},
                    {"ecn_marks", tot.at("ecn_marks")}});
  }
  return t;
}

// The step-completion distribution, the tail that stretches every step of the ring:
// step_fct_LABEL.dat per run. Returns the plot's lines.
std::string write_step_fct(const Setup& s, const std::vector<Ran>& runs, const fs::path& out) {
  const workload::TrainingLayout& l = s.l;
  std::string cdf_plot;
  for (const Ran& run : runs) {
    std::vector<double> fct;
    for (std::uint32_t it = 0; it < l.iterations; ++it)
      for (std::uint32_t k = 0; k < l.steps(); ++k)
        for (std::uint32_t i = 0; i < s.n; ++i) {
          const double v = run.flows.number(l.step(it, k, i), "fct_ns", -1);
          if (v >= 0) fct.push_back(v / 1000.0);
        }
    std::sort(fct.begin(), fct.end());
    std::string dat;
    for (std::size_t i = 0; i < fct.size(); ++i)  // the share of steps that took at least this long
      dat += fmt::format("{:.3f} {:.6f}\n", fct[i],
                         static_cast<double>(fct.size() - i) / static_cast<double>(fct.size()));
    write_file(out / ("step_fct_" + run.v.label + ".dat"), dat);
    cdf_plot += fmt::format("{}'step_fct_{}.dat' using 1:2 with lines lw 2 title '{}'", cdf_plot.empty() ? "" : ", ",
                            run.v.label, run.v.label);
  }
  return cdf_plot;
}

void draw_plots(const Setup& s, std::size_t runs, const std::string& cdf_plot, const fs::path& out) {
  const std::string what = s.engine() ? "Offloaded allreduce" : "Ring allreduce";
  // Where the last iteration's time goes, per variant: a stacked bar each (offloaded:
  // the phases follow one another).
  if (s.engine())
    draw_plot(out, "breakdown",
              fmt::format("set title 'Where an iteration goes (the last of {}), {} GPUs'\nset ylabel 'time (us)'\n"
                          "set style data histogram\nset style histogram rowstacked\nset style fill solid 0.8 "
                          "border -1\nset boxwidth 0.6\nset xrange [-0.6:{:.1f}]\nset yrange [0:*]\nset grid ytics\n"
                          "set key top left\nset xtics rotate by -25\nplot 'breakdown.dat' using 2:xtic(1) title "
                          "'distribution', '' using 3 title 'compute', '' using 4 title 'allreduce', '' using 5 title "
                          "'after the allreduce'",
                          s.l.iterations, s.n, static_cast<double>(runs) - 0.4));
  std::vector<std::string> series;
  for (std::uint32_t it = 0; it < s.l.iterations; ++it) series.push_back(fmt::format("iteration {}", it + 1));
  const double link = s.link_GBps;
  draw_plot(
      out, "busbw",
      histogram(fmt::format("{} bus bandwidth, {} GPUs", what, s.n), "busbw (GB/s)", "busbw.dat", series, runs,
                fmt::format("set yrange [0:{:.2f}]\nset arrow from graph 0, first {:.3f} to graph 1, first {:.3f} "
                            "nohead dt 2 lw 2\nset label 'link rate' at graph 0.02, first {:.3f} offset 0,0.7\n",
                            link * 1.15, link, link, link)));
  if (s.engine()) return;  // no steps as flows
  draw_plot(out, "step_fct",
            "set title 'Allreduce steps taking at least x (all GPUs, all iterations)'\n"
            "set xlabel 'step completion time (us)'\nset ylabel 'share of steps'\nset logscale xy\n"
            "set grid\nset key top right\nplot " +
                cdf_plot);
}

// report.md's tables and plots, and a headline per variant (its last iteration).
void report(const Config& base, const Setup& s, const Tables& t, Report& r) {
  r.body += "## Results\n\n" +
            markdown_table({"variant", "iteration", "iteration (us)", "distribution (us)", "allreduce (us)",
                            "algbw (GB/s)", "busbw (GB/s)", "buckets offloaded / in software", "stall (us)"},
                           t.table) +
            "\n";
  if (s.engine()) r.body += plot_line("breakdown.png", "where the last iteration's time goes, per variant");
  std::vector<std::vector<std::string>> totals;
  for (const auto& v : t.jv)
    totals.push_back(
        {v["variant"].get<std::string>(), v["pfc_pause_frames"].dump(), v["cnps"].dump(), v["ecn_marks"].dump()});
  r.body += markdown_table({"variant", "PFC pause frames", "CNPs", "ECN marks"}, totals) + "\n";
  r.body += plot_line("busbw.png", "bus bandwidth per variant and iteration");
  if (!s.engine())
    r.body += plot_line("step_fct.png",
                        "share of allreduce steps taking at least a given time (the tail that stretches the ring)");
  for (const auto& v : t.jv) {
    const auto& last = v["iterations"].back();
    if (!last["finished"].get<bool>()) {
      r.headlines.push_back(v["variant"].get<std::string>() + ": the last iteration did not finish");
      continue;
    }
    if (!s.engine()) {  // the ring of flows overlaps the distribution: no breakdown
      r.headlines.push_back(fmt::format("{}: allreduce of {} over {} GPUs in {:.1f} us, busbw {:.2f} GB/s (last "
                                        "iteration {:.1f} us); {} PFC pause frames",
                                        v["variant"].get<std::string>(), base.shown("traffic.bytes"), s.n,
                                        last["allreduce_us"].get<double>(), last["busbw_GBps"].get<double>(),
                                        last["iteration_us"].get<double>(), v["pfc_pause_frames"].dump()));
      continue;
    }
    std::string buckets;
    if (s.engine() && last["buckets_software"].get<int>() + last["stall_us"].get<double>() > 0)
      buckets = fmt::format(", {} of its buckets in software, {:.0f} us stalled", last["buckets_software"].get<int>(),
                            last["stall_us"].get<double>());
    r.headlines.push_back(fmt::format(
        "{}: iteration {:.1f} us = distribution {:.1f} + compute {:.1f} + allreduce "
        "{:.1f}{} (busbw {:.2f} GB/s{}); {} PFC pause frames",
        v["variant"].get<std::string>(), last["iteration_us"].get<double>(), last["distribution_us"].get<double>(),
        last["compute_us"].get<double>(), last["allreduce_us"].get<double>(),
        last["after_us"].get<double>() > 0 ? fmt::format(" + all-to-all {:.1f}", last["after_us"].get<double>()) : "",
        last["busbw_GBps"].get<double>(), buckets, v["pfc_pause_frames"].dump()));
  }
}

void analyze_training(const Config& base, const std::vector<Ran>& runs, const fs::path& out, Report& r) {
  const Setup s = setup_of(base, runs);
  describe(base, s, r);
  const Tables t = tabulate(s, runs);
  write_file(out / "results.csv", t.csv);
  write_file(out / "busbw.dat", t.busbw_dat);
  write_file(out / "breakdown.dat", t.breakdown_dat);
  r.results["gpus"] = s.n;
  r.results["allreduce_bytes"] = s.s_bytes;
  r.results["variants"] = t.jv;
  draw_plots(s, runs.size(), s.engine() ? std::string() : write_step_fct(s, runs, out), out);
  report(base, s, t, r);
}

}  // namespace

Definition training() {
  return {"training", "Data-parallel training iterations on a leaf-spine", training_variants, analyze_training};
}

}  // namespace fabriclab::scenario::experiments
