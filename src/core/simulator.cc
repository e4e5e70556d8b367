#include "core/simulator.h"

#include <stdexcept>
#include <string>

namespace fabriclab {

namespace {
// One multiply and a shift per 64-bit word: this runs for every event, and a
// fingerprint only has to change when the trajectory does.
std::uint64_t mix(std::uint64_t h, std::uint64_t x) {
  h = (h ^ x) * 0x9e3779b97f4a7c15ull;
  return h ^ (h >> 29);
}
}  // namespace

void EventHandler::set_tie_source(std::uint32_t s) {
  if (s >= Simulator::kTieSources)
    throw std::logic_error("EventHandler: tie source " + std::to_string(s) + " is not below 2^24");
  tie_source_ = s;
}

void Simulator::scheduled_in_the_past(Time t) const {
  throw std::logic_error("Simulator: an event was scheduled at " + to_string(t) + ", before the current time " +
                         to_string(now_));
}

void Simulator::add_sources(std::uint32_t up_to) {
  for (auto s = static_cast<std::uint32_t>(counters_.size()); s <= up_to; ++s)
    counters_.push_back(std::uint64_t{s} << kTieCountBits);
  sources_ = static_cast<std::uint32_t>(counters_.size());
}

void Simulator::advance_to(Time t) {
  if (t < now_ || next_time() < t)
    throw std::logic_error("Simulator: cannot advance the clock from " + to_string(now_) + " to " + to_string(t) +
                           (next_time() < t ? " past an event due at " + to_string(next_time()) : std::string()));
  now_ = t;
}

std::uint64_t Simulator::run(Time until) {
  stopped_ = false;
  std::uint64_t ran = 0;
  // Outside events the simulator's own source acts (also when a handler throws).
  struct Restore {
    Simulator& sim;
    ~Restore() { sim.counter_ = sim.counters_.data(); }
  } restore{*this};
  while (!queue_.empty() && !stopped_) {
    if (queue_.next_time() > until) {
      now_ = until;
      break;
    }
    const auto e = queue_.pop();
    now_ = e.time;
    EventHandler& h = *e.payload.handler;
    select_source(h.tie_source_);
    ++executed_;
    ++ran;
    h.on_event(e.payload.tag);
    // The simulator's own keys are counted per simulator, so they differ between splits:
    // only a node's key enters the fingerprint.
    const std::uint64_t key = e.seq >> kTieCountBits != 0 ? e.seq : 0;
    fingerprint_ += mix(mix(0xcbf29ce484222325ull ^ static_cast<std::uint64_t>(now_.ps()), key),
                        e.payload.tag * 0x100000001b3ull ^ acting());
  }
  return ran;
}

}  // namespace fabriclab
