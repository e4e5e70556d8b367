// Benchmarks of the offload planner at scale: building a collective's DAG and assigning
// counters with the optimized strategy under the local analysis (the path used for
// large P), the global analysis's assignment and verification at P = 64, and the
// verifier and the optimized assignment on long single-rank chains.
//
//   build/release/bench/offload_benchmark --benchmark_filter='Assign/.*1024'
//
// Peak resident memory of the process so far is reported as a counter (it only grows, so
// run one filter at a time to attribute it).
#include <benchmark/benchmark.h>
#include <fmt/format.h>
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

// The rule on one rank's chain of n counter adds, each triggered by its predecessor:
// `shared` on one counter with rising thresholds (its incrementers span the chain, the
// worst case of the rule's walk: n^2/64 word operations), else a counter per link.
void BM_VerifyChain(benchmark::State& state, Analysis analysis, bool shared) {
  const auto n = static_cast<int>(state.range(0));
  Schedule s(1);
  s.set_counter_owners(std::vector<Rank>(shared ? 1 : static_cast<std::size_t>(n), 0));
  OpId prev = s.add({.kind = OpKind::cntr_add, .rank = 0, .add = 1, .target = 0});
  for (int i = 1; i < n; ++i)
    prev = s.add({.kind = OpKind::cntr_add,
                  .rank = 0,
                  .add = 1,
                  .trigger = shared ? 0 : i - 1,
                  .threshold = shared ? i : 1,
                  .target = shared ? 0 : i},
                 {prev});
  for (auto _ : state) {
    const auto r = verify(s, {.analysis = analysis, .random_runs = 1, .exhaustive_state_limit = 0});
    if (!r.ok()) state.SkipWithError("verifier rejected a safe chain");
  }
  state.counters["ops"] = static_cast<double>(s.size());
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}

// The optimized assignment (local analysis) on one rank's chain of n operations, each
// triggered by its predecessor: counter adds, or puts to a second rank (whose arrivals
// nothing consumes). A chain fits one counter with rising thresholds; the assignment
// must get there in time and memory close to linear in n. `trailing_arrival`: an arrival
// nothing consumes is issued last on the chain's rank (no op of the chain is a cut point).
void BM_AssignChain(benchmark::State& state, OpKind kind, bool trailing_arrival) {
  const auto n = static_cast<int>(state.range(0));
  Schedule dag(2);
  OpId prev = -1;
  for (int i = 0; i < n; ++i) {
    const auto deps = prev < 0 ? std::span<const OpId>() : std::span<const OpId>(&prev, 1);
    if (kind == OpKind::cntr_add) {
      prev = dag.add({.kind = OpKind::cntr_add, .rank = 0, .add = 1}, deps);
    } else {
      prev = dag.add({.kind = OpKind::put, .rank = 0, .peer = 1, .bytes = 8}, deps);
      const OpId put = prev;
      dag.add({.kind = OpKind::arrival, .rank = 1, .peer = 0, .bytes = 8}, std::span<const OpId>(&put, 1));
    }
  }
  dag.add({.kind = OpKind::host_wait, .rank = 0}, std::span<const OpId>(&prev, 1));
  if (trailing_arrival) {
    const OpId put = dag.add({.kind = OpKind::put, .rank = 1, .peer = 0, .bytes = 8});
    dag.add({.kind = OpKind::arrival, .rank = 0, .peer = 1, .bytes = 8}, std::span<const OpId>(&put, 1));
  }
  std::int64_t counters = 0;
  for (auto _ : state) {
    const Schedule s = assign_counters(dag, Strategy::optimized, {.analysis = Analysis::local});
    counters = s.counter_summary().max;
  }
  state.counters["ops"] = static_cast<double>(dag.size());
  state.counters["counters"] = static_cast<double>(counters);
  state.counters["peak_rss_MiB"] = peak_rss_mib();
}

int register_all() {
  // The global analysis stops at kMaxGlobalOps (verify falls back to local above it).
  for (auto a : {Analysis::local, Analysis::global})
    for (bool shared : {false, true}) {
      auto* b = benchmark::RegisterBenchmark(
          fmt::format("VerifyChain/{}/{}", to_string(a), shared ? "shared_counter" : "counter_per_link").c_str(),
          BM_VerifyChain, a, shared);
      for (std::int64_t n : {std::int64_t{20000}, std::int64_t{60000}, std::int64_t{1000000}})
        if (a == Analysis::local || n <= static_cast<std::int64_t>(kMaxGlobalOps)) b->Arg(n);
      b->Unit(benchmark::kMillisecond)->Iterations(1);
    }
  for (auto [k, trailing] : {std::pair{OpKind::cntr_add, false}, {OpKind::put, false}, {OpKind::cntr_add, true}})
    benchmark::RegisterBenchmark(fmt::format("AssignChain/{}{}", to_string(k), trailing ? "_then_arrival" : "").c_str(),
                                 BM_AssignChain, k, trailing)
        ->Arg(8000)
        ->Arg(32000)
        ->Arg(100000)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
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
