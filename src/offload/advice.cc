#include "offload/advice.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "core/error.h"
#include "offload/strategy_runs.h"

namespace fabriclab::offload {

std::string_view to_string(Decision d) { return params::name_of(kDecisionNames, d); }

std::vector<NicResources> needs_per_rank(const Schedule& s) {
  const auto counters = s.counter_summary().per_rank;
  std::vector<NicResources> need(static_cast<std::size_t>(s.ranks()));
  for (std::size_t r = 0; r < need.size(); ++r) need[r].counters = counters[r];
  for (const Op& o : s.ops())
    if (is_data_op(o.kind) || o.kind == OpKind::cntr_add) ++need[static_cast<std::size_t>(o.rank)].slots;
  return need;
}

namespace {

bool fits(std::span<const NicResources> need, std::span<const NicResources> have) {
  for (std::size_t i = 0; i < need.size(); ++i)
    if (need[i].counters > have[i].counters || need[i].slots > have[i].slots) return false;
  return true;
}

// What is short where need exceeds have(i): the first such NIC, and whether counters
// and slots are short on any of them.
template <class Have>
void find_short(std::span<const NicResources> need, Have have, OffloadDecision& d) {
  bool first = true;
  for (std::size_t i = 0; i < need.size(); ++i) {
    const NicResources h = have(i);
    const bool c = need[i].counters > h.counters, s = need[i].slots > h.slots;
    if ((c || s) && first) d.nic = i, first = false;
    d.counters_short |= c;
    d.slots_short |= s;
  }
}

}  // namespace

OffloadDecision decide(std::span<const NicResources> need, std::span<const NicResources> free, NicResources idle,
                       WhenShort when_short, bool earlier_waiting) {
  if (need.size() != free.size())
    throw std::invalid_argument(
        fmt::format("decide: what is needed on {} NICs, what is free on {}", need.size(), free.size()));
  OffloadDecision d;
  bool fits_idle = true;
  for (const NicResources& n : need) fits_idle &= n.counters <= idle.counters && n.slots <= idle.slots;
  if (!fits_idle) {
    d.why = OffloadDecision::Why::never_fits;
    find_short(
        need, [&](std::size_t) { return idle; }, d);
    d.decision = when_short.software ? Decision::software : Decision::refuse;
    return d;
  }
  if (fits(need, free)) {
    if (!earlier_waiting) return d;  // offload: it fits
    d.why = OffloadDecision::Why::behind_waiting;
  } else {
    d.why = OffloadDecision::Why::short_now;
    find_short(
        need, [&](std::size_t i) { return free[i]; }, d);
  }
  d.decision = when_short.wait ? Decision::wait : when_short.software ? Decision::software : Decision::refuse;
  return d;
}

namespace {

std::string counters_text(std::int64_t n) { return fmt::format("{} counter{}", n, n == 1 ? "" : "s"); }

}  // namespace

std::vector<Advice> advise(const NicBudget& b, const std::vector<CollectiveRequest>& reqs, Strategy strategy,
                           std::optional<Analysis> analysis) {
  if (b.counters < 0) throw InputError("advise: free counters must be >= 0");
  if (b.slots < 0) throw InputError("advise: free slots must be >= 0");
  if (reqs.empty()) throw InputError("advise: no collectives to start");
  const NicResources idle{b.counters, b.slots};
  Rank nics = 0;
  for (const auto& r : reqs) nics = std::max(nics, r.options.ranks);
  std::vector<NicResources> free(static_cast<std::size_t>(nics), idle);
  // Per request: what it holds while offloaded (empty otherwise).
  std::vector<std::vector<NicResources>> held;
  std::vector<Advice> out;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const auto& q = reqs[i];
    const Schedule dag = build_schedule(q.collective, q.algorithm, q.options);
    Advice a{};
    a.analysis = strategy == Strategy::naive ? Analysis::local : analysis.value_or(best_analysis(dag));
    const std::vector<NicResources> need = needs_per_rank(run_variant(dag, {strategy, a.analysis}, false).schedule);
    const auto spanned = std::span<const NicResources>(free).first(need.size());
    for (const NicResources& n : need) {
      a.counters_max = std::max(a.counters_max, n.counters);
      a.slots_max = std::max(a.slots_max, n.slots);
    }
    a.counters_naive_max = strategy == Strategy::naive ? a.counters_max
                                                       : assign_counters(dag, Strategy::naive).counter_summary().max;
    const OffloadDecision d = decide(need, spanned, idle, {.wait = b.allow_wait, .software = true});
    a.decision = d.decision;
    using Why = OffloadDecision::Why;
    if (d.why == Why::fits) {
      for (std::size_t r = 0; r < need.size(); ++r) {
        free[r].counters -= need[r].counters;
        free[r].slots -= need[r].slots;
      }
      held.resize(i + 1);
      held[i] = need;
      a.reason = fmt::format("fits: {} and {} slots per NIC", counters_text(a.counters_max), a.slots_max);
    } else if (d.why == Why::never_fits) {
      a.reason = d.counters_short
                     ? fmt::format("needs {} on a NIC that has {}", counters_text(a.counters_max), b.counters)
                     : fmt::format("needs {} triggered-op slots on a NIC that has {}", a.slots_max, b.slots);
    } else {
      // Short now (advise() never asks to keep issue order). Which earlier offloaded
      // collectives must finish first: release them in issue order until this one fits
      // on every NIC.
      std::vector<NicResources> after(spanned.begin(), spanned.end());
      for (std::size_t j = 0; j < held.size(); ++j) {
        if (held[j].empty()) continue;
        for (std::size_t r = 0; r < after.size() && r < held[j].size(); ++r) {
          after[r].counters += held[j][r].counters;
          after[r].slots += held[j][r].slots;
        }
        a.waits_for.push_back(j);
        if (fits(need, after)) break;
      }
      if (d.decision == Decision::wait) {
        std::string ids;
        for (auto j : a.waits_for) ids += (ids.empty() ? "#" : ", #") + std::to_string(j + 1);
        a.reason = fmt::format("needs {} and {} slots per NIC; fits once {} complete{}", counters_text(a.counters_max),
                               a.slots_max, ids, a.waits_for.size() == 1 ? "s" : "");
      } else {
        a.reason = fmt::format("needs {} per NIC, fewer are free now (waiting disabled)",
                               counters_text(a.counters_max));
      }
    }
    // Where counters are what is short (or may be, while waiting), say what the naive
    // assignment would need.
    const bool short_of_counters = d.why == Why::never_fits ? d.counters_short : d.decision == Decision::wait;
    if (d.decision != Decision::offload && short_of_counters && strategy == Strategy::optimized &&
        a.counters_naive_max > a.counters_max)
      a.reason += fmt::format(" (naive would need {})", a.counters_naive_max);
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace fabriclab::offload
