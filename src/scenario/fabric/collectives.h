// Collectives in a fabric scenario: `[[collective]]` entries (each key declared once, in
// collective_table()), built by the planner (or read from a schedule file), placed on
// hosts and run by the NIC engine (nicengine/engine.h) over the simulated fabric next to
// the scenario's other traffic. Their outputs: collectives.csv and a block of
// summary.json.
//
//   [[collective]]
//   collective = "allreduce"
//   algorithm = "ring"
//   bytes = "1MiB"
//   ranks = "all"          # every host; or "16" (placed by `placement`), "0-15", "0,4,8,12"
//   iterations = 8         # instances: a stream
//   in_flight = 2          # at most two at once (instance i waits for instance i-2)
//   mean_gap = "50us"      # issued at Poisson times from `start` (0: as soon as allowed)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/params.h"
#include "core/units.h"
#include "fabric/network.h"
#include "fabric/topology.h"
#include "nicengine/engine.h"
#include "nicmodel/model.h"
#include "offload/assignment.h"
#include "offload/collectives.h"
#include "offload/options.h"
#include "workload/traffic.h"

namespace fabriclab::scenario {

// How a count of ranks is placed on hosts: hosts 0..N-1 (linear), N distinct hosts drawn
// from the run's seed (random), or round-robin over the leaves -- the first host of every
// leaf, then the second, ... (one_per_leaf: leaf_spine and fat_tree; on a fat-tree a
// leaf is an edge switch).
enum class Placement : std::uint8_t { linear, random, one_per_leaf };
inline constexpr params::EnumNames<Placement, 3> kPlacementNames{
    {{Placement::linear, "linear"}, {Placement::random, "random"}, {Placement::one_per_leaf, "one_per_leaf"}}};

struct CollectiveSpec {
  std::string name;  // "" = "c<entry>"
  std::string collective = "allreduce";
  std::string algorithm = "ring";
  std::string schedule;  // a schedule file (section 8, assigned) instead
  Bytes bytes = Bytes::from_count(1 << 20);
  offload::BuildOptions shape;  // root, radix, datatype, ordered_channels, uncounted_sends (ranks, bytes: above)
  std::string ranks = "all";
  Placement placement = Placement::linear;
  offload::Strategy strategy = offload::kDefaultStrategy;
  nicmodel::Policy policy = nicmodel::Policy::stall;
  Time start;
  std::uint32_t iterations = 1;  // instances
  std::uint32_t in_flight = 1;   // instance i is issued once instance i - in_flight has completed
  Time mean_gap;                 // > 0: instances issued at Poisson times from `start`
};
const params::Table<CollectiveSpec>& collective_table();

// The collective traffic's own settings (keys "collectives.*").
struct CollectivesConfig {
  std::uint8_t priority = 3;  // the 802.1p class of their messages
};
const params::Table<CollectivesConfig>& collectives_config_table();

// One row of collectives.csv.
struct CollectiveRow {
  std::string name, collective, algorithm, strategy;
  std::uint32_t iteration = 0;
  std::int32_t ranks = 0;
  std::int64_t bytes = 0;
  std::int64_t max_counters_per_nic = 0;  // what its assignment holds on one NIC
  nicengine::CollectiveResult result;
};

// What the NICs saw, over every NIC: the most counters one held at once, and the counter
// cache's hits and misses.
struct CollectiveNics {
  std::int64_t peak_counters_on_a_nic = 0;
  std::uint64_t cache_hits = 0, cache_misses = 0;
};

// The scenario's collectives, attached to `net` (before its run). Every collective that
// cannot start offloaded follows offload::decide(): nothing starts ahead of one already
// waiting for counters, so under `fallback` a collective issued behind a waiting one runs
// in software even if its own NICs have room.
class ScenarioCollectives final : private fabric::FlowEvents {
 public:
  // `origin(i)`: where entry i was declared ("file.toml:12:1"), for errors.
  ScenarioCollectives(const std::vector<CollectiveSpec>& specs, const CollectivesConfig& cfg,
                      const nicmodel::NicParams& nic, const fabric::TopologySpec& topo, std::uint64_t seed,
                      fabric::Network& net, const std::function<std::string(std::size_t)>& origin);
  // The training pattern's allreduce on the engine (workload::training_on_engine), after
  // the entries: per iteration, its buckets (training.buckets held collectives over
  // every host, each of bytes / buckets) issued together `compute` after the last of its
  // iteration's distribution flows has finished (without a distribution: after the
  // iteration before, or at the start), under training.policy; then the all-to-all, if
  // any, once every bucket is done; the iteration's last completion starts the next
  // iteration's distribution flows. Rows named "allreduce" (one bucket) or "allreduce.B",
  // and "alltoall".
  void add_training(const workload::TrafficSpec& t, const nicmodel::NicParams& nic, fabric::Network& net);
  // After the run.
  std::vector<CollectiveRow> rows() const;
  CollectiveNics nics() const;
  // ops.csv (with trace_ops before the run): one row per operation of every instance
  // that started, by instance and schedule id.
  void trace_ops() { engine_->trace_ops(); }
  std::string ops_csv() const;

 private:
  void flow_finished(std::uint32_t flow) override;
  void training_done(std::uint32_t job, Time now);
  void issue_buckets(std::uint32_t iteration, Time at);

  std::unique_ptr<nicengine::Engine> engine_;
  std::vector<CollectiveRow> rows_;  // without results
  struct Training {
    fabric::Network* net = nullptr;
    std::uint32_t first = 0, iterations = 0, gpus = 0;  // its jobs: [first, first + per * iterations)
    std::uint32_t per = 1;                              // jobs per iteration: the buckets (and the all-to-all)
    std::uint32_t buckets = 1;                          // the allreduce's
    bool distribution = false;
    Time compute;
    std::vector<std::uint32_t> left;  // per iteration: distribution flows not finished
    std::vector<std::uint32_t> done;  // per iteration: its jobs done
  } training_;
};

// The hosts of entry `entry`'s `ranks` text ("all", "N", "A-B", "a,b,...") placed by
// `placement` (random: drawn from the run's seed and the entry's number); `what` names
// the entry in errors.
std::vector<std::int32_t> place_ranks(const std::string& ranks, Placement placement, const fabric::TopologySpec& topo,
                                      std::uint32_t hosts, std::uint64_t seed, std::size_t entry,
                                      const std::string& what);

// nccl-tests' bus bandwidth factor for n ranks (allreduce 2(n-1)/n; allgather,
// reduce_scatter and alltoall (n-1)/n; bcast and reduce 1; barrier 0: no bandwidth).
double busbw_factor(const std::string& collective, std::int32_t n);
// The size nccl-tests divides by the time for algbw: the whole vector, except that the
// planner's `bytes` is a block per rank (allgather) or per destination (alltoall), whose
// nccl-tests size is n blocks.
std::int64_t nccl_size(const std::string& collective, std::int64_t bytes, std::int32_t n);
// A collective done: nccl-tests' algbw, its nccl_size over its completion, in GB/s (10^9
// bytes/s, nccl-tests' unit; collectives.csv and collbench use it).
double algbw_GBps(const CollectiveRow& r);

std::string collectives_csv(const std::vector<CollectiveRow>& rows);
nlohmann::ordered_json collectives_summary(const std::vector<CollectiveRow>& rows, const CollectiveNics& nics);

}  // namespace fabriclab::scenario
