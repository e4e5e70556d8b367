// The training experiment: data-parallel iterations (distribution elephants, then a ring allreduce).
#include "scenario/experiments/experiment.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/error.h"
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

}  // namespace

Definition training() {
  return {"training", "Data-parallel training iterations on a leaf-spine", training_variants, analyze_training};
}

}  // namespace fabriclab::scenario::experiments
