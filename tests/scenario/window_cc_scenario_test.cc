// The policies that read ACKs in whole scenarios: two flows into one 100G port, the second
// starting 5 ms after the first, share it under DCTCP, both TIMELY readings, Swift and
// both HPCC readings and HPCC-PINT; DCTCP holds the queue near its marking threshold, Swift near its
// delay target, HPCC empty at 95 % of the line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "csv_rows.h"
#include "scenario/fabric/fabric_scenario.h"

namespace fabriclab::scenario {
namespace {

namespace fs = std::filesystem;

using testing::csv_rows;

struct Shares {
  double h1 = 0, h2 = 0;    // Gb/s of payload acknowledged over [10, 30] ms
  long long max_queue = 0;  // bytes at the bottleneck port, sampled each ms from 10 ms
  double mean_queue = 0;
};

// h1 and h2 send 500 MB each to h0 through sw0, h2 from 5 ms on; qps.csv's acked bytes
// (column 7) at 10 and 30 ms give each one's goodput.
Shares two_flows(const std::string& name, const std::vector<std::string>& sets) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("window_cc_" + name);
  fs::create_directories(dir);
  {
    std::ofstream f(dir / "flows.csv");
    f << "src,dst,bytes,start,priority,qps\n1,0,500MB,0us,3,1\n2,0,500MB,5ms,3,1\n";
  }
  const std::string toml = R"(
[sim]
stop_time = "30ms"
[topology]
kind = "single_switch"
hosts = 3
[switch]
buffer = "4MiB"
[traffic]
pattern = "flows"
[output]
timeseries_interval = "1ms"
timeseries_ports = "sw0:0"
)";
  std::vector<std::string> all = {"traffic.flows_file=" + (dir / "flows.csv").string()};
  all.insert(all.end(), sets.begin(), sets.end());
  const FabricSetup cfg = resolve_text(fabric_parameters(), toml, name + ".toml", all);
  const FabricOutcome o = run_fabric(cfg, {.scenario = name, .out_dir = dir.string()});
  EXPECT_EQ(o.drops, 0u) << name;
  std::map<std::pair<long long, std::string>, long long> acked;
  for (const auto& r : csv_rows(dir / "qps.csv")) acked[{std::llround(std::stod(r[0])), r[1]}] = std::stoll(r[7]);
  const auto gbps = [&](const std::string& h) {
    return static_cast<double>(acked.at({30'000'000, h}) - acked.at({10'000'000, h})) * 8 / 20e6;
  };
  Shares s{gbps("h1"), gbps("h2")};
  int samples = 0;
  for (const auto& r : csv_rows(dir / "queues.csv"))
    if (std::stod(r[0]) >= 10e6) {
      s.max_queue = std::max(s.max_queue, std::stoll(r[3]));
      s.mean_queue += std::stod(r[3]);
      ++samples;
    }
  s.mean_queue /= samples;
  fs::remove_all(dir);
  return s;
}

// Measured (fabriclab run, this machine): DCTCP 48.68 / 48.97 Gb/s with the queue at most
// 24 972 bytes; TIMELY paper 48.48 / 48.48; TIMELY ns3 43.99 / 43.57 (its 1 Gb/s floor and
// 500 Mb/s steps leave the port 12 % idle); Swift 50.53 / 47.41 with a mean queue of 303.6
// KB; HPCC paper 46.10 / 46.10 with no queue at any sample, HPCC ns3 47.60 / 44.59 (every
// update multiplicative: it swings more) with a mean queue of 1.2 KB, HPCC-PINT 47.54 /
// 43.15 (one rounded value per ACK and no EWMA at the sender: slower to converge).
// Asserted: within 5 % of each other (Swift and HPCC ns3 10 %, HPCC-PINT 15 %), the port
// at least 85 % busy.
TEST(WindowCcScenario, TwoFlowsShareOneBottleneckUnderEachPolicy) {
  struct Case {
    std::string name;
    std::vector<std::string> sets;
    double spread;
  };
  const std::vector<Case> cases = {// DCTCP's step marking at K = 20 KB (WRED from K to K + 1 KB, probability 100 %).
                                   {"dctcp",
                                    {"nic.congestion_control=dctcp", "switch.wred.green_min_threshold=20KB",
                                     "switch.wred.green_max_threshold=21KB", "switch.wred.green_drop_probability=100"},
                                    0.05},
                                   {"timely_paper", {"nic.congestion_control=timely"}, 0.05},
                                   {"timely_ns3", {"nic.congestion_control=timely", "nic.timely.preset=ns3"}, 0.05},
                                   {"swift", {"nic.congestion_control=swift"}, 0.10},
                                   {"hpcc_paper", {"nic.congestion_control=hpcc"}, 0.05},
                                   {"hpcc_ns3", {"nic.congestion_control=hpcc", "nic.hpcc.preset=ns3"}, 0.10},
                                   {"hpcc_pint", {"nic.congestion_control=hpcc", "nic.hpcc.feedback=pint"}, 0.15}};
  for (const auto& c : cases) {
    const Shares s = two_flows(c.name, c.sets);
    EXPECT_LT(std::abs(s.h1 - s.h2) / ((s.h1 + s.h2) / 2), c.spread) << c.name << ": " << s.h1 << " " << s.h2;
    EXPECT_GT(s.h1 + s.h2, 85.0) << c.name;
    // DCTCP: a packet is marked past 20 KB, and each echo cuts at once: the queue stays
    // within K plus what the two senders have in flight when the first echo returns.
    if (c.name == "dctcp") {
      EXPECT_LT(s.max_queue, 100'000) << s.max_queue;
    }
    // Swift holds the fabric delay at its target: 25 us + 1 us for the one switch + flow
    // scaling (under 5 us at a window of 20 packets or more), of which the unloaded
    // round trip (4.685 us here) is not queueing: a queue of 21.3 to 26.3 us at 100 Gb/s,
    // 266 to 329 KB.
    if (c.name == "swift") {
      EXPECT_GT(s.mean_queue, 250e3);
      EXPECT_LT(s.mean_queue, 350e3);
    }
    // HPCC holds the link at eta = 95 % with no standing queue: 95 Gb/s of frames carry
    // 95 x 4096 / 4224 (a middle packet's payload over its bytes on the wire, INT header
    // included) = 92.12 Gb/s of payload; at most one frame (4220 bytes at most, the
    // queue counts frames without their gap) waits at a sample.
    if (c.name == "hpcc_paper") {
      EXPECT_NEAR(s.h1 + s.h2, 95.0 * 4096 / 4224, 0.5);
      EXPECT_LE(s.max_queue, 4220);
    }
  }
}

}  // namespace
}  // namespace fabriclab::scenario
