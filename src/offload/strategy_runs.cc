#include "offload/strategy_runs.h"

#include <fmt/format.h>

#include <filesystem>

#include "core/error.h"
#include "offload/estimates.h"
#include "offload/schedule_io.h"

namespace fabriclab::offload {

std::string Variant::label() const {
  return strategy == Strategy::naive ? "naive" : fmt::format("{}/{}", to_string(strategy), to_string(analysis));
}

std::string Variant::file_tag() const {
  return strategy == Strategy::naive ? "naive" : fmt::format("{}-{}", to_string(strategy), to_string(analysis));
}

bool exact_fits(const Schedule& dag) { return dag.ranks() <= 16 && dag.size() <= 4000; }

std::string exact_note(const Outcome& o) {
  if (o.exact.empty()) return "";
  std::int32_t worse = 0, gap = 0, unproven = 0;
  for (const auto& r : o.exact) {
    if (r.optimized > r.counters) ++worse, gap = std::max(gap, r.optimized - r.counters);
    if (!r.proven_minimum) ++unproven;
  }
  std::string note;
  if (worse)
    note = fmt::format("optimized uses up to {} more counter{} than the proven minimum, on {} rank{}", gap,
                       gap == 1 ? "" : "s", worse, worse == 1 ? "" : "s");
  if (unproven)
    note += fmt::format("{}budget exhausted on {} rank{}: their count is an upper bound", note.empty() ? "" : "; ",
                        unproven, unproven == 1 ? "" : "s");
  return note;
}

// Global analysis fits when the whole happens-before graph is small (P <= 64 in
// practice); local always fits.
bool global_fits(const Schedule& dag) { return dag.size() <= kMaxGlobalOps && dag.ranks() <= 64; }

Analysis best_analysis(const Schedule& dag) { return global_fits(dag) ? Analysis::global : Analysis::local; }

std::vector<Variant> variants(StrategySelection chosen, AnalysisSelection analysis, const Schedule& dag) {
  std::vector<Analysis> analyses;
  if (analysis.automatic) {
    analyses.push_back(Analysis::local);
    if (global_fits(dag)) analyses.push_back(Analysis::global);
  } else {
    analyses.push_back(analysis.one);
  }
  const auto named = [&](Strategy s) { return chosen.all || chosen.one == s; };
  std::vector<Variant> out;
  if (named(Strategy::naive)) out.push_back({Strategy::naive, Analysis::local});
  if (named(Strategy::optimized))
    for (Analysis a : analyses) out.push_back({Strategy::optimized, a});
  if (named(Strategy::exact) && (!chosen.all || exact_fits(dag)))
    for (Analysis a : analyses) out.push_back({Strategy::exact, a});
  return out;
}

VerifyOptions verify_options(const Schedule& s, Analysis assigned) {
  VerifyOptions v;
  // An assignment made under the global analysis is safe under it only: checked by it
  // (which the verifier itself limits to kMaxGlobalOps operations).
  v.analysis = assigned == Analysis::global || global_fits(s) ? Analysis::global : Analysis::local;
  v.random_runs = s.size() > 200000 ? 2 : s.size() > 20000 ? 8 : 32;
  v.exhaustive_state_limit = 20000;
  return v;
}

Outcome run_variant(const Schedule& dag, const Variant& v, bool verify_it) {
  Outcome o;
  o.variant = v;
  if (v.strategy == Strategy::exact) {
    ExactResult r = assign_exact(dag, {.analysis = v.analysis});
    o.schedule = std::move(r.schedule);
    o.exact = std::move(r.ranks);
  } else {
    o.schedule = assign_counters(dag, v.strategy, {.analysis = v.analysis});
  }
  o.ops = o.schedule.size();
  o.relays = o.schedule.relay_count();
  o.counters = o.schedule.counter_summary();
  if (verify_it) {
    o.report = verify(o.schedule, verify_options(o.schedule, v.analysis));
    o.verified = true;
  }
  return o;
}

// The closed form for this variant, compared with what the allocator produced.
void attach_estimate(Outcome& o, const BuildOptions& bo, const std::string& collective, const std::string& algorithm,
                     bool segmented) {
  if (o.variant.strategy == Strategy::exact ||
      (o.variant.strategy == Strategy::optimized && o.variant.analysis == Analysis::global))
    return;
  if (segmented && (o.variant.strategy == Strategy::naive || !estimate_holds_segmented(collective, algorithm, bo))) {
    o.estimate = "n/a";
    return;
  }
  const Estimate e = estimate_counters(collective, algorithm, bo, o.variant.strategy);
  o.estimate_matches = e.per_rank == o.counters.per_rank;
  o.estimate = fmt::format("{} / {}{}", e.max, e.total, o.estimate_matches ? "" : " (MISMATCH)");
}

std::string verdict(const VerifyReport& r) {
  if (r.ok())
    return fmt::format("safe+live ({}{})", to_string(r.analysis), r.exhaustive_complete ? ", exhaustive" : "");
  return "REJECTED";
}

std::string verdict(const Outcome& o) { return o.verified ? verdict(o.report) : "not run"; }

namespace {
std::string with_suffix(const std::string& path, const std::string& tag) {
  std::filesystem::path p(path);
  return (p.parent_path() / (p.stem().string() + "." + tag + p.extension().string())).string();
}
}  // namespace

void write_outputs(const Outcome& o, const std::string& json_path, const std::string& dot_path, bool tag_with_variant) {
  const std::string tag = o.variant.file_tag();
  if (!json_path.empty()) write_schedule_json(o.schedule, tag_with_variant ? with_suffix(json_path, tag) : json_path);
  if (!dot_path.empty()) write_schedule_dot(o.schedule, tag_with_variant ? with_suffix(dot_path, tag) : dot_path);
}

}  // namespace fabriclab::offload
