// The fabriclab subcommands. Each adds itself to the CLI11 app; its runner returns the
// process exit code: 0 success, 1 a negative verdict (an unsafe schedule), 2 bad input
// (also for an InputError thrown out of a runner).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "offload/collectives.h"
#include "offload/options.h"
#include "scenario/parameters.h"

namespace fabriclab::cli {

struct Command {
  CLI::App* app;
  std::function<int()> run;
};

Command add_counters_command(CLI::App& app);
Command add_verify_command(CLI::App& app);
Command add_advise_command(CLI::App& app);
Command add_plan_command(CLI::App& app);
Command add_exec_command(CLI::App& app);
Command add_run_command(CLI::App& app);
Command add_offload_command(CLI::App& app);
Command add_experiment_command(CLI::App& app);
Command add_collbench_command(CLI::App& app);
Command add_import_ns3_command(CLI::App& app);
Command add_sweep_command(CLI::App& app);
Command add_tune_command(CLI::App& app);
Command add_analyze_command(CLI::App& app);
Command add_stream_command(CLI::App& app);

// The options several commands share, each with one name, one meaning and one text
// (docs/cli.md; tests/cli/help_test.py holds every command's help to it).
//   --out DIR       where the outputs go; every command that writes a folder has it, with
//                   a default under results/ named after what it runs
//   --quiet         no progress on stderr (what a command prints on stdout stays)
//   --set KEY=VALUE a scenario parameter, after the file
//   --jobs N        worker processes at once (per MPI rank)
//   --parameters    every scenario key, then exit
// and the exit codes, the same for every command (kExitCodes, each command's help ends
// with them).
void add_out_option(CLI::App& c, std::string& out);
void add_quiet_flag(CLI::App& c, bool& quiet);
void add_set_option(CLI::App& c, std::vector<std::string>& sets);
template <class N>
void add_jobs_option(CLI::App& c, N& jobs) {
  c.add_option("--jobs", jobs, "worker processes at once (per MPI rank under mpirun)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
}
void add_parameters_flag(CLI::App& c, bool& parameters);
// --seed N of a scenario's run: sets sim.seed (-1: not given).
void add_seed_option(CLI::App& c, std::int64_t& seed);
// `dir` when given, else results/NAME.
std::string out_or_default(const std::string& dir, const std::string& name);
extern const char* const kExitCodes;

// The planner's options on a command line, from their one declaration (offload/options.h):
// --collective with the built-in collectives, --strategy for a use, and the shape keys
// (--root, --radix, --datatype, --ordered-channels, --uncounted-sends: the table's keys,
// underscores as dashes) with the table's help and default, parsed and checked as the
// scenario keys are.
void add_collective_options(CLI::App& c, std::string& collective, std::string& algorithm);
// --analysis, "auto" by default (offload::parse_analyses reads it).
void add_analysis_option(CLI::App& c, std::string& analysis);
void add_strategy_option(CLI::App& c, std::string& strategy, offload::StrategyUse use);
struct ShapeOptions {
  std::vector<std::pair<std::string, std::string>> given;  // (key, text) as given; a flag: "true"
  // BuildOptions{} with what was given set (InputError naming the option).
  offload::BuildOptions apply(offload::BuildOptions into = {}) const;
};
void add_shape_options(CLI::App& c, ShapeOptions& into, const std::vector<std::string>& keys);

// `--parameters` of run, offload, sweep and tune: every key of a scenario, one a line --
// key, default, range and unit, help (with what each preset sets) -- then a list of
// tables' keys as NAME.N.KEY (N: the entry, numbered from 0 in file order).
void print_parameters(const scenario::ParamRegistry& keys, const std::vector<scenario::ListRegistry>& lists);

// Every command above, added to `app` in the order `fabriclab --help` lists them (what
// main.cc runs, and what fuzz/cli_fuzzer.cc parses).
std::vector<Command> add_commands(CLI::App& app);

}  // namespace fabriclab::cli
