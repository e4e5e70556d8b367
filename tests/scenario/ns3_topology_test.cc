// topology.kind = "ns3": the HPCC ns-3 model's topology.txt (fabric/topology.h). The
// incast example's fabric written as a topology.txt by hand (tests/data/ns3) runs as the
// example does, event for event -- with ECN marking off: a switch's random stream is named
// after it (sw0 there, n17 here), so WRED's draws would differ; a file that numbers its
// switches first is renumbered hosts first; a malformed file is an error naming its line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "error_message.h"
#include "fabric/topology.h"
#include "scenario/fabric/fabric_scenario.h"
#include "scenario/report/files.h"

namespace fabriclab::scenario {
namespace {

namespace fs = std::filesystem;
using testing::input_error_of;

const std::string kExamples = FABRICLAB_EXAMPLES;
const std::string kData = FABRICLAB_TEST_DATA;

fs::path fresh_dir(const std::string& name) {
  const auto d = fs::path(::testing::TempDir()) / name;
  fs::remove_all(d);
  return d;
}

TEST(Ns3Topology, TheIncastExampleFromATopologyFileRunsAsTheExample) {
  const auto a = fresh_dir("ns3-topo-shape"), b = fresh_dir("ns3-topo-file");
  const FabricOutcome shape = run_fabric(resolve(fabric_parameters(), kExamples + "/incast.toml",
                                                 {"switch.wred.ecn=ecn_none"}),
                                         {.scenario = "incast.toml", .out_dir = a.string()});
  const FabricOutcome file = run_fabric(resolve(fabric_parameters(), kExamples + "/incast.toml",
                                                {"switch.wred.ecn=ecn_none", "topology.kind=ns3",
                                                 "topology.file=" + kData + "/ns3/incast-topology.txt"}),
                                        {.scenario = "incast.toml", .out_dir = b.string()});
  EXPECT_EQ(shape.pfc_frames, 616u);
  EXPECT_EQ(file.fingerprint, shape.fingerprint);
  EXPECT_EQ(file.totals.events, shape.totals.events);
  EXPECT_EQ(read_text(b / "flows.csv"), read_text(a / "flows.csv"));
  // The switch is named by its node id: n17 for sw0.
  std::string ports = read_text(a / "ports.csv");
  for (std::size_t at = ports.find("\nsw0,"); at != std::string::npos; at = ports.find("\nsw0,", at + 1))
    ports.replace(at + 1, 3, "n17");
  EXPECT_EQ(read_text(b / "ports.csv"), ports);
}

TEST(Ns3Topology, SwitchesNumberedFirstAreRenumberedAfterTheHosts) {
  const fabric::Ns3Topology t = fabric::read_ns3_topology(kData + "/ns3/leaf-spine-topology.txt");
  EXPECT_EQ(t.nodes, 8u);
  EXPECT_EQ(t.hosts(), 4u);
  fabric::Network net({}, {}, 1);
  fabric::TopologySpec spec;
  spec.kind = fabric::TopologyKind::ns3;
  spec.file = kData + "/ns3/leaf-spine-topology.txt";
  EXPECT_EQ(fabric::host_count(spec), 4u);
  fabric::build_topology(net, spec);
  ASSERT_EQ(net.host_count(), 4u);
  ASSERT_EQ(net.switch_count(), 4u);
  EXPECT_EQ(net.switch_at(0).name(), "n0");
  EXPECT_EQ(net.switch_at(3).name(), "n3");
  // Leaf n0 has its hosts (node ids 4, 5: h0, h1) on ports 0 and 1, the spines on 2 and 3,
  // as the file lists its links.
  EXPECT_EQ(net.switch_at(0).port(0).peer()->owner().name(), "h0");
  EXPECT_EQ(net.switch_at(0).port(3).peer()->owner().name(), "n3");
  // h0 -> h3 crosses leaf, spine, leaf: four links of 100G and 1 us. 10 000 bytes are
  // 10 274 on the wire (tests/fabric/ideal_fct_test.cc): 4 us + 3 x 335.84 + 821.92 ns.
  net.add_flow({.src = 0, .dst = 3, .bytes = 10'000, .start = {}});
  net.run(ms(1));
  EXPECT_TRUE(net.flows()[0].finished());
  EXPECT_EQ(net.ideal_fct(net.flows()[0].spec), ps(5'829'440));
  EXPECT_EQ(net.flows()[0].finish - net.flows()[0].started, ps(5'829'440));
}

TEST(Ns3Topology, MalformedFilesAreNamedByLine) {
  const auto dir = fresh_dir("ns3-topo-bad");
  fs::create_directories(dir);
  const auto error_of = [&](const std::string& text) {
    const std::string path = (dir / "t.txt").string();
    std::ofstream(path) << text;
    const std::string e = input_error_of([&] { fabric::read_ns3_topology(path); });
    return e.substr(e.find("t.txt") == std::string::npos ? 0 : e.find("t.txt"));
  };
  EXPECT_EQ(
      error_of("3 1 2\n2\n0 2 100Gbps 1us 0.01\n1 2 100Gbps 1us 0\n"),
      "t.txt:3: error rate 0.01: random loss on every link is not modelled (impair.* drops on one link); write 0");
  EXPECT_EQ(error_of("4 2 3\n2 3\n0 2 100Gbps 1us 0\n0 3 100Gbps 1us 0\n1 2 100Gbps 1us 0\n"),
            "t.txt:4: host node 0 has a second link: a host has one NIC port");
  EXPECT_EQ(error_of("3 1 2\n2\n0 2 100Gbps 1us 0\n1 9 100Gbps 1us 0\n"),
            "t.txt:4: a link's second node: expected a whole number 0..2, got '9'");
  EXPECT_EQ(error_of("3 1 2\n2\n0 2 100Gbps 1us 0\n1 2 100Gbps 1us\n"),
            "t.txt:5: the file ends where a link's error rate was expected");
  EXPECT_EQ(error_of("3 1 1\n2\n0 2 100Gbps 1us 0\n"), "t.txt: host node 1 has no link");
  EXPECT_EQ(error_of("3 1 2\n2\n0 2 100Gbps 1us 0\n1 2 100Gbps 1us 0\n1 2\n"),
            "t.txt:5: '1' after the 2 links the first line announces");
  EXPECT_EQ(error_of("3 1 2\n2\n0 2 fast 1us 0\n1 2 100Gbps 1us 0\n").substr(0, 8), "t.txt:3:");
  EXPECT_EQ(input_error_of([] { fabric::read_ns3_topology(""); }),
            "topology.kind = \"ns3\" needs topology.file, the ns-3 model's topology.txt");
}

}  // namespace
}  // namespace fabriclab::scenario
