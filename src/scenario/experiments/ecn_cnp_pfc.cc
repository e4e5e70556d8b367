// The ecn-cnp-pfc experiment: marking, CNP interval and RP values against the switch buffer.
#include "scenario/experiments/experiment.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iterator>

#include "core/error.h"
#include "scenario/report/files.h"
#include "scenario/report/gnuplot.h"
#include "scenario/report/markdown.h"

namespace fabriclab::scenario::experiments {

namespace fs = std::filesystem;

namespace {

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

void describe(const Config& base, std::size_t runs, Report& r) {
  r.varied = fmt::format(
      "Switch buffer ({}), ECN marking (Kmin/Kmax/Pmax: 5 KB/200 KB/1 % as in the DCQCN paper, 100 KB/400 KB/5 %, "
      "and SONiC's lossless profile 1 MiB/2 MiB/5 %), the CNP interval (10, 50, 100 us, per QP) and the RP values "
      "(DCQCN presets nvidia and paper): {} runs of the scenario ({} traffic, {} per flow).",
      "2 MiB, 8 MiB", runs, base.text("traffic.pattern"), base.shown("traffic.bytes"));
  r.measured =
      "Throughput into the receivers (all bytes / time until the last flow finished), FCT percentiles, the "
      "largest switch queue, CNPs, ECN marks and PFC pause frames. \"PFC-free\" marks the settings where no pause "
      "frame was sent; the best throughput among them is the headline.";
}

// One setting's run.
struct Row {
  std::string label, buffer, wred, cnp, preset;
  double thr, p50, p99, queue, cnps, marks, frames;
};

Row row_of(const Ran& run, const char* buf, const Wred& w, const char* cnp, const char* preset) {
  const FlowSpan span = flow_span(run.flows);
  double queue = 0;
  for (std::size_t p = 0; p < run.ports.rows(); ++p) queue = std::max(queue, run.ports.number(p, "max_queue_bytes"));
  const auto& s = run.summary;
  return {run.v.label,
          buf,
          w.label,
          cnp,
          preset,
          gbps(span.bytes, span.ns()),
          metric(s, "flows", "fct_ns_p50") / 1000,
          metric(s, "flows", "fct_ns_p99") / 1000,
          queue,
          s.at("congestion_control").at("cnps_sent").get<double>(),
          s.at("totals").at("ecn_marks").get<double>(),
          s.at("totals").at("pfc_pause_frames").get<double>()};
}

// The runs in the order tuning_variants made them.
std::vector<Row> rows_of(const std::vector<Ran>& runs) {
  std::vector<Row> rows;
  std::size_t i = 0;
  for (const char* buf : kBuffers)
    for (const Wred& w : kWred)
      for (const char* cnp : kCnpUs)
        for (const char* preset : kPresets) rows.push_back(row_of(runs.at(i++), buf, w, cnp, preset));
  return rows;
}

// results.csv, the report's table, the JSON points and the plot's data, with the best
// PFC-free setting.
struct Tables {
  std::string csv, dat_free, dat_pfc;
  std::vector<std::vector<std::string>> table;
  nlohmann::ordered_json jv = nlohmann::ordered_json::array();
  const Row* best = nullptr;
  std::size_t pfc_free = 0;
};

Tables tabulate(const std::vector<Row>& rows) {
  Tables t;
  t.csv = "variant,buffer,wred,cnp_interval_us,preset,throughput_gbps,fct_p50_us,fct_p99_us,max_queue_bytes,cnps,"
          "ecn_marks,pfc_pause_frames,pfc_free\n";
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const Row& x = rows[k];
    const bool free = x.frames == 0;
    t.pfc_free += free;
    if (free && (!t.best || x.thr > t.best->thr)) t.best = &x;
    t.csv += fmt::format("{},{},{},{},{},{:.3f},{:.3f},{:.3f},{:.0f},{:.0f},{:.0f},{:.0f},{}\n", x.label, x.buffer,
                         x.wred, x.cnp, x.preset, x.thr, x.p50, x.p99, x.queue, x.cnps, x.marks, x.frames,
                         free ? 1 : 0);
    t.table.push_back({x.buffer, x.wred, x.cnp, x.preset, f1(x.thr), f1(x.p50), f1(x.p99),
                       fmt::format("{:.0f}", x.queue / 1024), fmt::format("{:.0f}", x.cnps),
                       fmt::format("{:.0f}", x.frames), free ? "yes" : ""});
    (free ? t.dat_free : t.dat_pfc) += fmt::format("{} {:.3f} {:.0f}\n", k, x.thr, x.frames);
    t.jv.push_back({{"variant", x.label},
                    {"buffer", x.buffer},
                    {"wred", x.wred},
                    {"cnp_interval_us", x.cnp},
                    {"preset", x.preset},
                    {"throughput_gbps", x.thr},
                    {"fct_p50_us", x.p50},
                    {"fct_p99_us", x.p99},
                    {"max_queue_bytes", x.queue},
                    {"cnps", x.cnps},
                    {"pfc_pause_frames", x.frames},
                    {"pfc_free", free}});
  }
  return t;
}

// throughput.png: a bar per setting, green where PFC never fired.
void draw_throughput(const fs::path& out, std::size_t settings) {
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
  draw_plot(
      out, "throughput",
      fmt::format("set title 'Throughput per setting (green: PFC never fired)'\nset ylabel 'throughput (Gb/s)'\n"
                  "set xlabel 'marking Kmin-Kmax-Pmax; in each group CNP every 10, 50, 100 us x RP nvidia, paper'\n"
                  "set xrange [-1:{}]\nset yrange [0:125]\nset ytics 0,20,100\nset grid ytics\n"
                  "set style fill solid 0.8\nset boxwidth 0.7\nset xtics ({})\nset key top left horizontal\n{}"
                  "plot 'pfc_free.dat' using 1:2 with boxes lc rgb '#2ca02c' title 'PFC-free', "
                  "'pfc.dat' using 1:2 with boxes lc rgb '#d62728' title 'PFC fired'",
                  settings, tics, marks));
}

// report.md's table; headlines: how many never paused, the best of those, the most paused.
void report(const std::vector<Row>& rows, const Tables& t, Report& r) {
  r.body += "## Results\n\nEvery setting; \"PFC-free\" = no pause frame sent.\n\n" +
            markdown_table({"buffer", "marking", "CNP (us)", "RP", "throughput (Gb/s)", "FCT p50 (us)", "FCT p99 (us)",
                            "max queue (KiB)", "CNPs", "pause frames", "PFC-free"},
                           t.table) +
            "\n" + plot_line("throughput.png", "throughput per setting");
  r.headlines.push_back(fmt::format("{} of {} settings never fired PFC", t.pfc_free, rows.size()));
  if (const Row* best = t.best)
    r.headlines.push_back(fmt::format("best PFC-free setting: buffer {}, marking {}, CNP every {} us, {} RP: {:.1f} "
                                      "Gb/s, FCT p99 {:.1f} us, largest queue {:.0f} KiB",
                                      best->buffer, best->wred, best->cnp, best->preset, best->thr, best->p99,
                                      best->queue / 1024));
  const auto worst = std::max_element(rows.begin(), rows.end(),
                                      [](const Row& a, const Row& b) { return a.frames < b.frames; });
  r.headlines.push_back(fmt::format("most pauses: buffer {}, marking {}, CNP every {} us, {} RP: {:.0f} pause frames, "
                                    "{:.1f} Gb/s",
                                    worst->buffer, worst->wred, worst->cnp, worst->preset, worst->frames, worst->thr));
}

void analyze_tuning(const Config& base, const std::vector<Ran>& runs, const fs::path& out, Report& r) {
  describe(base, runs.size(), r);
  const std::vector<Row> rows = rows_of(runs);
  const Tables t = tabulate(rows);
  write_file(out / "results.csv", t.csv);
  write_file(out / "pfc_free.dat", t.dat_free.empty() ? "-1 0 0\n" : t.dat_free);
  write_file(out / "pfc.dat", t.dat_pfc.empty() ? "-1 0 0\n" : t.dat_pfc);
  r.results["points"] = t.jv;
  r.results["pfc_free_points"] = t.pfc_free;
  r.results["best_pfc_free"] = t.best ? nlohmann::ordered_json(t.best->label) : nlohmann::ordered_json(nullptr);
  draw_throughput(out, rows.size());
  report(rows, t, r);
}

}  // namespace

Definition ecn_cnp_pfc() {
  return {"ecn-cnp-pfc", "ECN marking, CNP interval and DCQCN values against PFC", tuning_variants, analyze_tuning};
}

}  // namespace fabriclab::scenario::experiments
