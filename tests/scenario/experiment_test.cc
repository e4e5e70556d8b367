// The standard experiments and the sweep, end to end on the shipped scenarios: what they
// measure is checked against values derived from the scenario, their files exist, and a
// sweep resumes and refuses to mix.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "error_message.h"
#include "fabric/cc/congestion.h"
#include "scenario/batch/sweep.h"
#include "scenario/experiments/registry.h"
#include "scenario/fabric/fabric_scenario.h"
#include "scenario/report/csv_table.h"
#include "offload/advice.h"
#include "offload/assignment.h"
#include "offload/collectives.h"

namespace fabriclab::scenario {
namespace {

const std::string kExamples = FABRICLAB_EXAMPLES;
namespace fs = std::filesystem;

fs::path temp(const std::string& name) {
  const fs::path p = fs::path(::testing::TempDir()) / name;
  fs::remove_all(p);
  return p;
}

const nlohmann::ordered_json& variant(const ExperimentOutcome& o, const std::string& label) {
  for (const auto& v : o.results.at("variants"))
    if (v.at("variant") == label) return v;
  throw std::runtime_error("no variant " + label);
}

ExperimentOutcome run(const std::string& name, const fs::path& out, std::vector<std::string> sets = {}) {
  return run_experiment({.name = name,
                         .scenario = kExamples + "/" + name + ".toml",
                         .out_dir = out.string(),
                         .sets = std::move(sets),
                         .jobs = 2,
                         .progress = false});
}

// Five culprits into h4, three of them on S1; the victim h3 -> h7 shares only the S1-S2
// link with those three. Max-min: the culprits get 100/5 = 20 Gb/s at h4's port, the
// victim what is left of the S1-S2 link: 100 - 3 x 20 = 40 Gb/s.
TEST(Experiment, CongestionSpreadingHurtsTheVictimUnlessDcqcnActsFirst) {
  const fs::path out = temp("exp_spreading");
  const ExperimentOutcome o = run("congestion-spreading", out);
  EXPECT_DOUBLE_EQ(o.results.at("victim_fair_gbps").get<double>(), 40.0);
  EXPECT_DOUBLE_EQ(o.results.at("culprit_fair_gbps").get<double>(), 20.0);
  EXPECT_FALSE(o.unsafe);

  const auto& pfc = variant(o, "pfc-only");
  // PFC alone: the pause of the S1-S2 link reaches the victim's NIC; it loses most of
  // its fair share.
  EXPECT_LT(pfc.at("victim_gbps").get<double>(), 0.5 * 40.0);
  const auto tree = pfc.at("pause_tree").get<std::vector<std::string>>();
  EXPECT_NE(std::find(tree.begin(), tree.end(), "s1:4"), tree.end());  // S1's port toward S2
  EXPECT_NE(std::find(tree.begin(), tree.end(), "h3:0"), tree.end());  // the victim's NIC
  EXPECT_GT(pfc.at("pfc_pause_frames").get<double>(), 0);

  // DCQCN with a CNP per QP acts before PFC: no pause at all, the victim keeps most of it.
  const auto& dcqcn = variant(o, "dcqcn-nvidia-qp");
  EXPECT_EQ(dcqcn.at("pfc_pause_frames").get<double>(), 0);
  EXPECT_GT(dcqcn.at("victim_gbps").get<double>(), 0.5 * 40.0);

  for (const char* f : {"report.md", "results.csv", "results.json", "throughput.png", "paused.png", "throughput.gp"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  EXPECT_EQ(read_csv(out / "results.csv").rows(), 4u);
}

// A smaller cluster than the shipped one (16 GPUs on 2 leaves), 2 iterations. The ring
// cannot beat its links: allreduce time >= 2(n-1)/n x S / line rate; busbw follows algbw.
TEST(Experiment, TrainingReportsBusBandwidthByTheNcclConvention) {
  const fs::path out = temp("exp_training");
  const ExperimentOutcome o = run("training", out,
                                  {"topology.leaves=2", "topology.spines=2", "traffic.bytes=4MiB",
                                   "traffic.training.distribution_bytes=1MB"});
  EXPECT_EQ(o.results.at("gpus").get<int>(), 16);
  const double s = 4.0 * 1024 * 1024, n = 16;
  const double floor_us = 2 * (n - 1) / n * s * 8 / 100e9 * 1e6;
  for (const auto& v : o.results.at("variants")) {
    ASSERT_EQ(v.at("iterations").size(), 2u);
    for (const auto& it : v.at("iterations")) {
      EXPECT_TRUE(it.at("finished").get<bool>());
      const double ar = it.at("allreduce_us").get<double>();
      EXPECT_GE(ar, floor_us);
      EXPECT_LE(ar, it.at("iteration_us").get<double>());
      EXPECT_NEAR(it.at("algbw_GBps").get<double>(), s / (ar * 1000), 1e-9);  // bytes per ns = GB/s
      EXPECT_NEAR(it.at("busbw_GBps").get<double>(), it.at("algbw_GBps").get<double>() * 2 * (n - 1) / n, 1e-9);
      EXPECT_LT(it.at("busbw_GBps").get<double>(), 12.5);  // a 100G link's frames, payload a little less
    }
  }
  EXPECT_TRUE(fs::exists(out / "busbw.png"));
  EXPECT_TRUE(fs::exists(out / "breakdown.png"));
  EXPECT_FALSE(fs::exists(out / "step_fct.png"));  // the shipped allreduce is offloaded: no steps as flows
  // The variants: algorithms, congestion control, counters for every bucket or one.
  std::vector<std::string> labels;
  for (const auto& v : o.results.at("variants")) labels.push_back(v.at("variant").get<std::string>());
  EXPECT_EQ(labels, (std::vector<std::string>{"ring", "ring-no-cc", "rabenseifner", "recursive-doubling",
                                              "ring-scarce-stall", "ring-scarce-fallback"}));
  for (const auto& v : o.results.at("variants"))
    for (const auto& it : v.at("iterations")) {
      const std::string label = v.at("variant").get<std::string>();
      // The phases follow one another: they add up to the iteration; the compute is the scenario's.
      EXPECT_NEAR(it.at("iteration_us").get<double>(),
                  it.at("distribution_us").get<double>() + it.at("compute_us").get<double>() +
                      it.at("allreduce_us").get<double>() + it.at("after_us").get<double>(),
                  1e-3)
          << label;
      EXPECT_DOUBLE_EQ(it.at("compute_us").get<double>(), 50.0) << label;
      // Four buckets (training.buckets); counters for one: stall queues three behind it
      // (every one stalls but the first), fallback runs three in software.
      const int software = it.at("buckets_software").get<int>();
      EXPECT_EQ(software + it.at("buckets_offloaded").get<int>(), 4) << label;
      EXPECT_EQ(software, label == "ring-scarce-fallback" ? 3 : 0) << label;
      EXPECT_EQ(it.at("stall_us").get<double>() > 0, label == "ring-scarce-stall") << label;
    }
  // The headline differs across the variants.
  EXPECT_EQ(std::set<std::string>(o.headlines.begin(), o.headlines.end()).size(), o.headlines.size());
}

// The same with the allreduce as a ring of flows (traffic.training.algorithm = flows).
TEST(Experiment, TrainingWithTheRingOfFlows) {
  const fs::path out = temp("exp_training_flows");
  const ExperimentOutcome o = run("training", out,
                                  {"topology.leaves=2", "topology.spines=2", "traffic.bytes=4MiB",
                                   "traffic.training.distribution_bytes=1MB", "traffic.training.algorithm=flows"});
  const double s = 4.0 * 1024 * 1024, n = 16;
  const double floor_us = 2 * (n - 1) / n * s * 8 / 100e9 * 1e6;
  for (const auto& v : o.results.at("variants"))
    for (const auto& it : v.at("iterations")) {
      EXPECT_TRUE(it.at("finished").get<bool>());
      EXPECT_GE(it.at("allreduce_us").get<double>(), floor_us);
    }
  EXPECT_TRUE(fs::exists(out / "step_fct.png"));
}

// Same hash function and seed at the leaf and the spine: the spine's pick among its 2
// parallel downlinks is a function of the leaf's pick, so one of each pair is never
// used -- at least 16 of the 32 downlinks stay idle. Spraying uses every link.
TEST(Experiment, EcmpPolarizesWithASharedSeedAndSprayingSpreads) {
  const fs::path out = temp("exp_lb");
  const ExperimentOutcome o = run("ecmp-vs-spray", out, {"traffic.bytes=2MB"});
  EXPECT_GE(variant(o, "ecmp-2-tiers-same-seed").at("downlink_idle").get<int>(), 16);
  EXPECT_LT(variant(o, "ecmp-2-tiers").at("downlink_idle").get<int>(), 16);
  const auto& spray = variant(o, "spray-window");
  EXPECT_EQ(spray.at("uplink_idle").get<int>(), 0);
  EXPECT_EQ(spray.at("downlink_idle").get<int>(), 0);
  EXPECT_LT(spray.at("uplink_max_over_mean").get<double>(),
            variant(o, "ecmp-2-tiers").at("uplink_max_over_mean").get<double>());
  EXPECT_GT(spray.at("reordered_accepted").get<double>(), 0);  // the window did absorb reordering
}

// Every policy on the three scenarios, with PFC and without (512 KB flows). With PFC
// nothing is dropped, whatever the policy; on the incast, no congestion control pauses
// the senders while DCTCP, Swift and HPCC keep the receiver's port below the pause
// threshold and so also lose nothing without PFC, where no congestion control drops and
// goes back N.
TEST(Experiment, TransportsComparesEveryPolicyWithAndWithoutPfc) {
  const fs::path out = temp("exp_transports");
  const ExperimentOutcome o = run("transports", out, {"traffic.bytes=512KB"});
  const auto& runs = o.results.at("runs");
  ASSERT_EQ(runs.size(), 36u);  // 3 scenarios x 6 policies x PFC on and off
  const auto row = [&](const std::string& scenario, const std::string& policy, bool pfc) {
    for (const auto& r : runs)
      if (r.at("scenario") == scenario && r.at("policy") == policy && r.at("pfc").get<bool>() == pfc) return r;
    throw std::runtime_error("no run " + scenario + " " + policy);
  };
  for (const auto& r : runs)
    if (r.at("pfc").get<bool>()) {
      EXPECT_EQ(r.at("drops").get<double>(), 0) << r.at("scenario") << " " << r.at("policy");
      EXPECT_EQ(r.at("finished"), r.at("flows")) << r.at("scenario") << " " << r.at("policy");
    }
  EXPECT_GT(row("incast", "none", true).at("pfc_frames").get<double>(), 0);
  for (const char* p : {"dctcp", "swift", "hpcc"}) {
    EXPECT_EQ(row("incast", p, true).at("pfc_frames").get<double>(), 0) << p;
    EXPECT_EQ(row("incast", p, false).at("drops").get<double>(), 0) << p;
  }
  const auto& lossy = row("incast", "none", false);
  EXPECT_GT(lossy.at("drops").get<double>(), 0);
  EXPECT_GT(lossy.at("retransmitted_packets").get<double>(), 0);
  for (const char* f : {"incast_fct.png", "permutation_fct.png", "training_fct.png", "incast_queue.png",
                        "incast_pause.png", "results.csv"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  // The pause plot's series: the hosts' paused time so far, summed (every 5 us). Only the
  // hosts are paused on the incast's one switch, so its last sample is the run's paused
  // time less at most what 17 ports add in the 5 us after it; DCTCP's stays at 0.
  const auto last_sample = [&](const std::string& policy) {
    std::ifstream f(out / ("incast_pause_" + policy + ".dat"));
    double us = -1;
    for (double t, paused; f >> t >> paused;) us = paused;
    return us;
  };
  const double paused = row("incast", "none", true).at("paused_us").get<double>();
  ASSERT_GT(paused, 0);
  EXPECT_LE(last_sample("none"), paused + 1e-3);
  EXPECT_GE(last_sample("none"), paused - 17 * 5 - 1e-3);
  EXPECT_EQ(last_sample("dctcp"), 0);
}

// Every design on the four workloads, on a k = 4 fat-tree with 1 MB per host (28 runs).
// Every flow finishes; with PFC nothing is dropped; go-back-N and flowlets without a
// window (ECMP + go-back-N) hold nothing for reassembly; the designs that trim or drop
// without PFC never pause; round-robin spraying spreads the edge uplinks evenly where
// per-flow ECMP does not; UET's sprayed entropies arrive out of order and are placed.
TEST(Experiment, SprayingComparesEveryDesignOnFourWorkloads) {
  const fs::path out = temp("exp_spraying");
  const ExperimentOutcome o = run("spraying", out,
                                  {"topology.k=4", "traffic.bytes=1MB", "traffic.training.distribution_bytes=1MB"});
  const auto& v = o.results.at("variants");
  ASSERT_EQ(v.size(), 28u);  // 4 workloads x 7 designs
  const auto row = [&](const std::string& workload, const std::string& design) -> const nlohmann::ordered_json& {
    return variant(o, workload + "-" + design);
  };
  for (const auto& r : v) {
    const std::string label = r.at("variant");
    EXPECT_EQ(r.at("finished"), r.at("flows")) << label;
    const std::string d = r.at("design");
    if (d != "ar-irn" && d != "uet-nscc-trim") {
      EXPECT_EQ(r.at("drops").get<double>(), 0) << label;
    } else {
      EXPECT_EQ(r.at("pfc_pause_frames").get<double>(), 0) << label;
    }
    if (d == "ecmp-gbn") {
      EXPECT_EQ(r.at("reassembly_peak_packets").get<double>(), 0) << label;
    }
  }
  const auto& ecmp = row("permutation", "ecmp-gbn");
  const auto& spray = row("permutation", "spray-window");
  EXPECT_LT(spray.at("uplink_max_over_mean").get<double>(), 1.15);
  EXPECT_LT(spray.at("uplink_max_over_mean").get<double>(), ecmp.at("uplink_max_over_mean").get<double>());
  for (const char* d : {"uet-nscc", "uet-rccc", "uet-nscc-trim"}) {
    EXPECT_GT(row("permutation", d).at("reordered_accepted").get<double>(), 0) << d;
    EXPECT_GT(row("permutation", d).at("reassembly_peak_packets").get<double>(), 0) << d;
  }
  for (const char* f : {"results.csv", "makespan.png", "imbalance.png", "reassembly.png", "report.md"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
}

// The fct-slowdown experiment on a k = 4 fat-tree for 1 ms of arrivals: 2 workloads x 2
// loads x every design. Within a workload and load every design runs the same flows (one
// seed); Hadoop's mean flow is 14.2 times smaller than web search's (120 420.75 B against
// 1 711 250 B: the files' means), so at the same load it has about 14 times the flows;
// no slowdown is below 1 (the ideal is the flow alone on the idle fabric).
TEST(Experiment, FctSlowdownComparesEveryDesignOnTheSameFlows) {
  const fs::path out = temp("exp_fct_slowdown");
  const ExperimentOutcome o = run("fct-slowdown", out, {"topology.k=4", "load.0.duration=1ms", "traffic.warmup=100us"});
  const auto& runs = o.results.at("runs");
  const std::size_t designs = 4 + fabric::cc_policies().size() - 2;  // PFC alone, 3 DCQCN presets, the others
  ASSERT_EQ(runs.size(), 2 * 2 * designs);
  std::map<std::string, double> flows;  // by workload and load
  for (const auto& r : runs) {
    const std::string key = r.at("workload").get<std::string>() + "-" + r.at("load").dump();
    const std::string label = key + "-" + r.at("design").get<std::string>();
    EXPECT_EQ(r.at("finished"), r.at("flows")) << label;
    EXPECT_GT(r.at("counted").get<double>(), 0) << label;
    if (flows.count(key) == 0) flows[key] = r.at("flows").get<double>();
    EXPECT_EQ(r.at("flows").get<double>(), flows[key]) << label;
    EXPECT_GE(r.at("slowdown_p50").get<double>(), 1.0 - 1e-9) << label;
    EXPECT_GE(r.at("slowdown_p99").get<double>(), r.at("slowdown_p50").get<double>()) << label;
  }
  for (const char* load : {"0.3", "0.5"}) {
    const double ratio = flows.at(std::string("hadoop-") + load) / flows.at(std::string("web-search-") + load);
    EXPECT_GT(ratio, 8) << load;
    EXPECT_LT(ratio, 25) << load;
  }
  EXPECT_GT(flows.at("hadoop-0.5"), flows.at("hadoop-0.3"));
  for (const char* f :
       {"results.csv", "slowdown_web-search-30pct_p99.png", "slowdown_hadoop-50pct_p50.png", "report.md"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
}

// Hold depths K on one of two round-robin paths reorder the flow by about 2K packets:
// go-back-N absorbs none of it; a window of W absorbs every extent up to W (hold 16:
// extent 32 for W = 32) and NAKs the first one beyond; a switch re-sequencer of B
// packets does the same for B.
TEST(Experiment, ReorderGapIsTheWindow) {
  const fs::path out = temp("exp_reorder");
  const ExperimentOutcome o = run("reorder", out);
  const auto receiver = [&](const std::string& label) -> const nlohmann::ordered_json& {
    for (const auto& r : o.results.at("receivers"))
      if (r.at("receiver") == label) return r;
    throw std::runtime_error("no receiver " + label);
  };
  EXPECT_EQ(receiver("nic-go-back-n").at("reorder_gap").get<double>(), 0);
  for (const auto& [label, w] : std::vector<std::pair<std::string, double>>{
           {"nic-window-32", 32}, {"nic-window-128", 128}, {"switch-32", 32}, {"switch-128", 128}}) {
    const auto& r = receiver(label);
    EXPECT_LE(r.at("reorder_gap").get<double>(), w) << label;
    EXPECT_GE(r.at("reorder_gap").get<double>(), w / 2) << label;  // the hold one step shallower was absorbed
    ASSERT_FALSE(r.at("breaks_at_extent").is_null()) << label;
    EXPECT_GT(r.at("breaks_at_extent").get<double>(), w) << label;
  }
  EXPECT_EQ(receiver("nic-window-32").at("reorder_gap").get<double>(), 32);
  // A 10 us give-up timer breaks before the 128-packet window does (hold 16 is ~10.7 us late).
  EXPECT_LT(receiver("nic-window-128-timer").at("reorder_gap").get<double>(),
            receiver("nic-window-128").at("reorder_gap").get<double>());
  const CsvTable rt = read_csv(out / "variants" / "nic-window-32_hold4" / "reorder.csv");
  EXPECT_EQ(rt.number(0, "max_extent"), 8);  // hold 4 -> extent 8
  EXPECT_TRUE(fs::exists(out / "reorder_gap.png"));
  EXPECT_TRUE(fs::exists(out / "goodput.png"));
}

// The collectives experiment on 16 GPUs (2 leaves x 8, 4 spines x 1 uplink: 4:1 keeps one).
TEST(Experiment, CollectivesFindWhereTheFabricAndTheCountersLimit) {
  const fs::path out = temp("exp_collectives");
  const ExperimentOutcome o =
      run("collectives", out, {"topology.leaves=2", "topology.spines=4", "topology.uplinks=1", "traffic.bytes=1MB"});
  EXPECT_EQ(o.results.at("gpus").get<int>(), 16);
  EXPECT_EQ(o.results.at("variants").size(), 42u);
  EXPECT_FALSE(o.unsafe);
  // A ring at 64 MiB is bandwidth-bound: at most the link's payload rate (4096 of 4182 wire
  // bytes per full packet, 12.243 GB/s), and within 10 % of it.
  const double ring = variant(o, "full-ar-ring-64MiB").at("busbw_GBps").get<double>();
  EXPECT_LE(ring, 12.243);
  EXPECT_GE(ring, 0.9 * 12.243);
  // All at once, each of the 8 hosts of a leaf sends 8 blocks of 64 MiB / 16 to the other
  // leaf: 256 MiB through the one uplink left at 4:1 (21.47 ms at 100G); on the full
  // fabric each host's own link carries its 15 blocks (60 MiB: 5.03 ms).
  EXPECT_GE(variant(o, "4to1-a2a-all-at-once-64MiB").at("completion_us").get<double>(), 256.0 * 8 * 1048576 / 100e3);
  EXPECT_GE(variant(o, "full-a2a-all-at-once-64MiB").at("completion_us").get<double>(), 60.0 * 8 * 1048576 / 100e3);
  // Counters: eight recursive-doubling allreduces at once; each holds `need` per NIC.
  offload::BuildOptions b;
  b.ranks = 16;
  b.bytes = 1 << 20;
  std::int64_t need = 0;
  for (const auto& n : offload::needs_per_rank(offload::assign_counters(
           offload::build_schedule("allreduce", "recursive_doubling", b), offload::Strategy::optimized)))
    need = std::max(need, n.counters);
  ASSERT_GT(need, 0);
  for (const int budget : {8, 32}) {
    SCOPED_TRACE(budget);
    const auto& fb = variant(o, "counters-" + std::to_string(budget) + "-fallback");
    const auto fits = std::min<std::int64_t>(8, budget / need);  // started at once, the rest in software
    EXPECT_EQ(fb.at("offloaded").get<std::int64_t>(), fits);
    EXPECT_EQ(fb.at("software").get<std::int64_t>(), 8 - fits);
    const auto& st = variant(o, "counters-" + std::to_string(budget) + "-stall");
    EXPECT_EQ(st.at("offloaded").get<std::int64_t>(), 8);
    if (fits < 8) {
      EXPECT_GT(st.at("stall_us").get<double>(), 0);
    }
  }
  EXPECT_EQ(variant(o, "counters-unlimited-stall").at("stall_us").get<double>(), 0);
  // Beside the incast nothing is faster than alone.
  for (const char* a : {"ar-ring", "ar-rd", "a2a-pairwise"})
    EXPECT_GE(variant(o, std::string("incast-none-") + a).at("completion_us").get<double>(),
              variant(o, std::string("full-") + a + "-1MiB").at("completion_us").get<double>())
        << a;
  for (const char* f : {"report.md", "results.csv", "results.json", "busbw.png", "counters.png"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
}

TEST(Experiment, UnknownNameIsRefused) {
  EXPECT_EQ(testing::input_error_of([] { run_experiment({.name = "reorderr", .progress = false}); }).substr(0, 40),
            "unknown experiment 'reorderr' (expected ");
}

TEST(Sweep, RunsTheProductResumesAndRefusesToMix) {
  const fs::path out = temp("sweep");
  SweepOptions opt{.scenario = kExamples + "/incast.toml",
                   .vary = {"nic.congestion_control=none,dcqcn", "switch.buffer=2MiB,4MiB"},
                   .sets = {"traffic.bytes=200KB"},
                   .out_dir = out.string(),
                   .jobs = 2,
                   .progress = false};
  const SweepOutcome a = run_sweep(opt);
  EXPECT_EQ(a.points, 4u);
  EXPECT_EQ(a.ran, 4u);
  EXPECT_TRUE(a.failed.empty());
  const CsvTable t = read_csv(a.csv);
  ASSERT_EQ(t.rows(), 4u);
  // The first --vary changes slowest.
  EXPECT_EQ(t.text(0, "nic.congestion_control"), "none");
  EXPECT_EQ(t.text(1, "nic.congestion_control"), "none");
  EXPECT_EQ(t.text(1, "switch.buffer"), "4MiB");
  EXPECT_EQ(t.text(2, "nic.congestion_control"), "dcqcn");
  for (std::size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(t.text(r, "status"), "ok");
    EXPECT_EQ(t.number(r, "flows.finished"), 16);
    EXPECT_EQ(t.text(r, "congestion_control.policy"), t.text(r, "nic.congestion_control"));
  }
  EXPECT_NE(t.text(0, "seed"), t.text(1, "seed"));  // a seed per point
  // What a user asks first comes first: goodput (16 flows of 200 KB arrived over the
  // simulated time, in Gb/s), then the flows' completion and the fabric's pauses and marks.
  std::ifstream header(a.csv);
  std::string first;
  std::getline(header, first);
  EXPECT_EQ(first.rfind("point,nic.congestion_control,switch.buffer,seed,status,goodput_gbps,flows.finished,"
                        "flows.fct_ns_p50,flows.fct_ns_p99,flows.fct_ns_max,totals.pfc_pause_frames,",
                        0),
            0u)
      << first;
  for (std::size_t r = 0; r < 4; ++r)
    EXPECT_NEAR(t.number(r, "goodput_gbps"), 16 * 200e3 * 8 / t.number(r, "run.simulated_end_ns"), 1e-3);

  // Again: nothing to run, the same table.
  const std::string before = [&] {
    std::ifstream in(a.csv);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  const SweepOutcome b = run_sweep(opt);
  EXPECT_EQ(b.ran, 0u);
  EXPECT_EQ(b.skipped, 4u);
  std::ifstream in(b.csv);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), before);

  // One point lost (interrupted): only it runs again.
  fs::remove(out / "points" / "p0002" / "summary.json");
  EXPECT_EQ(run_sweep(opt).ran, 1u);

  SweepOptions other = opt;
  other.vary = {"nic.congestion_control=none"};
  EXPECT_NE(testing::input_error_of([&] { run_sweep(other); }).find("holds a different sweep"), std::string::npos);
  SweepOptions bad = opt;
  bad.out_dir = temp("sweep_bad").string();
  bad.vary = {"switch.buffer=2MiB,4Mfoo"};
  EXPECT_EQ(testing::input_error_of([&] { run_sweep(bad); }).substr(0, 48),
            "--vary switch.buffer: value '4Mfoo': key 'switch");
  bad.vary = {"switch.bufer=2MiB"};
  EXPECT_NE(testing::input_error_of([&] { run_sweep(bad); }).find("unknown key 'switch.bufer'"), std::string::npos);
}

// A point's seed depends on its own values only: a second sweep that adds a dimension
// whose first value is the scenario's own (switch.buffer = 4MiB in incast.toml, written
// here as 4194304B) and reorders the first list runs its old points with the old seeds,
// so with the same results -- they once moved (874 and 886 PFC pauses for one point).
TEST(Sweep, AnAddedDimensionLeavesTheExistingPointsAsTheyWere) {
  SweepOptions one{.scenario = kExamples + "/incast.toml",
                   .vary = {"nic.congestion_control=none,dcqcn"},
                   .sets = {"traffic.bytes=200KB"},
                   .out_dir = temp("sweep_one").string(),
                   .jobs = 2,
                   .progress = false};
  SweepOptions two = one;
  two.out_dir = temp("sweep_two").string();
  two.vary = {"switch.buffer=4194304B,2MiB", "nic.congestion_control=dcqcn,none"};
  const CsvTable a = read_csv(run_sweep(one).csv), b = read_csv(run_sweep(two).csv);
  ASSERT_EQ(a.rows(), 2u);
  ASSERT_EQ(b.rows(), 4u);
  // two's rows 0 and 1 are (4MiB, dcqcn) and (4MiB, none): one's rows 1 and 0.
  for (const auto& [ra, rb] : {std::pair<std::size_t, std::size_t>{1, 0}, {0, 1}}) {
    EXPECT_EQ(a.text(ra, "nic.congestion_control"), b.text(rb, "nic.congestion_control"));
    EXPECT_EQ(a.text(ra, "seed"), b.text(rb, "seed"));
    for (const char* metric :
         {"totals.pfc_pause_frames", "totals.ecn_marks", "flows.fct_ns_max", "run.simulated_end_ns", "run.fingerprint"})
      EXPECT_EQ(a.text(ra, metric), b.text(rb, metric)) << metric << " row " << ra;
  }
  // Points that differ from the scenario in another value draw another seed.
  EXPECT_NE(b.text(2, "seed"), b.text(0, "seed"));
  EXPECT_NE(a.text(0, "seed"), a.text(1, "seed"));
}

// A list entry's key is varied like any other, and --parameters-style lookups know it.
TEST(Sweep, VariesAKeyOfAListEntry) {
  EXPECT_NE(fabric_parameters().find("collective.0.algorithm"), nullptr);
  EXPECT_NE(fabric_parameters().find("collective.12.bytes"), nullptr);
  EXPECT_EQ(fabric_parameters().find("collective.x.bytes"), nullptr);
  EXPECT_EQ(fabric_parameters().find("collective.0.byts"), nullptr);
  EXPECT_EQ(fabric_parameters().find("collective.0"), nullptr);
  const SweepOutcome o = run_sweep({.scenario = kExamples + "/collectives.toml",
                                    .vary = {"collective.0.algorithm=ring,recursive_doubling"},
                                    .sets = {},
                                    .out_dir = temp("sweep_collective").string(),
                                    .jobs = 2,
                                    .progress = false});
  ASSERT_TRUE(o.failed.empty());
  const CsvTable t = read_csv(o.csv);
  ASSERT_EQ(t.rows(), 2u);
  EXPECT_EQ(t.text(0, "collective.0.algorithm"), "ring");
  EXPECT_EQ(t.text(1, "collective.0.algorithm"), "recursive_doubling");
  EXPECT_NE(t.text(0, "collectives.completion_max_ns"), t.text(1, "collectives.completion_max_ns"));
  // An entry the scenario does not have is named as such.
  SweepOptions missing{.scenario = kExamples + "/collectives.toml",
                       .vary = {"collective.9.algorithm=ring"},
                       .out_dir = temp("sweep_missing").string(),
                       .progress = false};
  EXPECT_NE(testing::input_error_of([&] { run_sweep(missing); }).find("[[collective]] entries"), std::string::npos);
}

}  // namespace
}  // namespace fabriclab::scenario
