// The shipped offload scenario under each policy, its determinism, and workload files.
#include "scenario/offload_scenario.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "error_message.h"
#include "nicmodel/model.h"
#include "offload/assignment.h"
#include "offload/collectives.h"

namespace fabriclab::scenario {
namespace {

const std::string kExample = std::string(FABRICLAB_EXAMPLES) + "/offload.toml";

OffloadOutcome run_with(std::vector<std::string> sets, const std::string& out = "") {
  return run_offload(resolve(offload_parameters(), kExample, sets), kExample, out);
}

TEST(OffloadScenario, StallWaitsFallbackDoesNot) {
  // 128 counters: a 64-rank ring allreduce holds 126, so under stall the others queue
  // behind it; under fallback whatever does not fit runs in software at once.
  const auto stall = run_with({"offload.policy=stall"});
  EXPECT_EQ(stall.collectives, 32u);
  EXPECT_EQ(stall.offloaded, 32u);
  EXPECT_GT(stall.total_stall, Time());
  EXPECT_LE(stall.peak_counters_on_a_nic, 128);
  const auto fallback = run_with({"offload.policy=fallback"});
  EXPECT_EQ(fallback.total_stall, Time());
  EXPECT_GT(fallback.software, 0u);
  EXPECT_EQ(fallback.offloaded + fallback.software, 32u);
  // Everything fits an idle NIC, so the advice is to wait: the same run as stall.
  const auto advise = run_with({"offload.policy=advise"});
  EXPECT_EQ(advise.makespan, stall.makespan);
}

TEST(OffloadScenario, NaiveRingNeverFitsAndStallSaysSo) {
  EXPECT_EQ(testing::input_error_of([] { run_with({"offload.strategy=naive"}); }),
            "job 'allreduce-0': needs 253 counters and 253 slots on NIC 0, which has 128 and 4096: it could never "
            "start (use the fallback policy)");
  const auto advise = run_with({"offload.strategy=naive", "offload.policy=advise"});
  EXPECT_GT(advise.software, 0u);  // the rings go to software, the rest wait for counters
}

TEST(OffloadScenario, OutputsAreDeterministic) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "offload_det";
  run_with({}, (dir / "a").string());
  run_with({}, (dir / "b").string());
  for (const char* f : {"collectives.csv", "usage.csv"}) {
    std::ifstream a(dir / "a" / f), b(dir / "b" / f);
    std::stringstream sa, sb;
    sa << a.rdbuf();
    sb << b.rdbuf();
    EXPECT_EQ(sa.str(), sb.str()) << f;
    EXPECT_GT(sa.str().size(), 100u);
  }
  std::filesystem::remove_all(dir);
}

TEST(OffloadScenario, WorkloadFile) {
  const auto dir = std::filesystem::path(::testing::TempDir());
  {
    std::ofstream f(dir / "wl.csv");
    f << "name,collective,algorithm,ranks,bytes,issue\nx,bcast,binomial,2,4KiB,0ns\ny,bcast,binomial,2,4KiB,500ns\n";
  }
  const auto cfg = resolve_text(offload_parameters(),
                                "[nic]\ncounters = 1\n[workload]\narrival = \"file\"\nfile = \"wl.csv\"\n",
                                (dir / "s.toml").string());
  // The model test's two-broadcast timeline: the second waits 1.5 us, the last is seen at 4 us.
  const auto o = run_offload(cfg, "s.toml", "");
  EXPECT_EQ(o.collectives, 2u);
  EXPECT_EQ(o.total_stall, ns(1500));
  EXPECT_EQ(o.makespan, us(4));
  {
    std::ofstream f(dir / "bad.csv");
    f << "name,collective,algorithm,ranks,bytes,issue\nx,bcast,binomial,1,4KiB,0ns\n";
  }
  const auto bad = resolve_text(offload_parameters(), "[workload]\narrival = \"file\"\nfile = \"bad.csv\"\n",
                                (dir / "s.toml").string());
  EXPECT_EQ(testing::input_error_of([&] { run_offload(bad, "s.toml", ""); }),
            (dir / "bad.csv").string() + ":2: column ranks: expected an integer >= 2, got '1'");
}

}  // namespace
}  // namespace fabriclab::scenario

namespace fabriclab::scenario {
namespace {

TEST(OffloadScenario, ExperimentGrid) {
  // A binomial bcast on 4 ranks holds 1 counter per NIC (optimized): with 1 counter two
  // issued at once run one at a time, with 8 both at once.
  const auto dir = std::filesystem::path(::testing::TempDir()) / "offload_exp";
  const auto cfg = resolve_text(offload_parameters(),
                                "[experiment]\nconcurrency = \"1,2\"\nranks = \"4\"\ncounters = \"1,8\"\n"
                                "cache_entries = \"8\"\nstrategies = \"optimized\"\npolicies = \"stall,fallback\"\n"
                                "collectives = \"bcast:binomial\"\n",
                                "exp.toml");
  EXPECT_EQ(run_offload_experiment(cfg, "exp.toml", dir.string()), 2u * 2u * 2u);
  std::ifstream f(dir / "experiment.csv");
  std::string line, all;
  int rows = 0;
  while (std::getline(f, line)) {
    all += line + "\n";
    ++rows;
  }
  EXPECT_EQ(rows, 9);
  EXPECT_NE(all.find("bcast,binomial,4,optimized,1,8,stall,2,1,yes,1,0,"), std::string::npos) << all;
  EXPECT_NE(all.find("bcast,binomial,4,optimized,8,8,stall,2,1,yes,2,0,"), std::string::npos) << all;
  std::ifstream r(dir / "report.md");
  std::stringstream md;
  md << r.rdbuf();
  EXPECT_NE(md.str().find("## 3. When falling back beats waiting"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(OffloadScenario, ExperimentSharesSoftwareOnlyPointsAndAnyJobCountGivesTheSameGrid) {
  // A ring allreduce on 8 ranks needs more than 2 counters per NIC, so with 1 or 2 and the
  // fallback policy all three copies run in software, whatever the cache: those four
  // points per assignment share one simulation. Its figures must be those of the model
  // run directly (with yet another budget and cache), and the grid must not depend on how
  // many workers ran it.
  const auto dir = std::filesystem::path(::testing::TempDir()) / "offload_exp_sw";
  const auto cfg = resolve_text(offload_parameters(),
                                "[workload]\nbytes = \"4KiB\"\n[experiment]\nconcurrency = \"3\"\nranks = \"8\"\n"
                                "counters = \"1,2\"\ncache_entries = \"1,8\"\nstrategies = \"naive,optimized\"\n"
                                "policies = \"fallback\"\ncollectives = \"allreduce:ring\"\n",
                                "exp.toml");
  auto csv_of = [&](unsigned jobs) {
    const auto out = dir / std::to_string(jobs);
    EXPECT_EQ(run_offload_experiment(cfg, "exp.toml", out.string(), jobs), 8u);
    std::ifstream f(out / "experiment.csv");
    std::stringstream text;
    text << f.rdbuf();
    EXPECT_FALSE(std::filesystem::exists(out / ".points"));
    return text.str();
  };
  const std::string one = csv_of(1), two = csv_of(2);
  EXPECT_EQ(one, two);

  nicmodel::NicParams p;
  p.counters = 3;  // still too few for the ring; a budget and cache no grid point has
  p.cache_entries = 5;
  p.slots = 1000000;
  p.cache_miss = ns(100);
  p.op_time = ns(50);
  p.host_op_time = us(1);
  p.host_poll = us(1);
  const auto sched = std::make_shared<const offload::Schedule>(offload::assign_counters(
      offload::build_schedule("allreduce", "ring", {.ranks = 8, .bytes = 4096}), offload::Strategy::optimized));
  ASSERT_GT(sched->counter_summary().max, 3);
  nicmodel::OffloadModel m(p, 8, nicmodel::Policy::fallback);
  for (int i = 0; i < 3; ++i)
    m.add({.name = fmt::format("c{}", i), .schedule = sched, .nic_of_rank = {0, 1, 2, 3, 4, 5, 6, 7}, .issue = Time()});
  const auto rs = m.run();
  Time total;
  for (const auto& r : rs) total += r.completion();
  const std::string figures = fmt::format(",yes,0,3,{:.1f},0.0,{:.1f},0.0000\n", static_cast<double>(m.makespan().ps()) / 1e6,
                                          static_cast<double>(total.ps() / 3) / 1e6);
  for (const char* budget : {"1", "2"})
    for (const char* cache : {"1", "8"}) {
      const std::string row = fmt::format("allreduce,ring,8,optimized,{},{},fallback,3,", budget, cache);
      const auto at = one.find(row);
      ASSERT_NE(at, std::string::npos) << one;
      EXPECT_EQ(one.substr(one.find(',', at + row.size()), figures.size()), figures) << one;
    }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fabriclab::scenario
