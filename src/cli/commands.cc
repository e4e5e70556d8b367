#include "cli/commands.h"

#include <fmt/format.h>

#include <filesystem>
#include <stdexcept>

#include "core/error.h"

namespace fabriclab::cli {

const char* const kExitCodes =
    "Exit status: 0 done; 1 the answer is no (an unsafe or hanging schedule, a wrong value, a lossless drop or a "
    "PFC deadlock, a collective that cannot run, no trial within the constraints); 2 bad input; 3 a bug in "
    "fabriclab; 130 or 143 interrupted (SIGINT, SIGTERM).";

std::vector<Command> add_commands(CLI::App& app) {
  std::vector<Command> commands = {add_counters_command(app),   add_verify_command(app),     add_plan_command(app),
                                   add_advise_command(app),     add_exec_command(app),       add_run_command(app),
                                   add_offload_command(app),    add_experiment_command(app), add_collbench_command(app),
                                   add_import_ns3_command(app), add_sweep_command(app),      add_tune_command(app),
                                   add_analyze_command(app),    add_stream_command(app)};
  for (const Command& c : commands) c.app->footer(kExitCodes);
  return commands;
}

void add_out_option(CLI::App& c, std::string& out) {
  c.add_option("--out", out, "output directory (default: under results/, named after what the command runs)");
}

void add_quiet_flag(CLI::App& c, bool& quiet) { c.add_flag("--quiet", quiet, "no progress on stderr"); }

void add_set_option(CLI::App& c, std::vector<std::string>& sets) {
  c.add_option("--set", sets, "override a scenario parameter: key=value (repeatable; `--parameters` lists the keys)");
}

void add_parameters_flag(CLI::App& c, bool& parameters) {
  c.add_flag("--parameters", parameters, "list every scenario parameter (key, default, range and unit, help) and exit");
}

void add_seed_option(CLI::App& c, std::int64_t& seed) {
  c.add_option("--seed", seed, "seed of the random streams (sets sim.seed)")->check(CLI::NonNegativeNumber);
}

std::string out_or_default(const std::string& dir, const std::string& name) {
  return dir.empty() ? (std::filesystem::path("results") / name).string() : dir;
}

void add_collective_options(CLI::App& c, std::string& collective, std::string& algorithm) {
  c.add_option("--collective", collective, offload::collectives_help());
  c.add_option("--algorithm", algorithm, offload::algorithms_help());
}

void add_analysis_option(CLI::App& c, std::string& analysis) {
  analysis = "auto";
  c.add_option("--analysis", analysis, std::string(offload::kAnalysisHelp))->capture_default_str();
}

void add_strategy_option(CLI::App& c, std::string& strategy, offload::StrategyUse use) {
  strategy = offload::strategy_default(use);
  c.add_option("--strategy", strategy, offload::strategy_help(use))->capture_default_str();
}

namespace {

std::string option_name(const std::string& key) {
  std::string name = "--" + key;
  for (char& ch : name)
    if (ch == '_') ch = '-';
  return name;
}

}  // namespace

void add_shape_options(CLI::App& c, ShapeOptions& into, const std::vector<std::string>& keys) {
  const auto& table = offload::build_options_table();
  const offload::BuildOptions defaults;
  for (const std::string& key : keys) {
    const params::Field<offload::BuildOptions>* f = table.find(key);
    if (!f) throw std::logic_error("add_shape_options: no key " + key);
    if (f->spec.kind == params::Kind::boolean) {
      c.add_flag_function(
          option_name(key),
          [&into, key](std::int64_t n) {
            if (n > 0) into.given.emplace_back(key, "true");
          },
          f->spec.help);
      continue;
    }
    c.add_option_function<std::string>(
         option_name(key), [&into, key](const std::string& text) { into.given.emplace_back(key, text); }, f->spec.help)
        ->type_name(f->spec.kind == params::Kind::integer ? "INT" : "TEXT")
        ->default_str(f->get(defaults));
  }
}

offload::BuildOptions ShapeOptions::apply(offload::BuildOptions into) const {
  const auto& table = offload::build_options_table();
  for (const auto& [key, text] : given) {
    const params::Field<offload::BuildOptions>* f = table.find(key);
    try {
      f->set(into, params::parse(f->spec, text));
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: {}", option_name(key), e.what()));
    }
  }
  return into;
}

namespace {

void print_keys(const scenario::ParamRegistry& keys, const std::string& prefix) {
  for (const auto& [key, spec] : keys.all()) {
    std::string range;
    if (!spec.choices.empty()) {
      for (const auto& c : spec.choices) range += (range.empty() ? "" : "|") + c;
    } else if (!spec.min.empty() || !spec.max.empty()) {
      range = fmt::format("{}..{}", spec.min, spec.max);
    }
    if (!spec.unit.empty()) range += " " + spec.unit;
    std::string help = spec.help;
    for (const auto& [preset, value] : spec.preset_values) help += fmt::format(" [{}: {}]", preset, value);
    fmt::print("{:<38} {:<18} {:<22} {}\n", prefix + key, spec.default_value.empty() ? "\"\"" : spec.default_value,
               range, help);
  }
}

}  // namespace

void print_parameters(const scenario::ParamRegistry& keys, const std::vector<scenario::ListRegistry>& lists) {
  print_keys(keys, "");
  for (const scenario::ListRegistry& l : lists) print_keys(*l.items, l.name + ".N.");
}

}  // namespace fabriclab::cli
