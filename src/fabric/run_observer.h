// What reads the network at instants of its own while a run is under way (a PFC deadlock
// check, snapshots). The run ends a window just before each of an observer's instants
// and, once every event before the instant has run and while no part runs, calls read()
// on one thread, undivided, split or over several processes alike. The instants are a
// sequence fixed before the run and read by index, so every thread of a split run walks
// it the same way without sharing a position.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/units.h"

namespace fabriclab::fabric {

class RunObserver {
 public:
  enum class Kind : std::uint8_t {
    // Reads only while work is left (and not at the run's last instant), also at the
    // instant of a coordinator's step; skipped, not postponed, after a part failed. It
    // may end the run (Network::stopped_by_deadlock): a later reading at that instant
    // is then not made. An idle run does not wait for it.
    check,
    // Reads whatever the work, after the events a coordinator's step at that instant
    // schedules (postponed to the next window's end); waits for a failure to end the run.
    // An idle run waits for it (the state is read at its instant).
    reading,
  };
  virtual ~RunObserver() = default;
  virtual Kind kind() const = 0;
  // The k-th instant, ascending, after 0 (Time::max(): no more). Other threads of a split
  // run may ask while one reads: it must not depend on what read() changes.
  virtual Time instant(std::size_t k) const = 0;
  // The k-th reading, at its instant: every event before it has run, none at or after.
  virtual void read(std::size_t k, Time at) = 0;
};

}  // namespace fabriclab::fabric
