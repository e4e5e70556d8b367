// The discrete-event simulator loop: a clock, the pending events (PendingEvents, ordered
// by (time, sequence)), and a fingerprint of the trajectory -- a hash of every executed
// event's (time, handler, tag) -- so that a test can pin a run and catch any unintended
// change of behaviour. A component is an EventHandler; `tag` tells its own kinds of
// wake-up apart, so no std::function sits on the per-event path.
//
//   struct Port : EventHandler { void on_event(std::uint64_t tag) override { ... } };
//   Simulator sim;
//   sim.schedule_in(ns(10), port, kEndOfPacket);
//   sim.run(us(100));
#pragma once

#include <cstdint>

#include "core/event_queue.h"
#include "core/units.h"

namespace fabriclab {

class EventHandler {
 public:
  virtual ~EventHandler() = default;
  virtual void on_event(std::uint64_t tag) = 0;

 private:
  friend class Simulator;
  std::uint32_t fingerprint_id_ = 0;  // assigned on first schedule, in schedule order
};

class Simulator {
 public:
  Time now() const { return now_; }
  // Throws std::logic_error for a time before now.
  void schedule_at(Time t, EventHandler& h, std::uint64_t tag = 0) {
    admit(t, h);
    queue_.push(t, {&h, tag});
  }
  void schedule_in(Time delay, EventHandler& h, std::uint64_t tag = 0) { schedule_at(now_ + delay, h, tag); }
  // schedule_at for a batch of wake-ups in time order (PendingEvents::push_in_order):
  // the same order of execution, a cheaper push.
  void schedule_in_order(Time t, EventHandler& h, std::uint64_t tag = 0) {
    admit(t, h);
    queue_.push_in_order(t, {&h, tag});
  }
  // Runs the events due at or before `until`, in order; returns how many ran. The clock
  // ends at `until` if events remain beyond it, else at the last event.
  std::uint64_t run(Time until = Time::max());
  // From inside a handler: run() returns after the current event.
  void stop() { stopped_ = true; }
  std::uint64_t events() const { return executed_; }
  std::size_t pending() const { return queue_.size(); }
  // When the next event is due (Time::max(): none).
  Time next_time() const { return queue_.empty() ? Time::max() : queue_.next_time(); }
  // Moves the clock to `t` (for a driver between runs: every event before `t` has run).
  // Throws std::logic_error for a time before now or with an event pending before it.
  void advance_to(Time t);
  std::uint64_t fingerprint() const { return fingerprint_; }

 private:
  [[noreturn]] void scheduled_in_the_past(Time t) const;
  // What every schedule checks first: not in the past; the handler numbered on first use.
  void admit(Time t, EventHandler& h) {
    if (t < now_) [[unlikely]]
      scheduled_in_the_past(t);
    if (h.fingerprint_id_ == 0) [[unlikely]]
      h.fingerprint_id_ = next_handler_id_++;
  }
  struct Wakeup {
    EventHandler* handler;
    std::uint64_t tag;
  };
  PendingEvents<Wakeup> queue_;
  Time now_;
  std::uint64_t executed_ = 0;
  std::uint64_t fingerprint_ = 0xcbf29ce484222325ull;
  std::uint32_t next_handler_id_ = 1;
  bool stopped_ = false;
};

}  // namespace fabriclab
