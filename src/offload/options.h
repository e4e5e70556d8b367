// The planner's options, declared once (as the fabric's parameters are, in
// fabric/params.h): the shape a collective's schedule is built for -- BuildOptions' keys
// root, radix, datatype, ordered_channels, uncounted_sends -- and the counter
// strategies, with the names, defaults, help and parsing that every command (counters,
// plan, advise, exec) and scenario key ([[collective]], offload.*, experiment.*) shows
// and takes.
//
//   collective_table().nest("", &CollectiveSpec::build, build_options_table());
//   Strategy s = parse_strategy(text, StrategyUse::run, "offload.strategy");
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/params.h"
#include "offload/assignment.h"
#include "offload/collectives.h"
#include "offload/happens_before.h"

namespace fabriclab::offload {

// BuildOptions' keys a user sets by name (ranks and bytes are each place's own: a count,
// an element count, a list of hosts, a size with its unit). The defaults are
// BuildOptions'.
const params::Table<BuildOptions>& build_options_table();

// "allreduce, bcast, ..., reduce_scatter or alltoall": the built-in collectives.
std::string collectives_help();

// Where a strategy is asked for: one to build a schedule with (advise, [[collective]]);
// one whose schedule runs on NICs (exec, the offload model: exact is for counting); or
// several to compare (counters, plan), "all" for every one (exact where it solves in
// seconds, exact_fits).
enum class StrategyUse : std::uint8_t { build, run, compare };
inline constexpr Strategy kDefaultStrategy = Strategy::optimized;
// The names `use` takes ("all" too, to compare), its default and its help.
std::vector<std::string> strategy_choices(StrategyUse use);
std::string strategy_default(StrategyUse use);
std::string strategy_help(StrategyUse use);
// One strategy (build, run): InputError naming `what` (the option or key) and the choices.
Strategy parse_strategy(std::string_view text, StrategyUse use, std::string_view what);
// Several (compare): those named, or with `all` every one (exact where it fits).
struct StrategySelection {
  bool all = false;
  Strategy one = kDefaultStrategy;  // unless `all`
};
StrategySelection parse_strategies(std::string_view text, std::string_view what);

// The analysis a counter assignment is made (and verified) under: local, global, or auto
// -- every one within reach, global where it fits (counters and plan show local and
// global; advise plans with the best, as counters reports it).
struct AnalysisSelection {
  bool automatic = true;
  Analysis one = Analysis::local;  // unless `automatic`
};
inline constexpr std::string_view kAnalysisHelp =
    "local, global, or auto (global where it fits, P <= 64, else local; counters and plan show local beside it)";
AnalysisSelection parse_analyses(std::string_view text, std::string_view what);

// A built-in collective named COLLECTIVE:ALGORITHM (experiment.collectives,
// workload.collectives, advise's arguments): InputError naming `what` when it is not one.
struct CollectiveKind {
  std::string collective;
  std::string algorithm;
};
CollectiveKind parse_collective_kind(std::string_view text, std::string_view what);
// The same check for a name given in two parts (a workload file's columns, advise's fields).
CollectiveKind collective_kind(std::string collective, std::string algorithm, std::string_view what);
// "ring, recursive_doubling, binomial, ...": every built-in algorithm name, once.
std::string algorithms_help();
// The ranks of a collective to build, wherever they are given: an integer in
// 2..kMaxBuildRanks (InputError naming `what` otherwise).
inline constexpr Rank kMinBuildRanks = 2;
Rank parse_ranks(std::string_view text, std::string_view what);
void check_ranks(std::int64_t ranks, std::string_view what);

}  // namespace fabriclab::offload
