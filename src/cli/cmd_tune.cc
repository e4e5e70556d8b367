// fabriclab tune SCENARIO.toml --param key=LO..HI[:log|:int] | key=A,B,... [--param ...] [--space FILE]
// --maximize [W*]METRIC / --minimize [W*]METRIC [--constraint METRIC<=V ...] [--trials N]
// [--seeds K] [--seed S] [--set key=value ...] [--jobs N] [--out DIR]: a search with NLopt's
// ISRES for the settings that maximise the objective under the constraints
// (scenario/batch/tune.h).
#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "core/error.h"
#include "scenario/batch/tune.h"
#include "scenario/fabric/fabric_scenario.h"

namespace fabriclab::cli {

Command add_tune_command(CLI::App& app) {
  auto a = std::make_shared<scenario::TuneOptions>();
  CLI::App* sub = app.add_subcommand(
      "tune", "Search the declared parameters of a fabric scenario (NLopt's ISRES, resumable) for the settings that "
              "maximise an objective under constraints; every trial in DIR/trials.csv, the best as DIR/best.toml, and "
              "DIR/report.md comparing it, rerun on fresh seeds, with the scenario as given and each preset of its "
              "congestion-control policy");
  sub->add_option("scenario", a->scenario, "scenario file (TOML)");
  // Given twice, the last --trials, --seeds, --seed, --jobs or --out counts: a script that
  // sets defaults before "$@" lets its caller override them.
  const auto last = CLI::MultiOptionPolicy::TakeLast;
  sub->add_option("--param", a->params,
                  "a dimension: key=LO..HI (linear), key=LO..HI:log, key=LO..HI:int or key=A,B,... (choices); "
                  "repeatable");
  sub->add_option("--space", a->space,
                  "a TOML file of dimensions ([param] KEY = \"LO..HI[:log|:int]\" or [A, B, ...]) and maximize, "
                  "minimize, constraints lists; adds to the options");
  sub->add_option("--maximize", a->maximize,
                  "[WEIGHT*]METRIC of summary.json (totals.drops, flows.fct_ns_p99, ...) or goodput_gbps; repeatable, "
                  "terms add up");
  sub->add_option("--minimize", a->minimize, "[WEIGHT*]METRIC, subtracted from the objective; repeatable");
  sub->add_option("--constraint", a->constraints, "METRIC<=V or METRIC>=V, at every seed of a trial; repeatable");
  add_set_option(*sub, a->sets);
  sub->add_option("--trials", a->trials, "distinct settings to run")
      ->check(CLI::Range(1, 100000))
      ->multi_option_policy(last);
  sub->add_option("--seeds", a->seeds, "runs per trial (sim.seed, sim.seed + 1, ...); the objective is their mean")
      ->check(CLI::Range(1, 1000))
      ->multi_option_policy(last);
  sub->add_option("--seed", a->seed, "seed of the search")->check(CLI::Range(0, 2147483647))->multi_option_policy(last);
  add_jobs_option(*sub, a->jobs);
  add_out_option(*sub, a->out_dir);
  for (const char* o : {"--jobs", "--out"}) sub->get_option(o)->multi_option_policy(last);
  auto quiet = std::make_shared<bool>(false);
  add_quiet_flag(*sub, *quiet);
  auto parameters = std::make_shared<bool>(false);
  add_parameters_flag(*sub, *parameters);
  return {sub, [a, quiet, parameters] {
            if (*parameters) {
              print_parameters(scenario::fabric_parameters().registry(), scenario::fabric_parameters().lists());
              return 0;
            }
            if (a->scenario.empty()) throw InputError("tune: a scenario file is required (or --parameters)");
            a->progress = !*quiet;
            a->out_dir = out_or_default(a->out_dir, std::filesystem::path(a->scenario).stem().string() + "-tune");
            const scenario::TuneOutcome o = scenario::run_tune(*a);
            if (!o.root) return 0;  // another MPI rank: rank 0 reports
            fmt::print("tune: {} trials ({} run now); {}: {}\n", o.trials, o.ran,
                       o.best < 0 ? "no trial met every constraint" : fmt::format("best t{:04}", o.best), o.report);
            return o.best < 0 ? 1 : 0;
          }};
}

}  // namespace fabriclab::cli
