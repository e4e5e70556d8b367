#include "scenario/offload/offload_scenario.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>

#include "core/error.h"
#include "core/stats.h"
#include "offload/options.h"
#include "scenario/offload/simulation.h"
#include "scenario/offload/workload.h"
#include "scenario/report/files.h"
#include "scenario/report/gnuplot.h"

namespace fabriclab::scenario {

using offload_internal::ScheduleCache;
using offload_internal::Simulated;
using offload_internal::Spec;
using offload_internal::make_workload;
using offload_internal::simulate;

namespace {

const params::Table<OffloadScenario>& scenario_table() {
  static const auto table = [] {
    using S = OffloadScenario;
    using W = S::Workload;
    using G = S::Grid;
    params::Table<W> w;
    w.integer("ranks", &W::ranks, "ranks of every generated collective (rank r on NIC r)", offload::kMinBuildRanks,
              offload::kMaxBuildRanks)
        .text("collectives", &W::collectives, "generated collectives cycle through these COLLECTIVE:ALGORITHM")
        .bytes("bytes", &W::bytes, "bytes per generated collective", "1B")
        .integer("count", &W::count, "generated collectives", 1, 100000)
        .one_of("arrival", &W::arrival, {"in_flight", "poisson", "file"},
                "generated issue times: k in flight, or Poisson")
        .integer("in_flight", &W::in_flight, "in_flight: collectives outstanding at once", 1, 100000)
        .time("mean_gap", &W::mean_gap, "poisson: mean time between issues", "1ps", "1s")
        .text("file", &W::file, "file: CSV name,collective,algorithm,ranks,bytes,issue (relative to the scenario)");
    params::Table<G> g;
    g.text("concurrency", &G::concurrency,
           "experiment grid: collectives issued at once, e.g. \"1,4,16,64\" (\"\" = one run, no grid)")
        .text("ranks", &G::ranks, "experiment grid: ranks")
        .text("counters", &G::counters, "experiment grid: counters per NIC")
        .text("cache_entries", &G::cache_entries, "experiment grid: counter cache entries")
        .text("strategies", &G::strategies, "experiment grid: counter assignments")
        .text("policies", &G::policies, "experiment grid: policies")
        .text("collectives", &G::collectives, "experiment grid: COLLECTIVE:ALGORITHM, one at a time")
        .integer("max_ops", &G::max_ops, "skip (and report) grid points with more operations than this in all", 1);
    params::Table<S> t;
    t.integer("sim.seed", &S::seed, "seed of the Poisson arrivals")
        .nest("", &S::nic, nicmodel::nic_params_table())
        .choice("offload.policy", &S::policy, nicmodel::kPolicyNames,
                "when counters are short: wait, run in software now, or follow the advice")
        .custom(
            {"offload.strategy", params::Kind::choice, offload::strategy_help(offload::StrategyUse::run), "", "",
             offload::strategy_choices(offload::StrategyUse::run)},
            [](S& s, const params::Value& v) {
              s.strategy = offload::parse_strategy(v.text, offload::StrategyUse::run, "offload.strategy");
            },
            [](const S& s) { return std::string(offload::to_string(s.strategy)); })
        .nest("workload", &S::workload, w)
        .nest("experiment", &S::experiment, g);
    return t;
  }();
  return table;
}

}  // namespace

const Parameters<OffloadScenario>& offload_parameters() {
  static const Parameters<OffloadScenario> p(scenario_table());
  return p;
}

namespace {

// What summary.json adds to the outcome.
struct NicTotals {
  std::uint64_t hits = 0, misses = 0;  // counter cache, all NICs
  double mean_counters = 0;            // counters in use over time, summed over the NICs
  int nics = 0;
};

OffloadOutcome outcome_of(const Simulated& sim, NicTotals& totals) {
  const nicmodel::OffloadModel& model = *sim.model;
  OffloadOutcome o;
  o.collectives = sim.results.size();
  std::vector<std::int64_t> completions;
  for (const auto& r : sim.results) {
    (r.offloaded ? o.offloaded : o.software)++;
    o.total_stall += r.stall();
    completions.push_back(r.completion().ps());
  }
  o.makespan = model.makespan();
  o.completion_p50 = Time::from_ps(nearest_rank(completions, 0.5));
  o.completion_p99 = Time::from_ps(nearest_rank(completions, 0.99));
  o.completion_max = Time::from_ps(nearest_rank(completions, 1.0));
  totals.nics = sim.nics;
  for (int n = 0; n < sim.nics; ++n) {
    o.peak_counters_on_a_nic = std::max(o.peak_counters_on_a_nic, model.pool(n).peak_counters_in_use());
    totals.hits += model.cache(n).hits();
    totals.misses += model.cache(n).misses();
    totals.mean_counters += model.pool(n).mean_counters_in_use(o.makespan);
  }
  const std::uint64_t looked_up = totals.hits + totals.misses;
  o.cache_hit_rate = looked_up ? static_cast<double>(totals.hits) / static_cast<double>(looked_up) : 0.0;
  return o;
}

std::string collectives_csv(const std::vector<Spec>& specs, const std::vector<nicmodel::JobResult>& results) {
  std::string csv = "name,collective,algorithm,ranks,bytes,issue_ns,start_ns,done_ns,stall_ns,completion_ns,path,"
                    "counters_max_per_nic\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    const Spec& s = specs[i];
    const std::int64_t cmax = r.counters_per_nic.empty()
                                  ? 0
                                  : *std::max_element(r.counters_per_nic.begin(), r.counters_per_nic.end());
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}\n", s.name, s.collective, s.algorithm, s.ranks, s.bytes,
                       ns_text(r.issue), ns_text(r.start), ns_text(r.done), ns_text(r.stall()), ns_text(r.completion()),
                       r.offloaded ? "offload" : "software", cmax);
  }
  return csv;
}

std::string usage_csv(const nicmodel::OffloadModel& model) {
  std::string usage = "time_ns,counters_in_use,max_counters_on_a_nic,slots_in_use\n";
  for (const auto& u : model.usage())
    usage += fmt::format("{},{},{},{}\n", ns_text(u.time), u.counters, u.max_counters_on_a_nic, u.slots);
  return usage;
}

// usage.png and completion.png, from usage.csv and collectives.csv.
void draw_run_plots(const std::filesystem::path& dir) {
  draw_plot(dir, "usage",
            "set title 'Counters and triggered-op slots in use'\nset datafile separator ','\n"
            "set xlabel 'time (us)'\nset ylabel 'in use'\nset y2label 'counters on the busiest NIC'\n"
            "set ytics nomirror\nset y2tics\nset yrange [0:*]\nset y2range [0:*]\nset grid\nset key below\n"
            "plot 'usage.csv' every ::1 using ($1/1000):2 with steps lw 2 title 'counters, all NICs', "
            "'' every ::1 using ($1/1000):4 with steps lw 2 title 'slots, all NICs', "
            "'' every ::1 using ($1/1000):3 axes x1y2 with steps lw 1 dt 2 title 'counters, busiest NIC'");
  draw_plot(
      dir, "completion",
      "set title 'Completion and stall time per collective (in issue order)'\nset datafile separator ','\n"
      "set xlabel 'collective (issue order)'\nset ylabel 'time (us)'\nset style fill solid 0.7 border -1\n"
      "set boxwidth 0.8\nset yrange [0:*]\nset autoscale xfix\nset offsets 1,1,0,0\nset grid ytics\nset key below\n"
      "plot 'collectives.csv' every ::1 using 0:($10/1000) with boxes title 'completion (issue to done)', "
      "'' every ::1 using 0:($9/1000) with boxes title 'stall (waiting for counters)'");
}

std::string summary_json(const std::string& scenario, const Config& cfg, const OffloadOutcome& o, const NicTotals& t) {
  nlohmann::ordered_json j;
  j["scenario"] = scenario;
  j["config"] = cfg.echo();
  j["collectives"] = {{"count", o.collectives}, {"offloaded", o.offloaded}, {"software", o.software}};
  j["completion_ns"] = {{"p50", ns_text(o.completion_p50)},
                        {"p99", ns_text(o.completion_p99)},
                        {"max", ns_text(o.completion_max)}};
  j["stall_ns_total"] = ns_text(o.total_stall);
  j["makespan_ns"] = ns_text(o.makespan);
  j["counters"] = {{"peak_on_a_nic", o.peak_counters_on_a_nic},
                   {"mean_in_use_per_nic", t.nics ? t.mean_counters / t.nics : 0.0}};
  j["cache"] = {{"hits", t.hits}, {"misses", t.misses}, {"hit_rate", o.cache_hit_rate}};
  j["wall_seconds"] = o.wall_seconds;
  return j.dump(2) + "\n";
}

}  // namespace

OffloadOutcome run_offload(const OffloadSetup& setup, const std::string& scenario, const std::string& out_dir) {
  const auto t0 = std::chrono::steady_clock::now();
  const OffloadScenario& sc = setup.value;
  const Config& cfg = setup.config;  // where each value was set, for messages
  const std::vector<Spec> specs = make_workload(sc, cfg);
  ScheduleCache cache;
  const Simulated sim = simulate(sc.nic, sc.policy, sc.strategy, specs, cache);
  NicTotals totals;
  OffloadOutcome o = outcome_of(sim, totals);
  o.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (out_dir.empty()) return o;

  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw InputError(fmt::format("{}: cannot create the output directory: {}", out_dir, ec.message()));
  const std::filesystem::path dir(out_dir);
  write_file(dir / "collectives.csv", collectives_csv(specs, sim.results));
  write_file(dir / "usage.csv", usage_csv(*sim.model));
  draw_run_plots(dir);
  write_file(dir / "summary.json", summary_json(scenario, cfg, o, totals));
  return o;
}

}  // namespace fabriclab::scenario
