// fabriclab offload SCENARIO.toml [--out DIR] [--seed N] [--set key=value ...] [--jobs N]: the timed
// NIC model on a stream of non-blocking collectives.
#include <fmt/format.h>

#include <filesystem>

#include "cli/commands.h"
#include "scenario/batch/ranks.h"
#include "core/error.h"
#include "scenario/offload/offload_scenario.h"

namespace fabriclab::cli {

namespace {

struct OffloadArgs {
  std::string scenario, out;
  std::int64_t seed = -1;
  std::vector<std::string> sets;
  bool parameters = false;
  bool quiet = false;
  unsigned jobs = 2;
};

int run_offload_cmd(const OffloadArgs& a) {
  if (a.parameters) {
    print_parameters(scenario::offload_parameters().registry(), scenario::offload_parameters().lists());
    return 0;
  }
  if (a.scenario.empty()) throw InputError("offload: a scenario file is required (or --parameters)");
  std::vector<std::string> overrides = a.sets;
  if (a.seed >= 0) overrides.push_back(fmt::format("sim.seed={}", a.seed));
  const auto cfg = scenario::resolve(scenario::offload_parameters(), a.scenario, overrides);
  const std::string out = out_or_default(a.out, std::filesystem::path(a.scenario).stem().string());
  if (!cfg.value.experiment.concurrency.empty()) {
    const std::size_t n = scenario::run_offload_experiment(cfg, a.scenario, out, a.jobs, a.quiet);
    if (scenario::mpi_rank() != 0) return 0;  // rank 0 reports
    fmt::print("{}: {} grid points; outputs: {}/experiment.csv, report.md, completion_*.png\n", a.scenario, n, out);
    return 0;
  }
  if (scenario::mpi_size() > 1)
    throw InputError(fmt::format("offload: one simulation runs on one process (started here over {} MPI ranks); only "
                                 "its experiment grids (experiment.concurrency) spread over ranks",
                                 scenario::mpi_size()));
  const auto o = scenario::run_offload(cfg, a.scenario, out);
  auto us = [](Time t) { return fmt::format("{:.3f} us", static_cast<double>(t.ps()) / 1e6); };
  fmt::print("{}: {} collectives, {} offloaded, {} in software; makespan {}\n", a.scenario, o.collectives, o.offloaded,
             o.software, us(o.makespan));
  fmt::print("  completion p50 {}, p99 {}, max {}; stall {} in all\n", us(o.completion_p50), us(o.completion_p99),
             us(o.completion_max), us(o.total_stall));
  fmt::print("  counters: at most {} in use on a NIC; counter cache hit rate {:.1f} %\n", o.peak_counters_on_a_nic,
             100.0 * o.cache_hit_rate);
  fmt::print("  outputs: {}/summary.json, collectives.csv, usage.csv, usage.png, completion.png ({:.2f} s wall)\n", out,
             o.wall_seconds);
  return 0;
}

}  // namespace

Command add_offload_command(CLI::App& app) {
  auto a = std::make_shared<OffloadArgs>();
  CLI::App* sub = app.add_subcommand(
      "offload",
      "Timed NIC model: non-blocking collectives sharing NICs' counters, slots and counter caches; stall "
      "or fall back to software when counters are short; writes summary.json, collectives.csv, usage.csv and plots");
  sub->add_option("scenario", a->scenario, "scenario file (TOML)");
  add_out_option(*sub, a->out);
  add_seed_option(*sub, a->seed);
  add_set_option(*sub, a->sets);
  add_parameters_flag(*sub, a->parameters);
  add_quiet_flag(*sub, a->quiet);
  add_jobs_option(*sub, a->jobs);
  return {sub, [a] { return run_offload_cmd(*a); }};
}

}  // namespace fabriclab::cli
