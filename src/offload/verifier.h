// Proves a counter-assigned schedule safe (no operation fires before all its parents
// completed) and live (every operation eventually fires), by two independent methods
// (triggered-ops.md section 3):
//
// 1. The exact rule: for each operation v triggered on counter K and each parent p,
//    w(I(K) \ Up(p)) < th(v) in H (global or local analysis); liveness by the monotone
//    fixpoint of the schedule (fire everything that can fire until nothing changes).
// 2. Adversarial execution: an executor fires operations the instant their counter
//    reaches the threshold and lets an adversary choose the order of all pending
//    completions and arrivals -- at random with seeds, and exhaustively over every
//    reachable state for small schedules -- checking every firing and the final state.
//
//   VerifyReport r = verify(schedule, {});
//   if (!r.ok()) std::cout << r.violations[0].message;
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "offload/happens_before.h"
#include "offload/schedule.h"

namespace fabriclab::offload {

struct VerifyOptions {
  Analysis analysis = Analysis::global;  // falls back to local when global is too large
  std::uint64_t seed = 1;
  int random_runs = 32;
  std::size_t exhaustive_state_limit = 200000;  // 0: no exhaustive search
  std::size_t exhaustive_max_ops = 200;         // larger schedules: random runs only
  bool rule = true;  // false: executions only (the rule's bitsets are quadratic in a rank's size)
  // How the rule weighs what each queried parent reaches: `automatic` takes descendant
  // runs when they stay small (chains), else walks the graph with bitsets; the other two
  // force one way (tests compare them).
  enum class RuleWeighing : std::uint8_t { automatic, walk, runs };
  RuleWeighing rule_weighing = RuleWeighing::automatic;
  // On a schedule of this many operations or more the rule runs on a thread beside the
  // executions (a thread costs tens of us); the report is the same either way (tests
  // compare the two). 0: never.
  std::size_t rule_thread_ops = 50'000;
};

struct Violation {
  enum class Kind { early, hang } kind;
  std::string method;  // "rule", "fixpoint", "random seed N", "exhaustive"
  OpId op;
  std::string message;  // includes the counter-example
};

struct VerifyReport {
  Analysis analysis = Analysis::global;
  bool safe_by_rule = true;
  bool live_by_fixpoint = true;
  bool safe_by_execution = true;  // random runs and the exhaustive search
  int random_runs = 0;
  bool exhaustive_complete = false;
  std::size_t exhaustive_states = 0;
  std::vector<Violation> violations;  // first few per method

  bool ok() const { return safe_by_rule && live_by_fixpoint && safe_by_execution; }
};

// The schedule must have counters (validate(s, true) is run first and throws InputError
// on a malformed one).
VerifyReport verify(const Schedule& s, const VerifyOptions& opt = {});

}  // namespace fabriclab::offload
