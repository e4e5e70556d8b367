// Collectives in a fabric scenario: [[collective]] entries read as a list of tables (each
// key declared once; --set reaches an entry as collective.N.KEY), ranks placed on hosts,
// and a whole run whose collectives.csv row is checked against a timeline by hand.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "error_message.h"
#include "offload/assignment.h"
#include "offload/collectives.h"
#include "offload/schedule_io.h"
#include "scenario/fabric/fabric_scenario.h"
#include "scenario/report/csv_table.h"
#include "scenario/report/files.h"

namespace fabriclab::scenario {
namespace {

using testing::input_error_of;

const char* kTwo = R"(
[topology]
kind = "single_switch"
hosts = 8

[traffic]
pattern = "none"

[[collective]]
name = "ar"
algorithm = "recursive_doubling"
bytes = "64KiB"

[[collective]]
collective = "alltoall"
algorithm = "pairwise"
ranks = "0-3"
policy = "fallback"
iterations = 3
)";

TEST(CollectivesScenario, EntriesAreAListOfTablesWithTheirOwnKeys) {
  const FabricSetup s = fabric_parameters().resolve_text(kTwo, "two.toml", {"collective.1.bytes=8KiB"});
  ASSERT_EQ(s.value.collectives.size(), 2u);
  const CollectiveSpec& a = s.value.collectives[0];
  EXPECT_EQ(a.name, "ar");
  EXPECT_EQ(a.collective, "allreduce");  // the default
  EXPECT_EQ(a.algorithm, "recursive_doubling");
  EXPECT_EQ(a.bytes, KiB(64));
  const CollectiveSpec& b = s.value.collectives[1];
  EXPECT_EQ(b.collective, "alltoall");
  EXPECT_EQ(b.bytes, KiB(8));
  EXPECT_EQ(b.policy, nicmodel::Policy::fallback);
  EXPECT_EQ(b.iterations, 3u);
  EXPECT_EQ(s.config.origin("collective.0.bytes"), "two.toml:12:9");
  EXPECT_EQ(s.config.origin("collective.1.bytes"), "--set");
  EXPECT_EQ(s.config.origin("collective.1.root"), "default");
  EXPECT_EQ(s.config.shown("collective.1.ranks"), "0-3");
  EXPECT_EQ(s.config.echo()["collective.0.strategy"], "optimized");
  // An entry number written "01" is entry 1, and beats the file as any override does.
  const FabricSetup z = fabric_parameters().resolve_text(kTwo, "two.toml", {"collective.01.bytes=2KiB"});
  EXPECT_EQ(z.value.collectives[1].bytes, KiB(2));
  EXPECT_EQ(z.config.origin("collective.1.bytes"), "--set");
  // An empty list is no entries.
  EXPECT_TRUE(fabric_parameters().resolve_text("collective = []\n", "e.toml").value.collectives.empty());
}

TEST(CollectivesScenario, EntryErrorsNameTheEntryAndItsPlace) {
  EXPECT_EQ(input_error_of([] { fabric_parameters().resolve_text(kTwo, "two.toml", {"collective.2.bytes=1KiB"}); }),
            "--set 'collective.2.bytes': the scenario has 2 [[collective]] entries (numbered from 0)");
  EXPECT_EQ(input_error_of([] { fabric_parameters().resolve_text("[[collective]]\nbites = \"1KiB\"\n", "x.toml"); }),
            "x.toml:2:9: unknown key 'collective.0.bites' (did you mean 'collective.0.bytes'?)");
  EXPECT_EQ(input_error_of([] { fabric_parameters().resolve_text("collective = 3\n", "x.toml"); }),
            "x.toml:1:14: key 'collective' must be a list of tables, written [[collective]]");
  EXPECT_EQ(input_error_of([] { fabric_parameters().resolve_text("[[collective]]\niterations = 0\n", "x.toml"); }),
            "x.toml:2:14: key 'collective.0.iterations': 0 is below the minimum 1");
}

TEST(CollectivesScenario, RanksArePlacedOnHosts) {
  fabric::TopologySpec ls;
  ls.kind = fabric::TopologyKind::leaf_spine;
  ls.leaves = 4;
  ls.hosts_per_leaf = 4;
  using V = std::vector<std::int32_t>;
  EXPECT_EQ(place_ranks("all", Placement::linear, ls, 4, 1, 0, "c"), (V{0, 1, 2, 3}));
  EXPECT_EQ(place_ranks("3", Placement::linear, ls, 16, 1, 0, "c"), (V{0, 1, 2}));
  EXPECT_EQ(place_ranks("5-7", Placement::linear, ls, 16, 1, 0, "c"), (V{5, 6, 7}));
  EXPECT_EQ(place_ranks("9,2,4", Placement::linear, ls, 16, 1, 0, "c"), (V{9, 2, 4}));
  // One per leaf: the first host of each of the 4 leaves, then the second of each.
  EXPECT_EQ(place_ranks("6", Placement::one_per_leaf, ls, 16, 1, 0, "c"), (V{0, 4, 8, 12, 1, 5}));
  const V r = place_ranks("8", Placement::random, ls, 16, 7, 0, "c");
  EXPECT_EQ(r, place_ranks("8", Placement::random, ls, 16, 7, 0, "c"));  // from the seed
  EXPECT_EQ(std::set<std::int32_t>(r.begin(), r.end()).size(), 8u);
  EXPECT_NE(r, place_ranks("8", Placement::linear, ls, 16, 7, 0, "c"));
  EXPECT_EQ(input_error_of([&] { place_ranks("1,1", Placement::linear, ls, 16, 1, 0, "c"); }),
            "c: ranks '1,1': a host is named twice");
  EXPECT_EQ(input_error_of([&] { place_ranks("17", Placement::linear, ls, 16, 1, 0, "c"); }),
            "c: ranks '17': expected \"all\", a count 2..16, A-B or a list");
  fabric::TopologySpec one;
  EXPECT_EQ(input_error_of([&] { place_ranks("4", Placement::one_per_leaf, one, 16, 1, 0, "c"); }),
            "c: placement one_per_leaf needs a leaf_spine or fat_tree topology");
}

TEST(CollectivesScenario, BusBandwidthFollowsNcclTests) {
  EXPECT_DOUBLE_EQ(busbw_factor("allreduce", 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(busbw_factor("alltoall", 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(busbw_factor("allgather", 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(busbw_factor("bcast", 8), 1.0);
  // The planner's alltoall and allgather bytes are per block; nccl-tests' size is n blocks.
  EXPECT_EQ(nccl_size("alltoall", 1024, 8), 8192);
  EXPECT_EQ(nccl_size("allgather", 1024, 4), 4096);
  EXPECT_EQ(nccl_size("allreduce", 1024, 8), 1024);
}

const char* kBroadcast = R"(
[topology]
kind = "back_to_back"
host_rate = "100Gbps"
link_delay = "1us"
[traffic]
pattern = "none"
[[collective]]
name = "b"
collective = "bcast"
algorithm = "binomial"
bytes = "4096B"
)";

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(CollectivesScenario, ABroadcastRowByHand) {
  // Back-to-back hosts, 100G, 1 us: the root's put is placed at 1385.84 ns, its ACK is back
  // at 2393.04 ns (see tests/nicengine), and the host, polling every 1 us, sees it at 3 us.
  // algbw = 4096 B / 3000 ns = 1.3653 GB/s; a broadcast's busbw is the same.
  const FabricSetup s = fabric_parameters().resolve_text(kBroadcast, "b.toml");
  const auto dir = std::filesystem::temp_directory_path() / "fabriclab_collectives_scenario_test";
  const FabricOutcome o = run_fabric(s, {.scenario = "b.toml", .out_dir = dir.string()});
  ASSERT_EQ(o.collectives.size(), 1u);
  EXPECT_EQ(slurp(dir / "collectives.csv"),
            "name,iteration,collective,algorithm,strategy,ranks,bytes,issue_ns,start_ns,done_ns,stall_ns,completion_ns,"
            "path,counters_max_per_nic,algbw_GBps,busbw_GBps,messages,retransmitted_packets\n"
            "b,0,bcast,binomial,optimized,2,4096,0.000,0.000,3000.000,0.000,3000.000,offloaded,1,1.3653,1.3653,1,0\n");
  std::filesystem::remove_all(dir);
}

// summary.json's bus bandwidth (what `tune` can maximise): the slowest and the mean of
// the collectives that move data, each worked out from its row's bytes, ranks and
// completion by nccl-tests' rule; a barrier (no bandwidth) is left out, not counted as 0.
TEST(CollectivesScenario, TheSummarysBusBandwidthIsTheSlowestAndTheMeanOfTheRows) {
  const std::string scenario = std::string(kBroadcast) + R"(
[[collective]]
name = "big"
collective = "bcast"
algorithm = "binomial"
bytes = "64KiB"
[[collective]]
name = "sum"
collective = "allreduce"
algorithm = "ring"
bytes = "32KiB"
[[collective]]
name = "z"
collective = "barrier"
algorithm = "dissemination"
)";
  const auto dir = std::filesystem::temp_directory_path() / "fabriclab_collectives_busbw_test";
  const FabricOutcome o = run_fabric(fabric_parameters().resolve_text(scenario, "b.toml"),
                                     {.scenario = "b.toml", .out_dir = dir.string()});
  ASSERT_EQ(o.collectives.size(), 4u);
  const CsvTable rows = read_csv(dir / "collectives.csv");
  std::vector<double> busbw;
  for (std::size_t r = 0; r < rows.rows(); ++r) {
    const std::string c = rows.text(r, "collective");
    ASSERT_FALSE(rows.text(r, "completion_ns").empty()) << r;
    if (c == "barrier") continue;
    const double bytes = rows.number(r, "bytes"), n = rows.number(r, "ranks");
    const double factor = c == "allreduce" ? 2 * (n - 1) / n : 1;       // bcast: 1
    busbw.push_back(bytes / rows.number(r, "completion_ns") * factor);  // bytes per ns = GB/s
  }
  ASSERT_EQ(busbw.size(), 3u);
  const nlohmann::json j = read_json(dir / "summary.json")["collectives"];
  EXPECT_NEAR(j["busbw_GBps_min"].get<double>(), *std::min_element(busbw.begin(), busbw.end()), 1e-9);
  EXPECT_NEAR(j["busbw_GBps_mean"].get<double>(), (busbw[0] + busbw[1] + busbw[2]) / 3, 1e-9);
  EXPECT_GT(j["busbw_GBps_min"].get<double>(), 0);
  std::filesystem::remove_all(dir);
}

TEST(CollectivesScenario, TracedOperationsByHand) {
  // The broadcast above with every operation's times (tests/nicengine has the timeline):
  // the put fires at the start and completes at its ACK (2393.04 ns); the arrival is
  // ready when its message is placed (1385.84 ns) and done after 150 ns of NIC time; each
  // rank's host_wait fires as its counter is met.
  const FabricSetup s = fabric_parameters().resolve_text(kBroadcast, "b.toml", {"output.ops=true"});
  const auto dir = std::filesystem::temp_directory_path() / "fabriclab_collectives_ops_test";
  run_fabric(s, {.scenario = "b.toml", .out_dir = dir.string()});
  EXPECT_EQ(slurp(dir / "ops.csv"), "name,iteration,op,rank,kind,ready_ns,fired_ns,completed_ns\n"
                                    "b,0,0,0,put,0.000,0.000,2393.040\n"
                                    "b,0,1,1,arrival,1385.840,1385.840,1535.840\n"
                                    "b,0,2,0,host_wait,2393.040,2393.040,2393.040\n"
                                    "b,0,3,1,host_wait,1535.840,1535.840,1535.840\n");
  std::filesystem::remove_all(dir);
}

TEST(CollectivesScenario, AStreamKeepsAtMostInFlightInstancesRunning) {
  // Six broadcasts, two at a time: instance i is issued when instance i-2 completes.
  FabricSetup s = fabric_parameters().resolve_text(kBroadcast, "b.toml",
                                                   {"collective.0.iterations=6", "collective.0.in_flight=2"});
  FabricOutcome o = run_fabric(s, {.scenario = "b.toml", .out_dir = ""});
  ASSERT_EQ(o.collectives.size(), 6u);
  EXPECT_EQ(o.collectives[0].result.job.issue, Time());
  EXPECT_EQ(o.collectives[1].result.job.issue, Time());
  for (std::size_t i = 2; i < 6; ++i) {
    ASSERT_TRUE(o.collectives[i - 2].result.done());
    EXPECT_EQ(o.collectives[i].result.job.issue, o.collectives[i - 2].result.job.done) << i;
    EXPECT_EQ(o.collectives[i].iteration, i);
  }
  // Poisson issue times from `start` (in_flight as large as the stream: each at its own
  // time), strictly later one after another, the same in every run.
  s = fabric_parameters().resolve_text(kBroadcast, "b.toml",
                                       {"collective.0.iterations=5", "collective.0.in_flight=5",
                                        "collective.0.mean_gap=20us", "collective.0.start=1us"});
  o = run_fabric(s, {.scenario = "b.toml", .out_dir = ""});
  const FabricOutcome again = run_fabric(s, {.scenario = "b.toml", .out_dir = ""});
  EXPECT_EQ(o.collectives[0].result.job.issue, us(1));
  for (std::size_t i = 1; i < 5; ++i) {
    EXPECT_GT(o.collectives[i].result.job.issue, o.collectives[i - 1].result.job.issue) << i;
    EXPECT_EQ(o.collectives[i].result.job.issue, again.collectives[i].result.job.issue) << i;
    EXPECT_TRUE(o.collectives[i].result.done()) << i;
  }
}

TEST(CollectivesScenario, AScheduleFileRunsAsTheAlgorithmItWasBuiltFrom) {
  // `fabriclab counters --json` writes the assigned schedule; a [[collective]] that names
  // it runs exactly as the entry that builds the same algorithm, and a file whose rank
  // count differs from the hosts given is refused naming both.
  offload::BuildOptions b;
  b.ranks = 4;
  b.bytes = 64 << 10;
  const auto dir = std::filesystem::temp_directory_path() / "fabriclab_collectives_schedule_test";
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "rd4.json").string();
  offload::write_schedule_json(offload::assign_counters(offload::build_schedule("allreduce", "recursive_doubling", b),
                                                        offload::Strategy::optimized),
                               file);
  const std::string base = R"(
[topology]
kind = "single_switch"
hosts = 4
[traffic]
pattern = "none"
[[collective]]
)";
  const FabricOutcome built = run_fabric(
      fabric_parameters().resolve_text(base + "algorithm = \"recursive_doubling\"\nbytes = \"64KiB\"\n", "a.toml"),
      {.scenario = "a.toml", .out_dir = ""});
  const FabricOutcome read = run_fabric(fabric_parameters().resolve_text(base + "schedule = \"" + file + "\"\n",
                                                                         "b.toml"),
                                        {.scenario = "b.toml", .out_dir = ""});
  ASSERT_TRUE(built.collectives.at(0).result.done());
  EXPECT_EQ(read.collectives.at(0).result.job.done, built.collectives.at(0).result.job.done);
  EXPECT_EQ(read.collectives.at(0).algorithm, "recursive_doubling");
  EXPECT_EQ(read.fingerprint, built.fingerprint);
  EXPECT_EQ(input_error_of([&] {
              run_fabric(fabric_parameters().resolve_text(base + "schedule = \"" + file + "\"\nranks = \"0-2\"\n",
                                                          "c.toml"),
                         {.scenario = "c.toml", .out_dir = ""});
            }),
            "c.toml:8:12: collective.0: " + file + " has 4 ranks, but 3 hosts are given (ranks = ...)");
  std::filesystem::remove_all(dir);
}

// Gradient buckets: the allreduce of 1 MiB as 4 buckets of 256 KiB, issued together
// when the compute ends. A ring bucket on 8 GPUs holds 2(P-1) = 14 counters per NIC
// (local analysis): with 16 counters one bucket runs at a time, so under stall each
// starts when the one before it is done; under fallback the first is offloaded and the
// three others run in software at once; with 64 counters all four start at the issue.
TEST(CollectivesScenario, TrainingBucketsStallOrFallBackWhenCountersAreShort) {
  const char* scenario = R"(
[topology]
kind = "single_switch"
hosts = 8
[traffic]
pattern = "training"
bytes = "1MiB"
training.iterations = 1
training.distribution_bytes = "0B"
training.compute = "5us"
training.algorithm = "ring"
training.buckets = 4
)";
  const auto run = [&](std::vector<std::string> sets) {
    const auto dir = std::filesystem::temp_directory_path() / "fabriclab_buckets_test";
    std::filesystem::remove_all(dir);
    run_fabric(fabric_parameters().resolve_text(scenario, "t.toml", sets),
               {.scenario = "t.toml", .out_dir = dir.string()});
    return read_csv(dir / "collectives.csv");
  };
  const CsvTable stall = run({"nic.counters=16"});
  ASSERT_EQ(stall.rows(), 4u);
  for (std::size_t b = 0; b < 4; ++b) {
    SCOPED_TRACE(b);
    EXPECT_EQ(stall.text(b, "name"), "allreduce." + std::to_string(b));
    EXPECT_EQ(stall.number(b, "bytes"), 262144);
    EXPECT_EQ(stall.number(b, "counters_max_per_nic"), 14);
    EXPECT_EQ(stall.text(b, "path"), "offloaded");
    EXPECT_NEAR(stall.number(b, "issue_ns"), 5000, 1e-3);  // compute after the start
    if (b > 0) {
      EXPECT_GE(stall.number(b, "start_ns"), stall.number(b - 1, "done_ns"));
    }
  }
  EXPECT_GT(stall.number(3, "stall_ns"), 0);
  const CsvTable fallback = run({"nic.counters=16", "traffic.training.policy=fallback"});
  EXPECT_EQ(fallback.text(0, "path"), "offloaded");
  for (std::size_t b = 1; b < 4; ++b) {
    EXPECT_EQ(fallback.text(b, "path"), "software") << b;
    EXPECT_NEAR(fallback.number(b, "start_ns"), 5000, 1e-3) << b;
  }
  const CsvTable plenty = run({"nic.counters=64"});
  for (std::size_t b = 0; b < 4; ++b) {
    EXPECT_EQ(plenty.text(b, "path"), "offloaded") << b;
    EXPECT_NEAR(plenty.number(b, "start_ns"), 5000, 1e-3) << b;
  }
  EXPECT_EQ(input_error_of([&] { run({"traffic.training.buckets=3"}); }),
            "traffic.training.buckets = 3: traffic.bytes = 1MiB does not split into 3 buckets of whole 8-byte "
            "elements");
}

TEST(CollectivesScenario, TrainingRunsThePlannersAllreduceBetweenItsDistributions) {
  // Two iterations on 8 GPUs: iteration t's allreduce (a planner ring, offloaded) is
  // issued `compute` after the last of its distribution flows is placed, and iteration 1's
  // distribution starts when allreduce 0 is done. Read back from flows.csv and
  // collectives.csv.
  const char* scenario = R"(
[topology]
kind = "single_switch"
hosts = 8
[traffic]
pattern = "training"
bytes = "1MiB"
training.iterations = 2
training.distribution_bytes = "256KB"
training.compute = "5us"
training.algorithm = "ring"
)";
  const auto dir = std::filesystem::temp_directory_path() / "fabriclab_training_engine_test";
  const FabricOutcome o = run_fabric(fabric_parameters().resolve_text(scenario, "t.toml"),
                                     {.scenario = "t.toml", .out_dir = dir.string()});
  ASSERT_EQ(o.collectives.size(), 2u);
  EXPECT_EQ(o.flows, 16u);  // the distributions only
  const CsvTable flows = read_csv(dir / "flows.csv"), coll = read_csv(dir / "collectives.csv");
  const auto last_finish = [&](std::size_t first) {
    double t = 0;
    for (std::size_t f = first; f < first + 8; ++f) t = std::max(t, flows.number(f, "finish_ns"));
    return t;
  };
  for (std::size_t it = 0; it < 2; ++it) {
    SCOPED_TRACE(it);
    EXPECT_EQ(coll.text(it, "name"), "allreduce");
    EXPECT_EQ(coll.text(it, "algorithm"), "ring");
    EXPECT_EQ(coll.text(it, "path"), "offloaded");
    EXPECT_NEAR(coll.number(it, "issue_ns"), last_finish(8 * it) + 5000, 1e-3);
  }
  for (std::size_t f = 8; f < 16; ++f) EXPECT_NEAR(flows.number(f, "start_ns"), coll.number(0, "done_ns"), 1e-3);
  std::filesystem::remove_all(dir);

  // With an all-to-all phase: each all-to-all is issued when its allreduce is done, and
  // the next distribution waits for the all-to-all.
  const auto dir2 = std::filesystem::temp_directory_path() / "fabriclab_training_a2a_test";
  const FabricOutcome a2a = run_fabric(fabric_parameters().resolve_text(scenario, "t.toml",
                                                                        {"traffic.training.alltoall_bytes=4KiB"}),
                                       {.scenario = "t.toml", .out_dir = dir2.string()});
  ASSERT_EQ(a2a.collectives.size(), 4u);
  const CsvTable flows2 = read_csv(dir2 / "flows.csv");
  for (std::size_t it = 0; it < 2; ++it) {
    const auto& ar = a2a.collectives[2 * it];
    const auto& aa = a2a.collectives[2 * it + 1];
    EXPECT_EQ(ar.name, "allreduce");
    EXPECT_EQ(aa.name, "alltoall");
    EXPECT_EQ(aa.algorithm, "pairwise");
    ASSERT_TRUE(aa.result.done());
    EXPECT_EQ(aa.result.job.issue, ar.result.job.done);
  }
  for (std::size_t f = 8; f < 16; ++f)
    EXPECT_NEAR(flows2.number(f, "start_ns") * 1000, static_cast<double>(a2a.collectives[1].result.job.done.ps()), 1);
  std::filesystem::remove_all(dir2);

  // Without a distribution the allreduces follow one another, `compute` apart.
  const FabricOutcome chained = run_fabric(fabric_parameters().resolve_text(scenario, "t.toml",
                                                                            {"traffic.training.distribution_bytes=0B"}),
                                           {.scenario = "t.toml", .out_dir = ""});
  ASSERT_EQ(chained.flows, 0u);
  EXPECT_EQ(chained.collectives[0].result.job.issue, us(5));
  EXPECT_EQ(chained.collectives[1].result.job.issue, chained.collectives[0].result.job.done + us(5));
  EXPECT_TRUE(chained.collectives[1].result.done());

  // The distribution phase acts across parts with no delay a window could hold.
  EXPECT_EQ(input_error_of([&] {
              run_fabric(fabric_parameters().resolve_text(scenario, "t.toml", {"sim.partitions=2"}),
                         {.scenario = "t.toml", .out_dir = ""});
            }),
            "t.toml:9:31: traffic.training.distribution_bytes = 250KiB is not supported with sim.partitions = 2 (set "
            "at --set): its flows start when collectives complete, and the next allreduce when they are placed; set "
            "it to 0B or use sim.partitions = 1");
}

// The shipped example's collectives (on connections: messages posted during the run)
// and its incast under IRN, PFC off, host h1's link losing 1 % of its data packets: every
// collective completes, and the flows resend no more packets than were lost -- one path,
// no reordering: each resend stands for a loss (go-back-N resends from each loss on).
TEST(CollectivesScenario, IrnCompletesTheCollectivesOverALossyLink) {
  const std::string example = std::string(FABRICLAB_EXAMPLES) + "/collectives.toml";
  const auto run = [&](const std::string& transport) {
    return run_fabric(resolve(fabric_parameters(), example,
                              {"nic.transport=" + transport, "switch.pfc.enabled=false", "impair.link=h1:0",
                               "impair.drop_probability=0.01"}),
                      {.scenario = "collectives.toml", .out_dir = ""});
  };
  const FabricOutcome irn = run("irn"), gbn = run("rc");
  EXPECT_TRUE(irn.totals.all_finished);
  ASSERT_EQ(irn.collectives.size(), 4u);
  for (const auto& c : irn.collectives) EXPECT_TRUE(c.result.done());
  EXPECT_GT(irn.drops, 0u);
  EXPECT_GT(irn.retransmitted, 0u);
  EXPECT_LE(irn.retransmitted, irn.drops);
  EXPECT_TRUE(gbn.totals.all_finished);
  EXPECT_GT(gbn.retransmitted, gbn.drops);
}

// UET with NSCC on the same lossy link (and trimming at 100 KB), with and without receiver credits:
// every collective on its connections completes, the losses repaired. With credits, a
// connection idle between collectives asks for credit by a request to send when it has a
// new message and none is left.
TEST(CollectivesScenario, UetCompletesTheCollectivesOverALossyLink) {
  const std::string example = std::string(FABRICLAB_EXAMPLES) + "/collectives.toml";
  for (const bool rccc : {false, true}) {
    const FabricOutcome o = run_fabric(resolve(fabric_parameters(), example,
                                               {"nic.transport=uet", "nic.congestion_control=nscc",
                                                std::string("nic.uet.rccc=") + (rccc ? "true" : "false"),
                                                "switch.pfc.enabled=false", "switch.trim.threshold=100KB",
                                                "impair.link=h1:0", "impair.drop_probability=0.01"}),
                                       {.scenario = "collectives.toml", .out_dir = ""});
    EXPECT_TRUE(o.totals.all_finished) << rccc;
    ASSERT_EQ(o.collectives.size(), 4u);
    for (const auto& c : o.collectives) EXPECT_TRUE(c.result.done()) << rccc;
    EXPECT_GT(o.drops, 0u) << rccc;
    EXPECT_GT(o.retransmitted, 0u) << rccc;
  }
}

// The shipped example split in two: its NICs run in their parts, issues and completions
// between windows. With its 8:1 incast, one thread or two give the same run byte for
// byte; without it, the split run's collectives.csv is the undivided run's, and so are
// a training workload's collectives. (Not its ports.csv: two frames reaching a queue at
// one picosecond from different parts can queue the other way round, which moves a
// queue's maximum by a frame; see docs/fabric.md.)
// output.traffic_matrix counts the collectives' messages: a ring allreduce of 64 KiB over
// 4 ranks (hosts 0-3) sends 2 (P - 1) = 6 chunks of 64 KiB / 4 = 16 KiB from each rank to
// the next, 98 304 bytes per pair; a flow of 1000 bytes from h0 to h1 adds to its pair.
TEST(CollectivesScenario, TheTrafficMatrixCountsTheCollectivesMessages) {
  const auto dir = std::filesystem::temp_directory_path() / ("fabriclab_collectives_tm_" + std::to_string(getpid()));
  const std::string toml = R"(
[topology]
kind = "single_switch"
hosts = 4
[traffic]
pattern = "permutation"
bytes = "1000B"
[output]
traffic_matrix = true
[[collective]]
algorithm = "ring"
bytes = "64KiB"
)";
  for (const char* parts : {"1", "2"}) {
    const FabricSetup setup = fabric_parameters().resolve_text(toml, "tm.toml",
                                                               {std::string("sim.partitions=") + parts});
    const FabricOutcome o = run_fabric(setup, {.scenario = "tm.toml", .out_dir = (dir / parts).string()});
    ASSERT_TRUE(o.totals.all_finished);
    // The permutation (Sattolo's cycle from the seed) gives each host one flow of 1000
    // bytes: read it from flows.csv, then add the ring's 98 304 per pair.
    std::map<std::pair<std::string, std::string>, std::uint64_t> want;
    for (int h = 0; h < 4; ++h) want[{"h" + std::to_string(h), "h" + std::to_string((h + 1) % 4)}] = 98'304;
    const CsvTable flows = read_csv(dir / parts / "flows.csv");
    ASSERT_EQ(flows.rows(), 4u);
    for (std::size_t r = 0; r < flows.rows(); ++r) want[{flows.text(r, "src"), flows.text(r, "dst")}] += 1000;
    std::string expected = "src,dst,bytes\n";
    for (const auto& [pair, b] : want) expected += pair.first + "," + pair.second + "," + std::to_string(b) + "\n";
    EXPECT_EQ(slurp(dir / parts / "traffic_matrix.csv"), expected) << parts;
  }
  std::filesystem::remove_all(dir);
}

TEST(CollectivesScenario, PartitionedRunsGiveTheSameCollectives) {
  const auto dir = std::filesystem::temp_directory_path() / ("fabriclab_collectives_parts_" + std::to_string(getpid()));
  const std::string example = std::string(FABRICLAB_EXAMPLES) + "/collectives.toml";
  const auto run = [&](const std::string& name, std::vector<std::string> set) {
    const FabricOutcome o = run_fabric(resolve(fabric_parameters(), example, set),
                                       {.scenario = "collectives.toml", .out_dir = (dir / name).string()});
    EXPECT_TRUE(o.totals.all_finished) << name;
    EXPECT_EQ(o.lossless_drops, 0u) << name;
    EXPECT_EQ(o.collectives.size(), 4u) << name;
    for (const auto& c : o.collectives) EXPECT_TRUE(c.result.done()) << name;
    return o.fingerprint;
  };
  // With its incast (ties between parts under congestion), split or not, on one thread
  // or two: the same run.
  const std::uint64_t undivided = run("whole", {});
  for (const auto& [name, set] :
       std::vector<std::pair<std::string, std::vector<std::string>>>{{"p2t1", {"sim.partitions=2", "sim.threads=1"}},
                                                                     {"p2t2", {"sim.partitions=2", "sim.threads=2"}},
                                                                     {"p4t2", {"sim.partitions=4", "sim.threads=2"}}}) {
    EXPECT_EQ(run(name, set), undivided) << name;
    for (const char* f : {"collectives.csv", "flows.csv", "ports.csv"})
      EXPECT_TRUE(slurp(dir / name / f) == slurp(dir / "whole" / f)) << name << " " << f;
  }
  run("alone", {"traffic.pattern=none"});
  run("alone4", {"traffic.pattern=none", "sim.partitions=4", "sim.threads=2"});
  EXPECT_TRUE(slurp(dir / "alone" / "collectives.csv") == slurp(dir / "alone4" / "collectives.csv"));

  const std::string training = R"(
[topology]
kind = "leaf_spine"
leaves = 4
spines = 2
hosts_per_leaf = 4
link_delay = "1us"
[traffic]
pattern = "training"
bytes = "256KiB"
training.iterations = 3
training.compute = "2us"
training.distribution_bytes = "0B"
training.algorithm = "recursive_doubling"
training.alltoall_bytes = "4KiB"
)";
  const auto whole = run_fabric(fabric_parameters().resolve_text(training, "t.toml"),
                                {.scenario = "t.toml", .out_dir = ""});
  const auto split = run_fabric(fabric_parameters().resolve_text(training, "t.toml", {"sim.partitions=2"}),
                                {.scenario = "t.toml", .out_dir = ""});
  ASSERT_EQ(whole.collectives.size(), 6u);
  ASSERT_EQ(split.collectives.size(), 6u);
  for (std::size_t j = 0; j < 6; ++j) {
    SCOPED_TRACE(j);
    EXPECT_TRUE(whole.collectives[j].result.done());
    EXPECT_EQ(whole.collectives[j].result.job.issue, split.collectives[j].result.job.issue);
    EXPECT_EQ(whole.collectives[j].result.job.done, split.collectives[j].result.job.done);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fabriclab::scenario
