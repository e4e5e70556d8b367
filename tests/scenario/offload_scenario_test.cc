// The shipped offload scenario under each policy, its determinism, and workload files.
#include "scenario/offload/offload_scenario.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "error_message.h"
#include "nicmodel/model.h"
#include "offload/assignment.h"
#include "offload/collectives.h"
#include "scenario/report/files.h"

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
    const std::string a = read_text(dir / "a" / f);
    EXPECT_EQ(a, read_text(dir / "b" / f)) << f;
    EXPECT_GT(a.size(), 100u);
  }
  std::filesystem::remove_all(dir);
}

TEST(OffloadScenario, OutputsAreThoseOfTheModelBeforeItsRewrite) {
  // FNV-1a of collectives.csv and usage.csv for the shipped workload, recorded with the
  // model as it was before it walked prepared flat arrays (commit cf4ca41): the rewrite
  // and its renumbering for locality must change no result. Recorded again when issues
  // and completions moved into steps (December 2026), which changed the model on
  // purpose: software collectives are seen complete at a poll, a poll sees what happened
  // strictly before it, and completions at one instant go in collective order (in the
  // stall run the first change is jobs 1 and 2 both seen at 202 us: their followers are
  // now issued in that order, so the ring waits ahead of the recursive doubling).
  auto fnv1a = [](const std::string& text) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
    return h;
  };
  const auto dir = std::filesystem::path(::testing::TempDir()) / "offload_pinned";
  const struct {
    const char* policy;
    std::uint64_t collectives, usage;
  } pinned[] = {{"stall", 0x9725c2e8b908ce95ull, 0x46a8de1449b8564eull},
                {"fallback", 0x54e8d5ef2c3249cfull, 0x5d69f62bf0f07ae5ull}};
  for (const auto& p : pinned) {
    run_with({std::string("offload.policy=") + p.policy}, (dir / p.policy).string());
    EXPECT_EQ(fnv1a(read_text(dir / p.policy / "collectives.csv")), p.collectives) << p.policy;
    EXPECT_EQ(fnv1a(read_text(dir / p.policy / "usage.csv")), p.usage) << p.policy;
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
            (dir / "bad.csv").string() + ":2: column ranks: ranks must be in 2..1048576 (got 1)");
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

TEST(OffloadScenario, ExperimentGridAsksTheModelsDecisionWhetherAPointCanEverOffload) {
  // The broadcast's root holds two triggered puts; with one slot per NIC it never fits,
  // though its one counter does: under stall the point is listed as never fitting (the
  // model would refuse it), under fallback both copies run in software.
  const auto dir = std::filesystem::path(::testing::TempDir()) / "offload_exp_slots";
  const auto cfg = resolve_text(offload_parameters(),
                                "[nic]\nslots = 1\n[experiment]\nconcurrency = \"2\"\nranks = \"4\"\ncounters = \"8\"\n"
                                "cache_entries = \"8\"\nstrategies = \"optimized\"\npolicies = \"stall,fallback\"\n"
                                "collectives = \"bcast:binomial\"\n",
                                "exp.toml");
  EXPECT_EQ(run_offload_experiment(cfg, "exp.toml", dir.string()), 2u);
  const std::string csv = read_text(dir / "experiment.csv");
  EXPECT_NE(csv.find("bcast,binomial,4,optimized,8,8,stall,2,1,never-fits,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("bcast,binomial,4,optimized,8,8,fallback,2,1,yes,0,2,"), std::string::npos) << csv;
  std::filesystem::remove_all(dir);
}

// The figures an experiment.csv row has after `simulated`, from the model run directly.
std::string figures_of(offload::Strategy strategy, std::int64_t counters, std::int32_t cache, nicmodel::Policy policy) {
  nicmodel::NicParams p;  // the scenario's defaults
  p.counters = counters;
  p.cache_entries = cache;
  p.slots = 4096;
  p.cache_miss = ns(100);
  p.op_time = ns(50);
  p.host_op_time = us(1);
  p.host_poll = us(1);
  const auto sched = std::make_shared<const offload::Schedule>(
      offload::assign_counters(offload::build_schedule("allreduce", "ring", {.ranks = 8, .bytes = 4096}), strategy));
  nicmodel::OffloadModel m(p, 8, policy);
  for (int i = 0; i < 3; ++i)
    m.add({.name = fmt::format("c{}", i), .schedule = sched, .nic_of_rank = {0, 1, 2, 3, 4, 5, 6, 7}, .issue = Time()});
  const auto rs = m.run();
  Time total, stall;
  int software = 0, most = 0;
  for (const auto& r : rs) {
    total += r.completion();
    stall += r.stall();
    software += !r.offloaded;
    int at_once = 0;  // offloaded ones running when this one started
    for (const auto& o : rs) at_once += r.offloaded && o.offloaded && o.start <= r.start && r.start < o.done;
    most = std::max(most, at_once);
  }
  std::uint64_t hits = 0, misses = 0;
  for (int n = 0; n < 8; ++n) {
    hits += m.cache(n).hits();
    misses += m.cache(n).misses();
  }
  const double rate = hits + misses ? static_cast<double>(hits) / static_cast<double>(hits + misses) : 0.0;
  auto us_text = [](Time t) { return fmt::format("{:.1f}", static_cast<double>(t.ps()) / 1e6); };
  return fmt::format(",yes,{},{},{},{},{},{:.4f}\n", most, software, us_text(m.makespan()), us_text(stall),
                     us_text(Time::from_ps(total.ps() / 3)), rate);
}

TEST(OffloadScenario, ExperimentRowsAreTheModelsAndAnyJobCountGivesTheSameGrid) {
  // Three ring allreduces on 8 ranks. With 1 or 2 counters per NIC none fits: under
  // fallback all three run in software whatever the cache, and those points share one
  // simulation per assignment; under stall they are listed as never fitting. With 64
  // counters some are offloaded and the cache matters. Every simulated row must carry
  // the figures of the model run directly (for the software-only ones, with yet another
  // budget and cache), and the grid must not depend on how many workers ran it.
  const auto dir = std::filesystem::path(::testing::TempDir()) / "offload_exp_rows";
  const auto cfg = resolve_text(offload_parameters(),
                                "[workload]\nbytes = \"4KiB\"\n[experiment]\nconcurrency = \"3\"\nranks = \"8\"\n"
                                "counters = \"1,2,64\"\ncache_entries = \"1,8\"\nstrategies = \"naive,optimized\"\n"
                                "policies = \"stall,fallback\"\ncollectives = \"allreduce:ring\"\n",
                                "exp.toml");
  auto csv_of = [&](unsigned jobs) {
    const auto out = dir / std::to_string(jobs);
    EXPECT_EQ(run_offload_experiment(cfg, "exp.toml", out.string(), jobs), 24u);
    EXPECT_FALSE(std::filesystem::exists(out / ".points"));
    return read_text(out / "experiment.csv");
  };
  const std::string one = csv_of(1), two = csv_of(3);
  EXPECT_EQ(one, two);

  auto row = [&](const char* strategy, int budget, int cache, const char* policy) -> std::string {
    const std::string head = fmt::format("allreduce,ring,8,{},{},{},{},3,", strategy, budget, cache, policy);
    const auto at = one.find(head);
    if (at == std::string::npos) return "missing: " + head;
    const auto figures = one.find(',', at + head.size());  // after counters_per_nic
    return one.substr(figures, one.find('\n', figures) + 1 - figures);
  };
  using offload::Strategy;
  using nicmodel::Policy;
  for (const auto& [name, strategy] :
       {std::pair{"naive", Strategy::naive}, std::pair{"optimized", Strategy::optimized}}) {
    const std::string software = figures_of(strategy, 3, 5, Policy::fallback);  // 3 counters: still none fits
    EXPECT_NE(software.find(",yes,0,3,"), std::string::npos) << software;
    for (int budget : {1, 2})
      for (int cache : {1, 8}) {
        EXPECT_EQ(row(name, budget, cache, "fallback"), software) << name << " " << budget << " " << cache;
        EXPECT_EQ(row(name, budget, cache, "stall").substr(0, 12), ",never-fits,") << name;
      }
    for (int cache : {1, 8})
      for (const auto& [policy_name, policy] :
           {std::pair{"stall", Policy::stall}, std::pair{"fallback", Policy::fallback}})
        EXPECT_EQ(row(name, 64, cache, policy_name), figures_of(strategy, 64, cache, policy))
            << name << " " << cache << " " << policy_name;
  }
  // The offloaded points differ from the software ones (the sharing stops at the budget).
  EXPECT_NE(row("optimized", 64, 8, "fallback"), row("optimized", 2, 8, "fallback"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fabriclab::scenario
