// The pending-event set at 1k to 1M events, in the classic "hold" model (Vaucher and
// Duval 1975): pop the earliest event, push one a random gap later, so the population
// stays constant. Gaps are exponential with a mean of 1 us, as packet events are.
// BM_Lockstep is a network's pattern: n ports of equal rate finishing frames at the same
// instants (every event of a burst ties), each re-scheduled one frame time later.
//
//   build/release/bench/event_queue_benchmark
#include <benchmark/benchmark.h>

#include <cmath>

#include "core/event_queue.h"
#include "core/random.h"

namespace {

using namespace fabriclab;

template <typename Queue>
void BM_Hold(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  RandomStream rng(1, "hold");
  auto gap = [&] { return Time::from_ps(static_cast<std::int64_t>(-std::log(1.0 - rng.uniform()) * 1e6)); };
  Queue q;
  for (std::size_t i = 0; i < n; ++i) q.push(gap() * 1, static_cast<std::uint32_t>(i));
  for (auto _ : state) {
    auto e = q.pop();
    q.push(e.time + gap(), e.payload);
  }
  state.SetItemsProcessed(state.iterations());
}

template <typename Queue>
void BM_Lockstep(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const Time frame = Time::from_ps(335840);  // 4 KiB RoCE frame at 100 Gb/s
  Queue q;
  for (std::size_t i = 0; i < n; ++i) q.push(frame, static_cast<std::uint32_t>(i));
  for (auto _ : state) {
    auto e = q.pop();
    q.push(e.time + frame, e.payload);
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_Hold<QuadHeap<std::uint32_t>>)->RangeMultiplier(10)->Range(1000, 1000000);
BENCHMARK(BM_Hold<CalendarQueue<std::uint32_t>>)->RangeMultiplier(10)->Range(1000, 1000000);
BENCHMARK(BM_Hold<LaneQueue<std::uint32_t>>)->RangeMultiplier(10)->Range(1000, 1000000);
BENCHMARK(BM_Lockstep<QuadHeap<std::uint32_t>>)->RangeMultiplier(10)->Range(100, 10000);
BENCHMARK(BM_Lockstep<CalendarQueue<std::uint32_t>>)->RangeMultiplier(10)->Range(100, 10000);
BENCHMARK(BM_Lockstep<LaneQueue<std::uint32_t>>)->RangeMultiplier(10)->Range(100, 10000);

}  // namespace

BENCHMARK_MAIN();
