#include "offload/exact.h"

#include <fmt/format.h>

#include <z3++.h>

#include <algorithm>

#include "offload/assignment_detail.h"

namespace fabriclab::offload {

bool ExactResult::all_proven() const {
  return std::all_of(ranks.begin(), ranks.end(), [](const ExactRank& r) { return r.proven_minimum; });
}

namespace {

// One (op, parent) safety requirement: the sum over groups on the op's counter of
// coefficient[g] must be >= 1.
struct Requirement {
  std::size_t group;                               // the group whose counter triggers the op
  std::vector<std::pair<std::size_t, int>> terms;  // (group, slack contribution), non-zero
};

RankAssignment solve_exact(const RankView& v0, unsigned rlimit) {
  const GroupedView gv = group_view(v0);
  const RankView& v = gv.view;
  const auto m = static_cast<std::size_t>(v.size());
  const auto n = gv.groups.size();
  RankAssignment best = assign_optimized(v0);  // the upper bound, and the fallback
  best.first_fit = best.counters;
  best.lower_bound = n == 0 ? 0 : 1;
  best.proven_minimum = best.counters <= best.lower_bound;
  if (best.proven_minimum) return best;

  std::vector<DynBitset> sets(n, DynBitset(m));
  for (std::size_t g = 0; g < n; ++g)
    for (auto x : gv.groups[g]) sets[g].set(static_cast<std::size_t>(x));
  std::vector<Requirement> reqs;
  for (std::size_t t = 0; t < n; ++t)
    for (auto o : gv.triggered[t])
      for (auto p : v.parents[static_cast<std::size_t>(o)]) {
        Requirement r{t, {}};
        for (std::size_t g = 0; g < n; ++g)
          if (const auto c = pair_slack(v, o, p, sets[g]); c != 0) r.terms.emplace_back(g, static_cast<int>(c));
        reqs.push_back(std::move(r));
      }

  z3::context ctx;
  for (std::int32_t k = 1; k < best.counters; ++k) {
    const auto K = static_cast<std::size_t>(k);
    z3::solver solver(ctx);
    z3::params params(ctx);
    params.set("rlimit", rlimit);
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
          coeffs.push_back(coeff);
        }
        solver.add(z3::implies(x[r.group][c], z3::pbge(es, coeffs.data(), 1)));
      }
    }
    const z3::check_result res = solver.check();
    if (res == z3::unsat) {
      best.lower_bound = k + 1;
      continue;
    }
    if (res == z3::unknown) return best;  // budget exhausted: lower_bound stands
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
    RankAssignment a = assignment_from_placement(gv, placement);
    a.first_fit = best.first_fit;
    a.lower_bound = k;
    a.proven_minimum = a.counters == k;
    return a;
  }
  best.proven_minimum = true;  // every smaller K was refuted
  return best;
}

}  // namespace

ExactResult assign_exact(const Schedule& dag, const ExactOptions& opt) {
  check_assignable(dag);
  auto views = rank_views(dag);
  const auto sol = solve_per_rank(dag, views, opt.analysis,
                                  [&](const RankView& v) { return solve_exact(v, opt.rlimit_per_check); });
  ExactResult r{emit_schedule(dag, views, sol, "exact"), {}};
  for (const auto& x : sol) r.ranks.push_back({x.counters, x.first_fit, x.lower_bound, x.proven_minimum});
  return r;
}

}  // namespace fabriclab::offload
