// A reusable barrier for a few threads that meet very often (a partitioned simulation
// meets every simulated microsecond, about a hundred microseconds of work apart): a
// thread that arrives early stays awake for a while -- spinning, then yielding its core
// at each look -- since the others are usually about to arrive, and only then sleeps on
// the generation counter (std::atomic::wait, a futex on Linux). std::barrier goes to
// sleep almost at once, and on a virtual machine a sleeping thread's core halts and can
// take hundreds of microseconds to run again; its partner,
// meanwhile, runs the next window, arrives first and sleeps in its turn, so one late
// wake-up costs both threads. With more threads than cores a spinner would take the core
// a late thread needs: then `spin` should be false.
//
//   SpinBarrier sync(2, /*spin=*/2 <= std::thread::hardware_concurrency());
//   // in each of the two threads, every round:
//   work(); sync.arrive_and_wait();  // all work of this round happens-before what follows
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace fabriclab {

class SpinBarrier {
 public:
  // How long an early thread waits awake before it sleeps: much longer than the
  // imbalance of two windows of similar work (tens of microseconds), so that it sleeps
  // only when another thread was preempted for long. Measured on the 2-core VM,
  // fat_tree_128 on 2 threads: with 50 us, 5 to 13 % of the windows ended in a sleep and
  // cost 15 to 45 ms of waiting in a 0.2 s run; with 2 ms, 0.1 to 2 %.
  static constexpr std::chrono::microseconds kSpinFor{2000};

  explicit SpinBarrier(std::uint32_t threads, bool spin = true) : threads_(threads), spin_(spin) {}
  SpinBarrier(const SpinBarrier&) = delete;
  SpinBarrier& operator=(const SpinBarrier&) = delete;

  void arrive_and_wait() {
    const std::uint32_t gen = generation_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == threads_) {
      // The last to arrive resets the count for the next round before it opens this
      // one: whoever arrives next has seen the new generation, so sees the reset too.
      arrived_.store(0, std::memory_order_relaxed);
      generation_.store(gen + 1, std::memory_order_release);
      generation_.notify_all();
      return;
    }
    if (spin_) {
      // Spin on the pause instruction first; past kPauseFor, yield the core at each check
      // instead, so that a thread waiting for a core (another program's, or ours when
      // the machine is busy) gets it, and the late partner we wait for may be that one.
      const auto start = std::chrono::steady_clock::now();
      bool yielding = false;
      for (std::uint32_t i = 1;; ++i) {
        if (generation_.load(std::memory_order_acquire) != gen) return;
        if (yielding) std::this_thread::yield();
        else pause();
        if (yielding || i % 64 == 0) {  // a yield may last a time slice: look at the clock after each
          const auto waited = std::chrono::steady_clock::now() - start;
          if (waited >= kSpinFor) break;
          yielding = waited >= kPauseFor;
        }
      }
    }
    while (generation_.load(std::memory_order_acquire) == gen) generation_.wait(gen, std::memory_order_acquire);
  }

 private:
  static constexpr std::chrono::microseconds kPauseFor{50};  // of kSpinFor, on the pause instruction
  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }

  const std::uint32_t threads_;
  const bool spin_;
  alignas(64) std::atomic<std::uint32_t> arrived_{0};
  alignas(64) std::atomic<std::uint32_t> generation_{0};
};

}  // namespace fabriclab
