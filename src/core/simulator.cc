#include "core/simulator.h"

#include <stdexcept>

namespace fabriclab {

namespace {
// One multiply and a shift per 64-bit word: this runs for every event, and a
// fingerprint only has to change when the trajectory does.
std::uint64_t mix(std::uint64_t h, std::uint64_t x) {
  h = (h ^ x) * 0x9e3779b97f4a7c15ull;
  return h ^ (h >> 29);
}
}  // namespace

void Simulator::scheduled_in_the_past(Time t) const {
  throw std::logic_error("Simulator: an event was scheduled at " + to_string(t) + ", before the current time " +
                         to_string(now_));
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
  while (!queue_.empty() && !stopped_) {
    if (queue_.next_time() > until) {
      now_ = until;
      break;
    }
    auto e = queue_.pop();
    now_ = e.time;
    fingerprint_ = mix(mix(mix(fingerprint_, static_cast<std::uint64_t>(e.time.ps())),
                           e.payload.handler->fingerprint_id_),
                       e.payload.tag);
    ++executed_;
    ++ran;
    e.payload.handler->on_event(e.payload.tag);
  }
  return ran;
}

}  // namespace fabriclab
