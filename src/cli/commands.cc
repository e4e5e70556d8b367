#include "cli/commands.h"

namespace fabriclab::cli {

std::vector<Command> add_commands(CLI::App& app) {
  return {add_counters_command(app), add_verify_command(app), add_plan_command(app),    add_advise_command(app),
          add_exec_command(app),     add_run_command(app),    add_offload_command(app), add_experiment_command(app),
          add_sweep_command(app),    add_tune_command(app),   add_analyze_command(app), add_stream_command(app)};
}

}  // namespace fabriclab::cli
