// What each rank's host does to run a schedule on an exec::Nic, worked out once before
// the ranks start.
//
// Triggered path (from a counter-assigned schedule): the schedule's counters of rank r
// become r's NIC counters 0..n-1; each distinct counter that counts arrivals gets its own
// registration of the window (key k >= 1, key 0 is unbound), and a sender targets the
// key of its arrival's counter; every put, atomic and counter add becomes deferred work
// with its trigger, threshold and completion counter; host_waits become (counter, value)
// conditions the host polls.
//
// Pacing (window > 0): a burst -- the transfers of a rank to one peer with the same
// dependences in the DAG (looking through the assignment's relays), so ready together,
// as an atomic's segments are -- goes at most `window` at a time.
// A burst of n > window gets a flow counter of its own, which counts the burst's
// completions in their place: transfer i >= window fires when the flow counter reaches
// i - window + 1 (so after one of the burst fired: its dependences were done, and they
// are all of i's), and once it reaches n a counter add gives each completion counter what
// the burst owed it, and the host's wait for the iteration includes it. Those counters
// move later than unpaced, never earlier, so nothing can fire early; they end each
// iteration at the same values. The limit is per burst, not per peer: bursts to one peer
// with different dependences can overlap (a ring's consecutive steps to one neighbour can).
// Flow counters are real NIC counters and count towards the budget; each burst has its
// own (bursts that never overlap could share one: not done).
//
// (The software path needs no plan: runner.cc walks the DAG, posting each transfer once
// its local dependences have completed and telling the receiver when its data is there.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exec/nic.h"
#include "offload/schedule.h"

namespace fabriclab::exec {

struct HostWait {
  int counter = 0;
  std::int64_t value = 0;
  offload::OpId op = 0;  // the schedule's host_wait (a paced burst's: its first transfer)
};

struct RankProgram {
  offload::Rank rank = 0;
  // Schedule counter of each NIC counter (kNoCounter: a flow counter of the pacing).
  std::vector<offload::CounterId> counters;
  std::vector<int> key_counter;  // NIC counter bound to key k (-1: none)
  std::vector<TriggeredOp> ops;  // in issue order
  // The schedule op of each (for a pacing's counter add: the first op of its burst).
  std::vector<offload::OpId> op_ids;
  std::vector<std::int64_t> per_iteration;  // what one run adds to each NIC counter
  std::vector<HostWait> waits;
};

// Plans the triggered path of a counter-assigned schedule with a data layout. The
// schedule must have passed validate(s, true).
// A plan that pacing would stall (thresholds that count more than an operation's
// ancestors, possible in a schedule file) or reorder (ordered channels) is returned
// unpaced, and `unpaced_because` (if given) says why.
std::vector<RankProgram> plan_triggered(const offload::Schedule& s, int window = 0,
                                        std::string* unpaced_because = nullptr);

// The most NIC counters any rank's program uses.
std::size_t max_counters(const std::vector<RankProgram>& programs);

}  // namespace fabriclab::exec
