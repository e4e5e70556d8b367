#include "offload/exact.h"

#include <fmt/format.h>

#include <z3++.h>

#include <algorithm>
#include <limits>
#include <optional>

#include "offload/assignment_detail.h"

namespace fabriclab::offload {

bool ExactResult::all_proven() const {
  return std::all_of(ranks.begin(), ranks.end(), [](const ExactRank& r) { return r.proven_minimum; });
}

namespace {

// One form of a rank (its host_waits whole or split): a placement on fewer than `below`
// counters, found by counting K up from the clique bound, and the first K not refuted
// (`below` when every smaller K was).
struct FormResult {
  std::optional<RankAssignment> found;
  std::int32_t lower_bound = 0;
};

FormResult solve_form(const GroupedView& gv, std::int32_t below, const ExactOptions& opt) {
  const auto n = gv.groups.size();
  if (below <= 1) return {std::nullopt, below};
  const std::vector<Requirement> reqs = placement_requirements(gv);
  const std::int32_t from = opt.clique_bound ? clique_bound(n, reqs) : 1;  // every smaller K is refuted
  // z3's pseudo-Boolean constraints take int coefficients: a cntr_add of 2^31 or more
  // (possible in a file or program) leaves the rank with the bound alone.
  for (const auto& r : reqs)
    for (const auto& term : r.terms)
      if (term.second > std::numeric_limits<int>::max() || term.second < -std::numeric_limits<int>::max())
        return {std::nullopt, std::min(from, below)};
  z3::context ctx;
  for (std::int32_t k = from; k < below; ++k) {
    const auto K = static_cast<std::size_t>(k);
    z3::solver solver(ctx);
    z3::params params(ctx);
    params.set("rlimit", opt.rlimit_per_check);
    solver.set(params);
    // x[g][c]: group g on counter c. Symmetry: group g uses one of the first g+1 counters.
    std::vector<std::vector<z3::expr>> x(n);
    for (std::size_t g = 0; g < n; ++g) {
      z3::expr_vector row(ctx);
      for (std::size_t c = 0; c < std::min(K, g + 1); ++c) {
        x[g].push_back(ctx.bool_const(fmt::format("x_{}_{}", g, c).c_str()));
        row.push_back(x[g].back());
      }
      std::vector<int> ones(row.size(), 1);
      solver.add(z3::pbeq(row, ones.data(), 1));
    }
    for (const auto& r : reqs) {
      for (std::size_t c = 0; c < x[r.group].size(); ++c) {
        z3::expr_vector es(ctx);
        std::vector<int> coeffs;
        for (const auto& [g, coeff] : r.terms) {
          if (c >= x[g].size()) continue;
          es.push_back(x[g][c]);
          coeffs.push_back(static_cast<int>(coeff));
        }
        solver.add(z3::implies(x[r.group][c], z3::pbge(es, coeffs.data(), 1)));
      }
    }
    const z3::check_result res = solver.check();
    if (res == z3::unsat) continue;
    if (res == z3::unknown) return {std::nullopt, k};  // budget exhausted
    const z3::model model = solver.get_model();
    std::vector<std::int32_t> placement(n, -1);
    for (std::size_t g = 0; g < n; ++g)
      for (std::size_t c = 0; c < x[g].size(); ++c)
        if (model.eval(x[g][c], true).is_true()) placement[g] = static_cast<std::int32_t>(c);
    // Counters numbered by first use, so unused indices do not count.
    std::vector<std::int32_t> renumber(K, -1);
    std::int32_t used = 0;
    for (auto& c : placement) {
      if (renumber[static_cast<std::size_t>(c)] < 0) renumber[static_cast<std::size_t>(c)] = used++;
      c = renumber[static_cast<std::size_t>(c)];
    }
    return {assignment_from_placement(gv, placement), k};
  }
  return {std::nullopt, below};
}

// The optimized assignment is the upper bound and the fallback; each form then searches
// below the best so far, and the minimum is proven when both refute every smaller K.
RankAssignment solve_exact(const RankView& v0, const ExactOptions& opt) {
  RankAssignment best;
  if (opt.from_first_fit) {
    const GroupedView whole = group_view(v0);
    best = assignment_from_placement(whole, first_fit_placement(whole));
  } else {
    best = assign_optimized(v0);
  }
  const std::int32_t optimized = best.counters;
  std::int32_t lower_bound = best.counters;
  for (const bool split : {false, true}) {
    if (split && !has_split_waits(v0)) break;
    FormResult form = solve_form(group_view(v0, split), best.counters, opt);
    if (form.found) best = std::move(*form.found);
    lower_bound = std::min(lower_bound, form.lower_bound);
  }
  best.optimized = optimized;
  best.lower_bound = lower_bound;
  best.proven_minimum = best.counters == lower_bound;
  return best;
}

}  // namespace

ExactResult assign_exact(const Schedule& dag, const ExactOptions& opt) {
  check_assignable(dag);
  auto views = rank_views(dag);
  const auto sol = solve_per_rank(dag, views, opt.analysis, [&](const RankView& v) { return solve_exact(v, opt); });
  ExactResult r{emit_schedule(dag, views, sol, "exact"), {}};
  for (const auto& x : sol) r.ranks.push_back({x.counters, x.optimized, x.lower_bound, x.proven_minimum});
  return r;
}

}  // namespace fabriclab::offload
