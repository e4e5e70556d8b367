// Strategy runs: each assignment strategy (and analysis) run on one DAG, its result
// verified, compared with the closed-form estimate and labelled for a table or a file
// name. `fabriclab counters` and `fabriclab plan` print these; nothing here prints.
//
//   for (const Variant& v : variants({.all = true}, {}, dag)) {
//     Outcome o = run_variant(dag, v, /*verify_it=*/true);
//     attach_estimate(o, options, "allreduce", "ring");
//     ... v.label(), o.counters.max, verdict(o) ...
//   }
#pragma once

#include <string>
#include <vector>

#include "offload/assignment.h"
#include "offload/collectives.h"
#include "offload/exact.h"
#include "offload/options.h"
#include "offload/verifier.h"

namespace fabriclab::offload {

// A strategy run: which strategy, under which analysis.
struct Variant {
  Strategy strategy;
  Analysis analysis;
  std::string label() const;
  std::string file_tag() const;  // "naive", "optimized-local", ...
};

struct Outcome {
  Variant variant{Strategy::naive, Analysis::local};
  std::size_t ops = 0, relays = 0;
  CounterSummary counters;
  VerifyReport report;
  bool verified = false;  // the verifier ran
  Schedule schedule;
  std::string estimate = "-";  // closed form "max / total", or why there is none
  bool estimate_matches = true;
  // exact only: per rank, proven minimum and what optimized uses under the same analysis.
  std::vector<ExactRank> exact;
};

// Where the exact strategy is offered by default: small enough to solve in seconds.
bool exact_fits(const Schedule& dag);
// "" or a note such as "optimized uses 1 more counter than the proven minimum on 8 ranks"
std::string exact_note(const Outcome& o);

// Global analysis fits when the whole happens-before graph is small (P <= 64 in
// practice); local always fits.
bool global_fits(const Schedule& dag);
// The analysis that needs the fewest counters and is still within reach: global where it
// fits, else local. What `counters` reports as its best and `advise` plans with.
Analysis best_analysis(const Schedule& dag);

// strategy: naive, optimized, exact or all (exact where it fits); analysis: local,
// global or automatic (local, plus global where it fits).
std::vector<Variant> variants(StrategySelection strategies, AnalysisSelection analyses, const Schedule& dag);

// Verifier settings scaled to the schedule's size; the global analysis where it fits
// (P <= 64), and wherever the assignment used it (`assigned`, up to kMaxGlobalOps).
VerifyOptions verify_options(const Schedule& s, Analysis assigned = Analysis::local);

Outcome run_variant(const Schedule& dag, const Variant& v, bool verify_it);
// Sets o.estimate to the closed form for this variant ("max / total"; unchanged "-" for
// exact and optimized/global, which have no closed form) and
// o.estimate_matches to whether it equals what the allocator produced, rank by rank.
// `segmented`: the schedule's atomics were split (split_atomics): optimized/local keeps
// its closed form where estimate_holds_segmented says so ("n/a" elsewhere), naive has none.
void attach_estimate(Outcome& o, const BuildOptions& options, const std::string& collective,
                     const std::string& algorithm, bool segmented = false);
// "safe+live (global, exhaustive)", "REJECTED", ...
std::string verdict(const Outcome& o);
std::string verdict(const VerifyReport& r);

// Writes the outcome's schedule as JSON and/or DOT (empty path: not written); with
// several variants each file gets the variant's tag: x.json -> x.optimized-local.json.
void write_outputs(const Outcome& o, const std::string& json_path, const std::string& dot_path, bool tag_with_variant);

}  // namespace fabriclab::offload
