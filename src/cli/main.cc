// fabriclab: the command-line entry point. Subcommands live in cmd_*.cc.
#include <CLI/CLI.hpp>
#include <iostream>
#include <new>
#include <vector>

#include "cli/commands.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"fabriclab: plan, verify and run triggered-operation collectives on scarce NIC "
               "counters; simulate RoCEv2 fabrics packet by packet"};
  app.set_version_flag("--version", std::string("fabriclab ") + FABRICLAB_VERSION);
  app.require_subcommand(1);
  // clang-format off
  const std::vector<fabriclab::cli::Command> commands = {
      fabriclab::cli::add_counters_command(app),
      fabriclab::cli::add_verify_command(app),
      fabriclab::cli::add_plan_command(app),
      fabriclab::cli::add_advise_command(app),
      fabriclab::cli::add_exec_command(app),
      fabriclab::cli::add_run_command(app),
      fabriclab::cli::add_offload_command(app),
      fabriclab::cli::add_experiment_command(app),
      fabriclab::cli::add_sweep_command(app),
  };
  // clang-format on
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    for (const auto& c : commands)
      if (c.app->parsed()) return c.run();
  } catch (const fabriclab::InputError& e) {
    std::cerr << "fabriclab: error: " << e.what() << '\n';
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "fabriclab: error: out of memory: the problem is too large for this machine\n";
    return 2;
  } catch (const std::exception& e) {
    // Anything else is a bug in fabriclab, not bad input.
    std::cerr << "fabriclab: internal error: " << e.what() << '\n';
    return 3;
  }
  return 0;
}
