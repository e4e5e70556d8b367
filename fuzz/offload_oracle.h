// What the schedule and program targets check beyond "no crash": a DAG the readers accept
// is one every counter assignment handles, and the assignment is safe and live by the
// verifier (what `fabriclab counters` and `plan` print, and what `exec` treats as a bug
// when it fails). The verifier's budget is small: inputs are small, and a schedule of
// the fuzzer's is no reason to search for long.
//
// And the seeds: FABRICLAB_FUZZ_SEEDS=DIR makes a target write the schedules the planner
// builds (every collective and algorithm on a few ranks) to DIR, in its format, and exit.
#pragma once

#include <fstream>
#include <string>
#include <utility>

#include "fuzz/fuzz_common.h"
#include "offload/assignment.h"
#include "offload/collectives.h"
#include "offload/schedule.h"
#include "offload/strategy_runs.h"
#include "offload/verifier.h"

namespace fabriclab::fuzz {

inline offload::VerifyOptions small_verify() {
  offload::VerifyOptions o;
  o.random_runs = 4;
  o.exhaustive_state_limit = 2000;
  o.exhaustive_max_ops = 64;
  return o;
}

// Verifies `s` (counters assigned) and returns the report; an InputError from the verifier
// on a schedule that passed the reader is a finding when `trusted` (our own assignment).
inline offload::VerifyReport verify_small(const offload::Schedule& s, offload::Analysis a) {
  offload::VerifyOptions o = small_verify();
  o.analysis = a;
  return offload::verify(s, o);
}

// Every strategy but exact (z3: too slow per input; it shares the optimized one's steps) on
// a DAG the reader accepted and check_assignable() passes (it refuses, by name, what no
// counters can realise), under each analysis that fits; each result must verify safe and
// live. The optimized assignment first: it has the most to get wrong.
inline void check_assignments(const offload::Schedule& dag) {
  using offload::Analysis;
  using offload::Strategy;
  try {
    offload::check_assignable(dag);
  } catch (const InputError&) {
    return;  // the contract: assign_counters throws the same, and nothing else runs
  }
  const std::pair<Strategy, Analysis> runs[] = {{Strategy::optimized, Analysis::local},
                                                {Strategy::optimized, Analysis::global},
                                                {Strategy::naive, Analysis::local}};
  for (const auto& [st, an] : runs) {
    if (an == Analysis::global && !offload::global_fits(dag)) continue;
    const std::string what = std::string(offload::to_string(st)) + "/" + std::string(offload::to_string(an));
    offload::Schedule assigned;
    try {
      assigned = offload::assign_counters(dag, st, {.analysis = an});
    } catch (const InputError& e) {
      finding("the " + what + " assignment rejected a DAG the reader accepted: " + e.what());
    }
    offload::VerifyReport r;
    try {
      r = verify_small(assigned, an);
    } catch (const InputError& e) {
      finding("the verifier rejected the " + what + " assignment: " + e.what());
    }
    if (!r.ok())
      finding("the " + what +
              " assignment is unsafe or hangs: " + (r.violations.empty() ? "" : r.violations[0].message));
  }
}

// Calls `write(name, schedule)` for the DAG and its naive and optimized assignments of
// every collective and algorithm on 2, 3 and 4 ranks (where the builder takes them).
template <class W>
void planner_schedules(W&& write) {
  for (const auto& a : offload::algorithms())
    for (const offload::Rank p : {2, 3, 4}) {
      offload::BuildOptions b;
      b.ranks = p;
      b.bytes = 96;
      b.root = a.uses_root ? p - 1 : 0;
      offload::Schedule dag;
      try {
        offload::check_build_options(a.collective, a.algorithm, b);
        dag = offload::build_schedule(a.collective, a.algorithm, b);
      } catch (const InputError&) {
        continue;  // not for this P
      }
      const std::string name = a.collective + "-" + a.algorithm + "-" + std::to_string(p);
      write(name + "-dag", dag);
      write(name + "-naive", offload::assign_counters(dag, offload::Strategy::naive));
      write(name + "-optimized", offload::assign_counters(dag, offload::Strategy::optimized));
    }
}

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) finding("cannot write " + path);
}

}  // namespace fabriclab::fuzz
