// fabriclab verify FILE.json: prove a schedule file safe and live, or print the
// counter-example.
#include <fmt/format.h>

#include <memory>

#include "cli/commands.h"
#include "offload/schedule_io.h"
#include "offload/verifier.h"

namespace fabriclab::cli {

using namespace fabriclab::offload;

namespace {

struct VerifyArgs {
  std::string path;
  std::string analysis = "global";
  std::uint64_t seed = 1;
  int runs = 32;
  std::size_t states = 200000;
};

int run_verify(const VerifyArgs& a) {
  const Schedule s = read_schedule_json(a.path);
  VerifyOptions o;
  o.analysis = parse_analysis(a.analysis);
  o.seed = a.seed;
  o.random_runs = a.runs;
  o.exhaustive_state_limit = a.states;
  const VerifyReport r = verify(s, o);
  const auto c = s.counter_summary();
  fmt::print("{}: {} {} on {} ranks, strategy '{}': {} operations, {} relays, counters per "
             "rank max {} total {}\n",
             a.path, s.collective.empty() ? "schedule" : s.collective, s.algorithm, s.ranks(), s.strategy, s.size(),
             s.relay_count(), c.max, c.total);
  fmt::print("  exact rule ({} analysis): {}\n", to_string(r.analysis),
             r.safe_by_rule ? "every operation safe" : "UNSAFE");
  fmt::print("  fixpoint: {}\n", r.live_by_fixpoint ? "every operation fires (live)" : "HANGS");
  fmt::print("  adversarial execution: {} random runs{}: {}\n", r.random_runs,
             r.exhaustive_complete
                 ? fmt::format(", exhaustive over {} states", r.exhaustive_states)
                 : (r.exhaustive_states ? fmt::format(", exhaustive stopped after {} states", r.exhaustive_states)
                                        : std::string()),
             r.safe_by_execution ? "no early firing" : "EARLY FIRING");
  for (const auto& v : r.violations) fmt::print("  [{}] {}\n", v.method, v.message);
  fmt::print("{}\n", r.ok() ? "verdict: safe and live" : "verdict: REJECTED");
  return r.ok() ? 0 : 1;
}

}  // namespace

Command add_verify_command(CLI::App& app) {
  auto args = std::make_shared<VerifyArgs>();
  auto* c = app.add_subcommand("verify",
                               "Prove a schedule file (JSON, triggered-ops.md section 8) safe and live by the exact "
                               "rule and by adversarial execution; exit 0 when it is, 1 with a counter-example "
                               "when not, 2 on bad input");
  c->add_option("file", args->path, "schedule JSON file")->required();
  c->add_option("--analysis", args->analysis, "global (exact; falls back to local above 60000 operations) or local")
      ->capture_default_str();
  c->add_option("--seed", args->seed, "first seed of the random adversary")->capture_default_str();
  c->add_option("--runs", args->runs, "random adversarial runs")
      ->capture_default_str()
      ->check(CLI::Range(0, 100'000'000));
  c->add_option("--states", args->states,
                "state limit of the exhaustive search (0 skips it); it runs on schedules of "
                "up to 200 operations")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40));
  return {c, [args]() { return run_verify(*args); }};
}

}  // namespace fabriclab::cli
