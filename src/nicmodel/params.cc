#include "nicmodel/params.h"

namespace fabriclab::nicmodel {

const params::Table<NicParams>& nic_resources_table() {
  static const auto table = [] {
    using P = NicParams;
    params::Table<P> t;
    t.integer("nic.counters", &P::counters, "hardware counters per NIC", 1, 1'000'000)
        .integer("nic.slots", &P::slots, "triggered-operation slots per NIC", 1, 100'000'000)
        .integer("nic.cache_entries", &P::cache_entries, "counter cache entries per NIC (LRU)", 1, 1'000'000)
        .time("nic.cache_miss", &P::cache_miss, "added to an operation for each counter it touches that is not cached",
              "0ps", "1s")
        .time("nic.op_time", &P::op_time, "NIC time per operation (a fired triggered op, an arrival, a counter add)",
              "0ps", "1s")
        .time("host.op_time", &P::host_op_time, "software path: host time to post one operation", "0ps", "1s")
        .time("host.poll", &P::host_poll, "the host checks its collectives' completion this often", "1ps", "1s");
    return t;
  }();
  return table;
}

const params::Table<NicParams>& nic_params_table() {
  static const auto table = [] {
    using P = NicParams;
    params::Table<P> t;
    for (const auto& f : nic_resources_table().fields()) t.custom(f.spec, f.set, f.get, f.preset);
    t.time("network.latency", &P::latency, "message latency", "0ps", "1s")
        .rate("network.bandwidth", &P::bandwidth, "message bandwidth (time = latency + bytes / bandwidth)", "1Mbps");
    return t;
  }();
  return table;
}

}  // namespace fabriclab::nicmodel
