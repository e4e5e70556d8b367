// FCT slowdown: each flow's completion time over its ideal one (fabric::Network::ideal_fct:
// the flow alone on the idle network), and its statistics per flow-size bucket -- the
// figure every congestion-control paper since DCQCN shows.
//
// Counted: the flows that finished and started at or after traffic.warmup. Buckets:
// output.slowdown_buckets's upper edges ("10KB,100KB,1MB": (0, 10KB], (10KB, 100KB],
// (100KB, 1MB], above), or by default twenty of equal count, the flows sorted by size
// (ties by flow id): what the HPCC paper's figures plot (its fct_analysis.py, step 5 %).
// Percentiles by nearest rank; no slowdown is floored at 1 (fct_analysis.py floors).
//   slowdown.csv  bucket,min_bytes,max_bytes,count,mean,p50,p95,p99,max
//   slowdown.png  p50 and p99 against the bucket's largest size (a log axis), with its
//                 gnuplot script
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/units.h"
#include "fabric/network.h"

namespace fabriclab::scenario {

struct SlowdownStats {
  std::uint64_t count = 0;
  double mean = 0, p50 = 0, p95 = 0, p99 = 0, max = 0;
};

struct Slowdowns {
  std::vector<Time> ideal;       // per flow (Time::max(): no path)
  std::vector<double> slowdown;  // per flow: fct / ideal, or -1 when unfinished or without an ideal
  Time warmup;
  Bytes short_max;                                // flows up to this size are "short"
  std::optional<SlowdownStats> all, short_flows;  // over the counted flows
  struct Bucket {
    std::uint64_t min_bytes = 0, max_bytes = 0;  // of the flows in it (declared: its edges)
    SlowdownStats stats;
  };
  std::vector<Bucket> buckets;
  // For `flows` flows, no ideal and no slowdown (a run that writes no outputs).
  static Slowdowns none(std::size_t flows) {
    Slowdowns s;
    s.ideal.assign(flows, Time::max());
    s.slowdown.assign(flows, -1);
    return s;
  }
};

// `edges`: the buckets' upper edges, ascending ("" in the scenario: none, equal counts).
Slowdowns slowdowns(const fabric::Network& net, Time warmup, const std::vector<Bytes>& edges, Bytes short_max);
// output.slowdown_buckets ("10KB,100KB,1MB") read (InputError naming the item) and written.
std::vector<Bytes> parse_slowdown_buckets(const std::string& text);
std::string slowdown_buckets_text(const std::vector<Bytes>& edges);

std::string slowdown_csv(const Slowdowns& s);
// slowdown.png and its script in `dir`, from slowdown.csv there; nothing when no bucket.
void slowdown_plot(const std::filesystem::path& dir, const Slowdowns& s);
// summary.json's "slowdown" block.
nlohmann::ordered_json slowdown_summary(const Slowdowns& s);

}  // namespace fabriclab::scenario
