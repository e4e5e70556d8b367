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

}  // namespace fabriclab::offload
