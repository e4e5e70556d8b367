// fabriclab advise: which of a list of collectives to offload now, which wait for
// counters, and which run in software, for given free counters and slots per NIC.
#include <fmt/format.h>

#include <memory>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "core/error.h"
#include "offload/advice.h"
#include "offload/options.h"

namespace fabriclab::cli {

using namespace fabriclab::offload;

namespace {

struct AdviseArgs {
  std::int64_t counters = 16;
  std::int64_t slots = -1;
  bool no_wait = false;
  std::string strategy;
  std::string analysis;
  std::vector<std::string> specs;
};

// collective:algorithm:P[:bytes]
CollectiveRequest parse_spec(const std::string& spec) {
  std::vector<std::string> parts;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ':')) parts.push_back(item);
  auto number = [&](const std::string& s, const char* what) {
    try {
      std::size_t used = 0;
      const long long v = std::stoll(s, &used);
      if (used != s.size()) throw std::invalid_argument("");
      return v;
    } catch (const std::exception&) {
      throw InputError(fmt::format("collective '{}': {} '{}' is not a number", spec, what, s));
    }
  };
  if (parts.size() < 3 || parts.size() > 4)
    throw InputError(
        fmt::format("collective '{}': expected collective:algorithm:ranks[:bytes], e.g. allreduce:ring:64", spec));
  const std::string what = fmt::format("collective '{}'", spec);
  CollectiveKind kind = collective_kind(parts[0], parts[1], what);
  CollectiveRequest r{std::move(kind.collective), std::move(kind.algorithm), {}};
  r.options.ranks = parse_ranks(parts[2], what);
  if (parts.size() == 4) r.options.bytes = number(parts[3], "bytes");
  return r;
}

int run_advise(const AdviseArgs& a) {
  NicBudget b;
  b.counters = a.counters;
  if (a.slots >= 0) b.slots = a.slots;
  b.allow_wait = !a.no_wait;
  std::vector<CollectiveRequest> reqs;
  for (const auto& s : a.specs) reqs.push_back(parse_spec(s));
  const Strategy strategy = parse_strategy(a.strategy, StrategyUse::build, "--strategy");
  const AnalysisSelection chosen = parse_analyses(a.analysis, "--analysis");
  const std::optional<Analysis> analysis = chosen.automatic ? std::nullopt : std::optional<Analysis>(chosen.one);
  const auto advice = advise(b, reqs, strategy, analysis);
  fmt::print("{} free counters{} per NIC, {} assignment{}; collectives in start order:\n", a.counters,
             a.slots >= 0 ? fmt::format(" and {} triggered-op slots", a.slots) : "", a.strategy,
             strategy == Strategy::naive ? ""
             : analysis                  ? fmt::format(", {} analysis", a.analysis)
                                         : ", global analysis where it fits (as counters reports)");
  fmt::print("{:>3}  {:<34} {:>10} {:>7}  {:<8}  {:<9} {}\n", "#", "collective", "counters", "slots", "analysis",
             "decision", "why");
  for (std::size_t i = 0; i < advice.size(); ++i) {
    const auto& q = reqs[i];
    fmt::print("{:>3}  {:<34} {:>10} {:>7}  {:<8}  {:<9} {}\n", i + 1,
               fmt::format("{} {} P={}", q.collective, q.algorithm, q.options.ranks), advice[i].counters_max,
               advice[i].slots_max, strategy == Strategy::naive ? "-" : to_string(advice[i].analysis),
               to_string(advice[i].decision), advice[i].reason);
  }
  return 0;
}

}  // namespace

Command add_advise_command(CLI::App& app) {
  auto args = std::make_shared<AdviseArgs>();
  auto* c = app.add_subcommand("advise",
                               "Offload-or-fallback advice: for free counters (and triggered-op slots) per NIC and "
                               "collectives to start in order, say which are offloaded, which wait for counters "
                               "held by earlier ones, and which must run in software");
  c->add_option("collectives", args->specs,
                "collectives in start order, each collective:algorithm:ranks[:bytes] (e.g. "
                "allreduce:ring:64 bcast:binomial:64)")
      ->required();
  c->add_option("--counters", args->counters, "free counters per NIC")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40));
  c->add_option("--slots", args->slots, "free triggered-operation slots per NIC (default: unlimited)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40));
  c->add_flag("--no-wait", args->no_wait, "a collective that does not fit now runs in software instead of waiting");
  add_strategy_option(*c, args->strategy, StrategyUse::build);
  add_analysis_option(*c, args->analysis);
  return {c, [args]() { return run_advise(*args); }};
}

}  // namespace fabriclab::cli
