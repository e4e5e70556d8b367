// Benchmarks of the timed NIC model (src/nicmodel) on the shapes that make the
// offload-concurrency grid slow: k ring allreduces of 512 ranks issued at once, offloaded
// (stall, 2048 counters: two optimized or one naive run at a time) and in software
// (fallback, 16 counters: none fits), each schedule prepared once outside the timing.
// Reports operations simulated per second (every op of every collective once).
//
//   build/release/bench/nicmodel_benchmark --benchmark_filter='Model/.*'
#include <benchmark/benchmark.h>

#include <map>
#include <memory>

#include "nicmodel/model.h"
#include "offload/assignment.h"
#include "offload/collectives.h"

namespace {

using namespace fabriclab;

std::shared_ptr<const offload::Schedule> ring512(offload::Strategy strategy) {
  static std::map<offload::Strategy, std::shared_ptr<const offload::Schedule>> built;
  auto& s = built[strategy];
  if (!s)
    s = std::make_shared<const offload::Schedule>(offload::assign_counters(
        offload::build_schedule("allreduce", "ring", {.ranks = 512, .bytes = 64 * 1024}), strategy));
  return s;
}

void BM_Model(benchmark::State& state, nicmodel::Policy policy, std::int64_t counters, offload::Strategy strategy) {
  const auto s = ring512(strategy);
  const auto prepared = nicmodel::prepare(s);
  const auto k = state.range(0);
  nicmodel::NicParams p;
  p.counters = counters;
  p.slots = 1'000'000;
  p.cache_entries = 256;
  std::vector<std::int32_t> nic_of(512);
  for (int r = 0; r < 512; ++r) nic_of[static_cast<std::size_t>(r)] = r;
  for (auto _ : state) {
    nicmodel::OffloadModel m(p, 512, policy);
    for (std::int64_t i = 0; i < k; ++i) {
      std::string name = "c";
      name += std::to_string(i);
      m.add({.name = name, .schedule = s, .prepared = prepared, .nic_of_rank = nic_of, .issue = Time()});
    }
    benchmark::DoNotOptimize(m.run());
  }
  state.counters["ops_per_s"] = benchmark::Counter(static_cast<double>(k) * static_cast<double>(s->size()),
                                                   benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK_CAPTURE(BM_Model, ring512_optimized_offloaded, nicmodel::Policy::stall, 2048, offload::Strategy::optimized)
    ->Arg(4)
    ->Arg(16)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_Model, ring512_naive_offloaded, nicmodel::Policy::stall, 2048, offload::Strategy::naive)
    ->Arg(4)
    ->Arg(16)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_Model, ring512_optimized_software, nicmodel::Policy::fallback, 16, offload::Strategy::optimized)
    ->Arg(4)
    ->Arg(16)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK_CAPTURE(BM_Model, ring512_naive_software, nicmodel::Policy::fallback, 16, offload::Strategy::naive)
    ->Arg(4)
    ->Arg(16)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
