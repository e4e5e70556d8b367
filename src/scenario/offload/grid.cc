#include "scenario/offload/offload_scenario.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "core/error.h"
#include "nicmodel/model.h"
#include "offload/assignment.h"
#include "scenario/batch/workers.h"
#include "scenario/offload/simulation.h"
#include "scenario/report/files.h"
#include "scenario/report/gnuplot.h"

namespace fabriclab::scenario {

using offload_internal::ScheduleCache;
using offload_internal::Simulated;
using offload_internal::Spec;
using offload_internal::simulate;

namespace {

std::vector<std::string> list_of(const Config& cfg, const std::string& key) {
  auto out = split_list(cfg.text(key));
  if (out.empty()) throw InputError(fmt::format("{}: {}: expected a comma-separated list", cfg.origin(key), key));
  return out;
}

std::vector<std::int64_t> numbers_of(const Config& cfg, const std::string& key) {
  std::vector<std::int64_t> out;
  for (const std::string& x : list_of(cfg, key)) {
    const auto v = parse_integer(x);
    if (!v || *v < 1) throw InputError(fmt::format("{}: {}: '{}' is not a positive integer", cfg.origin(key), key, x));
    out.push_back(*v);
  }
  return out;
}

struct Row {
  std::string collective, algorithm, strategy, policy;
  std::int64_t ranks = 0, counters = 0, cache = 0, k = 0;
  std::int64_t counters_per_nic = 0;  // one collective's most on a NIC
  bool simulated = false, never_fits = false;
  std::int64_t max_concurrent = 0, software = 0;
  Time makespan, stall, mean_completion;
  double hit_rate = 0;
};

// Most offloaded collectives running at one instant ([start, done) intervals).
std::int64_t max_concurrent(const std::vector<nicmodel::JobResult>& rs) {
  std::vector<std::pair<Time, int>> ev;
  for (const auto& r : rs)
    if (r.offloaded) {
      ev.push_back({r.start, +1});
      ev.push_back({r.done, -1});
    }
  std::sort(ev.begin(), ev.end(), [](auto a, auto b) { return a.first < b.first || (a.first == b.first && a.second < b.second); });
  std::int64_t cur = 0, best = 0;
  for (auto [t, d] : ev) best = std::max(best, cur += d);
  return best;
}

std::string us_text(Time t) { return fmt::format("{:.1f}", static_cast<double>(t.ps()) / 1e6); }

}  // namespace

std::size_t run_offload_experiment(const OffloadSetup& setup, const std::string& scenario,
                                   const std::string& out_dir, unsigned jobs) {
  const OffloadScenario& sc = setup.value;
  const Config& cfg = setup.config;
  const auto ks = numbers_of(cfg, "experiment.concurrency");
  const auto ranks = numbers_of(cfg, "experiment.ranks");
  const auto budgets = numbers_of(cfg, "experiment.counters");
  const auto caches = numbers_of(cfg, "experiment.cache_entries");
  const auto strategies = list_of(cfg, "experiment.strategies");
  const auto policies = list_of(cfg, "experiment.policies");
  const auto kinds = list_of(cfg, "experiment.collectives");
  const std::int64_t max_ops = sc.experiment.max_ops;
  for (const auto& x : policies)
    if (x != "stall" && x != "fallback")
      throw InputError(fmt::format("{}: experiment.policies: '{}' (expected stall or fallback)", cfg.origin("experiment.policies"), x));
  ScheduleCache cache;
  std::vector<Row> rows;
  // A simulation to run; rows name theirs (several rows can share one).
  struct Task {
    Spec proto;
    std::shared_ptr<const offload::Schedule> schedule;
    offload::Strategy strategy{};
    nicmodel::Policy policy{};
    nicmodel::NicParams params;
    std::int64_t k = 0, cost = 0;
    bool software_only = false;
  };
  struct TaskResult {
    std::int64_t makespan = 0, stall = 0, mean_completion = 0, max_concurrent = 0, software = 0;
    std::uint64_t hits = 0, misses = 0;
  };
  std::vector<Task> tasks;
  std::vector<std::pair<std::size_t, std::size_t>> row_task;  // (row, task)
  auto shape = [&](const std::string& kind, std::int64_t P) {
    const auto colon = kind.find(':');
    if (colon == std::string::npos)
      throw InputError(fmt::format("{}: experiment.collectives: '{}': expected COLLECTIVE:ALGORITHM",
                                   cfg.origin("experiment.collectives"), kind));
    Spec proto;
    proto.collective = kind.substr(0, colon);
    proto.algorithm = kind.substr(colon + 1);
    proto.ranks = static_cast<int>(P);
    proto.bytes = sc.workload.bytes.count();
    return proto;
  };
  for (const std::string& kind : kinds) {
    for (std::int64_t P : ranks)
      for (const std::string& strat : strategies) {
        const auto strategy = offload::parse_strategy(strat);
        const Spec proto = shape(kind, P);
        const auto sched = cache.get(proto, strategy);
        cache.prepared(proto, strategy);  // here, once, before the workers fork
        const std::int64_t per_nic = sched->counter_summary().max;
        const auto ops = static_cast<std::int64_t>(sched->size());
        for (std::int64_t budget : budgets)
          for (std::int64_t c : caches)
            for (const std::string& pol : policies)
              for (std::int64_t k : ks) {
                Row row;
                row.collective = proto.collective;
                row.algorithm = proto.algorithm;
                row.strategy = strat;
                row.policy = pol;
                row.ranks = P;
                row.counters = budget;
                row.cache = c;
                row.k = k;
                row.counters_per_nic = per_nic;
                row.never_fits = per_nic > budget;
                if (k * ops > max_ops || (pol == "stall" && row.never_fits)) {
                  rows.push_back(row);
                  continue;
                }
                // When no copy can ever be offloaded (fallback), every one runs in
                // software from its issue and neither the counter budget nor the cache
                // plays a part: such points share one simulation per schedule and k.
                const bool software_only = pol == "fallback" && row.never_fits;
                std::size_t task = tasks.size();
                for (std::size_t t = 0; t < tasks.size() && software_only; ++t)
                  if (tasks[t].software_only && tasks[t].schedule == sched && tasks[t].k == k) task = t;
                if (task == tasks.size()) {
                  Task t;
                  t.proto = proto;
                  t.schedule = sched;
                  t.strategy = strategy;
                  t.policy = pol == "stall" ? nicmodel::Policy::stall : nicmodel::Policy::fallback;
                  t.params = sc.nic;
                  t.params.counters = budget;
                  t.params.cache_entries = static_cast<std::int32_t>(c);
                  t.k = k;
                  t.software_only = software_only;
                  t.cost = k * ops;
                  tasks.push_back(std::move(t));
                }
                row.simulated = true;
                row_task.emplace_back(rows.size(), task);
                rows.push_back(row);
              }
      }
  }

  // The points run in worker processes, largest first (so that the last to finish is a
  // small one); each child leaves its figures in a file, read back here in grid order.
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw InputError(fmt::format("{}: cannot create the output directory: {}", out_dir, ec.message()));
  const std::filesystem::path dir(out_dir);
  const std::filesystem::path scratch = dir / ".points";
  std::filesystem::remove_all(scratch, ec);
  std::filesystem::create_directories(scratch, ec);
  if (ec) throw InputError(fmt::format("{}: cannot create {}: {}", out_dir, scratch.string(), ec.message()));
  struct RemovedOnExit {  // however this ends
    std::filesystem::path path;
    ~RemovedOnExit() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  } scratch_guard{scratch};
  auto describe = [&](const Task& t) {
    return fmt::format("{}:{} on {} ranks, {}, {} counters, cache {}, {}, {} at once", t.proto.collective,
                       t.proto.algorithm, t.proto.ranks, offload::to_string(t.strategy), t.params.counters,
                       t.params.cache_entries, t.policy == nicmodel::Policy::stall ? "stall" : "fallback", t.k);
  };
  std::vector<std::size_t> order(tasks.size());
  for (std::size_t t = 0; t < order.size(); ++t) order[t] = t;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return tasks[a].cost > tasks[b].cost; });
  const auto statuses = run_in_workers(order.size(), jobs, [&](std::size_t i) {
    const Task& t = tasks[order[i]];
    std::vector<Spec> specs(static_cast<std::size_t>(t.k), t.proto);
    for (std::int64_t x = 0; x < t.k; ++x) specs[static_cast<std::size_t>(x)].name = fmt::format("c{}", x);
    Simulated sim;
    try {
      sim = simulate(t.params, t.policy, t.strategy, specs, cache);
    } catch (const InputError& e) {
      throw InputError(describe(t) + ": " + e.what());
    } catch (const std::bad_alloc&) {
      throw InputError(describe(t) + ": out of memory (fewer --jobs, or a smaller experiment.max_ops)");
    }
    TaskResult r;
    r.makespan = sim.model->makespan().ps();
    r.max_concurrent = max_concurrent(sim.results);
    for (int n = 0; n < sim.nics; ++n) {
      r.hits += sim.model->cache(n).hits();
      r.misses += sim.model->cache(n).misses();
    }
    Time total;
    for (const auto& x : sim.results) {
      r.stall += x.stall().ps();
      total += x.completion();
      r.software += !x.offloaded;
    }
    r.mean_completion = total.ps() / t.k;
    write_file(scratch / std::to_string(order[i]), fmt::format("{} {} {} {} {} {} {}\n", r.makespan, r.stall,
                                                          r.mean_completion, r.max_concurrent, r.software, r.hits,
                                                          r.misses));
    return 0;
  }, [&, t0 = std::chrono::steady_clock::now(), finished = std::size_t{0}](std::size_t, int) mutable {
    // Progress for a person watching (the shipped grid takes about a minute).
    ++finished;
    if (!isatty(STDERR_FILENO)) return;
    std::fprintf(stderr, "\roffload experiment: %zu of %zu simulations (%.0f s)%s", finished, order.size(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                 finished == order.size() ? "\n" : "");
  });
  std::vector<TaskResult> results(tasks.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    const std::size_t t = order[i];
    // The worker printed its own message; name the point here too.
    if (statuses[i] == 2) throw InputError("offload experiment: " + describe(tasks[t]) + " failed (see above)");
    if (statuses[i] == 128 + 9)
      throw InputError("offload experiment: " + describe(tasks[t]) + ": its worker was killed (out of memory? try "
                       "fewer --jobs or a smaller experiment.max_ops)");
    if (statuses[i] != 0)
      throw std::runtime_error(fmt::format("offload experiment: {} failed in its worker (status {})",
                                           describe(tasks[t]), statuses[i]));
    std::istringstream in(read_text(scratch / std::to_string(t)));
    TaskResult& r = results[t];
    if (!(in >> r.makespan >> r.stall >> r.mean_completion >> r.max_concurrent >> r.software >> r.hits >> r.misses))
      throw std::runtime_error(fmt::format("offload experiment: a worker left an unreadable result for point {}", t));
  }
  for (const auto& [row_index, t] : row_task) {
    Row& row = rows[row_index];
    const TaskResult& r = results[t];
    row.makespan = Time::from_ps(r.makespan);
    row.stall = Time::from_ps(r.stall);
    row.mean_completion = Time::from_ps(r.mean_completion);
    row.max_concurrent = r.max_concurrent;
    row.software = r.software;
    row.hit_rate = r.hits + r.misses ? static_cast<double>(r.hits) / static_cast<double>(r.hits + r.misses) : 0.0;
  }

  std::string csv =
      "collective,algorithm,ranks,strategy,counters,cache_entries,policy,concurrency,counters_per_nic,simulated,"
      "max_concurrent_offloaded,software,makespan_us,stall_us_total,mean_completion_us,cache_hit_rate\n";
  for (const Row& r : rows)
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.4f}\n", r.collective, r.algorithm, r.ranks,
                       r.strategy, r.counters, r.cache, r.policy, r.k, r.counters_per_nic,
                       r.simulated ? "yes" : (r.never_fits && r.policy == "stall" ? "never-fits" : "skipped"),
                       r.max_concurrent, r.software, us_text(r.makespan), us_text(r.stall),
                       us_text(r.mean_completion), r.hit_rate);
  write_file(dir / "experiment.csv", csv);

  // report.md: what was varied, what was measured, and the three answers.
  auto find = [&](const Row& like, const std::string& strategy, const std::string& policy) -> const Row* {
    for (const Row& r : rows)
      if (r.collective == like.collective && r.algorithm == like.algorithm && r.ranks == like.ranks &&
          r.counters == like.counters && r.cache == like.cache && r.k == like.k && r.strategy == strategy &&
          r.policy == policy)
        return &r;
    return nullptr;
  };
  // A point's value, or why there is none.
  auto shown = [](const Row* r, auto value) -> std::string {
    if (!r) return "-";
    if (r->simulated) return value(*r);
    return r->never_fits && r->policy == "stall" ? "never fits" : "skipped";
  };
  const std::int64_t kmax = *std::max_element(ks.begin(), ks.end());
  const std::int64_t cmax = *std::max_element(caches.begin(), caches.end());
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
                    cfg.shown("network.bandwidth"), cfg.shown("host.poll"), cfg.shown("host.op_time"), max_ops);
  md += fmt::format("## 1. How many run concurrently under each budget ({} issued at once, stall)\n\n", kmax);
  md += "| collective | ranks | assignment | counters per NIC | ";
  for (auto b : budgets) md += fmt::format("{} counters | ", b);
  md += "\n|---|---|---|---|";
  for (std::size_t i = 0; i < budgets.size(); ++i) md += "---|";
  md += "\n";
  for (const std::string& kind : kinds)
    for (std::int64_t P : ranks)
      for (const std::string& strat : strategies) {
        const Row* any = nullptr;
        std::string cells;
        for (auto b : budgets) {
          const Row* hit = nullptr;
          for (const Row& r : rows)
            if (kind == r.collective + ":" + r.algorithm && r.ranks == P && r.strategy == strat && r.counters == b &&
                r.k == kmax && r.cache == cmax && r.policy == "stall") {
              hit = &r;
              any = &r;
            }
          cells += !hit ? "- | " : hit->simulated ? fmt::format("{} | ", hit->max_concurrent)
                                 : hit->never_fits ? "never fits | " : "skipped | ";
        }
        if (any) md += fmt::format("| {} | {} | {} | {} | {}\n", kind, P, strat, any->counters_per_nic, cells);
      }
  md += fmt::format("\n## 2. Stall and cache thrashing removed by the optimized assignment ({} at once, stall)\n\n",
                    kmax);
  md += "| collective | ranks | counters | cache | stall naive (us) | stall optimized (us) | hit rate naive | hit rate optimized |\n|---|---|---|---|---|---|---|---|\n";
  for (const Row& r : rows)
    if (r.strategy == "optimized" && r.policy == "stall" && r.k == kmax && r.simulated) {
      const Row* n = find(r, "naive", "stall");
      md += fmt::format("| {}:{} | {} | {} | {} | {} | {} | {} | {:.1f} % |\n", r.collective, r.algorithm, r.ranks,
                        r.counters, r.cache, shown(n, [](const Row& x) { return us_text(x.stall); }), us_text(r.stall),
                        shown(n, [](const Row& x) { return fmt::format("{:.1f} %", 100 * x.hit_rate); }),
                        100 * r.hit_rate);
    }
  md += fmt::format("\n## 3. When falling back beats waiting (cache {}, optimized)\n\n", cmax);
  md += "| collective | ranks | counters | at once | makespan stall (us) | makespan fallback (us) | better |\n|---|---|---|---|---|---|---|\n";
  for (const Row& r : rows)
    if (r.strategy == "optimized" && r.policy == "fallback" && r.cache == cmax && r.simulated) {
      const Row* st = find(r, "optimized", "stall");
      const bool waited = st && st->simulated;
      md += fmt::format("| {}:{} | {} | {} | {} | {} | {} | {} |\n", r.collective, r.algorithm, r.ranks, r.counters, r.k,
                        shown(st, [](const Row& x) { return us_text(x.makespan); }), us_text(r.makespan),
                        !waited ? (st && st->never_fits ? "fallback (waiting never ends)" : "-")
                        : r.makespan < st->makespan ? "fallback"
                        : st->makespan < r.makespan ? "wait"
                                                    : "equal");
    }
  // Plots: mean completion against collectives issued at once, one line per counter
  // budget (optimized assignment, largest cache), waiting (solid) and falling back (dashed).
  md += "\n## Plots\n\nMean completion time against the number of collectives issued at once, per counter "
        "budget (optimized assignment, largest cache); solid: stall, dashed: fallback. A missing point was skipped "
        "or never fits.\n\n";
  for (const std::string& kind : kinds)
    for (std::int64_t P : ranks) {
      std::string dat = "# k";
      std::vector<std::pair<std::int64_t, std::string>> series;  // (budget, policy), one column each
      for (auto b : budgets)
        for (const std::string& pol : policies) {
          dat += fmt::format(" {}_{}", b, pol);
          series.emplace_back(b, pol);
        }
      dat += "\n";
      std::vector<bool> has(series.size(), false);
      bool any = false;
      for (std::int64_t k : ks) {
        dat += std::to_string(k);
        for (std::size_t i = 0; i < series.size(); ++i) {
          const Row* hit = nullptr;
          for (const Row& r : rows)
            if (kind == r.collective + ":" + r.algorithm && r.ranks == P && r.strategy == "optimized" &&
                r.counters == series[i].first && r.cache == cmax && r.policy == series[i].second && r.k == k &&
                r.simulated)
              hit = &r;
          if (hit) has[i] = any = true;
          dat += hit ? fmt::format(" {:.3f}", static_cast<double>(hit->mean_completion.ps()) / 1e6) : " ?";
        }
        dat += "\n";
      }
      std::string lines;
      for (std::size_t i = 0; i < series.size(); ++i) {
        if (!has[i]) continue;  // never simulated (skipped, or never fits): no line
        const auto b_index = std::find(budgets.begin(), budgets.end(), series[i].first) - budgets.begin();
        lines += fmt::format("{}'{{0}}' using 1:{} with linespoints lw 2 dt {} lc {} title '{} counters, {}'",
                             lines.empty() ? "" : ", ", i + 2, series[i].second == "stall" ? 1 : 2, b_index + 1,
                             series[i].first, series[i].second);
      }
      if (!any) continue;
      std::string stem = fmt::format("completion_{}_{}", kind, P);
      std::replace(stem.begin(), stem.end(), ':', '_');
      write_file(dir / (stem + ".dat"), dat);
      draw_plot(dir, stem,
                fmt::format("set title '{}, {} ranks: mean completion'\nset xlabel 'collectives issued at once'\n"
                            "set ylabel 'mean completion (us)'\nset logscale xy\nset datafile missing '?'\n"
                            "set xrange [{:.2f}:{:.2f}]\nset grid\nset key outside right\nplot ",
                            kind, P, 0.8 * static_cast<double>(*std::min_element(ks.begin(), ks.end())),
                            1.25 * static_cast<double>(kmax)) +
                    fmt::format(fmt::runtime(lines), stem + ".dat"));
      md += fmt::format("![{} at {} ranks]({}.png)\n\n", kind, P, stem);
    }
  write_file(dir / "report.md", md);
  return rows.size();
}

}  // namespace fabriclab::scenario
