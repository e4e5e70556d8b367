// fabriclab counters: build a collective's DAG, assign counters with each strategy,
// verify, and print the counts -- for one collective or as a table of all of them.
#include <fmt/format.h>

#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "core/error.h"
#include "core/input.h"
#include "core/progress.h"
#include "offload/assignment.h"
#include "offload/collectives.h"
#include "offload/estimates.h"
#include "offload/segment.h"
#include "offload/strategy_runs.h"

namespace fabriclab::cli {

using namespace fabriclab::offload;

namespace {

struct CountersArgs {
  std::string collective, algorithm;
  int ranks = 0;
  std::int64_t bytes = 8;
  std::int64_t segment = 0;  // split atomics into segments of at most this many bytes
  bool segment_given = false;
  ShapeOptions shape;  // root, radix, datatype, ordered_channels, uncounted_sends
  std::string strategy;
  std::string analysis;
  std::string json_path, dot_path;
  bool table = false;
  bool quiet = false;
  std::string table_ranks = "8,64,512";
  std::string ranks_text;
};

BuildOptions build_options(const CountersArgs& a, int ranks) {
  BuildOptions o = a.shape.apply();
  o.ranks = ranks;
  o.bytes = a.bytes;
  return o;
}

int run_single(const CountersArgs& a) {
  if (a.collective.empty() || a.algorithm.empty() || a.ranks_text.empty())
    throw InputError("counters: give --collective, --algorithm and --ranks (or --table)");
  // Where the files go is checked before the work, not after it.
  if (!a.json_path.empty()) check_output_file(a.json_path, "--json");
  if (!a.dot_path.empty()) check_output_file(a.dot_path, "--dot");
  const StrategySelection chosen = parse_strategies(a.strategy, "--strategy");  // before the work
  const AnalysisSelection analyses = parse_analyses(a.analysis, "--analysis");
  const BuildOptions bo = build_options(a, a.ranks);
  Schedule dag = build_schedule(a.collective, a.algorithm, bo);
  std::string segments;
  bool segmented = false;
  if (a.segment_given) {
    const std::int64_t element = datatype_size(bo.datatype);
    if (a.segment <= 0 || a.segment % element != 0)
      throw InputError(fmt::format("--segment {}: expected a positive multiple of the {}-byte {} elements (the "
                                   "NIC's largest atomic, as exec splits with)",
                                   a.segment, element, to_string(bo.datatype)));
    const std::size_t before = dag.size();
    dag = split_atomics(dag, a.segment);
    segmented = dag.size() != before;  // (nothing split: the unsegmented closed forms hold)
    segments = fmt::format("; atomics split into segments of at most {} bytes: {} more operations", a.segment,
                           dag.size() - before);
  }
  const auto vs = variants(chosen, analyses, dag);
  fmt::print("{} {} on {} ranks, {} bytes ({}{}{}{}): {} operations in the DAG\n", a.collective, a.algorithm, a.ranks,
             a.bytes, to_string(bo.datatype), bo.ordered_channels ? ", ordered channels" : "",
             bo.count_send_completions ? "" : ", send completions not counted", segments, dag.size());
  fmt::print("{:<20} {:>9} {:>7} {:>13} {:>14} {:>15}  {}\n", "strategy", "ops", "relays", "counters/max",
             "counters/total", "estimate", "verifier");
  int rc = 0;
  for (const auto& v : vs) {
    Outcome o = run_variant(dag, v, true);
    attach_estimate(o, bo, a.collective, a.algorithm, segmented);
    fmt::print("{:<20} {:>9} {:>7} {:>13} {:>14} {:>15}  {}\n", v.label(), o.ops, o.relays, o.counters.max,
               o.counters.total, o.estimate, verdict(o));
    if (!o.estimate_matches) rc = 1;
    if (const auto note = exact_note(o); !note.empty()) fmt::print("  note: {}\n", note);
    if (!o.report.ok()) {
      rc = 1;
      for (const auto& viol : o.report.violations) fmt::print("  [{}] {}\n", viol.method, viol.message);
    }
    write_outputs(o, a.json_path, a.dot_path, vs.size() > 1);
  }
  if (chosen.all && !exact_fits(dag))
    fmt::print("  exact: not run with --strategy all beyond P = 16 or 4000 operations (it may take hours); "
               "--strategy exact runs it\n");
  return rc;
}

std::vector<int> parse_rank_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(parse_ranks(item, "--ranks"));
  if (out.empty()) throw InputError("--ranks: empty list");
  return out;
}

int run_table(const CountersArgs& a) {
  const auto ranks = parse_rank_list(a.table_ranks);
  fmt::print("Counters per rank (max / total over ranks) for every collective; every assignment is\n"
             "checked by the verifier. optimized/global: where the global analysis fits (P <= 64).\n"
             "exact: proven minimum by SAT for P <= 16 (global analysis), '*' where the solver's\n"
             "budget ran out. \"= estimate\": the closed forms equal naive and optimized/local.\n\n");
  fmt::print("{:<15} {:<19} {:>5} | {:>14} | {:>15} | {:>16} | {:>11} | {}\n", "collective", "algorithm", "P", "naive",
             "optimized/local", "optimized/global", "exact", "checks");
  int rc = 0;
  // Rows cost about as their P: the estimate of what remains weighs them so.
  double work = 0;
  std::size_t rows = 0, row = 0;
  for (std::size_t i = 0; i < algorithms().size(); ++i)
    for (int p : ranks) work += p, ++rows;
  Progress::Options po = Progress::on_stderr("counters --table", work, "", a.quiet);
  po.show = [&](double) { return fmt::format("row {} of {}", row + 1, rows); };
  Progress progress(std::move(po));
  double done = 0;
  for (const auto& info : algorithms()) {
    for (int p : ranks) {
      progress.update(done, fmt::format("{} {} P = {}", info.collective, info.algorithm, p));
      BuildOptions bo = build_options(a, p);
      if (!info.uses_root) bo.root = 0;
      const Schedule dag = build_schedule(info.collective, info.algorithm, bo);
      const bool global = global_fits(dag);
      std::vector<Variant> vs = {{Strategy::naive, Analysis::local}, {Strategy::optimized, Analysis::local}};
      if (global) vs.push_back({Strategy::optimized, Analysis::global});
      if (exact_fits(dag)) vs.push_back({Strategy::exact, global ? Analysis::global : Analysis::local});
      std::vector<Outcome> out;
      for (const auto& v : vs) {
        out.push_back(run_variant(dag, v, true));
        attach_estimate(out.back(), bo, info.collective, info.algorithm);
      }
      auto find = [&](Strategy s, Analysis an) -> const Outcome* {
        for (const auto& o : out)
          if (o.variant.strategy == s && (s == Strategy::naive || o.variant.analysis == an)) return &o;
        return nullptr;
      };
      auto cell = [](const Outcome* o) {
        if (!o) return std::string("-");
        std::string c = fmt::format("{} / {}", o->counters.max, o->counters.total);
        for (const auto& r : o->exact)
          if (!r.proven_minimum) return c + "*";
        return c;
      };
      bool ok = true, estimates = true;
      for (const auto& o : out) ok &= o.report.ok(), estimates &= o.estimate_matches;
      rc |= ok && estimates ? 0 : 1;
      std::string checks = ok ? "safe+live" : "REJECTED";
      checks += estimates ? "; = estimate" : "; ESTIMATE MISMATCH";
      if (const Outcome* e = find(Strategy::exact, Analysis::global); e && !exact_note(*e).empty())
        checks += "; optimized > exact";
      if (const Outcome* e = find(Strategy::exact, Analysis::local); e && !exact_note(*e).empty())
        checks += "; optimized > exact";
      const Outcome* ex = find(Strategy::exact, global ? Analysis::global : Analysis::local);
      progress.clear();
      fmt::print("{:<15} {:<19} {:>5} | {:>14} | {:>15} | {:>16} | {:>11} | {}\n", info.collective, info.algorithm, p,
                 cell(find(Strategy::naive, Analysis::local)), cell(find(Strategy::optimized, Analysis::local)),
                 cell(find(Strategy::optimized, Analysis::global)), cell(ex), checks);
      std::fflush(stdout);
      done += p, ++row;
    }
  }
  return rc;
}

}  // namespace

Command add_counters_command(CLI::App& app) {
  auto args = std::make_shared<CountersArgs>();
  auto* c = app.add_subcommand("counters",
                               "Build a collective's triggered-op DAG, assign counters (naive, optimized, exact), "
                               "verify the result and print counters per rank; --table does it for every collective");
  add_collective_options(*c, args->collective, args->algorithm);
  c->add_option("--bytes", args->bytes, "message size in bytes (see docs/offload-model.md)")->capture_default_str();
  auto* segment =
      c->add_option("--segment", args->segment,
                    "split every atomic of more than this many bytes into segments of at most as many (what exec "
                    "does with the NIC's atomic size); a multiple of the datatype's size");
  add_shape_options(*c, args->shape, {"root", "radix", "datatype", "ordered_channels", "uncounted_sends"});
  add_strategy_option(*c, args->strategy, StrategyUse::compare);
  add_analysis_option(*c, args->analysis);
  c->add_option("--json", args->json_path,
                "write the schedule (section 8 format); with several strategies one file "
                "each, named FILE.<strategy>-<analysis>.json (FILE.naive.json for naive)");
  c->add_option("--dot", args->dot_path, "write a Graphviz view of the schedule");
  c->add_flag("--table", args->table, "print the table for every collective and algorithm");
  add_quiet_flag(*c, args->quiet);
  // --ranks is a count for one collective and a list for the table.
  c->add_option("--ranks", args->ranks_text, "number of ranks P; with --table a list (default 8,64,512)");
  return {c, [args, segment]() {
            args->segment_given = segment->count() > 0;
            if (args->table) {
              if (args->segment_given)
                throw InputError("--segment is for one collective (--collective, --algorithm, --ranks), not --table");
              if (!args->ranks_text.empty()) args->table_ranks = args->ranks_text;
              return run_table(*args);
            }
            if (args->ranks_text.find(',') != std::string::npos)
              throw InputError(
                  fmt::format("--ranks: '{}': a list is only for --table (one collective takes one number of ranks)",
                              args->ranks_text));
            if (!args->ranks_text.empty()) args->ranks = parse_ranks(args->ranks_text, "--ranks");
            return run_single(*args);
          }};
}

}  // namespace fabriclab::cli
