// fabriclab sweep SCENARIO.toml --vary key=v1,v2,... [--vary ...] [--set key=value ...]
// [--jobs N] [--metric M] --out DIR: the cartesian product of the varied values, one run
// each in worker processes, resumable, into DIR/sweep.csv and DIR/report.md (scenario/sweep.h).
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "core/error.h"
#include "scenario/batch/sweep.h"
#include "scenario/fabric/fabric_scenario.h"

namespace fabriclab::cli {

namespace {

int run_sweep_command(const scenario::SweepOptions& opt) {
  const scenario::SweepOutcome o = scenario::run_sweep(opt);
  if (!o.root) return 0;  // another MPI rank: rank 0 reports
  fmt::print("sweep: {} points ({} run now, {} done before): {}, {}\n", o.points, o.ran, o.skipped, o.report, o.csv);
  int rc = 0;
  if (!o.unsafe.empty()) {
    std::string list;
    for (const auto& p : o.unsafe) list += " " + p;
    fmt::print(stderr, "fabriclab: error: lossless drops or a PFC deadlock at:{}\n", list);
    rc = 1;
  }
  if (!o.failed.empty()) {
    std::string list;
    for (const auto& p : o.failed) list += " " + p;
    fmt::print(stderr, "fabriclab: error: these points failed (their messages are above; rerun to retry them):{}\n",
               list);
    rc = 2;
  }
  return rc;
}

}  // namespace

Command add_sweep_command(CLI::App& app) {
  auto a = std::make_shared<scenario::SweepOptions>();
  CLI::App* sub = app.add_subcommand(
      "sweep", "Run a fabric scenario at every combination of --vary values, in parallel worker processes (and, "
               "started by mpirun or srun, on every MPI rank); one row per point in DIR/sweep.csv (the values, the "
               "seed, every summary metric) and DIR/report.md (a plot per varied key). Resumable: points already "
               "done are skipped");
  sub->add_option("scenario", a->scenario, "scenario file (TOML)");
  sub->add_option("--vary", a->vary,
                  "key=v1,v2,... (repeatable; the first changes slowest; any key `--parameters` lists, "
                  "collective.N.KEY included)");
  sub->add_option("--metric", a->metric,
                  "the sweep.csv column report.md plots against each varied key (default goodput_gbps; e.g. "
                  "flows.fct_ns_p99, totals.pfc_pause_frames)");
  auto seed = std::make_shared<std::int64_t>(-1);
  add_out_option(*sub, a->out_dir);
  add_seed_option(*sub, *seed);
  add_set_option(*sub, a->sets);
  add_jobs_option(*sub, a->jobs);
  auto quiet = std::make_shared<bool>(false);
  add_quiet_flag(*sub, *quiet);
  auto parameters = std::make_shared<bool>(false);
  add_parameters_flag(*sub, *parameters);
  return {sub, [a, quiet, seed, parameters] {
            if (*parameters) {
              print_parameters(scenario::fabric_parameters().registry(), scenario::fabric_parameters().lists());
              return 0;
            }
            if (a->scenario.empty()) throw InputError("sweep: a scenario file is required (or --parameters)");
            a->progress = !*quiet;
            if (*seed >= 0) a->sets.push_back(fmt::format("sim.seed={}", *seed));
            a->out_dir = out_or_default(a->out_dir, std::filesystem::path(a->scenario).stem().string() + "-sweep");
            return run_sweep_command(*a);
          }};
}

}  // namespace fabriclab::cli
