// Schedules given without a DAG (triggered-ops.md section 5): what a library would
// issue -- per rank, the ordered list of triggered calls with kind, peer, bytes, trigger
// counter and threshold, completion counter, and which counter each receive buffer is
// bound to. fabriclab recovers the dependences, re-assigns counters and verifies.
// The file format ("fabriclab.program/1") is documented in docs/program-format.md.
//
//   Program p = read_program_json("lib.json");
//   Recovered r = recover_dag(p);          // throws InputError naming an ambiguous call
//   verify(r.as_given);                    // the library's own assignment
//   assign_counters(r.dag, Strategy::optimized);
#pragma once

#include <string>
#include <vector>

#include "offload/schedule.h"

namespace fabriclab::offload {

struct ProgramCall {
  Rank rank = 0;
  OpKind kind = OpKind::put;  // put, get, atomic, cntr_add, host_wait
  Rank peer = kNoRank;
  std::string buffer;  // put/atomic to another rank: the peer's buffer name
  std::int64_t bytes = 0;
  CounterId trigger = kNoCounter;  // rank-local counter ids
  std::int64_t threshold = 0;
  CounterId completion = kNoCounter;
  CounterId target = kNoCounter;
  std::int64_t add = 0;
};

struct ProgramBuffer {
  Rank rank = 0;
  std::string name;
  CounterId counter = kNoCounter;  // rank-local
};

struct Program {
  Rank ranks = 0;
  bool ordered_channels = false;
  std::vector<ProgramBuffer> buffers;
  std::vector<ProgramCall> calls;  // each rank's calls in issue order
  std::string origin;              // file name, for messages
};

Program read_program_json(const std::string& path);
Program program_from_json_text(const std::string& text, const std::string& origin);
// The program a library would issue for an assigned schedule: one call per non-arrival
// op, one buffer per arrival (named "b<op id>") bound to the arrival's counter.
std::string program_to_json_text(const Schedule& s);

struct Recovered {
  Schedule as_given;            // the program with its own counters, as a schedule
  Schedule dag;                 // the recovered dependences, counter adds contracted, no counters
  std::size_t dependences = 0;  // recovered edges (before contraction)
  std::size_t contracted_counter_adds = 0;
};

// Throws InputError naming the call when a dependence is ambiguous or inconsistent.
Recovered recover_dag(const Program& p);

}  // namespace fabriclab::offload
