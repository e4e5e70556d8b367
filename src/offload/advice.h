// Offload or fall back (triggered-ops.md section 4), decided in one place.
//
// decide() is the decision: given what a collective needs on each NIC it spans, what
// each of those NICs has free now and what a NIC has when idle, it says whether the
// collective is offloaded now, waits for counters or slots held by others, runs in
// software, or is refused -- and why. The planner's advise() below, the timed NIC model
// (nicmodel/model.h) and `fabriclab exec` all ask it; each words the reason its own way.
//
//   std::vector<NicResources> need = needs_per_rank(assigned);  // rank r on NIC r
//   std::vector<NicResources> free(need.size(), {.counters = 4, .slots = 64});
//   OffloadDecision d = decide(need, free, {.counters = 4, .slots = 64}, {.wait = true});
//
// advise() plans a list of collectives started in order on idle NICs: which are
// offloaded now, which must wait for counters or slots held by collectives offloaded
// before them, and which can only run in software (they need more than a NIC has at all).
//
//   auto advice = advise({.counters = 16, .slots = 256},
//                        {{"allreduce", "ring", {.ranks = 8}}, {"bcast", "binomial", {.ranks = 8}}});
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/params.h"

#include "offload/assignment.h"
#include "offload/collectives.h"

namespace fabriclab::offload {

// Counters and triggered-operation slots: what a NIC has (free now, or in all) or what a
// collective needs on it.
struct NicResources {
  std::int64_t counters = 0;
  std::int64_t slots = 0;
};

// What each rank of a counter-assigned schedule holds on its NIC while it is offloaded:
// its distinct counters, and one slot per operation the NIC holds until it fires (puts,
// gets, atomics, counter adds; arrivals and host waits take none).
std::vector<NicResources> needs_per_rank(const Schedule& assigned);

// refuse: it cannot be offloaded (now, or ever) and the caller allows neither waiting
// nor software (the NIC model's stall policy, `exec --fallback refuse`).
enum class Decision : std::uint8_t { offload, wait, software, refuse };
inline constexpr params::EnumNames<Decision, 4> kDecisionNames{{{Decision::offload, "offload"},
                                                                {Decision::wait, "wait"},
                                                                {Decision::software, "software"},
                                                                {Decision::refuse, "refuse"}}};
std::string_view to_string(Decision d);

// What a collective that cannot start offloaded now may do instead.
struct WhenShort {
  bool wait = true;      // it fits an idle NIC: wait until others release enough
  bool software = true;  // run on the host's software path; false: refuse
};

struct OffloadDecision {
  enum class Why : std::uint8_t {
    fits,            // every NIC has what it needs free now
    behind_waiting,  // it fits now, but earlier collectives wait and it may not pass them
    short_now,       // it fits an idle NIC, not what is free now
    never_fits,      // some NIC it spans would need more than an idle NIC has
  };
  Decision decision = Decision::offload;
  Why why = Why::fits;
  // short_now, never_fits: what is short on some NIC (against what is free now, or
  // against an idle NIC), and the first NIC (index into `need`) that is short. Left
  // false and 0 for fits and behind_waiting.
  bool counters_short = false, slots_short = false;
  std::size_t nic = 0;
};

// The decision. need[i] is what the collective needs on NIC i, free[i] what NIC i has
// free now (same length; a NIC the collective does not use needs {0, 0}); idle is what
// any NIC has with nothing offloaded. It fits when need <= free for counters and slots on
// every NIC; it never fits when need > idle on some NIC. earlier_waiting: collectives
// issued before it are waiting, and it keeps issue order (it may not overtake them even
// if it fits now). In that order:
//   never fits                 -> software, or refuse without when_short.software;
//   fits now, nobody ahead     -> offload;
//   otherwise (short now, or fits now behind waiting ones)
//                              -> wait, or software without when_short.wait, or refuse
//                                 with neither.
// Throws std::invalid_argument when need and free differ in length (a caller's bug).
OffloadDecision decide(std::span<const NicResources> need, std::span<const NicResources> free, NicResources idle,
                       WhenShort when_short, bool earlier_waiting = false);

// A list of collectives started in order on NICs that all have `counters` and `slots`
// free (advise()).
struct NicBudget {
  std::int64_t counters = 16;                                     // free counters per NIC
  std::int64_t slots = std::numeric_limits<std::int64_t>::max();  // free triggered-op slots
  bool allow_wait = true;  // false: a collective that does not fit now runs in software
};

struct CollectiveRequest {
  std::string collective, algorithm;
  BuildOptions options;
};

struct Advice {
  using Decision = offload::Decision;  // offload, wait or software (advise() never refuses)
  Decision decision = Decision::offload;
  std::int64_t counters_max = 0, counters_naive_max = 0;  // per NIC
  std::int64_t slots_max = 0;                             // per NIC
  Analysis analysis = Analysis::local;                    // what the counters were assigned under
  std::vector<std::size_t> waits_for;                     // indices of earlier offloaded collectives
  std::string reason;
};

// Each collective spans ranks 0..P-1, rank r on NIC r, and is decided by decide()
// against what the ones offloaded before it hold, with earlier_waiting false: a later
// collective that fits now is offloaded ahead of a waiting one (the NIC model's stall and
// advise policies keep issue order instead). Its counters are assigned by `strategy`
// under `analysis`, or, without one, under the analysis `fabriclab counters` reports
// as its best: global where it fits (best_analysis()), so that both give one number.
// Throws InputError on a bad request or budget.
std::vector<Advice> advise(const NicBudget& budget, const std::vector<CollectiveRequest>& requests,
                           Strategy strategy = Strategy::optimized, std::optional<Analysis> analysis = std::nullopt);

}  // namespace fabriclab::offload
