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
  std::string names;
  for (const auto& n : scenario::experiment_names()) names += (names.empty() ? "" : ", ") + n;
  CLI::App* sub = app.add_subcommand(
      "experiment", "Run a standard fabric experiment (" + names +
                        ") on its shipped scenario examples/NAME.toml: its variants in parallel, then results.csv, "
                        "results.json, plots (gnuplot) and report.md in DIR");
  sub->add_option("name", a->opt.name, "the experiment: " + names)->required();
  sub->add_option("--scenario", a->opt.scenario, "scenario file (default examples/NAME.toml)");
  sub->add_option("--out", a->opt.out_dir, "output directory (default results/NAME)");
  sub->add_option("--set", a->opt.sets, "override a scenario parameter in every variant: key=value (repeatable)");
  sub->add_option("--jobs", a->opt.jobs, "variants run at once (worker processes)")->check(CLI::Range(1, 256));
  auto quiet = std::make_shared<bool>(false);
  sub->add_flag("--quiet", *quiet, "no progress on stderr");
  return {sub, [a, quiet] {
            a->opt.progress = !*quiet;
            return run_experiment_command(*a);
          }};
}

}  // namespace fabriclab::cli
