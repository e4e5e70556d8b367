// What counters and plan share: running each assignment strategy on a DAG, verifying
// the result, and naming it in a table.
#pragma once

#include <string>
#include <vector>

#include "offload/assignment.h"
#include "offload/exact.h"
#include "offload/verifier.h"

namespace fabriclab::cli {

// A strategy run: which strategy, under which analysis.
struct Variant {
  offload::Strategy strategy;
  offload::Analysis analysis;
  std::string label() const;
  std::string file_tag() const;  // "naive", "optimized-local", ...
};

struct Outcome {
  Variant variant{offload::Strategy::naive, offload::Analysis::local};
  std::size_t ops = 0, relays = 0;
  offload::CounterSummary counters;
  offload::VerifyReport report;
  bool verified = false;  // the verifier ran
  offload::Schedule schedule;
  std::string estimate = "-";  // closed form "max / total", or why there is none
  bool estimate_matches = true;
  // exact only: per rank, proven minimum and what optimized uses under the same analysis.
  std::vector<offload::ExactRank> exact;
};

// Where the exact strategy is offered by default: small enough to solve in seconds.
bool exact_fits(const offload::Schedule& dag);
// "" or a note such as "optimized uses 1 more counter than the proven minimum on 8 ranks"
std::string exact_note(const Outcome& o);

// Global analysis fits when the whole happens-before graph is small (P <= 64 in
// practice); local always fits.
bool global_fits(const offload::Schedule& dag);

// strategy: naive, optimized, exact or all (exact where it fits); analysis: local,
// global or auto (local, plus global where it fits).
std::vector<Variant> variants(const std::string& strategy, const std::string& analysis,
                              const offload::Schedule& dag);

// Verifier settings scaled to the schedule's size.
offload::VerifyOptions verify_options(const offload::Schedule& s);

Outcome run_variant(const offload::Schedule& dag, const Variant& v, bool verify_it);
// "safe+live (global, exhaustive)", "REJECTED", ...
std::string verdict(const Outcome& o);
std::string verdict(const offload::VerifyReport& r);

// Writes the outcome's schedule as JSON and/or DOT (empty path: not written); with
// several variants each file gets the variant's tag: x.json -> x.optimized-local.json.
void write_outputs(const Outcome& o, const std::string& json_path, const std::string& dot_path,
                   bool tag_with_variant);

}  // namespace fabriclab::cli
