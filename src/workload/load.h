// Loads: flows generated from a distribution, the benchmark every congestion-control paper
// since DCQCN reports (traffic.pattern = "load", one [[load]] entry per load, overlaid).
//
// A `poisson` load: every host sends flows whose sizes are drawn from a CDF file, to
// destinations picked by `pairs`, starting at the arrivals of a Poisson process whose rate
// offers `load` of the host's link: rate = load x link rate / (8 x mean size). As the HPCC
// ns-3 model's traffic generator (traffic_gen.py) defines it: the size is the CDF's
// inverse, linear between its points, truncated to whole bytes (at least 1); the mean is
// that piecewise-linear distribution's (trapezoids). Arrivals fall in [start, start +
// duration). An `incast` load: every `every`, `fan_in` hosts send `bytes` each to one
// receiver at once (the same instant), from `start` for `duration`.
//
// Randomness: one stream per load and sending host (the arrivals, sizes and destinations
// of host h in load i come from "traffic/load/i/h"), one per incast load for its bursts:
// when a host sends and how much does not depend on how many other hosts there are or
// which part runs them (whom it sends to does: the destinations are drawn among them). LoadGenerator hands out the
// flows of every load merged in start order (ties: by load, then host), one at a time, from state per sending host: it
// never holds the list.
//
// CDF files: one point per line, "SIZE PROBABILITY" (spaces, tabs or a comma between),
// sizes in bytes non-decreasing, probabilities non-decreasing and the last exactly 1 -- or,
// the HPCC files' convention, percentages ending at exactly 100 (the last point says
// which). Lines starting with '#' are comments. A first point above 0 is a point mass at
// its size; equal sizes make a point mass, equal probabilities an empty stretch. Sizes are
// at most 2^53 bytes (exact in a double) and the mean at least 1 byte (every flow carries
// one: a smaller mean would offer more than the load asks).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <string_view>
#include <vector>

#include "core/params.h"
#include "core/random.h"
#include "core/units.h"
#include "fabric/flows.h"

namespace fabriclab::workload {

class Cdf {
 public:
  struct Point {
    double size = 0;  // bytes
    double p = 0;     // cumulative probability, 0..1
  };
  // Throws InputError naming `name` and the line.
  static Cdf parse(std::string_view text, const std::string& name);
  static Cdf read(const std::string& path);  // bounded (core/input.h)

  const std::vector<Point>& points() const { return points_; }
  // The mean of the piecewise-linear distribution, in bytes.
  double mean() const;
  // The size at cumulative probability u in [0, 1): linear between points, truncated, at
  // least 1.
  std::uint64_t size_at(double u) const;

 private:
  std::vector<Point> points_;
};

enum class LoadKind : std::uint8_t { poisson, incast };
inline constexpr params::EnumNames<LoadKind, 2> kLoadKindNames{
    {{LoadKind::poisson, "poisson"}, {LoadKind::incast, "incast"}}};

// Who sends to whom in a poisson load.
//   uniform  any other host, uniformly
//   within   another host of the sender's group (hosts in `groups` equal blocks by index)
//   between  a host of another group
//   matrix   by the weights of a traffic matrix file (`matrix`: CSV src,dst,bytes, the
//            format output.traffic_matrix writes), scaled so that the busiest host link,
//            either way, is offered `load`; a host's flows leave at its row's share
enum class Pairs : std::uint8_t { uniform, within, between, matrix };
inline constexpr params::EnumNames<Pairs, 4> kPairsNames{
    {{Pairs::uniform, "uniform"}, {Pairs::within, "within"}, {Pairs::between, "between"}, {Pairs::matrix, "matrix"}}};

struct LoadSpec {
  LoadKind kind = LoadKind::poisson;
  std::string cdf;    // poisson: the size distribution (a file, relative to the scenario)
  double load = 0.3;  // poisson: fraction of each host link offered
  Pairs pairs = Pairs::uniform;
  std::uint32_t groups = 2;  // within, between
  std::string matrix;        // matrix
  Time start;
  Time duration = Time::from_ps(1'000'000'000);  // 1 ms
  Time every = Time::from_ps(100'000'000);       // incast: a burst this often
  std::uint32_t fan_in = 8;                      // incast: senders per burst
  Bytes bytes = Bytes::from_count(64'000);       // incast: bytes per sender
  std::int64_t receiver = -1;                    // incast: a host, or -1: one at random per burst
  std::uint8_t priority = 3;
  std::uint32_t qps = 1;  // per flow
};
const params::Table<LoadSpec>& load_table();

// A traffic matrix: bytes (or weights) by (src, dst), from a CSV file "src,dst,bytes"
// (hosts as indices or "hN"; rows of one pair add up). Errors name the file and line.
struct TrafficMatrix {
  struct Entry {
    std::uint32_t src, dst;
    double bytes;
  };
  std::vector<Entry> entries;
};
TrafficMatrix read_traffic_matrix(const std::string& path, std::uint32_t hosts);

// The flows of `loads` over hosts whose links run at `host_rates` (bits/s), in start order.
// The loads are checked when it is made (InputError naming "load.N.KEY", after `where(N)`
// when given: where entry N was set, "f.toml:12:1"), among them the flows they would make:
// at most kMaxLoadFlows expected in all.
inline constexpr double kMaxLoadFlows = 1 << 27;
class LoadGenerator final : public fabric::FlowSource {
 public:
  struct Resolved {
    LoadSpec spec;
    Cdf cdf;               // poisson
    TrafficMatrix matrix;  // matrix
  };
  LoadGenerator(std::vector<Resolved> loads, std::vector<BitRate> host_rates, std::uint64_t seed,
                const std::function<std::string(std::size_t)>& where = {});
  ~LoadGenerator() override;
  LoadGenerator(const LoadGenerator&) = delete;
  LoadGenerator& operator=(const LoadGenerator&) = delete;

  // The next flow in start order; false when every load has ended.
  bool next(fabric::FlowSpec& out) override;
  // Flows per second the loads make, all hosts together (the expected count: a Poisson
  // load's arrival rates, an incast's fan_in per `every`).
  double flows_per_second() const;
  double expected_flows() const override { return expected_; }
  // Load i's per-host arrival rate (flows per second) of host h (0 for incast loads).
  double arrival_rate(std::size_t i, std::uint32_t h) const;

 private:
  struct Source;
  struct Pending {
    Time at;
    std::uint32_t load, host;  // host: the sender (poisson) or the burst's sender index (incast)
    bool operator>(const Pending& o) const {
      if (at != o.at) return at > o.at;
      if (load != o.load) return load > o.load;
      return host > o.host;
    }
  };
  void advance(std::uint32_t load, std::uint32_t host);  // its next arrival into the queue
  void burst(std::uint32_t load, Time at);               // an incast's flows into the queue

  std::vector<Resolved> loads_;
  std::vector<BitRate> rates_;
  std::vector<std::vector<Source>> sources_;  // per load, per host
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> queue_;
  std::vector<fabric::FlowSpec> ready_;  // an incast burst's flows, handed out in order
  std::size_t ready_next_ = 0;
  double expected_ = 0;
};

}  // namespace fabriclab::workload
