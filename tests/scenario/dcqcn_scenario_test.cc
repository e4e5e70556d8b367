// DCQCN in whole scenarios: fair convergence on one bottleneck, a newcomer absorbed,
// incast with far fewer PFC pauses than without, CNP pacing at the notification point,
// and the summary's record of every value used.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "error_message.h"
#include "csv_rows.h"
#include "scenario/fabric/fabric_scenario.h"

namespace fabriclab::scenario {
namespace {

const std::string kExamples = FABRICLAB_EXAMPLES;
namespace fs = std::filesystem;

using testing::csv_rows;

// acked bytes per (sample time in ns, host), from qps.csv.
using Acked = std::map<long long, std::map<std::string, long long>>;
Acked acked_series(const fs::path& dir) {
  Acked a;
  for (const auto& r : csv_rows(dir / "qps.csv")) a[std::stoll(r[0])][r[1]] = std::stoll(r[7]);
  return a;
}
double gbps(const Acked& a, const std::string& host, int from_ms, int to_ms) {
  const long long t0 = from_ms * 1'000'000LL, t1 = to_ms * 1'000'000LL;
  return static_cast<double>(a.at(t1).at(host) - a.at(t0).at(host)) * 8.0 / static_cast<double>(t1 - t0);
}
double spread(std::initializer_list<double> xs) {  // (max - min) / mean
  double lo = *xs.begin(), hi = lo, sum = 0;
  for (double x : xs) lo = std::min(lo, x), hi = std::max(hi, x), sum += x;
  return (hi - lo) / (sum / static_cast<double>(xs.size()));
}

// Three hosts send to h0 through one 100G switch port: h1 and h2 from 0, h3 from 10 ms;
// the paper's DCQCN (its marking: 5 KB / 200 KB / 1 %, its NP: one CNP per 50 us per QP).
// Two flows share within 5 % (measured: 0.3 %).
TEST(DcqcnScenario, TwoFlowsConvergeAndAThirdIsAbsorbed) {
  const fs::path dir = fs::path(::testing::TempDir()) / "dcqcn_converge";
  fs::create_directories(dir);
  {
    std::ofstream f(dir / "flows.csv");
    f << "src,dst,bytes,start,priority,qps\n1,0,500MB,0us,3,1\n2,0,500MB,0us,3,1\n3,0,500MB,10ms,3,1\n";
  }
  const std::string toml = R"(
[sim]
stop_time = "80ms"
[topology]
kind = "single_switch"
hosts = 4
[switch]
buffer = "4MiB"
[switch.wred]
green_min_threshold = "5KB"
green_max_threshold = "200KB"
green_drop_probability = 1
[nic]
congestion_control = "dcqcn"
[nic.roce_rp]
preset = "paper"
[traffic]
pattern = "flows"
[output]
timeseries_interval = "1ms"
timeseries_ports = "sw0:0"
)";
  const FabricSetup cfg = resolve_text(fabric_parameters(), toml, "converge.toml",
                                       {"traffic.flows_file=" + (dir / "flows.csv").string()});
  const FabricOutcome o = run_fabric(cfg, {.scenario = "converge.toml", .out_dir = dir.string()});
  EXPECT_EQ(o.pfc_frames, 0u);
  EXPECT_EQ(o.drops, 0u);
  EXPECT_GT(o.cnps_received, 0u);

  const Acked a = acked_series(dir);
  // Two flows: equal shares of the port within 5 %, and the port kept busy.
  const double r1 = gbps(a, "h1", 4, 10), r2 = gbps(a, "h2", 4, 10);
  EXPECT_LT(spread({r1, r2}), 0.05) << r1 << " " << r2;
  EXPECT_GT(r1 + r2, 90.0);
  // The newcomer starts at line rate and is cut, and makes the others cut: each well
  // below its two-flow share soon after.
  EXPECT_LT(gbps(a, "h3", 10, 12), 0.5 * 100.0);
  EXPECT_LT(gbps(a, "h1", 10, 12), 0.75 * r1);
  EXPECT_LT(gbps(a, "h2", 10, 12), 0.75 * r2);
  // The three re-converge on a third each, the port still busy. DCQCN's increase is
  // additive (40 Mb/s per 55 us) and its cuts random (one per marked 50 us at most), so
  // shares wander around the fair one: measured here, the newcomer keeps about 11 % less
  // over [40, 80] ms (within 15 % of the mean asserted), while the two old flows are equal.
  const double s1 = gbps(a, "h1", 40, 80), s2 = gbps(a, "h2", 40, 80), s3 = gbps(a, "h3", 40, 80);
  const double mean = (s1 + s2 + s3) / 3;
  for (double x : {s1, s2, s3}) EXPECT_NEAR(x, mean, 0.15 * mean) << s1 << " " << s2 << " " << s3;
  EXPECT_GT(s1 + s2 + s3, 90.0);
  EXPECT_GT(s3, gbps(a, "h3", 12, 20));  // the newcomer climbs back from its cuts
  // The queue stays bounded: after the first millisecond (the line-rate start, before
  // the first CNPs), every sample is below Kmax, where marking becomes certain.
  long long steady_max = 0;
  for (const auto& r : csv_rows(dir / "queues.csv"))
    if (std::stoll(r[0]) >= 1'000'000) steady_max = std::max(steady_max, std::stoll(r[3]));
  EXPECT_LT(steady_max, 200'000);
}

FabricOutcome incast(const std::vector<std::string>& sets) {
  std::vector<std::string> all = {"traffic.bytes=10MB"};
  all.insert(all.end(), sets.begin(), sets.end());
  const FabricSetup cfg = resolve(fabric_parameters(), kExamples + "/incast.toml", all);
  return run_fabric(cfg, {.scenario = "incast.toml", .out_dir = ""});
}

// 16 x 10 MB into one port. Without congestion control the senders are held by PFC all
// along; DCQCN with CNPs per QP brings their sum to the port's rate and PFC only catches
// the first burst.
TEST(DcqcnScenario, IncastPausesFarLessWithDcqcn) {
  const FabricOutcome none = incast({});
  const FabricOutcome paper = incast({"nic.congestion_control=dcqcn", "nic.roce_rp.preset=paper"});
  const FabricOutcome nvidia = incast(
      {"nic.congestion_control=dcqcn", "nic.roce_rp.preset=nvidia", "nic.roce_np.cnp_scope=qp"});
  for (const FabricOutcome* o : {&none, &paper, &nvidia}) {
    EXPECT_TRUE(o->totals.all_finished);
    EXPECT_EQ(o->lossless_drops, 0u);
  }
  EXPECT_GT(none.pfc_frames, 1000u);
  EXPECT_GE(none.pfc_frames, 10 * paper.pfc_frames) << none.pfc_frames << " vs " << paper.pfc_frames;
  EXPECT_GE(none.pfc_frames, 10 * nvidia.pfc_frames) << none.pfc_frames << " vs " << nvidia.pfc_frames;
}

// The notification point sends at most one CNP per interval: per port, the receiver's
// count is bounded by its busy time over the interval; per QP, by that for each QP.
TEST(DcqcnScenario, CnpsArePacedPerPortOrPerQp) {
  const auto run = [](const std::string& scope, const std::string& interval) {
    return incast({"nic.roce_np.cnp_scope=" + scope, "nic.roce_np.min_time_between_cnps=" + interval});
  };
  const FabricOutcome port4 = run("port", "4"), qp4 = run("qp", "4"), qp50 = run("qp", "50");
  const double busy_us = static_cast<double>(port4.totals.end.ps()) / 1e6;  // CC none: same end for all
  EXPECT_GT(port4.cnps_sent, 0u);
  EXPECT_LE(static_cast<double>(port4.cnps_sent), busy_us / 4 + 1);
  EXPECT_LE(static_cast<double>(qp4.cnps_sent), 16 * (busy_us / 4 + 1));
  EXPECT_LE(static_cast<double>(qp50.cnps_sent), 16 * (busy_us / 50 + 1));
  EXPECT_GT(qp4.cnps_sent, port4.cnps_sent);
  EXPECT_GT(qp4.cnps_sent, qp50.cnps_sent);
  EXPECT_EQ(port4.cnps_received, port4.cnps_sent);  // CNPs ride a lossy priority, but nothing drops here
}

TEST(DcqcnScenario, SummaryRecordsThePresetAndEveryValueUsed) {
  const fs::path dir = fs::path(::testing::TempDir()) / "dcqcn_summary";
  const FabricSetup cfg = resolve(fabric_parameters(), kExamples + "/incast.toml",
                                  {"nic.congestion_control=dcqcn", "nic.roce_rp.preset=paper",
                                   "nic.roce_rp.rpg_ai_rate=10", "nic.roce_rp.rpg_hai_rate=2500Kbps"});
  run_fabric(cfg, {.scenario = "incast.toml", .out_dir = dir.string()});
  std::ifstream in(dir / "summary.json");
  const auto summary = nlohmann::json::parse(in);
  const auto& j = summary["congestion_control"];
  EXPECT_EQ(j["policy"], "dcqcn");
  EXPECT_EQ(j["dcqcn"]["preset"], "paper");
  EXPECT_EQ(j["dcqcn"]["roce_rp"]["rpg_time_reset"], 55);  // the preset's
  EXPECT_EQ(j["dcqcn"]["roce_rp"]["rpg_ai_rate"], 10);     // set: overrides the preset
  EXPECT_EQ(j["dcqcn"]["roce_rp"]["rpg_hai_rate"], 2.5);   // Mb/s, finer than a device's whole ones
  EXPECT_EQ(j["dcqcn"]["roce_rp"]["dce_tcp_g"], 1020);
  EXPECT_EQ(j["dcqcn"]["roce_np"]["min_time_between_cnps"], 50);
  EXPECT_EQ(j["dcqcn"]["roce_np"]["cnp_scope"], "qp");
  EXPECT_TRUE(j["dcqcn"]["readings"].contains("dce_tcp_g"));
  EXPECT_TRUE(j["dcqcn"]["readings"].contains("rpg_byte_reset"));
  // The echoed configuration says the same: what ran, not the keys' nvidia defaults.
  const auto& config = summary["config"];
  EXPECT_EQ(config["nic.roce_rp.preset"], "paper");
  EXPECT_EQ(config["nic.roce_rp.rpg_time_reset"], "55");
  EXPECT_EQ(config["nic.roce_rp.rpg_ai_rate"], "10");
  EXPECT_EQ(config["nic.roce_rp.rpg_hai_rate"], "2.5");
  EXPECT_EQ(config["nic.roce_np.min_time_between_cnps"], "50");
  EXPECT_EQ(config["nic.roce_np.cnp_scope"], "qp");
  for (const auto& [key, value] : j["dcqcn"]["roce_rp"].items())
    EXPECT_EQ(config["nic.roce_rp." + key], value.is_string()           ? value.get<std::string>()
                                            : value.is_number_integer() ? std::to_string(value.get<int>())
                                                                        : fmt::format("{}", value.get<double>()))
        << key;
  EXPECT_EQ(j["dcqcn"]["roce_rp"]["stage_compare"], "after_increment");  // the variants' defaults
  EXPECT_EQ(j["dcqcn"]["roce_rp"]["cut_grid"], "global");
  for (const auto& [key, value] : j["dcqcn"]["roce_np"].items()) {
    if (key == "enable") continue;  // a boolean key
    EXPECT_EQ(config["nic.roce_np." + key],
              value.is_string() ? value.get<std::string>() : std::to_string(value.get<int>()))
        << key;
  }
}

// The CNP interval is a device's whole microseconds (sysfs), and takes a time with its
// unit like every other time key: "100us" once failed with "is not an integer".
TEST(DcqcnScenario, TheCnpIntervalTakesMicrosecondsBareOrWithAUnit) {
  const auto interval = [](const std::string& value) {
    return fabric_parameters()
        .resolve(kExamples + "/incast.toml", {"nic.roce_np.min_time_between_cnps=" + value})
        .value.nic.cnp.min_time_between_cnps;
  };
  EXPECT_EQ(interval("100us"), 100u);
  EXPECT_EQ(interval("100"), 100u);
  EXPECT_EQ(interval("1ms"), 1000u);
  EXPECT_EQ(interval("0"), 0u);
  const FabricSetup toml = fabric_parameters().resolve_text("[nic.roce_np]\nmin_time_between_cnps = 8\n", "c.toml");
  EXPECT_EQ(toml.value.nic.cnp.min_time_between_cnps, 8u);
  EXPECT_EQ(toml.config.shown("nic.roce_np.min_time_between_cnps"), "8");
  const auto error_of = [&](const std::string& value) {
    return fabriclab::testing::input_error_of([&] { interval(value); });
  };
  EXPECT_EQ(error_of("1500ns"), "--set: key 'nic.roce_np.min_time_between_cnps': 1.5us is not a whole number of us");
  EXPECT_EQ(error_of("2s"), "--set: key 'nic.roce_np.min_time_between_cnps': 2000000 us is above the maximum "
                            "1000000 us");
}

}  // namespace
}  // namespace fabriclab::scenario
