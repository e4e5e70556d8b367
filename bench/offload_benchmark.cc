// Benchmarks of the offload planner at scale: building a collective's DAG and assigning
// counters with the optimized strategy under the local analysis (the path used for
// large P), and the global analysis's assignment and verification at P = 64.
//
//   build/release/bench/offload_benchmark --benchmark_filter='Assign/.*1024'
//
// Peak resident memory of the process so far is reported as a counter (it only grows, so
// run one filter at a time to attribute it).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "offload/assignment.h"
#include "offload/collectives.h"
#include "offload/verifier.h"

namespace {

using namespace fabriclab::offload;

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

void BM_Assign(benchmark::State& state, std::string collective, std::string algorithm) {
  const auto p = static_cast<Rank>(state.range(0));
  std::size_t ops = 0;
  for (auto _ : state) {
    const Schedule dag = build_schedule(collective, algorithm, {.ranks = p});
    const Schedule s = assign_counters(dag, Strategy::optimized, {.analysis = Analysis::local});
    ops = s.size();
    benchmark::DoNotOptimize(s.counter_summary().max);
  }
  state.counters["ops"] = static_cast<double>(ops);
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}

void BM_AssignGlobal(benchmark::State& state, std::string collective, std::string algorithm) {
  const auto p = static_cast<Rank>(state.range(0));
  const Schedule dag = build_schedule(collective, algorithm, {.ranks = p});
  for (auto _ : state) {
    const Schedule s = assign_counters(dag, Strategy::optimized, {.analysis = Analysis::global});
    benchmark::DoNotOptimize(s.counter_summary().max);
  }
  state.counters["ops"] = static_cast<double>(dag.size());
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}

void BM_VerifyGlobal(benchmark::State& state, std::string collective, std::string algorithm) {
  const auto p = static_cast<Rank>(state.range(0));
  const Schedule s = assign_counters(build_schedule(collective, algorithm, {.ranks = p}), Strategy::optimized,
                                     {.analysis = Analysis::global});
  for (auto _ : state) {
    const auto r = verify(s, {.analysis = Analysis::global, .random_runs = 4, .exhaustive_state_limit = 0});
    if (!r.ok()) state.SkipWithError("verifier rejected an optimized schedule");
  }
  state.counters["ops"] = static_cast<double>(s.size());
}

int register_all() {
  for (const auto& a : algorithms()) {
    benchmark::RegisterBenchmark(("Assign/" + a.collective + "/" + a.algorithm).c_str(), BM_Assign, a.collective,
                                 a.algorithm)
        ->Arg(64)
        ->Arg(256)
        ->Arg(1024)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
    benchmark::RegisterBenchmark(("AssignGlobal/" + a.collective + "/" + a.algorithm).c_str(), BM_AssignGlobal,
                                 a.collective, a.algorithm)
        ->Arg(64)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
    benchmark::RegisterBenchmark(("VerifyGlobal/" + a.collective + "/" + a.algorithm).c_str(), BM_VerifyGlobal,
                                 a.collective, a.algorithm)
        ->Arg(64)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
  }
  return 0;
}
const int registered = register_all();

}  // namespace

BENCHMARK_MAIN();
