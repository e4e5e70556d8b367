#include "offload/advice.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace fabriclab::offload {

std::string_view to_string(Advice::Decision d) {
  switch (d) {
    case Advice::Decision::offload: return "offload";
    case Advice::Decision::wait: return "wait";
    case Advice::Decision::software: return "software";
  }
  return "?";
}

namespace {

// Counters and triggered-op slots (puts, gets, atomics, counter adds the NIC holds until
// they fire) each rank needs.
struct Need {
  std::vector<std::int64_t> counters, slots;
};

Need need_of(const Schedule& s) {
  Need n;
  n.counters = s.counter_summary().per_rank;
  n.slots.assign(static_cast<std::size_t>(s.ranks()), 0);
  for (const Op& o : s.ops())
    if (is_data_op(o.kind) || o.kind == OpKind::cntr_add) ++n.slots[static_cast<std::size_t>(o.rank)];
  return n;
}

std::string counters_text(std::int64_t n) {
  return fmt::format("{} counter{}", n, n == 1 ? "" : "s");
}

std::int64_t max_of(const std::vector<std::int64_t>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

}  // namespace

std::vector<Advice> advise(const NicBudget& b, const std::vector<CollectiveRequest>& reqs,
                           Strategy strategy) {
  if (b.counters < 0) throw InputError("advise: free counters must be >= 0");
  if (b.slots < 0) throw InputError("advise: free slots must be >= 0");
  if (reqs.empty()) throw InputError("advise: no collectives to start");
  Rank nics = 0;
  for (const auto& r : reqs) nics = std::max(nics, r.options.ranks);
  std::vector<std::int64_t> free_counters(static_cast<std::size_t>(nics), b.counters);
  std::vector<std::int64_t> free_slots(static_cast<std::size_t>(nics), b.slots);
  std::vector<Need> held;  // per request: what it holds while offloaded (empty otherwise)
  std::vector<Advice> out;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const auto& q = reqs[i];
    const Schedule dag = build_schedule(q.collective, q.algorithm, q.options);
    const Need need = need_of(assign_counters(dag, strategy));
    Advice a{};
    a.counters_max = max_of(need.counters);
    a.slots_max = max_of(need.slots);
    a.counters_naive_max =
        strategy == Strategy::naive ? a.counters_max
                                    : assign_counters(dag, Strategy::naive).counter_summary().max;
    bool fits_now = true, fits_ever = true;
    for (Rank r = 0; r < q.options.ranks; ++r) {
      const auto k = static_cast<std::size_t>(r);
      fits_now &= need.counters[k] <= free_counters[k] && need.slots[k] <= free_slots[k];
      fits_ever &= need.counters[k] <= b.counters && need.slots[k] <= b.slots;
    }
    if (!fits_ever) {
      a.decision = Advice::Decision::software;
      a.reason = a.counters_max > b.counters
                     ? fmt::format("needs {} on a NIC that has {}", counters_text(a.counters_max), b.counters)
                     : fmt::format("needs {} triggered-op slots on a NIC that has {}", a.slots_max, b.slots);
    } else if (fits_now) {
      a.decision = Advice::Decision::offload;
      for (Rank r = 0; r < q.options.ranks; ++r) {
        free_counters[static_cast<std::size_t>(r)] -= need.counters[static_cast<std::size_t>(r)];
        free_slots[static_cast<std::size_t>(r)] -= need.slots[static_cast<std::size_t>(r)];
      }
      held.resize(i + 1);
      held[i] = need;
    } else {
      // Which earlier offloaded collectives must finish first: release them in issue
      // order until this one fits on every NIC.
      std::vector<std::int64_t> fc = free_counters, fs = free_slots;
      for (std::size_t j = 0; j < held.size(); ++j) {
        if (held[j].counters.empty()) continue;
        for (std::size_t r = 0; r < held[j].counters.size(); ++r) {
          fc[r] += held[j].counters[r];
          fs[r] += held[j].slots[r];
        }
        a.waits_for.push_back(j);
        bool fits = true;
        for (Rank r = 0; r < q.options.ranks; ++r)
          fits &= need.counters[static_cast<std::size_t>(r)] <= fc[static_cast<std::size_t>(r)] &&
                  need.slots[static_cast<std::size_t>(r)] <= fs[static_cast<std::size_t>(r)];
        if (fits) break;
      }
      if (b.allow_wait) {
        a.decision = Advice::Decision::wait;
        std::string ids;
        for (auto j : a.waits_for) ids += (ids.empty() ? "#" : ", #") + std::to_string(j + 1);
        a.reason = fmt::format("needs {} and {} slots per NIC; fits once {} complete{}",
                               counters_text(a.counters_max), a.slots_max, ids,
                               a.waits_for.size() == 1 ? "s" : "");
      } else {
        a.decision = Advice::Decision::software;
        a.reason = fmt::format("needs {} per NIC, fewer are free now (waiting disabled)",
                               counters_text(a.counters_max));
      }
    }
    if (a.decision == Advice::Decision::offload)
      a.reason = fmt::format("fits: {} and {} slots per NIC", counters_text(a.counters_max), a.slots_max);
    const bool short_of_counters = a.counters_max > b.counters || a.decision == Advice::Decision::wait;
    if (a.decision != Advice::Decision::offload && short_of_counters &&
        strategy == Strategy::optimized && a.counters_naive_max > a.counters_max)
      a.reason += fmt::format(" (naive would need {})", a.counters_naive_max);
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace fabriclab::offload
