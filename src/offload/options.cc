#include "offload/options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "core/error.h"

namespace fabriclab::offload {

const params::Table<BuildOptions>& build_options_table() {
  static const auto table = [] {
    using B = BuildOptions;
    params::Table<B> t;
    t.integer("root", &B::root, "root rank of rooted collectives", 0, kMaxBuildRanks - 1)
        .integer("radix", &B::radix, "k of the k-nomial broadcast", 2, kMaxBuildRanks)
        .choice("datatype", &B::datatype, kDatatypeNames, "double, int64 or float")
        .flag("ordered_channels", &B::ordered_channels, "the transport delivers in order per (sender, receiver) pair")
        .custom(
            {"uncounted_sends",
             params::Kind::boolean,
             "do not count the local completions of puts/atomics to other ranks",
             "",
             "",
             {}},
            [](B& b, const params::Value& v) { b.count_send_completions = v.i == 0; },
            [](const B& b) { return std::string(b.count_send_completions ? "false" : "true"); });
    return t;
  }();
  return table;
}

std::string collectives_help() {
  std::vector<std::string> names;
  for (const AlgorithmInfo& a : algorithms())
    if (names.empty() || names.back() != a.collective) names.push_back(a.collective);
  const std::string last = names.back();
  names.pop_back();
  return fmt::format("{} or {}", fmt::join(names, ", "), last);
}

std::vector<std::string> strategy_choices(StrategyUse use) {
  std::vector<std::string> out;
  for (const auto& n : kStrategyNames)
    if (use != StrategyUse::run || n.value != Strategy::exact) out.emplace_back(n.name);
  if (use == StrategyUse::compare) out.emplace_back("all");
  return out;
}

std::string strategy_default(StrategyUse use) {
  return use == StrategyUse::compare ? "all" : std::string(to_string(kDefaultStrategy));
}

std::string strategy_help(StrategyUse use) {
  switch (use) {
    case StrategyUse::build: return "naive, optimized or exact (the proven minimum; slow beyond P = 16)";
    case StrategyUse::run: return "naive or optimized (exact is for counting)";
    case StrategyUse::compare:
      return "naive, optimized, exact (the proven minimum, at any P; slow beyond P = 16), or all (exact only where it "
             "solves in seconds: P <= 16)";
  }
  return {};
}

namespace {

InputError unknown(std::string_view text, StrategyUse use, std::string_view what) {
  return InputError(
      fmt::format("{}: unknown strategy '{}' (expected {})", what, text, fmt::join(strategy_choices(use), ", ")));
}

}  // namespace

Strategy parse_strategy(std::string_view text, StrategyUse use, std::string_view what) {
  if (use == StrategyUse::compare) throw std::logic_error("parse_strategy: a selection is parse_strategies'");
  const auto s = params::value_named(kStrategyNames, text);
  if (!s) throw unknown(text, use, what);
  if (use == StrategyUse::run && *s == Strategy::exact)
    throw InputError(fmt::format("{}: exact is for counting, not for a run (expected naive or optimized)", what));
  return *s;
}

StrategySelection parse_strategies(std::string_view text, std::string_view what) {
  if (text == "all") return {.all = true};
  const auto s = params::value_named(kStrategyNames, text);
  if (!s) throw unknown(text, StrategyUse::compare, what);
  return {.all = false, .one = *s};
}

AnalysisSelection parse_analyses(std::string_view text, std::string_view what) {
  if (text == "auto") return {};
  const auto a = params::value_named(kAnalysisNames, text);
  if (!a) throw InputError(fmt::format("{}: unknown analysis '{}' (expected local, global or auto)", what, text));
  return {.automatic = false, .one = *a};
}

CollectiveKind parse_collective_kind(std::string_view text, std::string_view what) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos)
    throw InputError(fmt::format("{}: '{}': expected COLLECTIVE:ALGORITHM, e.g. allreduce:ring", what, text));
  return collective_kind(std::string(text.substr(0, colon)), std::string(text.substr(colon + 1)), what);
}

CollectiveKind collective_kind(std::string collective, std::string algorithm, std::string_view what) {
  try {
    check_algorithm(collective, algorithm);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", what, e.what()));
  }
  return {std::move(collective), std::move(algorithm)};
}

std::string algorithms_help() {
  std::vector<std::string> names;
  for (const AlgorithmInfo& a : algorithms())
    if (std::find(names.begin(), names.end(), a.algorithm) == names.end()) names.push_back(a.algorithm);
  return fmt::format("{} (each collective has some: a name it lacks is refused with the list)", fmt::join(names, ", "));
}

void check_ranks(std::int64_t ranks, std::string_view what) {
  if (ranks < kMinBuildRanks || ranks > kMaxBuildRanks)
    throw InputError(fmt::format("{}: ranks must be in {}..{} (got {})", what, kMinBuildRanks, kMaxBuildRanks, ranks));
}

Rank parse_ranks(std::string_view text, std::string_view what) {
  const auto v = params::parse_integer(std::string(text));
  if (!v)
    throw InputError(
        fmt::format("{}: expected a number of ranks in {}..{}, got '{}'", what, kMinBuildRanks, kMaxBuildRanks, text));
  check_ranks(*v, what);
  return static_cast<Rank>(*v);
}

}  // namespace fabriclab::offload
