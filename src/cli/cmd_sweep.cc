// fabriclab sweep SCENARIO.toml --vary key=v1,v2,... [--vary ...] [--set key=value ...]
// [--jobs N] --out DIR: the cartesian product of the varied values, one run each in
// worker processes, resumable, into DIR/sweep.csv (scenario/sweep.h).
#include <fmt/format.h>
#include <unistd.h>

#include <memory>

#include "cli/commands.h"
#include "scenario/batch/sweep.h"

namespace fabriclab::cli {

namespace {

int run_sweep_command(const scenario::SweepOptions& opt) {
  const scenario::SweepOutcome o = scenario::run_sweep(opt);
  if (!o.root) return 0;  // another MPI rank: rank 0 reports
  fmt::print("sweep: {} points ({} run now, {} done before): {}\n", o.points, o.ran, o.skipped, o.csv);
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
               "seed, every summary metric). Resumable: points already done are skipped");
  sub->add_option("scenario", a->scenario, "scenario file (TOML)")->required();
  sub->add_option("--vary", a->vary, "key=v1,v2,... (repeatable; the first changes slowest)")->required();
  sub->add_option("--set", a->sets, "override a parameter in every point: key=value (repeatable)");
  sub->add_option("--jobs", a->jobs, "points run at once (worker processes; per MPI rank)")->check(CLI::Range(1, 256));
  sub->add_option("--out", a->out_dir, "output directory")->required();
  auto quiet = std::make_shared<bool>(false);
  sub->add_flag("--quiet", *quiet, "no progress on stderr");
  return {sub, [a, quiet] {
            a->progress = !*quiet;
            return run_sweep_command(*a);
          }};
}

}  // namespace fabriclab::cli
