#include "workload/params.h"

namespace fabriclab::workload {

const params::Table<TrafficSpec>& traffic_table() {
  static const auto table = [] {
    using T = TrafficSpec;
    params::Table<T> t;
    t.choice("pattern", &T::pattern, kPatternNames, "the flows")
        .bytes("bytes", &T::bytes, "bytes per flow (patterns)", "1B")
        .time("start", &T::start, "start of every flow (patterns)")
        .integer("priority", &T::priority, "priority (802.1p) of every flow (patterns)", 0, 7)
        .integer("qps_per_flow", &T::qps_per_flow, "QPs per flow; the bytes are split among them", 1, 65536)
        .integer("training.iterations", &T::iterations, "training: data-parallel iterations", 1, 1000)
        .text("training.algorithm", &T::training_algorithm,
              "training: \"flows\" (the allreduce as a ring of flows) or a planner allreduce algorithm (ring, "
              "recursive_doubling, rabenseifner, ...) run offloaded by the NICs ([[collective]]'s engine)")
        .bytes("training.alltoall_bytes", &T::alltoall_bytes,
               "training, with a planner algorithm: an all-to-all after each allreduce (mixture-of-experts exchange), "
               "bytes per destination (0B = none)")
        .text("training.alltoall_algorithm", &T::alltoall_algorithm,
              "training: the all-to-all's algorithm (pairwise, all_at_once)")
        .integer("training.buckets", &T::buckets,
                 "training, with a planner algorithm: the allreduce as this many equal buckets, issued at once "
                 "(gradient buckets); traffic.bytes must split into whole 8-byte elements per bucket",
                 1, 1024)
        .one_of("training.policy", &T::training_policy, {"stall", "fallback", "advise"},
                "training, with a planner algorithm: a bucket whose counters are short waits for them (stall), runs "
                "in software (fallback), or waits unless it can never fit (advise)")
        .bytes("training.distribution_bytes", &T::distribution_bytes,
               "training: bytes each GPU receives before computing (0B = no distribution phase)")
        .time("training.compute", &T::compute, "training: compute time between a GPU's data and its allreduce", "0ps",
              "1s")
        .time("warmup", &T::warmup,
              "flows that start before this are left out of the slowdown statistics (slowdown.csv, summary.json); "
              "they still run")
        .integer("incast.receiver", &T::incast_receiver, "incast: the receiving host")
        .integer("incast.senders", &T::incast_senders, "incast: senders (0 = every other host)")
        .text("flows_file", &T::flows_file,
              "flows: CSV file src,dst,bytes,start,priority,qps[,dport] (relative to the scenario)");
    return t;
  }();
  return table;
}

}  // namespace fabriclab::workload
