#include "scenario/offload/simulation.h"

#include <algorithm>

#include "offload/collectives.h"

namespace fabriclab::scenario::offload_internal {

Simulated simulate(const nicmodel::NicParams& p, nicmodel::Policy policy, offload::Strategy strategy,
                   const std::vector<Spec>& specs, ScheduleCache& cache) {
  Simulated out;
  for (const Spec& s : specs) out.nics = std::max(out.nics, s.ranks);
  out.model = std::make_unique<nicmodel::OffloadModel>(p, out.nics, policy);
  for (const Spec& s : specs) {
    std::vector<std::int32_t> nic_of_rank(static_cast<std::size_t>(s.ranks));
    for (int r = 0; r < s.ranks; ++r) nic_of_rank[static_cast<std::size_t>(r)] = r;
    out.model->add({.name = s.name,
                    .schedule = cache.get(s, strategy),
                    .prepared = cache.prepared(s, strategy),
                    .nic_of_rank = std::move(nic_of_rank),
                    .issue = s.issue,
                    .after = s.after});
  }
  out.results = out.model->run();
  return out;
}

}  // namespace fabriclab::scenario::offload_internal
