// The fabriclab subcommands. Each adds itself to the CLI11 app; its runner returns the
// process exit code: 0 success, 1 a negative verdict (an unsafe schedule), 2 bad input
// (also for an InputError thrown out of a runner).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

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
Command add_sweep_command(CLI::App& app);
Command add_tune_command(CLI::App& app);
Command add_analyze_command(CLI::App& app);
Command add_stream_command(CLI::App& app);

// Every command above, added to `app` in the order `fabriclab --help` lists them (what
// main.cc runs, and what fuzz/cli_fuzzer.cc parses).
std::vector<Command> add_commands(CLI::App& app);

}  // namespace fabriclab::cli
