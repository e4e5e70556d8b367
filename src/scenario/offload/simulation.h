// Running the timed NIC model (nicmodel/model.h) on a workload: the schedules built and
// counter-assigned once per shape and shared by every run, and one run of the model.
//
//   ScheduleCache cache;
//   Simulated sim = simulate(params, nicmodel::Policy::stall, offload::Strategy::optimized, specs, cache);
#pragma once

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "nicmodel/model.h"
#include "offload/assignment.h"
#include "scenario/offload/workload.h"

namespace fabriclab::scenario::offload_internal {

// Schedules built and assigned once per shape, shared by every run that uses them.
class ScheduleCache {
 public:
  std::shared_ptr<const offload::Schedule> get(const Spec& s, offload::Strategy strategy) {
    auto it = built_.find(key(s, strategy));
    if (it == built_.end()) it = built_.emplace(key(s, strategy), build(s, strategy)).first;
    return it->second;
  }
  // The schedule checked and flattened for the NIC model, once per schedule.
  std::shared_ptr<const nicmodel::PreparedSchedule> prepared(const Spec& s, offload::Strategy strategy) {
    const auto sched = get(s, strategy);
    auto& p = prepared_[sched.get()];
    if (!p) p = nicmodel::prepare(sched);
    return p;
  }

 private:
  using Key = std::tuple<std::string, std::string, int, std::int64_t, int>;
  static Key key(const Spec& s, offload::Strategy strategy) {
    return {s.collective, s.algorithm, s.ranks, s.bytes, static_cast<int>(strategy)};
  }
  static std::shared_ptr<const offload::Schedule> build(const Spec& s, offload::Strategy strategy) {
    offload::BuildOptions b;
    b.ranks = s.ranks;
    b.bytes = s.bytes;
    return std::make_shared<const offload::Schedule>(
        offload::assign_counters(offload::build_schedule(s.collective, s.algorithm, b), strategy));
  }
  std::map<Key, std::shared_ptr<const offload::Schedule>> built_;
  std::map<const offload::Schedule*, std::shared_ptr<const nicmodel::PreparedSchedule>> prepared_;
};

struct Simulated {
  std::unique_ptr<nicmodel::OffloadModel> model;
  std::vector<nicmodel::JobResult> results;
  int nics = 0;
};

// One run of the model: rank r of every collective on NIC r.
Simulated simulate(const nicmodel::NicParams& p, nicmodel::Policy policy, offload::Strategy strategy,
                   const std::vector<Spec>& specs, ScheduleCache& cache);

}  // namespace fabriclab::scenario::offload_internal
