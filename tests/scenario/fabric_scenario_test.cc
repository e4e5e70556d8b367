// Whole scenarios: the shipped examples run to completion with nothing dropped on the
// lossless priority, conserve bytes (checked inside every run), are deterministic, and
// keep their trajectory fingerprints; scenario errors name the key and the file line.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "error_message.h"
#include "scenario/fabric/fabric_scenario.h"
#include "scenario/report/csv_table.h"
#include "scenario/report/files.h"

namespace fabriclab::scenario {
namespace {

const std::string kExamples = FABRICLAB_EXAMPLES;

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

FabricOutcome run_example(const std::string& name, const std::string& out = "") {
  const FabricSetup cfg = resolve(fabric_parameters(), kExamples + "/" + name);
  return run_fabric(cfg, {.scenario = name, .out_dir = out});
}

// A fingerprint is a hash of every event's (time, tie key, node, kind): it changes with
// any change of behaviour. (Both last changed when ties at one picosecond began to run in
// the order of their nodes' keys rather than of scheduling, and a run that finishes its
// work to end one longest link delay after the last delivery, so that a split run gives
// the same: incast's flows.csv is unchanged, its receiver sends one more ACK in the tail,
// sw0 marks one packet fewer (3808), and 1 us is added to the end. Leaf-spine changed when ECMP's next-hop selection
// got a per-switch finalizer: the flows take other uplinks; both changed when receivers began to answer CE marks with
// CNPs, which share the reverse links with the ACKs; both when a frame's arrival began to be scheduled as its last bit
// leaves rather than when the frame before it arrives: events at the same picosecond now run in another, equally valid,
// order -- incast's flows.csv is unchanged (a few ports' paused times move), the
// leaf-spine marks 3 fewer packets, sends 4 fewer CNPs and ends 24 ns later.) When a change is intended, re-run the
// example, check its outputs and update the constant here in the same commit, saying why.
// switch.wred.by_rate and switch.mmu.dynamic_th_by_rate (the HPCC ns-3 model's maps by
// link rate): on one switch with h3's link at 50G, h0 and h1 each send 1 MB to h2 and to
// h3 at once, so both egress ports queue (2 x 100G into 100G, and into 50G). With the
// switch's WRED at 10/20 MB nothing is marked; a 50G entry of 1/2 KB at 100 % marks at
// port 3 only, a 100G entry at port 2 only (h0's and h1's egress carry only ACKs, which
// are never marked). Then h0 (100G) and h3 (50G) send 4 MB each to h1 under a dynamic
// threshold of 2^7 x the free buffer: no pause; a 50G entry of -7 pauses port 3 alone.
TEST(FabricScenario, MarkingAndTheDynamicThresholdByPortRate) {
  const auto dir = std::filesystem::temp_directory_path() / ("fabriclab_by_rate_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "two_incasts.csv") << "src,dst,bytes,start,priority,qps\n0,2,1MB,0ns,3,1\n1,2,1MB,0ns,3,1\n"
                                              "0,3,1MB,0ns,3,1\n1,3,1MB,0ns,3,1\n";
    std::ofstream(dir / "into_h1.csv") << "src,dst,bytes,start,priority,qps\n0,1,4MB,0ns,3,1\n3,1,4MB,0ns,3,1\n";
  }
  const std::string base = "[topology]\nkind = \"single_switch\"\nhosts = 4\nlink_rates = \"sw0:3=50Gbps\"\n"
                           "[switch]\nbuffer = \"32MiB\"\n[switch.wred]\ngreen_min_threshold = \"10MB\"\n"
                           "green_max_threshold = \"20MB\"\n[traffic]\npattern = \"flows\"\n";
  // sw0's column of ports.csv, by port.
  const auto per_port = [&](const std::string& flows, std::vector<std::string> sets, const char* column) {
    sets.push_back("traffic.flows_file=" + (dir / flows).string());
    const std::filesystem::path out = dir / "out";
    std::filesystem::remove_all(out);
    const FabricOutcome o = run_fabric(fabric_parameters().resolve_text(base, "by_rate.toml", sets),
                                       {.scenario = "x", .out_dir = out.string()});
    EXPECT_TRUE(o.totals.all_finished);
    std::vector<double> v(4, -1);
    const CsvTable t = read_csv(out / "ports.csv");
    for (std::size_t r = 0; r < t.rows(); ++r)
      if (t.text(r, "node") == "sw0") v[static_cast<std::size_t>(t.number(r, "port"))] = t.number(r, column);
    return v;
  };
  const std::vector<double> none = per_port("two_incasts.csv", {}, "ecn_marks");
  EXPECT_EQ(none, (std::vector<double>{0, 0, 0, 0}));
  const std::vector<double> at50 = per_port("two_incasts.csv", {"switch.wred.by_rate=50Gbps=1KB/2KB/100"}, "ecn_marks");
  EXPECT_EQ(at50[2], 0);
  EXPECT_GT(at50[3], 0);
  EXPECT_EQ(at50[0] + at50[1], 0);
  const std::vector<double> at100 = per_port("two_incasts.csv", {"switch.wred.by_rate=100Gbps=1KB/2KB/100"},
                                             "ecn_marks");
  EXPECT_GT(at100[2], 0);
  EXPECT_EQ(at100[3], 0);
  EXPECT_EQ(at100[0] + at100[1], 0);

  const std::vector<double> roomy = per_port("into_h1.csv", {"switch.mmu.dynamic_th=7"}, "pfc_pause_sent");
  EXPECT_EQ(roomy, (std::vector<double>{0, 0, 0, 0}));
  const std::vector<double> tight50 =
      per_port("into_h1.csv", {"switch.mmu.dynamic_th=7", "switch.mmu.dynamic_th_by_rate=50Gbps=-7"}, "pfc_pause_sent");
  EXPECT_EQ(tight50[0], 0);
  EXPECT_GT(tight50[3], 0);

  // The lists are checked where they are read, each item named.
  const auto error = [&](const std::string& set) {
    return testing::input_error_of([&] { fabric_parameters().resolve_text(base, "by_rate.toml", {set}); });
  };
  EXPECT_NE(error("switch.wred.by_rate=50Gbps=2KB/1KB/100").find("'50Gbps=2KB/1KB/100': Kmax must be above Kmin"),
            std::string::npos);
  EXPECT_NE(error("switch.wred.by_rate=50Gbps=1KB/2KB").find("expected RATE=KMIN/KMAX/PMAX"), std::string::npos);
  EXPECT_NE(error("switch.wred.by_rate=50Gbps=1KB/2KB/1,50Gbps=1KB/2KB/2").find("50Gbps is given twice"),
            std::string::npos);
  EXPECT_NE(error("switch.mmu.dynamic_th_by_rate=400Gbps=-9").find("'400Gbps=-9': expected an integer -7..7"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(FabricScenario, IncastExample) {
  const FabricOutcome o = run_example("incast.toml");
  EXPECT_TRUE(o.totals.all_finished);
  EXPECT_EQ(o.flows, 16u);
  EXPECT_EQ(o.lossless_drops, 0u);
  EXPECT_EQ(o.totals.in_flight_data_bytes, 0u);
  // 16 MB of payload (plus headers) leave through one 100G port: >= 1.28 ms.
  EXPECT_GE(o.totals.end.ps(), us(1280).ps());
  EXPECT_EQ(o.fingerprint, 0x9e2288e35198e8d4ull);
}

// The incast example under DCTCP: the receiver echoes the CE marks on its ACKs (one per
// packet), so no CNP is sent; the senders' cuts keep the queue below the PFC threshold
// (the switch paused 616 times without congestion control), and the flows still finish
// within 2 % of the 16 MB at 100G the port must carry (1.34 ms with the headers).
TEST(FabricScenario, IncastUnderDctcpEchoesMarksAndNeverPauses) {
  const std::string file = kExamples + "/incast.toml";
  const FabricOutcome o = run_fabric(resolve(fabric_parameters(), file, {"nic.congestion_control=dctcp"}),
                                     {.scenario = "incast",
                                      .out_dir = (std::filesystem::path(::testing::TempDir()) / "dctcp").string()});
  ASSERT_TRUE(o.totals.all_finished);
  EXPECT_GT(o.ecn_marks, 0u);
  EXPECT_EQ(o.cnps_sent, 0u);
  EXPECT_EQ(o.pfc_frames, 0u);
  EXPECT_EQ(o.retransmitted, 0u);
  EXPECT_LT(o.fct->max.ps(), us(1340).ps() * 102 / 100);
}

// The incast example under HPCC: the first round trip sends a window (one BDP) from each
// of the 16 senders into the receiver's port at once; from then on the senders pace below
// the link, so after that burst has drained the queue holds at most about one packet per
// sender (16 data frames of 4220 bytes), where DCQCN's sits at its marking thresholds (a
// mean of 1.6 MB here). Nothing is paused, nothing sent again. Stopped while packets are
// in flight, the run returns every INT stack they carried (a leak would throw).
TEST(FabricScenario, IncastUnderHpccKeepsTheQueueNearEmptyAndNeverPauses) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "hpcc";
  const std::string file = kExamples + "/incast.toml";
  const FabricOutcome o = run_fabric(resolve(fabric_parameters(), file,
                                             {"nic.congestion_control=hpcc", "output.timeseries_interval=1us",
                                              "output.timeseries_ports=sw0:0"}),
                                     {.scenario = "incast", .out_dir = dir.string()});
  ASSERT_TRUE(o.totals.all_finished);
  EXPECT_EQ(o.pfc_frames, 0u);
  EXPECT_EQ(o.cnps_sent, 0u);
  EXPECT_EQ(o.retransmitted, 0u);
  const CsvTable q = read_csv(dir / "queues.csv");
  double after = 0;
  std::size_t samples = 0;
  for (std::size_t r = 0; r < q.rows(); ++r)
    if (q.number(r, "time_ns") >= 300e3) {
      after = std::max(after, q.number(r, "queue_bytes"));
      ++samples;
    }
  EXPECT_GT(samples, 1000u);
  EXPECT_LE(after, 16 * 4220.0);
  const nlohmann::json j = read_json(dir / "summary.json");
  EXPECT_EQ(j["congestion_control"]["hpcc"]["eta"], "0.95");
  EXPECT_GT(j["totals"]["max_switch_queue_bytes"].get<double>(), 16 * 50e3);  // the first round trip's burst
  const FabricOutcome early = run_fabric(resolve(fabric_parameters(), file,
                                                 {"nic.congestion_control=hpcc", "sim.stop_time=50us"}),
                                         {.scenario = "incast", .out_dir = dir.string()});
  EXPECT_EQ(early.totals.flows_finished, 0u);
  EXPECT_GT(early.totals.in_flight_data_packets, 0u);
  std::filesystem::remove_all(dir);
}

// queues.csv's paused_ns is each sampled port's paused time so far: it never goes down,
// and at the last sample it is ports.csv's paused_ns less at most what the 8 priorities
// could add between that sample and the end. The congestion-spreading example pauses the
// link into its congested switch, and its hosts; every port is sampled ("*": hosts too).
TEST(FabricScenario, TheTimeSeriesFollowsEachPortsPausedTime) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "paused_series";
  const FabricOutcome o = run_fabric(resolve(fabric_parameters(), kExamples + "/congestion-spreading.toml",
                                             {"output.timeseries_interval=20us", "output.timeseries_ports=*"}),
                                     {.scenario = "congestion-spreading", .out_dir = dir.string()});
  ASSERT_GT(o.pfc_frames, 0u);
  const CsvTable q = read_csv(dir / "queues.csv"), ports = read_csv(dir / "ports.csv");
  std::map<std::pair<std::string, double>, std::pair<double, double>> last;  // port -> (time, paused)
  for (std::size_t r = 0; r < q.rows(); ++r) {
    const auto key = std::pair{q.text(r, "node"), q.number(r, "port")};
    const double t = q.number(r, "time_ns"), paused = q.number(r, "paused_ns");
    if (const auto it = last.find(key); it != last.end()) {
      EXPECT_GE(paused, it->second.second) << key.first << ":" << key.second;
    }
    last[key] = {t, paused};
  }
  const double end = static_cast<double>(o.totals.end.ps()) / 1000;
  int paused_switch_ports = 0, paused_host_ports = 0;
  for (std::size_t r = 0; r < ports.rows(); ++r) {
    const auto it = last.find({ports.text(r, "node"), ports.number(r, "port")});
    ASSERT_NE(it, last.end()) << ports.text(r, "node");
    const double total = ports.number(r, "paused_ns");
    EXPECT_LE(it->second.second, total + 1e-3);
    EXPECT_GE(it->second.second, total - 8 * (end - it->second.first) - 1e-3);
    (ports.text(r, "node")[0] == 'h' ? paused_host_ports : paused_switch_ports) += total > 0;
  }
  EXPECT_GT(paused_switch_ports, 0);
  EXPECT_GT(paused_host_ports, 0);
  for (std::size_t r = 0; r < q.rows(); ++r) {  // a host's port has no switch queue
    if (q.text(r, "node")[0] == 'h') {
      ASSERT_EQ(q.text(r, "queue_bytes"), "") << r;
    }
  }
  std::filesystem::remove_all(dir);
}

// summary.json's mean flow completion time and deepest switch queue (what `tune` can
// minimise or bound): the mean of flows.csv's fct_ns and the largest max_queue_bytes of
// ports.csv's switch ports. On the incast example the queue must have passed WRED's Kmax
// (400 KB: ECN marked it) and stayed within the 4 MiB buffer (nothing dropped).
TEST(FabricScenario, SummaryMeanAndDeepestQueueAgreeWithTheTables) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "fabric_scenario_summary_means";
  const FabricOutcome o = run_example("incast.toml", dir.string());
  ASSERT_TRUE(o.totals.all_finished);
  const CsvTable flows = read_csv(dir / "flows.csv"), ports = read_csv(dir / "ports.csv");
  double sum = 0;
  for (std::size_t r = 0; r < flows.rows(); ++r) sum += flows.number(r, "fct_ns");
  double deepest = 0;
  for (std::size_t r = 0; r < ports.rows(); ++r)
    if (ports.text(r, "node").rfind("sw", 0) == 0) deepest = std::max(deepest, ports.number(r, "max_queue_bytes"));
  const nlohmann::json j = read_json(dir / "summary.json");
  EXPECT_NEAR(std::stod(j["flows"]["fct_ns_mean"].get<std::string>()), sum / static_cast<double>(flows.rows()), 1e-3);
  EXPECT_EQ(j["totals"]["max_switch_queue_bytes"].get<double>(), deepest);
  EXPECT_GT(deepest, 400e3);
  EXPECT_LE(deepest, 4.0 * 1024 * 1024);
  // Stopped before any flow finished: no completion times (null), not times of 0.
  const FabricOutcome early = run_fabric(resolve(fabric_parameters(), kExamples + "/incast.toml",
                                                 {"sim.stop_time=50us"}),
                                         {.scenario = "incast.toml", .out_dir = dir.string()});
  ASSERT_EQ(early.totals.flows_finished, 0u);
  EXPECT_FALSE(early.fct);
  const nlohmann::json e = read_json(dir / "summary.json")["flows"];
  for (const char* k : {"fct_ns_mean", "fct_ns_p50", "fct_ns_p99", "fct_ns_max"}) EXPECT_TRUE(e[k].is_null()) << k;
  std::filesystem::remove_all(dir);
}

TEST(FabricScenario, LeafSpineExample) {
  const FabricOutcome o = run_example("leaf-spine.toml");
  EXPECT_TRUE(o.totals.all_finished);
  EXPECT_EQ(o.flows, 64u);
  EXPECT_EQ(o.lossless_drops, 0u);
  EXPECT_EQ(o.fingerprint, 0x80b333f2e4d4e2f6ull);
}

// The shipped examples, and a fat-tree, split in 2 and 4 parts (sim.partitions) on one
// thread or two: the undivided run, output for output, events and fingerprint included.
TEST(FabricScenario, ExamplesSplitInPartsGiveTheUndividedOutputs) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "fabric_scenario_parts";
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"incast", {}},
      {"leaf-spine", {}},
      {"congestion-spreading", {}},
      {"leaf-spine", {"topology.kind=fat_tree", "topology.k=4"}},
      {"incast", {"nic.congestion_control=dctcp"}},
      {"leaf-spine", {"nic.congestion_control=timely", "nic.timely.preset=ns3-vwin"}},
      {"incast", {"nic.congestion_control=swift", "nic.rx_rate=80Gbps"}},
      {"leaf-spine", {"nic.congestion_control=hpcc"}},
      // (PINT: the switches' rounding and the senders' samples draw from streams of their own)
      {"leaf-spine", {"nic.congestion_control=hpcc", "nic.hpcc.feedback=pint", "nic.hpcc.pint_prob=0.5"}},
      // (adaptive routing and flowlets read only their switch's queues and flow table)
      {"leaf-spine", {"switch.lb=adaptive", "nic.reorder_window=256"}},
      {"leaf-spine", {"switch.lb=flowlet", "switch.flowlet.timeout=1us", "switch.flowlet.choice=random"}},
      // (trimmed headers cross between parts with their bit; the ledger counts the bytes cut)
      {"incast", {"switch.pfc.enabled=false", "switch.trim.threshold=200KB", "nic.congestion_control=hpcc"}},
      // (IRN: each QP's SACKs and holes are its own; its NACKs name their PSN in the packet)
      {"leaf-spine", {"switch.lb=spray_rr", "nic.transport=irn", "nic.irn.reorder_tolerance=8"}},
      {"incast", {"switch.pfc.enabled=false", "switch.trim.threshold=50KB", "nic.transport=irn"}},
      // (a window policy over IRN: resent packets outside the window, RTT samples by Karn)
      {"incast",
       {"switch.pfc.enabled=false", "switch.trim.threshold=100KB", "nic.transport=irn",
        "nic.congestion_control=swift"}},
      // (UET: each QP's entropy picker draws from its own stream, its ACKs echo the
      // entropy; NSCC; each NIC's pull pacer grants from its own queue)
      {"leaf-spine", {"nic.transport=uet", "nic.congestion_control=nscc"}},
      {"incast",
       {"switch.pfc.enabled=false", "switch.trim.threshold=60KB", "nic.transport=uet", "nic.congestion_control=nscc",
        "nic.uet.rccc=true"}}};
  for (const auto& [example, sets] : cases) {
    const std::string file = kExamples + "/" + example + ".toml";
    const FabricOutcome whole = run_fabric(resolve(fabric_parameters(), file, sets),
                                           {.scenario = example, .out_dir = (dir / "whole").string()});
    ASSERT_TRUE(whole.totals.all_finished) << example;
    for (const auto& [parts, threads] : {std::pair{2, 1}, {2, 2}, {4, 2}}) {
      const std::string name = std::to_string(parts) + "x" + std::to_string(threads);
      std::vector<std::string> split = sets;
      split.push_back("sim.partitions=" + std::to_string(parts));
      split.push_back("sim.threads=" + std::to_string(threads));
      const FabricSetup cfg = resolve(fabric_parameters(), file, split);
      const FabricOutcome o = run_fabric(cfg, {.scenario = example, .out_dir = (dir / name).string()});
      EXPECT_EQ(o.fingerprint, whole.fingerprint) << example << " " << name;
      EXPECT_EQ(o.totals.events, whole.totals.events) << example << " " << name;
      EXPECT_EQ(o.totals.end, whole.totals.end) << example << " " << name;
      for (const char* f : {"flows.csv", "ports.csv"})
        EXPECT_TRUE(slurp(dir / name / f) == slurp(dir / "whole" / f)) << example << " " << name << " " << f;
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(FabricScenario, PartitionedRunRefusesWhatActsAcrossParts) {
  const std::string parts = "[sim]\npartitions = 2\n";
  EXPECT_EQ(testing::input_error_of([&] {
              build_network(resolve_text(fabric_parameters(), parts + "[output]\npcap = \"sw0\"\n", "p.toml"));
            }),
            "p.toml:4:8: output.pcap is not supported with sim.partitions = 2 (set at p.toml:2:14); use "
            "sim.partitions = 1");
  EXPECT_EQ(testing::input_error_of(
                [&] { build_network(resolve_text(fabric_parameters(), parts + "threads = 3\n", "t.toml")); }),
            "t.toml:3:11: sim.threads = 3: at most one thread per part (sim.partitions = 2)");
  EXPECT_EQ(testing::input_error_of([&] {
              build_network(resolve_text(fabric_parameters(), parts + "[traffic]\npattern = \"training\"\n", "a.toml"));
            }),
            // 17 hosts: the first step's 17 flows start at once, flow 17 waits for them
            "a.toml:2:14: sim.partitions = 2: flow 17 starts when others finish (traffic.pattern = training), which a "
            "partitioned run does not support");
  // Refused where the network is built, by key, not in the run.
  EXPECT_EQ(testing::input_error_of(
                [&] { build_network(resolve_text(fabric_parameters(), "[sim]\npartitions = 64\n", "h.toml")); }),
            "h.toml:2:14: sim.partitions = 64 needs a host per part at least; the topology has 17");
  EXPECT_EQ(
      testing::input_error_of([&] {
        build_network(resolve_text(fabric_parameters(), parts + "[topology]\nlink_delay = \"0ps\"\n", "d.toml"));
      }),
      "d.toml:2:14: sim.partitions = 2 needs a delay on every link (topology.link_delay = 0ps, set at d.toml:4:14)");
}

// nic.flow_end = last_ack_received: every flow finishes later than at its last byte
// placed (by an ACK's flight at least), and the outputs say which end point they hold.
TEST(FabricScenario, FlowEndPointIsChosenAndNamed) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "fabric_flow_end";
  const FabricOutcome placed = run_example("incast.toml", (dir / "placed").string());
  const FabricSetup cfg = resolve(fabric_parameters(), kExamples + "/incast.toml", {"nic.flow_end=last_ack_received"});
  const FabricOutcome acked = run_fabric(cfg, {.scenario = "incast.toml", .out_dir = (dir / "acked").string()});
  ASSERT_TRUE(placed.totals.all_finished);
  ASSERT_TRUE(acked.totals.all_finished);
  ASSERT_TRUE(acked.fct && placed.fct);
  EXPECT_GT(acked.fct->max, placed.fct->max);
  EXPECT_GT(acked.fct->p50, placed.fct->p50);
  const CsvTable flows = read_csv(dir / "acked" / "flows.csv");
  for (std::size_t r = 0; r < flows.rows(); ++r) EXPECT_EQ(flows.text(r, "finish_at"), "last_ack_received") << r;
  EXPECT_EQ(flows.rows(), 16u);
  EXPECT_NE(slurp(dir / "acked" / "summary.json").find("\"finish_at\": \"last_ack_received\""), std::string::npos);
  EXPECT_NE(slurp(dir / "placed" / "summary.json").find("\"finish_at\": \"last_byte_placed\""), std::string::npos);
}

// wire.*: summary.json states the frame format the run counted; 4 bytes less per frame
// (no 802.1Q tag) carry the same flows in less time.
TEST(FabricScenario, WireFormatIsStatedAndUsed) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "fabric_wire";
  const FabricOutcome tagged = run_example("incast.toml", (dir / "tagged").string());
  const FabricSetup cfg = resolve(fabric_parameters(), kExamples + "/incast.toml",
                                  {"wire.header_bytes=62", "wire.serialization=ns_nearest"});
  const FabricOutcome untagged = run_fabric(cfg, {.scenario = "incast.toml", .out_dir = (dir / "untagged").string()});
  ASSERT_TRUE(untagged.totals.all_finished);
  EXPECT_LT(untagged.totals.end, tagged.totals.end);
  const std::string summary = slurp(dir / "untagged" / "summary.json");
  for (const char* field :
       {"\"header_bytes\": 62", "\"min_frame_bytes\": 64", "\"gap_bytes\": 20", "\"pfc_frame_bytes\": 64",
        "\"serialization\": \"ns_nearest\"", "\"wire.header_bytes\": \"62\""})
    EXPECT_NE(summary.find(field), std::string::npos) << field;
  EXPECT_NE(slurp(dir / "tagged" / "summary.json").find("\"serialization\": \"ps_up\""), std::string::npos);
}

// output.window: one flow of 8 x 4096 bytes over one 100G link (1 us). h0's frames end
// at 335.84 ns (FIRST, 4198 wire bytes), then every 334.56 ns (4182): the 5th and 6th at
// 1674.08 and 2008.64 ns fall in [1.5, 2.2) us, 2 x 4162 frame bytes. h1 has the 2nd and
// 3rd packets placed at 1670.4 and 2004.96 ns: 8192 bytes in 700 ns, 93.623 Gb/s. The
// run's own files are as without the window.
TEST(FabricScenario, WindowCountsTheSpanOnly) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "fabric_window";
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(dir / "flows.csv");
    f << "src,dst,bytes,start,priority,qps\n0,1,32KiB,0us,3,1\n";
  }
  const std::string toml = R"(
[topology]
kind = "back_to_back"
[traffic]
pattern = "flows"
)";
  const auto run = [&](const std::string& out, const std::string& window) {
    std::vector<std::string> sets{"traffic.flows_file=" + (dir / "flows.csv").string()};
    if (!window.empty()) sets.push_back("output.window=" + window);
    const FabricSetup cfg = resolve_text(fabric_parameters(), toml, "one.toml", sets);
    return run_fabric(cfg, {.scenario = "one.toml", .out_dir = (dir / out).string()});
  };
  const FabricOutcome with = run("with", "1.5us..2.2us");
  const FabricOutcome without = run("without", "");
  EXPECT_EQ(with.fingerprint, without.fingerprint);
  EXPECT_EQ(slurp(dir / "with" / "ports.csv"), slurp(dir / "without" / "ports.csv"));
  const std::string ports = slurp(dir / "with" / "ports_window.csv");
  EXPECT_EQ(ports.substr(0, ports.find('\n')),
            "node,port,tx_bytes,tx_packets,drops,ecn_marks,pfc_pause_sent,pfc_pause_received,pfc_resume_sent,"
            "pfc_resume_received,paused_ns,max_queue_bytes,rerouted,trimmed");
  EXPECT_NE(ports.find("\nh0,0,8324,2,0,0,0,0,0,0,0.000,0,0,0\n"), std::string::npos) << ports;
  EXPECT_NE(ports.find("\nh1,0,0,0,0,0,0,0,0,0,0.000,0,0,0\n"), std::string::npos) << ports;
  EXPECT_EQ(slurp(dir / "with" / "flows_window.csv"),
            "flow_id,src,dst,delivered_bytes,goodput_gbps\n0,h0,h1,8192,93.623\n");
  const std::string summary = slurp(dir / "with" / "summary.json");
  EXPECT_NE(summary.find("\"from_ns\": \"1500.000\""), std::string::npos) << summary;
  EXPECT_NE(summary.find("\"cut_by_the_run_end\": false"), std::string::npos);
  // A span past the run's end is cut there: the flow ends at 3.6779 us (the last packet
  // placed), so [2.2, 50) us holds packets 4 to 8 at h1, 5 x 4096 bytes.
  const FabricOutcome late = run("late", "2.2us..50us");
  EXPECT_EQ(slurp(dir / "late" / "flows_window.csv").substr(0, 59),
            "flow_id,src,dst,delivered_bytes,goodput_gbps\n0,h0,h1,20480,");
  const std::string late_summary = slurp(dir / "late" / "summary.json");
  EXPECT_NE(late_summary.find("\"cut_by_the_run_end\": true"), std::string::npos);
  const std::int64_t end = late.totals.end.ps();
  EXPECT_NE(late_summary.find("\"to_ns\": \"" + std::to_string(end / 1000) + "." +
                              std::to_string(end % 1000 + 1000).substr(1) + "\""),
            std::string::npos)
      << late_summary;
  // A span reaching past an event that ends the run (the last flow finished at its
  // sender, the next event a timer 1 ms on) changes nothing: the run ends where it would
  // without the window, which is then cut there.
  const auto acked = [&](const std::string& out, const std::string& window) {
    std::vector<std::string> sets{"traffic.flows_file=" + (dir / "flows.csv").string(),
                                  "nic.flow_end=last_ack_received"};
    if (!window.empty()) sets.push_back("output.window=" + window);
    return run_fabric(resolve_text(fabric_parameters(), toml, "one.toml", sets),
                      {.scenario = "one.toml", .out_dir = (dir / out).string()});
  };
  const FabricOutcome a_with = acked("acked-with", "2.2us..50us"), a_without = acked("acked-without", "");
  EXPECT_EQ(a_with.totals.end, a_without.totals.end);
  EXPECT_EQ(a_with.totals.events, a_without.totals.events);
  EXPECT_EQ(a_with.fingerprint, a_without.fingerprint);
  EXPECT_NE(slurp(dir / "acked-with" / "summary.json").find("\"cut_by_the_run_end\": true"), std::string::npos);
  EXPECT_EQ(testing::input_error_of([&] { run("bad", "5us..2us"); }),
            "--set: output.window = '5us..2us': FROM is not before TO (expected \"FROM..TO\", two times with FROM "
            "before TO, e.g. \"150ms..300ms\")");
}

// The most a queue held over a span, checked against twin runs stopped just before an
// instant (their ports.csv has the maximum over every event before it): over [0, T) it
// is the twin's at T; over [F, T) it is the twin's at T wherever that exceeds the twin's
// at F (the peak fell in the span), and at most that elsewhere. ports.csv is the same as
// without the window.
TEST(FabricScenario, WindowQueueMaximaAgreeWithTwinRunsStoppedAtTheInstants) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "fabric_window_max";
  const std::string file = kExamples + "/incast.toml";
  const auto run = [&](const std::string& out, const std::string& key, const std::string& value) {
    run_fabric(resolve(fabric_parameters(), file, {key + "=" + value}),
               {.scenario = "incast", .out_dir = (dir / out).string()});
    return read_csv(dir / out / (key == "output.window" ? "ports_window.csv" : "ports.csv"));
  };
  const CsvTable twin5 = run("twin5", "sim.stop_time", "4999999ps");
  const CsvTable twin30 = run("twin30", "sim.stop_time", "29999999ps");
  const CsvTable upto30 = run("upto30", "output.window", "0us..30us");
  const CsvTable from5 = run("from5", "output.window", "5us..30us");
  (void)run("plain", "sim.seed", "1");
  // ports.csv keeps the whole run's maxima, the window or not.
  EXPECT_EQ(slurp(dir / "from5" / "ports.csv"), slurp(dir / "plain" / "ports.csv"));
  ASSERT_EQ(twin30.rows(), from5.rows());
  int peaks = 0, switch_ports = 0;
  for (std::size_t p = 0; p < twin30.rows(); ++p) {
    const std::string port = twin30.text(p, "node") + ":" + twin30.text(p, "port");
    const double at5 = twin5.number(p, "max_queue_bytes"), at30 = twin30.number(p, "max_queue_bytes");
    EXPECT_EQ(upto30.number(p, "max_queue_bytes"), at30) << port;
    if (at30 > at5) {
      EXPECT_EQ(from5.number(p, "max_queue_bytes"), at30) << port;
      ++peaks;
    } else {
      EXPECT_LE(from5.number(p, "max_queue_bytes"), at30) << port;
    }
    switch_ports += twin30.text(p, "node") == "sw0";
  }
  EXPECT_GT(peaks, 0);  // the incast's queue grew in the span
  EXPECT_GT(switch_ports, 0);
  std::filesystem::remove_all(dir);
}

// output.window in split runs: the undivided run's window files and summary block, for a
// span inside the run, one cut by its end, and spans in an idle stretch (the incast over
// and the collectives' coordinator not yet due: the parts are read at the instants,
// not where the run wakes next).
TEST(FabricScenario, WindowCountsAreTheSameHoweverTheRunIsSplit) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "fabric_window_split";
  const std::vector<std::string> idle{"collective.0.start=100us", "collective.0.mean_gap=300us",
                                      "collective.0.bytes=64KiB", "traffic.bytes=64KB", "nic.congestion_control=none"};
  struct Case {
    std::string example, window;
    std::vector<std::string> sets;
  };
  const std::vector<Case> cases = {{"incast", "100us..700us", {}},
                                   {"leaf-spine", "200us..2ms", {}},
                                   {"collectives", "60us..90us", idle},
                                   {"collectives", "30000001ps..150us", idle},
                                   // 1 ps after the coordinator's step at 100 us
                                   {"collectives", "100000001ps..150us", idle}};
  for (const Case& c : cases) {
    const std::string file = kExamples + "/" + c.example + ".toml";
    std::vector<std::string> sets = c.sets;
    sets.push_back("output.window=" + c.window);
    const FabricOutcome whole = run_fabric(resolve(fabric_parameters(), file, sets),
                                           {.scenario = c.example, .out_dir = (dir / "whole").string()});
    const auto window_block = [](const std::filesystem::path& d) {
      return nlohmann::json::parse(slurp(d / "summary.json"))["window"].dump();
    };
    for (const auto& [parts, threads] : {std::pair{2, 1}, {4, 2}}) {
      const std::string name = std::to_string(parts) + "x" + std::to_string(threads);
      std::vector<std::string> split = sets;
      split.push_back("sim.partitions=" + std::to_string(parts));
      split.push_back("sim.threads=" + std::to_string(threads));
      const FabricOutcome o = run_fabric(resolve(fabric_parameters(), file, split),
                                         {.scenario = c.example, .out_dir = (dir / name).string()});
      const std::string what = c.example + " " + c.window + " " + name;
      EXPECT_EQ(o.fingerprint, whole.fingerprint) << what;
      for (const char* f : {"flows.csv", "ports.csv", "ports_window.csv", "flows_window.csv"})
        EXPECT_TRUE(slurp(dir / name / f) == slurp(dir / "whole" / f)) << what << " " << f;
      EXPECT_EQ(window_block(dir / name), window_block(dir / "whole")) << what;
    }
    // What the span held, from the undivided run: the incast's span is inside the run,
    // the leaf-spine's is cut at its end, and nothing moves in the idle stretch.
    const auto block = nlohmann::json::parse(slurp(dir / "whole" / "summary.json"))["window"];
    if (c.example == "incast") {
      EXPECT_EQ(block["cut_by_the_run_end"], false);
      EXPECT_GT(block["delivered_bytes"].get<std::uint64_t>(), 0u);
    } else if (c.example == "leaf-spine") {
      EXPECT_EQ(block["cut_by_the_run_end"], true);
      EXPECT_EQ(block["to_ns"], ns_text(whole.totals.end));
    } else if (c.window == "60us..90us") {
      EXPECT_EQ(block["ports"]["tx_packets"], 0);
      EXPECT_EQ(block["ports"]["max_queue_bytes"], 0);  // the queues empty, from what they held at 60 us
      EXPECT_EQ(block["delivered_bytes"], 0);
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(FabricScenario, OutputsAreIdenticalForTheSameSeed) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "fabric_scenario_det";
  run_example("incast.toml", (dir / "a").string());
  run_example("incast.toml", (dir / "b").string());
  for (const char* f : {"flows.csv", "ports.csv"}) EXPECT_EQ(slurp(dir / "a" / f), slurp(dir / "b" / f)) << f;
  const std::string flows = slurp(dir / "a" / "flows.csv");
  EXPECT_EQ(flows.substr(0, flows.find('\n')),
            "flow_id,src,dst,bytes,start_ns,finish_ns,fct_ns,goodput_gbps,retransmitted_packets,finish_at,"
            "ideal_fct_ns,slowdown");
  EXPECT_EQ(flows.substr(flows.find('\n') + 1, 2), "0,");
  EXPECT_EQ(read_csv(dir / "a" / "flows.csv").text(0, "finish_at"), "last_byte_placed");  // the default
  const std::string ports = slurp(dir / "a" / "ports.csv");
  EXPECT_EQ(ports.substr(0, ports.find('\n')),
            "node,port,tx_bytes,tx_packets,drops,ecn_marks,pfc_pause_sent,pfc_pause_received,pfc_resume_sent,"
            "pfc_resume_received,paused_ns,max_queue_bytes,rerouted,trimmed");
  const std::string summary = slurp(dir / "a" / "summary.json");
  EXPECT_NE(summary.find("\"topology.kind\": \"single_switch\""), std::string::npos);  // resolved config echoed
  std::filesystem::remove_all(dir);
}

TEST(FabricScenario, ErrorsNameTheKeyAndLine) {
  EXPECT_EQ(testing::input_error_of(
                [] { resolve_text(fabric_parameters(), "[switch]\nbufer = \"1MiB\"\n", "x.toml"); }),
            "x.toml:2:9: unknown key 'switch.bufer' (did you mean 'switch.buffer'?)");
  EXPECT_EQ(testing::input_error_of([] {
              const FabricSetup c = resolve_text(fabric_parameters(),
                                                 "[switch.wred]\ngreen_min_threshold = \"300KB\"\n", "y.toml");
              build_network(c);
            }),
            "default: switch.wred.green_max_threshold (200KB) must be above green_min_threshold (300KB)");
  EXPECT_EQ(testing::input_error_of([] {
              const FabricSetup c = resolve_text(fabric_parameters(), "[switch.pfc]\nlossless = \"3,9\"\n", "z.toml");
              build_network(c);
            }),
            "z.toml:2:12: key 'switch.pfc.lossless': '9' is not a priority 0..7");
}

TEST(FabricScenario, PauseTooShortForItsRefreshIsRefused) {
  // 10 quanta at 100G: 51.2 ns, refreshed every 25.6 ns; a 4178-byte frame plus a PFC
  // frame take (4198 + 84) x 80 ps = 342.56 ns.
  const FabricSetup c = resolve_text(fabric_parameters(), "[switch.pfc]\npause_quanta = 10\n", "q.toml");
  EXPECT_EQ(testing::input_error_of([&] { run_fabric(c, {}); }),
            "switch sw0: a pause of 10 quanta is refreshed every 25.6ns at 100Gbps, less than a largest frame "
            "plus a PFC frame (342.56ns): raise switch.pfc.pause_quanta");
}

TEST(FabricScenario, ImpairmentWithoutALinkIsRefused) {
  const FabricSetup c = resolve_text(fabric_parameters(), "[impair]\ndrop_probability = 0.1\n", "i.toml");
  EXPECT_EQ(testing::input_error_of([&] { build_network(c); }),
            "i.toml:2:20: impair.drop_probability needs impair.link (the port whose link is impaired)");
}

TEST(FabricScenario, BufferTooSmallForHeadroomIsRefused) {
  // SONiC's formula per port at 100G with 1 us of cable: 2 x 4178 (largest frame) +
  // 2 x 12500 (bytes on the cable) + 1536 (MAC/PHY) + 3840 (peer response) = 38732 B,
  // for the one lossless priority of each of 17 ports: 658444 B.
  // Refused where the network is built, before its flows, at the key's place.
  const FabricSetup c = resolve_text(fabric_parameters(), "[switch]\nbuffer = \"64KiB\"\n", "small.toml");
  EXPECT_EQ(testing::input_error_of([&] { build_network(c); }),
            "small.toml:2:10: switch sw0: switch.buffer = 64KiB does not hold the reserves (switch.mmu.reserve = 0B "
            "per port and priority group: 0B) and the PFC headroom (658.444KB) of its 17 ports");
  // A NIC's: 2 x 4178 + 2 x 12500 + 1536 + 3840 = 38732 B of headroom in 32 KiB.
  const FabricSetup n = resolve_text(fabric_parameters(), "[nic]\nrx_buffer = \"32KiB\"\nrx_rate = \"50Gbps\"\n",
                                     "nic.toml");
  EXPECT_EQ(testing::input_error_of([&] { build_network(n); }),
            "nic.toml:2:13: host h0: nic.rx_buffer = 32KiB is smaller than its PFC headroom (38.732KB)");
}

}  // namespace
}  // namespace fabriclab::scenario
