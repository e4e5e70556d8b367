#include "core/spin_barrier.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace fabriclab {
namespace {

// Each round every thread writes its slot, meets the others, checks that every slot
// holds this round's value, and meets them again before the next round overwrites it.
// A barrier that let a thread through early would show a slot of the last round (or
// the next). Rounds outnumber the spins of one wait many times over, and thread 1 now
// and then takes its time: longer than the pause-spin (the others then yield their
// cores) and longer than the whole spin (they sleep), as does a thread that is one of
// three on fewer cores.
void rounds(std::uint32_t threads, int n, bool spin = true) {
  SpinBarrier sync(threads, spin);
  std::vector<std::atomic<int>> slot(threads);
  std::atomic<int> wrong{0};
  auto body = [&](std::uint32_t t) {
    for (int r = 1; r <= n; ++r) {
      slot[t].store(r, std::memory_order_relaxed);
      if (t == 1 && r % 500 == 250) std::this_thread::sleep_for(std::chrono::microseconds(200));
      if (t == 1 && r % 500 == 0) std::this_thread::sleep_for(SpinBarrier::kSpinFor + std::chrono::milliseconds(1));
      sync.arrive_and_wait();
      for (std::uint32_t u = 0; u < threads; ++u)
        if (slot[u].load(std::memory_order_relaxed) != r) wrong.fetch_add(1);
      sync.arrive_and_wait();
    }
  };
  std::vector<std::thread> pool;
  for (std::uint32_t t = 1; t < threads; ++t) pool.emplace_back(body, t);
  body(0);
  for (auto& th : pool) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(SpinBarrier, NoThreadLeavesARoundBeforeAllHaveArrived) {
  rounds(2, 5000);
  rounds(3, 1000);
  rounds(3, 1000, /*spin=*/false);
}

TEST(SpinBarrier, OneThreadNeverWaits) { rounds(1, 1000); }

}  // namespace
}  // namespace fabriclab
