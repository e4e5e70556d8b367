// The training experiment: data-parallel iterations (distribution elephants, then a ring allreduce).
#include "scenario/experiments/experiment.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "scenario/fabric/collectives.h"
#include "scenario/report/files.h"
#include "scenario/report/gnuplot.h"
#include "scenario/report/markdown.h"
#include "workload/traffic.h"

namespace fabriclab::scenario::experiments {

namespace fs = std::filesystem;

namespace {

std::vector<Variant> training_variants(const Config&) {
  return {
      {"pfc-only", "no congestion control: PFC alone keeps the fabric lossless", {"nic.congestion_control=none"}},
      {"dcqcn-nvidia",
       "DCQCN, ConnectX defaults (CNP interval 4 us per port)",
       {"nic.congestion_control=dcqcn", "nic.roce_rp.preset=nvidia"}},
      {"dcqcn-paper",
       "DCQCN, the SIGCOMM 2015 values (CNP interval 50 us per QP)",
       {"nic.congestion_control=dcqcn", "nic.roce_rp.preset=paper"}},
  };
}

// The cluster and the collective the scenario describes.
struct Setup {
  std::uint32_t n = 0;  // GPUs, one per host
  workload::TrainingLayout l;
  double s_bytes = 0;      // the allreduce's bytes
  double factor = 0;       // busbw / algbw = 2(n-1)/n
  double link_gbytes = 0;  // a GPU's link, GB/s
  std::string algorithm;   // traffic.training.algorithm: "flows", or the planner's run offloaded
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
  s.link_gbytes = static_cast<double>(base.rate("topology.host_rate").bps()) / 8e9;
  s.algorithm = base.text("traffic.training.algorithm");
  return s;
}

void describe(const Config& base, const Setup& s, Report& r) {
  if (s.engine()) {
    r.varied = fmt::format(
        "The congestion control of every NIC: none (PFC only), DCQCN with NVIDIA's ConnectX defaults, and DCQCN "
        "with the paper's values. Everything else is the scenario's: {} GPUs (one per host) on a {} topology, {} "
        "iterations, each a distribution phase ({} to every GPU from the GPU half the cluster away) and then an "
        "allreduce of {} by the planner's `{}` algorithm, offloaded: every NIC runs its triggered operations "
        "(counters from `nic.counters`), each put an RDMA WRITE through the fabric.",
        s.n, base.text("topology.kind"), s.l.iterations, base.shown("traffic.training.distribution_bytes"),
        base.shown("traffic.bytes"), s.algorithm);
    r.measured =
        "Per iteration: its time (first distribution flow started to the allreduce seen complete), the "
        "distribution phase, the allreduce (issued `training.compute` after the last GPU had its data, to its "
        "completion, from collectives.csv), and its bandwidth by the nccl-tests convention: algbw = bytes / time, "
        "busbw = algbw x 2(n-1)/n, in GB/s (10^9 bytes/s). A GPU's link carries at most " +
        f2(s.link_gbytes) + " GB/s of frames, a little less of payload. Also: PFC pause frames, CNPs and ECN marks.";
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
      f2(s.link_gbytes) +
      " GB/s of frames, a little less of payload. Also: PFC pause frames, CNPs and ECN "
      "marks over the whole run.";
}

// One iteration of a run, in ns and GB/s (all 0 when some GPU did not finish it).
struct Iteration {
  bool done = true;
  double iter_ns = 0, dist_ns = 0, ar_ns = 0, algbw = 0, busbw = 0;
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
  // The iteration's rows: its allreduce, and an all-to-all after it (training.alltoall_bytes).
  double issue = -1, done = -1, end = -1;
  for (std::size_t r = 0; r < c.rows(); ++r) {
    if (c.number(r, "iteration") != it) continue;
    const double d = c.number(r, "done_ns", -1);
    if (d < 0) x.done = false;
    end = std::max(end, d);
    if (c.text(r, "name") == "allreduce") issue = c.number(r, "issue_ns", -1), done = d;
  }
  if (issue < 0 || done < 0) x.done = false;
  if (!x.done) return {false};
  if (!s.l.distribution) first = issue;
  x.iter_ns = end - first;
  x.dist_ns = s.l.distribution ? dist_end - first : 0;
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

// Every run's iterations: results.csv, the report's table, busbw.dat and the JSON variants.
struct Tables {
  std::string csv, busbw_dat;
  std::vector<std::vector<std::string>> table;
  nlohmann::ordered_json jv = nlohmann::ordered_json::array();
};

Tables tabulate(const Setup& s, const std::vector<Ran>& runs) {
  Tables t;
  t.csv = "variant,iteration,iteration_us,distribution_us,allreduce_us,algbw_GBps,busbw_GBps,finished\n";
  t.busbw_dat = "# variant";
  for (std::uint32_t it = 0; it < s.l.iterations; ++it) t.busbw_dat += fmt::format(" iteration{}", it + 1);
  t.busbw_dat += "\n";
  for (const Ran& run : runs) {
    t.busbw_dat += run.v.label;
    nlohmann::ordered_json iters = nlohmann::ordered_json::array();
    const CsvTable coll = s.engine() ? read_csv(run.dir / "collectives.csv") : CsvTable{};
    for (std::uint32_t it = 0; it < s.l.iterations; ++it) {
      const Iteration x = s.engine() ? engine_iteration_of(s, run.flows, coll, it) : iteration_of(s, run.flows, it);
      const bool done = x.done;
      t.csv += fmt::format("{},{},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{}\n", run.v.label, it + 1, us_of_ns(x.iter_ns),
                           us_of_ns(x.dist_ns), us_of_ns(x.ar_ns), x.algbw, x.busbw, done ? 1 : 0);
      t.table.push_back({run.v.label, std::to_string(it + 1), done ? f1(us_of_ns(x.iter_ns)) : "unfinished",
                         done ? f1(us_of_ns(x.dist_ns)) : "", done ? f1(us_of_ns(x.ar_ns)) : "",
                         done ? f2(x.algbw) : "", done ? f2(x.busbw) : ""});
      t.busbw_dat += fmt::format(" {:.3f}", x.busbw);
      iters.push_back({{"iteration", it + 1},
                       {"finished", done},
                       {"iteration_us", us_of_ns(x.iter_ns)},
                       {"distribution_us", us_of_ns(x.dist_ns)},
                       {"allreduce_us", us_of_ns(x.ar_ns)},
                       {"algbw_GBps", x.algbw},
                       {"busbw_GBps", x.busbw}});
    }
    t.busbw_dat += "\n";
    const auto& tot = run.summary.at("totals");
    const auto& cc = run.summary.at("congestion_control");
    t.jv.push_back({{"variant", run.v.label},
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
  const std::string what = s.engine() ? fmt::format("Offloaded allreduce ({})", s.algorithm) : "Ring allreduce";
  std::vector<std::string> series;
  for (std::uint32_t it = 0; it < s.l.iterations; ++it) series.push_back(fmt::format("iteration {}", it + 1));
  const double link = s.link_gbytes;
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
                            "algbw (GB/s)", "busbw (GB/s)"},
                           t.table) +
            "\n";
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
    r.headlines.push_back(fmt::format("{}: allreduce of {} over {} GPUs in {:.1f} us, busbw {:.2f} GB/s (last "
                                      "iteration {:.1f} us); {} PFC pause frames",
                                      v["variant"].get<std::string>(), base.shown("traffic.bytes"), s.n,
                                      last["allreduce_us"].get<double>(), last["busbw_GBps"].get<double>(),
                                      last["iteration_us"].get<double>(), v["pfc_pause_frames"].dump()));
  }
}

void analyze_training(const Config& base, const std::vector<Ran>& runs, const fs::path& out, Report& r) {
  const Setup s = setup_of(base, runs);
  describe(base, s, r);
  const Tables t = tabulate(s, runs);
  write_file(out / "results.csv", t.csv);
  write_file(out / "busbw.dat", t.busbw_dat);
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
