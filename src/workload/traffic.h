// Traffic: the flows a scenario runs, from a pattern or a file.
//   incast       `incast_senders` hosts (the lowest-numbered ones other than the
//                receiver) each send `bytes` to `incast_receiver`
//   permutation  every host sends `bytes` to one other host and receives from one: a
//                random cyclic permutation (Sattolo's algorithm, no host sends to itself)
//                drawn from the run's seed
//   all_to_all   every host sends `bytes` to every other host
//   none         no flows (a scenario of collectives only)
//   load         the [[load]] entries overlaid: flows of sizes from a distribution at
//                Poisson arrivals, incast bursts (workload/load.h)
//   flows        a CSV file with the header `src,dst,bytes,start,priority,qps` (sizes and
//                times with units: "1MB", "10us"), and optionally a last column `dport`
//                (the flow's label in fct.txt, FlowSpec::dport); errors name the file and line
//   training     data-parallel training iterations over every host (a GPU each): per
//                iteration, a distribution phase (each GPU i receives `distribution_bytes`
//                from GPU (i + n/2) mod n: elephants across the fabric), then, `compute`
//                after a GPU has its data, a ring allreduce of `bytes` -- 2(n-1) steps
//                in which GPU i sends a chunk of bytes/n to GPU i+1 once it has received
//                the previous step's chunk from GPU i-1 and sent its own. An iteration's
//                distribution to GPU i waits for the last allreduce step into GPU i.
//                With `training.algorithm` set to one of the planner's allreduce
//                algorithms, only the distribution flows are made here -- iteration
//                t > 0's held (start = never) -- and the allreduce runs as an offloaded
//                collective (scenario/fabric/collectives.h), which starts them; with
//                `training.alltoall_bytes`, an all-to-all (an expert exchange, block
//                per destination) follows each allreduce, and the next distribution
//                waits for it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/params.h"
#include "core/units.h"
#include "fabric/flows.h"

namespace fabriclab::workload {

enum class Pattern : std::uint8_t { incast, permutation, all_to_all, flows, training, none, load };
inline constexpr params::EnumNames<Pattern, 7> kPatternNames{{{Pattern::incast, "incast"},
                                                              {Pattern::permutation, "permutation"},
                                                              {Pattern::all_to_all, "all_to_all"},
                                                              {Pattern::flows, "flows"},
                                                              {Pattern::training, "training"},
                                                              {Pattern::none, "none"},
                                                              {Pattern::load, "load"}}};

struct TrafficSpec {
  Pattern pattern = Pattern::incast;
  Bytes bytes = Bytes::from_count(1'000'000);
  Time start;
  std::uint8_t priority = 3;
  std::uint32_t qps_per_flow = 1;
  std::uint32_t incast_receiver = 0;
  std::uint32_t incast_senders = 0;  // 0: every other host
  std::string flows_file;
  std::uint32_t iterations = 2;              // training
  std::string training_algorithm = "flows";  // "flows": the ring of flows; else the planner's allreduce
  Bytes alltoall_bytes;                      // > 0 (with a planner algorithm): an all-to-all after the allreduce
  std::string alltoall_algorithm = "pairwise";
  // With a planner algorithm: the allreduce as this many buckets of bytes / buckets, all
  // issued when the compute ends (a framework's gradient buckets), and what a bucket does
  // when its NIC's counters are short (the NIC model's policies: stall, fallback, advise).
  std::uint32_t buckets = 1;
  std::string training_policy = "stall";
  Bytes distribution_bytes = Bytes::from_count(8'000'000);
  Time compute;
  // Flows that start before this are left out of the slowdown statistics (they still run).
  Time warmup;
};

// Where each training flow sits in make_flows' list, for n GPUs: iteration t's
// distribution flow into GPU i, and its allreduce step k flow out of GPU i.
struct TrainingLayout {
  std::uint32_t gpus = 0, iterations = 0;
  bool distribution = true;  // false when distribution_bytes is 0
  std::uint32_t steps() const { return 2 * (gpus - 1); }
  std::uint32_t per_iteration() const { return (distribution ? gpus : 0) + steps() * gpus; }
  std::uint32_t dist(std::uint32_t t, std::uint32_t i) const { return t * per_iteration() + i; }
  std::uint32_t step(std::uint32_t t, std::uint32_t k, std::uint32_t i) const {
    return t * per_iteration() + (distribution ? gpus : 0) + k * gpus + i;
  }
};
TrainingLayout training_layout(const TrafficSpec& t, std::uint32_t hosts);
// True when the training pattern's allreduce runs on the NIC engine (training.algorithm
// names a planner algorithm): make_flows gives only the distribution flows, GPU i's of
// iteration t at t * GPUs + i.
bool training_on_engine(const TrafficSpec& t);

Pattern parse_pattern(const std::string& name);  // throws InputError
std::vector<fabric::FlowSpec> make_flows(const TrafficSpec& t, std::uint32_t hosts, std::uint64_t seed);
std::vector<fabric::FlowSpec> read_flows_csv(const std::string& path, std::uint32_t hosts);
// A host column of a table ("3" or "h3", below `hosts`); InputError "WHERE: column
// COLUMN: expected a host 0..N-1 (or h0..hN-1), got '...'".
std::uint32_t parse_host(const std::string& text, const std::string& where, const char* column, std::uint32_t hosts);

}  // namespace fabriclab::workload
