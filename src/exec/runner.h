// Runs a schedule for real: one process per rank, each with its own exec::Nic, a
// control channel (a socket pair) to the launcher, and a watchdog.
//
// Each iteration goes PREPARE (every rank zeroes its window, writes its input, queues
// its triggered operations: none can fire, as each waits for data no one has sent) ->
// READY from all -> START (every rank posts its untriggered operations and waits for its
// host_waits) -> DONE with the wall time and the checked result. The barrier between
// iterations is what makes re-using counters safe: when every rank is done, every
// triggered operation has fired, and the next iteration's thresholds are the old ones
// plus each counter's value (base offsets carried forward; a counter is reset to 0
// when the next base would pass the provider's 32-bit limit).
//
// Never hang: a rank whose counters stop moving for `timeout` reports what it waits for
// (host_wait counters and values, and the queued operations not yet fired), a rank that
// goes silent is named, and every child is killed and reaped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "exec/nic.h"
#include "exec/plan.h"
#include "offload/schedule.h"

namespace fabriclab::exec {

enum class Path : std::uint8_t { triggered, software };

struct RunOptions {
  std::string provider = "sockets";
  NicFactory nic = nullptr;
  Path path = Path::triggered;
  std::int64_t iterations = 1;
  double timeout_seconds = 10;
};

struct RankStats {
  int counters = 0;
  std::int64_t ops = 0;         // queued (triggered) or posted (software) per iteration
  std::vector<double> wall_us;  // per iteration, from START to the last host_wait
};

struct RunResult {
  std::vector<RankStats> ranks;
  std::int64_t iterations_verified = 0;
  std::vector<std::string> failures;  // wrong values, stalls, crashes: empty when all is well
  bool ok() const { return failures.empty(); }
};

// Asks the provider, in a short-lived child process (libfabric is never opened in the
// launcher, which forks the ranks), what it offers. Throws InputError when unusable.
NicInfo probe_nic(const RunOptions& o, offload::Datatype dt);

// Runs `s` (with its data layout) for `o.iterations` iterations. For the triggered path
// `s` is counter-assigned and `programs` is plan_triggered(s, window); for the software path `s`
// is the DAG and `programs` is ignored.
RunResult run(const offload::Schedule& s, const std::vector<RankProgram>& programs, const RunOptions& o);

}  // namespace fabriclab::exec
