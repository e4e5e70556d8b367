// Port and flow counts over a span of the run (output.window = "FROM..TO"), so that a
// steady state needs no second run: the state read exactly at FROM and at TO (every event
// before the instant counted, none at or after it: Network::snapshot_at) and subtracted.
//   ports_window.csv  node,port and PortCounters' fields over the span (max_queue_bytes:
//                     the most a switch port's queues held in it, from what they held
//                     at FROM)
//   flows_window.csv  flow_id,src,dst,delivered_bytes,goodput_gbps: payload placed in the
//                     span, over its length
// A run that ends before TO is read at its end (the span is cut there and says so); one
// that ends before FROM has an empty span. The same however the run is split (the
// network's snapshots are; over several processes, on rank 0).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fabric/counters.h"
#include "fabric/network.h"

namespace fabriclab::scenario {

struct TimeSpan {
  Time from, to;
};
// "FROM..TO" with two times, FROM before TO; InputError saying what was expected.
TimeSpan parse_time_span(const std::string& text);

class WindowCounts {
 public:
  // Registers its two instants with `net` (before the run).
  WindowCounts(fabric::Network& net, TimeSpan span);

  // The span as counted, after the run (which ended at `end`).
  struct Result {
    Time from, to;                            // FROM and TO, or the run's end where it came first
    bool cut = false;                         // the run ended before TO
    std::vector<fabric::PortCounters> ports;  // every node's ports, in node order
    std::vector<std::uint64_t> delivered;     // per flow
  };
  Result result(Time end) const;  // (where the network holds_results())
  // ports_window.csv and flows_window.csv.
  void write(const std::filesystem::path& dir, const Result& r) const;
  // summary.json's "window" block.
  static nlohmann::ordered_json summary(const Result& r);

 private:
  fabric::Network& net_;
  TimeSpan span_;
};

}  // namespace fabriclab::scenario
