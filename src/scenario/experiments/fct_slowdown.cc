// The fct-slowdown experiment: the figure every congestion-control paper since DCQCN
// shows -- web search and Hadoop loads at two fractions of the host links on a fat-tree,
// the FCT slowdown per flow-size bucket under PFC alone, DCQCN (each preset) and every
// other policy.
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "fabric/cc/congestion.h"
#include "scenario/experiments/experiment.h"
#include "scenario/report/files.h"
#include "scenario/report/gnuplot.h"
#include "scenario/report/markdown.h"

namespace fabriclab::scenario::experiments {

namespace fs = std::filesystem;

namespace {

struct Workload {
  const char* name;
  const char* cdf;  // beside the scenario's load.0.cdf
  const char* what;
};
constexpr Workload kWorkloads[] = {
    {"web-search", "web-search.cdf", "web search (DCTCP, SIGCOMM 2010)"},
    {"hadoop", "hadoop.cdf", "Hadoop (Facebook, Roy et al., SIGCOMM 2015)"},
};
constexpr double kLoads[] = {0.3, 0.5};

// gnuplot's default colours repeat after eight lines: the designs past them get their own.
constexpr const char* kMoreLineTypes =
    "set linetype 9 lc rgb '#8c564b' pt 9\nset linetype 10 lc rgb '#7f7f7f' pt 10\nset linetype 11 lc rgb '#bcbd22' "
    "pt 11\nset linetype 12 lc rgb '#17becf' pt 12\n";

// A design: the label and the --set lines of its congestion control.
struct Design {
  std::string label, what;
  std::vector<std::string> sets;
};

// PFC alone, DCQCN under each preset, then every other policy with its default values.
std::vector<Design> designs() {
  std::vector<Design> d;
  d.push_back({"pfc-only", "PFC alone (no congestion control)", {"nic.congestion_control=none"}});
  for (const char* preset : {"nvidia", "paper", "ns3-mlx"})
    d.push_back({fmt::format("dcqcn-{}", preset),
                 fmt::format("DCQCN, preset {}", preset),
                 {"nic.congestion_control=dcqcn", fmt::format("nic.roce_rp.preset={}", preset)}});
  for (const fabric::CcPolicy& p : fabric::cc_policies())
    if (p.name != "none" && p.name != "dcqcn")
      d.push_back({std::string(p.name),
                   fmt::format("{}, its default values", p.name),
                   {fmt::format("nic.congestion_control={}", p.name)}});
  return d;
}

std::string load_label(double load) { return fmt::format("{:.0f}pct", load * 100); }

std::string label_of(const Workload& w, double load, const Design& d) {
  return fmt::format("{}-{}-{}", w.name, load_label(load), d.label);
}

std::vector<Variant> slowdown_variants(const Config& base) {
  if (base.text("traffic.pattern") != "load")
    throw InputError("experiment fct-slowdown: the scenario must have traffic.pattern = \"load\" and one poisson "
                     "[[load]] (its cdf beside web-search.cdf and hadoop.cdf)");
  // The distributions sit beside the scenario's own (a --set path is taken from the
  // working directory: given whole).
  const fs::path cdfs = fs::path(base.path("load.0.cdf")).parent_path();
  std::vector<Variant> v;
  for (const Workload& w : kWorkloads)
    for (const double load : kLoads)
      for (const Design& d : designs()) {
        std::vector<std::string> sets = {fmt::format("load.0.cdf={}", (cdfs / w.cdf).string()),
                                         fmt::format("load.0.load={}", load)};
        sets.insert(sets.end(), d.sets.begin(), d.sets.end());
        v.push_back({label_of(w, load, d), fmt::format("{} at {:.0f} % load, {}", w.what, load * 100, d.what),
                     std::move(sets)});
      }
  return v;
}

struct Row {
  double flows = 0, finished = 0, counted = 0;
  double p50 = 0, p95 = 0, p99 = 0, short_p99 = 0;  // slowdown
};

void analyze_slowdown(const Config& base, const std::vector<Ran>& runs, const fs::path& out, Report& r) {
  const std::vector<Design> ds = designs();
  std::vector<std::string> names;
  for (const Design& d : ds) names.push_back(d.label);
  r.varied = fmt::format(
      "The flow-size distribution ({}) and the load offered to every host link ({}), as Poisson arrivals to uniformly "
      "random other hosts for {}, on a {} of {} hosts ({} links, {} delay each); and the congestion control: {} -- "
      "PFC on the RoCE priority throughout, ECN marking by WRED from {} to {} at {} %.",
      "web search, Hadoop", "30 %, 50 %", base.shown("load.0.duration"), base.text("topology.kind"),
      runs.empty() ? 0 : static_cast<int>(metric(runs.front().summary, "network", "hosts")),
      base.shown("topology.host_rate"), base.shown("topology.link_delay"), fmt::join(names, ", "),
      base.shown("switch.wred.green_min_threshold"), base.shown("switch.wred.green_max_threshold"),
      base.shown("switch.wred.green_drop_probability"));
  r.measured = fmt::format(
      "Each flow's FCT slowdown: its FCT over its ideal FCT (alone on the idle fabric, docs/fabric.md), over the "
      "flows that started after the {} warm-up and finished; per run p50, p95 and p99 overall and p99 of the short "
      "flows (<= {}), and per flow-size bucket (twenty of equal count) p50 and p99, plotted against the bucket's "
      "largest size. Every run's own slowdown.csv is in its directory.",
      base.shown("traffic.warmup"), base.shown("output.short_flow"));
  std::string csv =
      "workload,load,design,flows,finished,counted,slowdown_p50,slowdown_p95,slowdown_p99,short_slowdown_p99\n";
  nlohmann::ordered_json jv = nlohmann::ordered_json::array();
  std::size_t next = 0;
  for (const Workload& w : kWorkloads)
    for (const double load : kLoads) {
      const std::string key = fmt::format("{}-{}", w.name, load_label(load));
      std::vector<std::vector<std::string>> table;
      std::string p50_lines, p99_lines;
      double best = 0, best_short = 0;
      std::string best_name, best_short_name;
      for (const Design& d : ds) {
        const Ran& run = runs.at(next++);
        const auto& s = run.summary;
        const auto& sd = s["flows"]["slowdown"];
        Row row;
        row.flows = metric(s, "flows", "count");
        row.finished = metric(s, "flows", "finished");
        const auto stat = [](const nlohmann::json& block, const char* k) {
          return block.is_null() ? std::nan("") : block[k].get<double>();
        };
        row.counted = sd["all"].is_null() ? 0 : sd["all"]["count"].get<double>();
        row.p50 = stat(sd["all"], "p50");
        row.p95 = stat(sd["all"], "p95");
        row.p99 = stat(sd["all"], "p99");
        row.short_p99 = stat(sd["short"], "p99");
        csv += fmt::format("{},{},{},{:.0f},{:.0f},{:.0f},{:.4f},{:.4f},{:.4f},{:.4f}\n", w.name, load, d.label,
                           row.flows, row.finished, row.counted, row.p50, row.p95, row.p99, row.short_p99);
        jv.push_back({{"workload", w.name},
                      {"load", load},
                      {"design", d.label},
                      {"flows", row.flows},
                      {"finished", row.finished},
                      {"counted", row.counted},
                      {"slowdown_p50", row.p50},
                      {"slowdown_p95", row.p95},
                      {"slowdown_p99", row.p99},
                      {"short_slowdown_p99", row.short_p99}});
        const auto num = [](double x) { return std::isnan(x) ? std::string("--") : fmt::format("{:.2f}", x); };
        table.push_back({d.label, fmt::format("{:.0f} of {:.0f}", row.finished, row.flows), num(row.p50), num(row.p95),
                         num(row.p99), num(row.short_p99)});
        // Only runs that finished every flow compete for the headline (an unfinished
        // flow's slowdown is unknown, and large).
        if (row.finished == row.flows && !std::isnan(row.p99) && (best == 0 || row.p99 < best))
          best = row.p99, best_name = d.label;
        if (row.finished == row.flows && !std::isnan(row.short_p99) && (best_short == 0 || row.short_p99 < best_short))
          best_short = row.short_p99, best_short_name = d.label;
        // The run's buckets: (largest size, p50, p99).
        const CsvTable buckets = read_csv(run.dir / "slowdown.csv");
        std::string dat = "# max_bytes p50 p99\n";
        for (std::size_t b = 0; b < buckets.rows(); ++b)
          dat += fmt::format("{:.0f} {:.4f} {:.4f}\n", buckets.number(b, "max_bytes"), buckets.number(b, "p50"),
                             buckets.number(b, "p99"));
        const std::string file = fmt::format("{}_{}.dat", key, d.label);
        write_file(out / file, dat);
        const std::string sep = p50_lines.empty() ? "" : ", ";
        p50_lines += fmt::format("{}'{}' using 1:2 with linespoints lw 2 title '{}'", sep, file, d.label);
        p99_lines += fmt::format("{}'{}' using 1:3 with linespoints lw 2 title '{}'", sep, file, d.label);
      }
      r.headlines.push_back(
          best_name.empty()
              ? fmt::format("{} at {:.0f} %: no design finished every flow", w.name, load * 100)
              : fmt::format("{} at {:.0f} %: lowest p99 slowdown {:.2f} ({}); short flows' lowest p99 {:.2f} ({})",
                            w.name, load * 100, best, best_name, best_short, best_short_name));
      for (const char* q : {"p50", "p99"}) {
        draw_plot(out, fmt::format("slowdown_{}_{}", key, q),
                  fmt::format("set title '{} at {:.0f} % load: {} FCT slowdown by flow size'\nset xlabel 'flow size "
                              "(bytes, largest of the bucket)'\nset ylabel '{} slowdown'\nset logscale x 10\nset "
                              "logscale y 10\nset yrange [1:*]\nset grid\nset key outside right\n{}plot {}\n",
                              w.name, load * 100, q, q, kMoreLineTypes,
                              std::string(q) == "p50" ? p50_lines : p99_lines));
      }
      r.body += fmt::format("## {} at {:.0f} % load\n\n", w.what, load * 100) +
                markdown_table({"design", "finished", "slowdown p50", "p95", "p99", "short p99"}, table) + "\n" +
                plot_line(fmt::format("slowdown_{}_p99.png", key), "p99 slowdown by flow size, per design") +
                plot_line(fmt::format("slowdown_{}_p50.png", key), "p50 slowdown by flow size, per design");
    }
  write_file(out / "results.csv", csv);
  r.results["runs"] = jv;
}

}  // namespace

Definition fct_slowdown() {
  return {"fct-slowdown",
          "FCT slowdown by flow size: web search and Hadoop loads under PFC alone, DCQCN (each preset) and every "
          "other policy",
          slowdown_variants, analyze_slowdown};
}

}  // namespace fabriclab::scenario::experiments
