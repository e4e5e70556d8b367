// fabriclab plan --program FILE.json: recover the DAG of a schedule given as the calls a
// library would issue, verify the library's own counters, re-assign and verify again.
#include <fmt/format.h>

#include <memory>

#include "cli/commands.h"
#include "offload/program.h"
#include "offload/schedule_io.h"
#include "offload/strategy_runs.h"

namespace fabriclab::cli {

using namespace fabriclab::offload;

namespace {

struct PlanArgs {
  std::string program;
  std::string strategy;
  std::string analysis;
  std::string json_path, dot_path;
};

int run_plan(const PlanArgs& a) {
  const StrategySelection chosen = parse_strategies(a.strategy, "--strategy");  // before the work
  const AnalysisSelection analyses = parse_analyses(a.analysis, "--analysis");
  const Program p = read_program_json(a.program);
  const Recovered r = recover_dag(p);
  fmt::print("{}: {} ranks, {} calls and {} arrivals; recovered {} dependences{}\n", a.program, p.ranks, p.calls.size(),
             r.as_given.size() - p.calls.size(), r.dependences,
             r.contracted_counter_adds
                 ? fmt::format(", {} counter adds contracted into direct dependences", r.contracted_counter_adds)
                 : "");
  fmt::print("{:<20} {:>9} {:>7} {:>13} {:>14}  {}\n", "assignment", "ops", "relays", "counters/max", "counters/total",
             "verifier");
  const VerifyReport given = verify(r.as_given, verify_options(r.as_given));
  const auto gc = r.as_given.counter_summary();
  fmt::print("{:<20} {:>9} {:>7} {:>13} {:>14}  {}\n", "as given", r.as_given.size(), "-", gc.max, gc.total,
             verdict(given));
  for (const auto& v : given.violations) fmt::print("  [{}] {}\n", v.method, v.message);
  int rc = given.ok() ? 0 : 1;
  const auto vs = variants(chosen, analyses, r.dag);
  for (const auto& v : vs) {
    const Outcome o = run_variant(r.dag, v, true);
    fmt::print("{:<20} {:>9} {:>7} {:>13} {:>14}  {}\n", v.label(), o.ops, o.relays, o.counters.max, o.counters.total,
               verdict(o));
    if (!o.report.ok()) {
      rc = 1;
      for (const auto& viol : o.report.violations) fmt::print("  [{}] {}\n", viol.method, viol.message);
    }
    write_outputs(o, a.json_path, a.dot_path, vs.size() > 1);
  }
  return rc;
}

}  // namespace

Command add_plan_command(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  auto* c = app.add_subcommand("plan",
                               "Schedules given without a DAG: recover the dependences of a program (the triggered "
                               "calls a library issues, docs/program-format.md), verify its own counters, re-assign "
                               "them and verify again; exit 1 when any assignment is unsafe");
  c->add_option("--program", args->program, "program JSON file")->required();
  add_strategy_option(*c, args->strategy, StrategyUse::compare);
  add_analysis_option(*c, args->analysis);
  c->add_option("--json", args->json_path, "write the re-assigned schedule(s)");
  c->add_option("--dot", args->dot_path, "write Graphviz views of the re-assigned schedule(s)");
  return {c, [args]() { return run_plan(*args); }};
}

}  // namespace fabriclab::cli
