// fabriclab experiment NAME [--out DIR] [--set key=value ...]: one of the standard fabric
// experiments (scenario/experiments.h), its variants run in parallel, then its results,
// plots and report.
#include <fmt/format.h>

#include <memory>

#include "cli/commands.h"
#include "scenario/experiments/registry.h"

namespace fabriclab::cli {

namespace {

struct ExperimentArgs {
  scenario::ExperimentOptions opt;
  std::int64_t seed = -1;
};

int run_experiment_command(const ExperimentArgs& a) {
  const scenario::ExperimentOutcome o = scenario::run_experiment(a.opt);
  if (!o.root) return 0;  // another MPI rank: rank 0 reports
  fmt::print("experiment {}: {}/report.md\n", a.opt.name, o.dir);
  for (const auto& h : o.headlines) fmt::print("  {}\n", h);
  if (o.unsafe) {
    fmt::print(stderr,
               "fabriclab: error: a variant dropped packets on a lossless priority or deadlocked (see {}/report.md)\n",
               o.dir);
    return 1;
  }
  return 0;
}

}  // namespace

Command add_experiment_command(CLI::App& app) {
  auto a = std::make_shared<ExperimentArgs>();
  a->opt.shipped = FABRICLAB_SHIPPED_EXAMPLES;
  std::string names;
  for (const auto& n : scenario::experiment_names()) names += (names.empty() ? "" : ", ") + n;
  CLI::App* sub = app.add_subcommand(
      "experiment", "Run a standard fabric experiment (" + names +
                        ") on its shipped scenario examples/NAME.toml: its variants in parallel, then results.csv, "
                        "results.json, plots (gnuplot) and report.md in DIR");
  sub->add_option("name", a->opt.name, "the experiment: " + names)->required();
  sub->add_option("--scenario", a->opt.scenario,
                  "scenario file (default examples/NAME.toml: the working directory's, else the shipped one)");
  add_out_option(*sub, a->opt.out_dir);
  add_seed_option(*sub, a->seed);
  add_set_option(*sub, a->opt.sets);
  add_jobs_option(*sub, a->opt.jobs);
  auto quiet = std::make_shared<bool>(false);
  add_quiet_flag(*sub, *quiet);
  return {sub, [a, quiet] {
            a->opt.progress = !*quiet;
            if (a->seed >= 0) a->opt.sets.push_back(fmt::format("sim.seed={}", a->seed));
            return run_experiment_command(*a);
          }};
}

}  // namespace fabriclab::cli
