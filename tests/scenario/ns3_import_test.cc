// import-ns3 (scenario/fabric/ns3_import.h): the HPCC ns-3 model's inputs written by hand
// for the repository's DCQCN incast examples (tests/data/ns3/*/config.txt, topology.txt,
// flow.txt) import to scenarios whose runs equal, byte for byte, those of scenarios
// written by hand from docs/fabric.md (expected.toml beside them): every output file,
// summary.json but for the echo of its input. Refused and approximated keys are named
// with their line.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "error_message.h"
#include "fabric/switch.h"
#include "scenario/fabric/fabric_scenario.h"
#include "scenario/fabric/ns3.h"
#include "scenario/fabric/ns3_import.h"
#include "scenario/report/files.h"

namespace fabriclab::scenario {
namespace {

namespace fs = std::filesystem;
using testing::input_error_of;

const std::string kData = FABRICLAB_TEST_DATA;

fs::path fresh_dir(const std::string& name) {
  const auto d = fs::path(::testing::TempDir()) / name;
  fs::remove_all(d);
  return d;
}

// summary.json without the echo of the input (the file's name and its keys) and the wall
// time.
std::string outcome_of(const fs::path& summary) {
  nlohmann::json j = nlohmann::json::parse(read_text(summary));
  j.erase("scenario");
  j.erase("config");
  j["run"].erase("wall_seconds");
  return j.dump(1);
}

// Imports tests/data/ns3/NAME/config.txt, runs it and NAME/expected.toml, and holds every
// output of the two runs equal.
void expect_import_runs_as_expected(const std::string& name) {
  const fs::path dir = fs::path(kData) / "ns3" / name;
  const fs::path imported = fresh_dir("ns3-import-" + name);
  const std::string scenario = write_ns3_import(import_ns3((dir / "config.txt").string()), imported.string());
  const fs::path a = fresh_dir("ns3-import-run-" + name), b = fresh_dir("ns3-expected-run-" + name);
  const FabricOutcome got = run_fabric(resolve(fabric_parameters(), scenario),
                                       {.scenario = "imported", .out_dir = a.string()});
  const FabricOutcome want = run_fabric(resolve(fabric_parameters(), (dir / "expected.toml").string()),
                                        {.scenario = "expected", .out_dir = b.string()});
  EXPECT_TRUE(want.totals.all_finished);
  EXPECT_GT(want.totals.events, 1000u);
  EXPECT_EQ(got.fingerprint, want.fingerprint);
  EXPECT_EQ(got.totals.events, want.totals.events);
  const auto names = [](const fs::path& d) {
    std::set<std::string> n;
    for (const auto& f : fs::directory_iterator(d)) n.insert(f.path().filename().string());
    return n;
  };
  EXPECT_EQ(names(a), names(b));
  std::size_t files = 0;
  for (const std::string& file : names(b)) {
    ++files;
    if (file == "summary.json") EXPECT_EQ(outcome_of(a / file), outcome_of(b / file));
    else EXPECT_EQ(read_text(a / file), read_text(b / file)) << file;
  }
  EXPECT_GE(files, 5u);  // summary.json, flows.csv, ports.csv, fct.txt, pfc.txt
}

// examples/ecn-cnp-pfc.toml's incast under the model's DCQCN with run.py's values: the
// import takes config.txt's values where the hand-written scenario leaves the preset's.
TEST(Ns3Import, TheDcqcnIncastRunsAsTheScenarioWrittenByHand) { expect_import_runs_as_expected("dcqcn-incast"); }

// examples/incast.toml under DCQCN with other values for every DCQCN key, 4096-byte
// packets and flows from 1 us (0.000001 s).
TEST(Ns3Import, EveryDcqcnKeyAndTheAckIntervalAreTakenAsGiven) { expect_import_runs_as_expected("incast16"); }

// A graph (switches numbered first) under HPCC: copied as topology.txt, flows renumbered
// to host indices, their dport kept -- fct.txt, read as the model writes it, shows 200
// for the two flows flow.txt labels so.
TEST(Ns3Import, AGraphUnderHpccRunsAsTheScenarioWrittenByHand) {
  expect_import_runs_as_expected("leaf-spine");
  const fs::path imported = fresh_dir("ns3-import-graph");
  const Ns3Import i = import_ns3(kData + "/ns3/leaf-spine/config.txt");
  EXPECT_EQ(i.topology, read_text(kData + "/ns3/leaf-spine-topology.txt"));
  EXPECT_EQ(i.flows, "src,dst,bytes,start,priority,qps,dport\n0,3,1000000B,10us,3,1,100\n1,2,1000000B,10us,3,1,100\n"
                     "2,0,500000B,20us,3,1,200\n3,1,500000B,20.001us,3,1,200\n");
  const fs::path out = fresh_dir("ns3-import-graph-run");
  run_fabric(resolve(fabric_parameters(), write_ns3_import(i, imported.string())),
             {.scenario = "imported", .out_dir = out.string()});
  std::istringstream fct(read_text(out / "fct.txt"));
  std::string sip, dip;
  std::uint64_t sport = 0, dport = 0, size = 0, start = 0, time = 0, standalone = 0;
  std::map<std::uint32_t, std::uint64_t> dport_of_src;
  while (fct >> sip >> dip >> sport >> dport >> size >> start >> time >> standalone) {
    const std::uint32_t src = (std::stoul(sip, nullptr, 16) >> 8) & 0xffff;
    dport_of_src[src] = dport;
    EXPECT_EQ(size, src < 2 ? 1'000'000u : 500'000u);
    EXPECT_GE(time, standalone);
  }
  EXPECT_EQ(dport_of_src, (std::map<std::uint32_t, std::uint64_t>{{0, 100}, {1, 100}, {2, 200}, {3, 200}}));
}

// A copy of dcqcn-incast with `edit` applied to config.txt (a line replaced, added or
// removed) and flow.txt replaced when given; returns the config's path.
std::string variant(const std::string& name, const std::map<std::string, std::string>& edit,
                    const std::string& flows = "") {
  const fs::path dir = fresh_dir("ns3-variant-" + name);
  fs::create_directories(dir);
  const fs::path from = fs::path(kData) / "ns3" / "dcqcn-incast";
  fs::copy_file(from / "topology.txt", dir / "topology.txt");
  std::ofstream(dir / "flow.txt") << (flows.empty() ? read_text(from / "flow.txt") : flows);
  std::istringstream in(read_text(from / "config.txt"));
  std::ofstream out(dir / "config.txt");
  std::map<std::string, std::string> left = edit;
  for (std::string line; std::getline(in, line);) {
    const std::string key = line.substr(0, line.find(' '));
    if (const auto e = left.find(key); e != left.end()) {
      if (!e->second.empty()) out << key << " " << e->second << "\n";
      left.erase(e);
    } else {
      out << line << "\n";
    }
  }
  for (const auto& [key, value] : left) out << key << " " << value << "\n";
  return (dir / "config.txt").string();
}

TEST(Ns3Import, RefusedKeysAreNamedWithTheirLines) {
  const auto error = [](const std::string& config) { return input_error_of([&] { import_ns3(config); }); };
  const std::string bad = variant("bad", {{"CC_MODE", "5"}, {"LINK_DOWN", "100 0 9"}, {"RATE_AI", ""}});
  const std::string e = error(bad);
  EXPECT_NE(e.find("config.txt:11: CC_MODE: 5: expected 1 (DCQCN), 3 (HPCC), 7 (TIMELY), 8 (DCTCP) or 10"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("config.txt:38: LINK_DOWN: a link taken down during the run is not modelled"), std::string::npos)
      << e;
  EXPECT_EQ(error(variant("unknown", {{"NOT_A_KEY", "1"}})),
            variant("unknown", {{"NOT_A_KEY", "1"}}) +
                ":48: 'NOT_A_KEY' is not a key of the HPCC ns-3 model's config.txt (scratch/third.cc)");
  const std::string twice = variant("twice", {});
  std::ofstream(twice, std::ios::app) << "CC_MODE 1\n";
  EXPECT_EQ(error(twice), twice + ":48: CC_MODE is given again (first on line 11)");
  EXPECT_EQ(error(variant("count", {{"KMAX_MAP", "2 100000000000 400"}})),
            variant("count", {{"KMAX_MAP", "2 100000000000 400"}}) + ":41: KMAX_MAP: expected 5 value(s), got 3");
  EXPECT_NE(error(variant("rate", {{"KMIN_MAP", "1 25000000000 100"}}))
                .find("config.txt:42: KMIN_MAP: no entry for 100Gbps (100000000000 bps), a rate of the topology's"),
            std::string::npos);
  EXPECT_NE(error(variant("payload", {{"PACKET_PAYLOAD_SIZE", "0"}}))
                .find("config.txt:3: PACKET_PAYLOAD_SIZE: fabriclab's MTU is 256 .. 9000 bytes"),
            std::string::npos);
  EXPECT_NE(error(variant("ai", {{"RATE_AI", ""}})).find("config.txt: RATE_AI (not given): missing"),
            std::string::npos);
  EXPECT_NE(error(variant("unit", {{"RATE_AI", "20Mbits"}})).find("RATE_AI: '20Mbits': expected a rate as ns-3"),
            std::string::npos);
  EXPECT_NE(error(variant("gain", {{"EWMA_GAIN", "0.001"}}))
                .find("EWMA_GAIN: 0.001: fabriclab's alpha gain is in "
                      "steps of 1/1024"),
            std::string::npos);
}

TEST(Ns3Import, FlowFileErrorsNameTheLine) {
  const auto error = [](const std::string& flows) {
    const std::string config = variant("flows", {}, flows);
    const std::string e = input_error_of([&] { import_ns3(config); });
    return e.substr(e.find("flow.txt"));
  };
  EXPECT_EQ(error("2\n1 0 3 100 1000 2\n2 9 3 100 1000 2\n"), "flow.txt:3: node 9 is a switch, not a host");
  EXPECT_EQ(error("2\n1 0 3 100 1000 2\n2 0 3 100 1000 1.5\n"),
            "flow.txt:3: starts at 1.5 s, before the flow above it: the model reads flow.txt in order and needs "
            "ascending start times");
  EXPECT_EQ(error("3\n1 0 3 100 1000 2\n"), "flow.txt: 1 flow(s) where the first line announces 3");
  EXPECT_EQ(error("1\n1 0 3 100 1000\n"), "flow.txt:2: expected 'src dst pg dport size start_time' (6 fields), got 5");
  EXPECT_EQ(error("1\n1 0 8 100 1000 2\n"), "flow.txt:2: pg: expected a whole number 0..7, got '8'");
  EXPECT_EQ(error("1\n1 0 3 100 1000 2e-6\n"),
            "flow.txt:2: start_time: expected a decimal number of seconds (to the ps), got '2e-6'");
}

// What fabriclab can only approximate is refused unless asked for, then listed and
// written in the scenario's header.
TEST(Ns3Import, ApproximationsNeedTheFlagAndAreListed) {
  const std::string config = variant("approx", {{"ACK_HIGH_PRIO", "1"}, {"L2_ACK_INTERVAL", "1500"}});
  const std::string e = input_error_of([&] { import_ns3(config); });
  EXPECT_NE(e.find("can only approximate these (import-ns3 --approximate takes them as said)"), std::string::npos);
  EXPECT_NE(e.find("config.txt:24: L2_ACK_INTERVAL: 1500 bytes: the model leaves a QP's packets unacknowledged "
                   "until that many have arrived"),
            std::string::npos)
      << e;
  const Ns3Import i = import_ns3(config, {.approximate = true});
  ASSERT_EQ(i.approximations.size(), 2u);
  EXPECT_NE(i.approximations[1].find("config.txt:38: ACK_HIGH_PRIO: 1: the model's hosts send ACKs on PFC class 0"),
            std::string::npos);
  EXPECT_NE(i.scenario.find("# APPROXIMATED: " + i.approximations[0]), std::string::npos);
  EXPECT_NE(i.scenario.find("ack_every = 1  # L2_ACK_INTERVAL"), std::string::npos);
}

// Each CC_MODE imports to its policy and a scenario that loads; DCTCP's Kmin = Kmax (the
// model's step marking: every packet above K) becomes WRED from K to K + 1 byte at 100 %.
TEST(Ns3Import, EveryCcModeImportsToAScenarioThatLoads) {
  struct Mode {
    const char* cc_mode;
    std::map<std::string, std::string> edit;
    std::vector<std::string> want;
  };
  const std::vector<Mode> modes = {
      {"1", {}, {"congestion_control = \"dcqcn\"", "preset = \"ns3-mlx\"", "header_bytes = 48"}},
      {"3",
       {{"HAS_WIN", "1"}, {"VAR_WIN", "1"}},
       {"congestion_control = \"hpcc\"", "eta = 0.95", "max_stage = 0", "rai = \"20Mbps\"", "fast_react = false"}},
      {"10",
       {{"HAS_WIN", "1"}, {"VAR_WIN", "1"}, {"PINT_LOG_BASE", "1.01"}},
       {"feedback = \"pint\"", "pint_log_base = 1.01", "pint_prob = 1"}},
      {"7",
       {{"HAS_WIN", "1"}, {"VAR_WIN", "1"}},
       {"congestion_control = \"timely\"", "preset = \"ns3-vwin\"", "ai = \"20Mbps\"", "hai_rate = \"200Mbps\"",
        "header_bytes = 56"}},
      {"8",
       {{"EWMA_GAIN", "0.0625"}, {"KMIN_MAP", "1 100000000000 30"}, {"KMAX_MAP", "1 100000000000 30"}},
       {"congestion_control = \"dctcp\"", "g = 0.0625", "window = \"off\"", "rate_ai = \"1000Mbps\"",
        "green_min_threshold = \"30KB\"", "green_max_threshold = \"30001B\"", "green_drop_probability = 100"}},
  };
  for (const Mode& m : modes) {
    std::map<std::string, std::string> edit = m.edit;
    edit["CC_MODE"] = m.cc_mode;
    const Ns3Import i = import_ns3(variant(std::string("mode") + m.cc_mode, edit));
    for (const std::string& w : m.want)  // whole lines: "KEY = VALUE  # source"
      EXPECT_NE(i.scenario.find("\n" + w + "  #"), std::string::npos) << m.cc_mode << ": " << w;
    const fs::path dir = fresh_dir(std::string("ns3-mode-") + m.cc_mode);
    const FabricSetup setup = resolve(fabric_parameters(), write_ns3_import(i, dir.string()));
    EXPECT_NO_THROW(check_across_keys(setup)) << m.cc_mode;
  }
}

// A config written as the model's config_doc.txt documents its keys, "KEY VALUE {meaning}",
// and '#' lines read as the bare config does.
TEST(Ns3Import, CommentsInBracesAndHashLinesAreSkipped) {
  const fs::path dir = fs::path(kData) / "ns3" / "dcqcn-incast";
  const fs::path commented = fresh_dir("ns3-commented");
  fs::create_directories(commented);
  fs::copy_file(dir / "topology.txt", commented / "topology.txt");
  fs::copy_file(dir / "flow.txt", commented / "flow.txt");
  {
    std::istringstream in(read_text(dir / "config.txt"));
    std::ofstream out(commented / "config.txt");
    out << "# the DCQCN incast, every line with its meaning\n";
    for (std::string line; std::getline(in, line);)
      out << line << "  {what " << line.substr(0, line.find(' ')) << " means}\n";
  }
  // (the same scenario, but for the path in its first line)
  const auto body = [](const std::string& toml) { return toml.substr(toml.find("\n[")); };
  EXPECT_EQ(body(import_ns3((commented / "config.txt").string()).scenario),
            body(import_ns3((dir / "config.txt").string()).scenario));
}

// Switch ports at two rates, as the model's fat-trees have them (100G to the hosts, 400G
// between the switches): the NIC rate's thresholds for all, the 400G ports' by rate
// (KMIN_MAP 400, KMAX_MAP 1600 KB there), their MMU shift one (400 > 100, 200 > 100, then
// 100 is not: 3 - 2), every headroom 3 x its own BDP (100G x 1 us: 37 500 bytes; 400G x
// 2 us: 300 000) -- nothing approximated.
TEST(Ns3Import, SwitchPortsAtTwoRatesKeepTheirOwnThresholdsAndHeadroom) {
  const fs::path dir = fresh_dir("ns3-two-rates");
  fs::create_directories(dir);
  std::ofstream(dir / "topology.txt") << "6 2 5\n4 5\n0 4 100Gbps 1us 0\n1 4 100Gbps 1us 0\n2 5 100Gbps 1us 0\n"
                                         "3 5 100Gbps 1us 0\n4 5 400Gbps 2us 0\n";
  std::ofstream(dir / "flow.txt") << "2\n0 2 3 100 100000 0\n1 3 3 100 100000 0\n";
  const std::string config = variant("two-rates", {{"KMIN_MAP", "2 100000000000 100 400000000000 400"},
                                                   {"KMAX_MAP", "2 100000000000 400 400000000000 1600"},
                                                   {"PMAX_MAP", "2 100000000000 0.2 400000000000 0.2"}});
  fs::copy_file(dir / "topology.txt", fs::path(config).parent_path() / "topology.txt",
                fs::copy_options::overwrite_existing);
  fs::copy_file(dir / "flow.txt", fs::path(config).parent_path() / "flow.txt", fs::copy_options::overwrite_existing);
  const Ns3Import i = import_ns3(config);
  EXPECT_TRUE(i.approximations.empty());
  for (const char* want : {"green_min_threshold = \"100KB\"", "green_max_threshold = \"400KB\"",
                           "green_drop_probability = 20", "by_rate = \"400Gbps=400KB/1600KB/20\"", "dynamic_th = -3",
                           "dynamic_th_by_rate = \"400Gbps=-1\"", "headroom = \"ns3\""})
    EXPECT_NE(i.scenario.find("\n" + std::string(want) + "  #"), std::string::npos) << want;
  const FabricSetup setup = resolve(fabric_parameters(), write_ns3_import(i, (dir / "imported").string()));
  const auto net = build_network(setup);
  net->prepare();
  ASSERT_EQ(net->switch_count(), 2u);
  const fabric::Switch& sw = net->switch_at(0);  // node 4: hosts 0 and 1, then the 400G link
  ASSERT_EQ(sw.port_count(), 3u);
  EXPECT_EQ(sw.headroom_of(0), 37'500);
  EXPECT_EQ(sw.headroom_of(2), 300'000);
  EXPECT_TRUE(run_fabric(setup, {.scenario = "two-rates", .out_dir = ""}).totals.all_finished);
}

// Rates as ns-3's DataRate writes them, exact to the bit per second.
TEST(Ns3Import, DataRatesInNs3Units) {
  EXPECT_EQ(fabric::parse_ns3_data_rate("50Mb/s").bps(), 50'000'000);
  EXPECT_EQ(fabric::parse_ns3_data_rate("2.5Gbps").bps(), 2'500'000'000);
  EXPECT_EQ(fabric::parse_ns3_data_rate("100kb/s").bps(), 100'000);
  EXPECT_EQ(fabric::parse_ns3_data_rate("1KB/s").bps(), 8'000);
  EXPECT_EQ(fabric::parse_ns3_data_rate("12bps").bps(), 12);
  EXPECT_NE(input_error_of([] { fabric::parse_ns3_data_rate("Gbps"); }).find("expected a rate as ns-3"),
            std::string::npos);
}

}  // namespace
}  // namespace fabriclab::scenario
