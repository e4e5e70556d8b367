#include "scenario/offload/grid.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "scenario/report/files.h"
#include "scenario/report/gnuplot.h"

namespace fabriclab::scenario::offload_internal {

namespace {

// The row of the same point as `like` under another assignment and policy.
const GridRow* find(const std::vector<GridRow>& rows, const GridRow& like, const std::string& strategy,
                    const std::string& policy) {
  for (const GridRow& r : rows)
    if (r.collective == like.collective && r.algorithm == like.algorithm && r.ranks == like.ranks &&
        r.counters == like.counters && r.cache == like.cache && r.k == like.k && r.strategy == strategy &&
        r.policy == policy)
      return &r;
  return nullptr;
}

// A point's value, or why there is none.
template <class Value>
std::string shown(const GridRow* r, Value value) {
  if (!r) return "-";
  if (r->simulated) return value(*r);
  return r->never_fits && r->policy == "stall" ? "never fits" : "skipped";
}

// The title and what was varied and measured.
std::string head(const std::string& scenario, const Config& cfg, const GridAxes& axes) {
  std::string md = fmt::format("# Offload concurrency ({})\n\n", scenario);
  md += "**Varied:** collectives issued at once (" + cfg.text("experiment.concurrency") + "), ranks (" +
        cfg.text("experiment.ranks") + "), counters per NIC (" + cfg.text("experiment.counters") +
        "), counter-cache entries (" + cfg.text("experiment.cache_entries") + "), assignment (" +
        cfg.text("experiment.strategies") + "), policy (" + cfg.text("experiment.policies") + "), for " +
        cfg.text("experiment.collectives") + " of " + cfg.shown("workload.bytes") + ".\n\n";
  md += fmt::format("**Measured:** with the timed NIC model ({} per NIC op, {} per cache miss, {} + bytes / {} per "
                    "message, host polls every {}, {} per software post): how many run offloaded at once, total "
                    "stall, makespan, mean completion, counter-cache hit rate. Points over {} operations in all "
                    "are skipped (listed as such in experiment.csv).\n\n",
                    cfg.shown("nic.op_time"), cfg.shown("nic.cache_miss"), cfg.shown("network.latency"),
                    cfg.shown("network.bandwidth"), cfg.shown("host.poll"), cfg.shown("host.op_time"), axes.max_ops);
  return md;
}

// 1: the most offloaded at once per budget, with kmax issued (stall, largest cache).
std::string concurrency_section(const GridAxes& axes, const std::vector<GridRow>& rows, std::int64_t kmax,
                                std::int64_t cmax) {
  std::string md = fmt::format("## 1. How many run concurrently under each budget ({} issued at once, stall)\n\n",
                               kmax);
  md += "| collective | ranks | assignment | counters per NIC | ";
  for (auto b : axes.budgets) md += fmt::format("{} counters | ", b);
  md += "\n|---|---|---|---|";
  for (std::size_t i = 0; i < axes.budgets.size(); ++i) md += "---|";
  md += "\n";
  for (const std::string& kind : axes.kinds)
    for (std::int64_t P : axes.ranks)
      for (const std::string& strat : axes.strategies) {
        const GridRow* any = nullptr;
        std::string cells;
        for (auto b : axes.budgets) {
          const GridRow* hit = nullptr;
          for (const GridRow& r : rows)
            if (kind == r.collective + ":" + r.algorithm && r.ranks == P && r.strategy == strat && r.counters == b &&
                r.k == kmax && r.cache == cmax && r.policy == "stall") {
              hit = &r;
              any = &r;
            }
          cells += !hit              ? "- | "
                   : hit->simulated  ? fmt::format("{} | ", hit->max_concurrent)
                   : hit->never_fits ? "never fits | "
                                     : "skipped | ";
        }
        if (any) md += fmt::format("| {} | {} | {} | {} | {}\n", kind, P, strat, any->counters_per_nic, cells);
      }
  return md;
}

// 2: stall and cache hit rate, naive against optimized (stall, kmax issued).
std::string stall_section(const std::vector<GridRow>& rows, std::int64_t kmax) {
  std::string md = fmt::format(
      "\n## 2. Stall and cache thrashing removed by the optimized assignment ({} at once, stall)\n\n", kmax);
  md += "| collective | ranks | counters | cache | stall naive (us) | stall optimized (us) | hit rate naive | hit rate "
        "optimized |\n|---|---|---|---|---|---|---|---|\n";
  for (const GridRow& r : rows)
    if (r.strategy == "optimized" && r.policy == "stall" && r.k == kmax && r.simulated) {
      const GridRow* n = find(rows, r, "naive", "stall");
      md += fmt::format("| {}:{} | {} | {} | {} | {} | {} | {} | {:.1f} % |\n", r.collective, r.algorithm, r.ranks,
                        r.counters, r.cache, shown(n, [](const GridRow& x) { return us_text(x.stall); }),
                        us_text(r.stall),
                        shown(n, [](const GridRow& x) { return fmt::format("{:.1f} %", 100 * x.hit_rate); }),
                        100 * r.hit_rate);
    }
  return md;
}

// 3: makespan, waiting against falling back (optimized, largest cache).
std::string fallback_section(const std::vector<GridRow>& rows, std::int64_t cmax) {
  std::string md = fmt::format("\n## 3. When falling back beats waiting (cache {}, optimized)\n\n", cmax);
  md += "| collective | ranks | counters | at once | makespan stall (us) | makespan fallback (us) | better "
        "|\n|---|---|---|---|---|---|---|\n";
  for (const GridRow& r : rows)
    if (r.strategy == "optimized" && r.policy == "fallback" && r.cache == cmax && r.simulated) {
      const GridRow* st = find(rows, r, "optimized", "stall");
      const bool waited = st && st->simulated;
      md += fmt::format("| {}:{} | {} | {} | {} | {} | {} | {} |\n", r.collective, r.algorithm, r.ranks, r.counters,
                        r.k, shown(st, [](const GridRow& x) { return us_text(x.makespan); }), us_text(r.makespan),
                        !waited                     ? (st && st->never_fits ? "fallback (waiting never ends)" : "-")
                        : r.makespan < st->makespan ? "fallback"
                        : st->makespan < r.makespan ? "wait"
                                                    : "equal");
    }
  return md;
}

// completion_KIND_P.dat/.gp/.png: mean completion against collectives issued at once,
// one line per counter budget (optimized assignment, largest cache), waiting (solid) and
// falling back (dashed). Returns its line of report.md, or "" when no point of it was
// simulated (no plot).
std::string completion_plot(const std::filesystem::path& dir, const GridAxes& axes, const std::vector<GridRow>& rows,
                            const std::string& kind, std::int64_t P, std::int64_t kmax, std::int64_t cmax) {
  std::string dat = "# k";
  std::vector<std::pair<std::int64_t, std::string>> series;  // (budget, policy), one column each
  for (auto b : axes.budgets)
    for (const std::string& pol : axes.policies) {
      dat += fmt::format(" {}_{}", b, pol);
      series.emplace_back(b, pol);
    }
  dat += "\n";
  std::vector<bool> has(series.size(), false);
  bool any = false;
  for (std::int64_t k : axes.ks) {
    dat += std::to_string(k);
    for (std::size_t i = 0; i < series.size(); ++i) {
      const GridRow* hit = nullptr;
      for (const GridRow& r : rows)
        if (kind == r.collective + ":" + r.algorithm && r.ranks == P && r.strategy == "optimized" &&
            r.counters == series[i].first && r.cache == cmax && r.policy == series[i].second && r.k == k && r.simulated)
          hit = &r;
      if (hit) has[i] = any = true;
      dat += hit ? fmt::format(" {:.3f}", static_cast<double>(hit->mean_completion.ps()) / 1e6) : " ?";
    }
    dat += "\n";
  }
  std::string lines;
  for (std::size_t i = 0; i < series.size(); ++i) {
    if (!has[i]) continue;  // never simulated (skipped, or never fits): no line
    const auto b_index = std::find(axes.budgets.begin(), axes.budgets.end(), series[i].first) - axes.budgets.begin();
    lines += fmt::format("{}'{{0}}' using 1:{} with linespoints lw 2 dt {} lc {} title '{} counters, {}'",
                         lines.empty() ? "" : ", ", i + 2, series[i].second == "stall" ? 1 : 2, b_index + 1,
                         series[i].first, series[i].second);
  }
  if (!any) return "";
  std::string stem = fmt::format("completion_{}_{}", kind, P);
  std::replace(stem.begin(), stem.end(), ':', '_');
  write_file(dir / (stem + ".dat"), dat);
  draw_plot(dir, stem,
            fmt::format("set title '{}, {} ranks: mean completion'\nset xlabel 'collectives issued at once'\n"
                        "set ylabel 'mean completion (us)'\nset logscale xy\nset datafile missing '?'\n"
                        "set xrange [{:.2f}:{:.2f}]\nset grid\nset key outside right\nplot ",
                        kind, P, 0.8 * static_cast<double>(*std::min_element(axes.ks.begin(), axes.ks.end())),
                        1.25 * static_cast<double>(kmax)) +
                fmt::format(fmt::runtime(lines), stem + ".dat"));
  return fmt::format("![{} at {} ranks]({}.png)\n\n", kind, P, stem);
}

}  // namespace

void write_grid_report(const std::filesystem::path& dir, const std::string& scenario, const Config& cfg,
                       const GridAxes& axes, const std::vector<GridRow>& rows) {
  const std::int64_t kmax = *std::max_element(axes.ks.begin(), axes.ks.end());
  const std::int64_t cmax = *std::max_element(axes.caches.begin(), axes.caches.end());
  std::string md = head(scenario, cfg, axes);
  md += concurrency_section(axes, rows, kmax, cmax);
  md += stall_section(rows, kmax);
  md += fallback_section(rows, cmax);
  md += "\n## Plots\n\nMean completion time against the number of collectives issued at once, per counter "
        "budget (optimized assignment, largest cache); solid: stall, dashed: fallback. A missing point was skipped "
        "or never fits.\n\n";
  for (const std::string& kind : axes.kinds)
    for (std::int64_t P : axes.ranks) md += completion_plot(dir, axes, rows, kind, P, kmax, cmax);
  write_file(dir / "report.md", md);
}

}  // namespace fabriclab::scenario::offload_internal
