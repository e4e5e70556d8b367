// The discrete-event simulator loop: a clock, the pending events (PendingEvents, ordered
// by time), and a fingerprint of the trajectory, so that a test can pin a run and catch
// any unintended change of behaviour. A component is an EventHandler; `tag` tells its own
// kinds of wake-up apart, so no std::function sits on the per-event path.
//
//   struct Port : EventHandler { void on_event(std::uint64_t tag) override { ... } };
//   Simulator sim;
//   sim.schedule_in(ns(10), port, kEndOfPacket);
//   sim.run(us(100));
//
// Ties. Events due at one instant run in the order of their tie keys, not in the order
// they were scheduled, so that a run split into parts (each with its own simulator, the
// frames between them handed over in batches) orders every part's ties exactly as the
// undivided run does. A key is drawn when the event is scheduled, from the counter of
// the *tie source* acting at that moment: the source of the handler whose event is
// running (EventHandler::set_tie_source: in the fabric, the node it belongs to), or 0
// -- the simulator's own -- outside events and for handlers that never set one. A key is
// (source << 40 | the source's count), unique, and depends only on what that source did
// before, which by induction is the same in every split of the run. An event that acts
// for another source (a frame arriving acts for the receiving node, though the sending
// port schedules it) says so with act_for(). Events scheduled from one source leave in
// the order they were scheduled, so a simulation whose handlers share one source (or set
// none) runs its ties first come, first served.
//
// Pending events leave in (time, key) order; one scheduled for now with a key below the
// running event's runs next. Within one part of a split run that order is the undivided
// run's order restricted to the part: parts act on each other only a link delay later.
#pragma once

#include <cstdint>
#include <vector>

#include "core/event_queue.h"
#include "core/units.h"

namespace fabriclab {

class EventHandler {
 public:
  virtual ~EventHandler() = default;
  virtual void on_event(std::uint64_t tag) = 0;

  // Events scheduled while this handler's events run draw their tie keys from source `s`
  // (below 2^24; 0 = the simulator's own).
  void set_tie_source(std::uint32_t s);
  std::uint32_t tie_source() const { return tie_source_; }

 private:
  friend class Simulator;
  std::uint32_t tie_source_ = 0;
};

class Simulator {
 public:
  static constexpr std::uint32_t kTieSources = 1u << 24;
  static constexpr int kTieCountBits = 40;

  Time now() const { return now_; }
  // Throws std::logic_error for a time before now.
  void schedule_at(Time t, EventHandler& h, std::uint64_t tag = 0) {
    admit(t);
    queue_.push(t, draw_key(), {&h, tag});
  }
  void schedule_in(Time delay, EventHandler& h, std::uint64_t tag = 0) { schedule_at(now_ + delay, h, tag); }
  // The next tie key of the source acting now, for an event scheduled elsewhere (a frame
  // handed to another part of a split run, which schedules it with schedule_drawn).
  std::uint64_t draw_key() { return (*counter_)++; }
  // An event whose key was drawn by another simulator's source (draw_key), in a batch of
  // such events mostly in time order (PendingEvents::push_in_order: a cheaper push).
  void schedule_drawn(Time t, EventHandler& h, std::uint64_t tag, std::uint64_t key) {
    admit(t);
    queue_.push_in_order(t, key, {&h, tag});
  }
  // From inside a handler: the rest of this event acts for `h`'s tie source.
  void act_for(const EventHandler& h) { select_source(h.tie_source_); }

  // Runs the events due at or before `until`, in order; returns how many ran. The clock
  // ends at `until` if events remain beyond it, else at the last event.
  std::uint64_t run(Time until = Time::max());
  // From inside a handler: run() returns after the current event.
  void stop() { stopped_ = true; }
  // The last run() returned because an event called stop().
  bool stopped() const { return stopped_; }
  std::uint64_t events() const { return executed_; }
  std::size_t pending() const { return queue_.size(); }
  // When the next event is due (Time::max(): none).
  Time next_time() const { return queue_.empty() ? Time::max() : queue_.next_time(); }
  // Events that ties sent from a lane of the pending set to its calendar (for benchmarks).
  std::uint64_t tie_detours() const { return queue_.tie_detours(); }
  // Moves the clock to `t` (for a driver between runs: every event before `t` has run).
  // Throws std::logic_error for a time before now or with an event pending before it.
  void advance_to(Time t);
  // A hash of every executed event's time, tie key (of a source other than 0), the tie
  // source it acted for and its tag, summed in no order: two runs that executed the same
  // events have the same fingerprint, however they were split (each part's simulator
  // holds a share; add them).
  std::uint64_t fingerprint() const { return fingerprint_; }

 private:
  struct Wakeup {
    EventHandler* handler = nullptr;
    std::uint64_t tag = 0;
  };

  [[noreturn]] void scheduled_in_the_past(Time t) const;
  void admit(Time t) const {
    if (t < now_) [[unlikely]]
      scheduled_in_the_past(t);
  }
  void select_source(std::uint32_t s) {
    if (s >= sources_) [[unlikely]]
      add_sources(s);
    counter_ = counters_.data() + s;
  }
  void add_sources(std::uint32_t up_to);
  std::uint32_t acting() const { return static_cast<std::uint32_t>(counter_ - counters_.data()); }

  PendingEvents<Wakeup> queue_;                // numbered by tie key
  std::vector<std::uint64_t> counters_ = {0};  // per tie source: its next key
  // counters_.size(), kept: comparing with it at every event is 1.2 % fewer instructions
  // at fat_tree_128 than computing the size (callgrind, 488.6 M against 494.3 M).
  std::uint32_t sources_ = 1;
  std::uint64_t* counter_ = counters_.data();  // the acting source's
  Time now_;
  std::uint64_t executed_ = 0;
  std::uint64_t fingerprint_ = 0;
  bool stopped_ = false;
};

}  // namespace fabriclab
