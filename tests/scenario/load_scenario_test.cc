// Loads in a scenario (traffic.pattern = "load", [[load]] entries) and the FCT slowdown
// outputs: flows.csv's ideal FCT and slowdown, slowdown.csv's buckets and summary.json's
// slowdown block, each recomputed here from flows.csv; errors name the key.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include "error_message.h"
#include "scenario/fabric/fabric_scenario.h"
#include "scenario/report/csv_table.h"
#include "scenario/report/files.h"

namespace fabriclab::scenario {
namespace {

using testing::input_error_of;

const std::string kExamples = FABRICLAB_EXAMPLES;

std::string slurp(const std::filesystem::path& p) { return read_text(p); }

std::filesystem::path fresh_dir(const std::string& name) {
  const auto d = std::filesystem::path(::testing::TempDir()) / name;
  std::filesystem::remove_all(d);
  return d;
}

FabricOutcome run_load(const std::filesystem::path& out, const std::vector<std::string>& sets = {}) {
  return run_fabric(resolve(fabric_parameters(), kExamples + "/load.toml", sets),
                    {.scenario = "load.toml", .out_dir = out.string()});
}

TEST(LoadScenario, SlowdownByBucketAgreesWithFlowsCsv) {
  const auto out = fresh_dir("load-example");
  const FabricOutcome o = run_load(out);
  EXPECT_TRUE(o.totals.all_finished);
  EXPECT_EQ(o.lossless_drops, 0u);
  const CsvTable flows = read_csv(out / "flows.csv");
  // The incast load's 20 bursts of 8 flows of 64 KB are among them.
  std::size_t incast = 0;
  std::vector<std::pair<double, double>> counted;  // (bytes, slowdown), started after the warm-up
  double least = 1e9;
  for (std::size_t r = 0; r < flows.rows(); ++r) {
    if (flows.number(r, "bytes") == 64000) ++incast;
    const double fct = flows.number(r, "fct_ns"), ideal = flows.number(r, "ideal_fct_ns");
    const double slowdown = flows.number(r, "slowdown");
    EXPECT_NEAR(slowdown, fct / ideal, 5e-5) << "flow " << r;  // written with 4 decimals
    least = std::min(least, fct / ideal);
    if (flows.number(r, "start_ns") >= 200'000) counted.emplace_back(flows.number(r, "bytes"), slowdown);
  }
  EXPECT_GE(incast, 20u * 8);
  EXPECT_GE(least, 1.0 - 1e-9);  // the ideal is what a flow alone takes: none beats it
  const CsvTable buckets = read_csv(out / "slowdown.csv");
  ASSERT_EQ(buckets.rows(), 20u);
  // Twenty buckets of equal count, by size: bucket k holds the flows of ranks [k n / 20,
  // (k + 1) n / 20), its p99 the nearest rank of their slowdowns.
  std::stable_sort(counted.begin(), counted.end(), [](auto& a, auto& b) { return a.first < b.first; });
  const std::size_t n = counted.size();
  for (std::size_t k = 0; k < 20; ++k) {
    const std::size_t lo = k * n / 20, hi = (k + 1) * n / 20;
    EXPECT_EQ(buckets.number(k, "count"), static_cast<double>(hi - lo));
    EXPECT_EQ(buckets.number(k, "min_bytes"), counted[lo].first);
    EXPECT_EQ(buckets.number(k, "max_bytes"), counted[hi - 1].first);
    std::vector<double> v;
    for (std::size_t j = lo; j < hi; ++j) v.push_back(counted[j].second);
    std::sort(v.begin(), v.end());
    const auto rank = static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(v.size()) - 1e-9));
    EXPECT_NEAR(buckets.number(k, "p99"), v[std::max<std::size_t>(rank, 1) - 1], 1e-4);
    EXPECT_NEAR(buckets.number(k, "max"), v.back(), 1e-4);
  }
  const auto summary = nlohmann::json::parse(slurp(out / "summary.json"));
  const auto& s = summary["flows"]["slowdown"];
  EXPECT_EQ(s["all"]["count"].get<std::size_t>(), n);
  EXPECT_EQ(s["warmup_ns"], "200000.000");
  std::size_t short_ones = 0;
  for (const auto& [bytes, sd] : counted) short_ones += bytes <= 100'000 ? 1 : 0;
  EXPECT_EQ(s["short"]["count"].get<std::size_t>(), short_ones);
  EXPECT_TRUE(std::filesystem::exists(out / "slowdown.png"));
  EXPECT_TRUE(std::filesystem::exists(out / "slowdown.gp"));
  // The same seed, the same flows, byte for byte.
  const auto again = fresh_dir("load-example-again");
  run_load(again);
  EXPECT_EQ(slurp(out / "flows.csv"), slurp(again / "flows.csv"));
  EXPECT_EQ(slurp(out / "slowdown.csv"), slurp(again / "slowdown.csv"));
}

TEST(LoadScenario, DeclaredBucketsSplitBySize) {
  const auto out = fresh_dir("load-buckets");
  run_load(out, {"output.slowdown_buckets=100KB,1MB", "traffic.warmup=0ps"});
  const CsvTable flows = read_csv(out / "flows.csv");
  std::vector<double> count(3, 0);
  for (std::size_t r = 0; r < flows.rows(); ++r) {
    const double b = flows.number(r, "bytes");
    ++count[b <= 100'000 ? 0 : b <= 1'000'000 ? 1 : 2];
  }
  const CsvTable buckets = read_csv(out / "slowdown.csv");
  std::size_t row = 0;
  for (std::size_t k = 0; k < 3; ++k) {
    if (count[k] == 0) continue;  // an empty bucket has no row
    EXPECT_EQ(buckets.number(row, "count"), count[k]);
    ++row;
  }
  EXPECT_EQ(buckets.rows(), row);
  EXPECT_EQ(buckets.number(0, "min_bytes"), 1);
  EXPECT_EQ(buckets.number(0, "max_bytes"), 100'000);
  // Refused as the scenario is read, before any run.
  EXPECT_EQ(input_error_of(
                [] { resolve(fabric_parameters(), kExamples + "/load.toml", {"output.slowdown_buckets=1MB,100KB"}); }),
            "--set: key 'output.slowdown_buckets': '100KB': edges must be positive sizes in ascending order "
            "(\"10KB,100KB,1MB\")");
}

// One flow alone across a k = 4 fat-tree (six links, pod to pod): its slowdown is 1.
TEST(LoadScenario, ASingleFlowOnAnIdleFabricHasSlowdownOne) {
  const auto out = fresh_dir("one-flow");
  const std::string toml =
      "[topology]\nkind = \"fat_tree\"\nk = 4\nlink_delay = \"1us\"\n[traffic]\npattern = \"incast\"\nbytes = "
      "\"1MB\"\nincast.receiver = 15\nincast.senders = 1\n[output]\nslowdown = true\n";
  run_fabric(resolve_text(fabric_parameters(), toml, "one.toml"), {.scenario = "one.toml", .out_dir = out.string()});
  const CsvTable flows = read_csv(out / "flows.csv");
  ASSERT_EQ(flows.rows(), 1u);
  EXPECT_EQ(flows.text(0, "slowdown"), "1.0000");
  EXPECT_EQ(flows.text(0, "fct_ns"), flows.text(0, "ideal_fct_ns"));
  const CsvTable buckets = read_csv(out / "slowdown.csv");
  ASSERT_EQ(buckets.rows(), 1u);
  EXPECT_EQ(buckets.number(0, "p99"), 1.0);
}

// output.traffic_matrix: the incast example's 16 senders each placed 1 MB at h0; the
// file is what a matrix load reads: h0's link in is the busiest (16 MB of weight), so at
// load 0.5 each sender offers 0.5 x 100G / 16.
TEST(LoadScenario, TheTrafficMatrixOutIsWhatAMatrixLoadReads) {
  const auto out = fresh_dir("matrix-out");
  run_fabric(resolve(fabric_parameters(), kExamples + "/incast.toml", {"output.traffic_matrix=true"}),
             {.scenario = "incast.toml", .out_dir = out.string()});
  const CsvTable m = read_csv(out / "traffic_matrix.csv");
  ASSERT_EQ(m.rows(), 16u);
  for (std::size_t r = 0; r < m.rows(); ++r) {
    EXPECT_EQ(m.text(r, "dst"), "h0");
    EXPECT_EQ(m.text(r, "bytes"), "1000000");
  }
  EXPECT_EQ(m.text(0, "src"), "h1");
  std::vector<workload::LoadGenerator::Resolved> loads(1);
  loads[0].spec.pairs = workload::Pairs::matrix;
  loads[0].spec.load = 0.5;
  loads[0].cdf = workload::Cdf::read(kExamples + "/cdf/hadoop.cdf");
  loads[0].matrix = workload::read_traffic_matrix((out / "traffic_matrix.csv").string(), 17);
  const double mean = loads[0].cdf.mean();
  const workload::LoadGenerator g(std::move(loads), std::vector<BitRate>(17, Gbps(100)), 1);
  EXPECT_EQ(g.arrival_rate(0, 0), 0);
  for (std::uint32_t h = 1; h <= 16; ++h) EXPECT_NEAR(g.arrival_rate(0, h), 0.5 * 100e9 / 16 / (8 * mean), 1e-6) << h;
}

// output.ns3 on the incast example (616 PFC frames): fct.txt and pfc.txt read back by a
// reader of the documented format (scenario/fabric/ns3.h), every field against flows.csv
// and ports.csv; and the same files from the run split in two parts.
TEST(LoadScenario, Ns3OutputsReadBackAsTheModelWritesThem) {
  const auto out = fresh_dir("ns3-out");
  const auto split = fresh_dir("ns3-out-split");
  const auto run = [](const std::filesystem::path& dir, std::vector<std::string> sets) {
    sets.push_back("output.ns3=true");
    run_fabric(resolve(fabric_parameters(), kExamples + "/incast.toml", sets),
               {.scenario = "incast.toml", .out_dir = dir.string()});
  };
  run(out, {});
  run(split, {"sim.partitions=2"});
  EXPECT_EQ(slurp(out / "fct.txt"), slurp(split / "fct.txt"));
  EXPECT_EQ(slurp(out / "pfc.txt"), slurp(split / "pfc.txt"));
  // fct.txt: "%08x %08x %u %u %lu %lu %lu %lu", the model's IPs 0x0b000001 + h x 0x100.
  const CsvTable flows = read_csv(out / "flows.csv");
  std::map<std::uint32_t, std::size_t> row_of_src;  // incast: one flow per sender
  for (std::size_t r = 0; r < flows.rows(); ++r)
    row_of_src[static_cast<std::uint32_t>(std::stoul(flows.text(r, "src").substr(1)))] = r;
  std::istringstream fct(slurp(out / "fct.txt"));
  std::string sip, dip;
  std::uint64_t sport = 0, dport = 0, size = 0, start = 0, time = 0, standalone = 0, last_end = 0;
  std::size_t lines = 0;
  while (fct >> sip >> dip >> sport >> dport >> size >> start >> time >> standalone) {
    ++lines;
    ASSERT_EQ(sip.size(), 8u);
    const std::uint32_t src = (std::stoul(sip, nullptr, 16) >> 8) & 0xffff;  // the model's ip_to_node_id
    EXPECT_EQ((std::stoul(dip, nullptr, 16) >> 8) & 0xffff, 0u);
    EXPECT_EQ(std::stoul(sip, nullptr, 16) & 0xff0000ffu, 0x0b000001u);
    ASSERT_EQ(row_of_src.count(src), 1u) << sip;
    const std::size_t r = row_of_src[src];
    EXPECT_EQ(dport, 100u);
    EXPECT_GE(sport, 1u);
    EXPECT_EQ(size, flows.number(r, "bytes"));
    EXPECT_EQ(start, static_cast<std::uint64_t>(flows.number(r, "start_ns")));
    EXPECT_EQ(time, static_cast<std::uint64_t>(std::floor(flows.number(r, "fct_ns"))));
    EXPECT_EQ(standalone, static_cast<std::uint64_t>(std::floor(flows.number(r, "ideal_fct_ns"))));
    EXPECT_GE(start + time, last_end);  // in finish order
    last_end = start + time;
  }
  EXPECT_EQ(lines, 16u);
  // pfc.txt: "%lu %u %u %u %u" -- time, node, type, interface (port + 1), pause / resume.
  const CsvTable ports = read_csv(out / "ports.csv");
  double pauses = 0, resumes = 0;
  for (std::size_t r = 0; r < ports.rows(); ++r) {
    pauses += ports.number(r, "pfc_pause_received") - ports.number(r, "pfc_resume_received");
    resumes += ports.number(r, "pfc_resume_received");
  }
  std::istringstream pfc(slurp(out / "pfc.txt"));
  std::uint64_t at = 0, node = 0, type = 0, iface = 0, pause = 0, last = 0;
  double seen_pauses = 0, seen_resumes = 0;
  while (pfc >> at >> node >> type >> iface >> pause) {
    EXPECT_GE(at, last);
    last = at;
    EXPECT_EQ(type, node < 17 ? 0u : 1u);  // 17 hosts, then the switch
    EXPECT_GE(iface, 1u);
    (pause == 1 ? seen_pauses : seen_resumes) += 1;
  }
  EXPECT_GT(seen_pauses, 0);
  EXPECT_EQ(seen_pauses, pauses);
  EXPECT_EQ(seen_resumes, resumes);
}

// A load fed as the run goes beside collectives on the NIC engine (both coordinators
// stepping): split into four parts on two threads, the same run, file for file.
TEST(LoadScenario, AFedLoadBesideCollectivesRunsAlikeSplit) {
  const std::string scenario = std::string(FABRICLAB_TEST_DATA) + "/load/with-collectives.toml";
  std::vector<FabricOutcome> runs;
  std::vector<std::filesystem::path> dirs;
  for (const auto& sets : {std::vector<std::string>{}, {"sim.partitions=4", "sim.threads=2"}}) {
    const auto out = dirs.emplace_back(fresh_dir("load-collectives-" + std::to_string(runs.size())));
    runs.push_back(run_fabric(resolve(fabric_parameters(), scenario, sets),
                              {.scenario = "with-collectives.toml", .out_dir = out.string()}));
    ASSERT_TRUE(runs.back().totals.all_finished);
    ASSERT_EQ(runs.back().collectives.size(), 4u);
  }
  EXPECT_GT(runs[0].flows, 400u);  // (Hadoop's mean, 120 KB, at 30 % of 16 links for 1 ms: ~500)
  EXPECT_EQ(runs[0].fingerprint, runs[1].fingerprint);
  for (const char* f : {"flows.csv", "ports.csv", "collectives.csv"})
    EXPECT_EQ(slurp(dirs[0] / f), slurp(dirs[1] / f)) << f;
}

TEST(LoadScenario, ErrorsNameTheKey) {
  const auto build = [](const std::string& toml) { build_network(resolve_text(fabric_parameters(), toml, "s.toml")); };
  EXPECT_EQ(input_error_of([&] { build("[traffic]\npattern = \"load\"\n"); }),
            "s.toml:2:11: traffic.pattern = \"load\" needs at least one [[load]] entry");
  EXPECT_EQ(input_error_of([&] { build("[traffic]\npattern = \"incast\"\n[[load]]\nload = 0.5\n"); }),
            "s.toml:4:8: [[load]] entries need traffic.pattern = \"load\" (it is \"incast\")");
  EXPECT_EQ(input_error_of([&] { build("[traffic]\npattern = \"load\"\n[[load]]\nload = 0.5\n"); }),
            "s.toml:4:8: load.0: a poisson load needs load.0.cdf, its flow-size distribution");
  EXPECT_EQ(input_error_of([&] {
              build("[traffic]\npattern = \"load\"\n[[load]]\ncdf = \"" + kExamples +
                    "/cdf/hadoop.cdf\"\npairs = \"matrix\"\n");
            }),
            "s.toml:5:9: load.0.pairs = matrix needs load.0.matrix");
  EXPECT_NE(input_error_of([&] {
              build("[traffic]\npattern = \"load\"\n[[load]]\ncdf = \"missing.cdf\"\n");
            }).find("missing.cdf"),
            std::string::npos);
  EXPECT_EQ(input_error_of([&] { build("[traffic]\npattern = \"load\"\n[[load]]\nload = 1.5\n"); }),
            "s.toml:4:8: key 'load.0.load': 1.5 is above the maximum 1");
  // Flows fed during the run: a load whose largest flow one QP's 24-bit PSNs cannot number
  // is refused before it, by its largest: 2^36 + 1 bytes are 2^24 + 1 packets of 4096.
  EXPECT_EQ(input_error_of([&] {
              build("[traffic]\npattern = \"load\"\n[[load]]\nkind = \"incast\"\nbytes = \"68719476737B\"\n");
            }),
            "s.toml:4:8: load.0 (load.0.bytes): its largest flow: 68719476737 bytes over 1 QP(s) make 16777217 packets "
            "of nic.mtu = 4096 bytes on a QP, more than its 24-bit PSNs number (16777215); use more QPs (load.0.qps)");
}

}  // namespace
}  // namespace fabriclab::scenario
