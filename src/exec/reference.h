// What a collective computes, independently of how a schedule moves the data: the input
// every rank contributes and the output every rank must end with. The executors (the
// in-memory dataflow and the libfabric runner) fill windows with `fill_input` and judge
// them with `check_output`.
//
// Inputs are small integers (at most 1000 per element and rank) in every datatype, so a
// sum over up to 2^14 ranks is exact in float, double and int64 whatever the order of
// the additions, and outputs are compared bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "offload/collectives.h"
#include "offload/schedule.h"

namespace fabriclab::exec {

using offload::Datatype;
using offload::Rank;
using offload::Schedule;

// Bytes of rank r's input and output for the schedule's collective and size (0 when the
// rank has none: a barrier, a non-root rank of reduce).
struct Shape {
  std::int64_t input_bytes = 0;
  std::int64_t output_bytes = 0;
};
Shape shape(const Schedule& s, Rank r);

// The value of element `e` of rank r's input in iteration `it`.
std::int64_t input_value(Rank r, std::int64_t it, std::int64_t e);

// Writes rank r's input for iteration `it` (shape(s, r).input_bytes) into `out`.
void fill_input(const Schedule& s, Rank r, std::int64_t it, std::span<std::byte> out);

// Prepares rank r's window for iteration `it`: zeroes it, places the input at the
// layout's input offset and performs the layout's prologue copies for r.
void prepare_window(const Schedule& s, Rank r, std::int64_t it, std::span<std::byte> window);

// Checks rank r's output (read from its window at the layout's output offset) against
// the collective's definition. Returns a description of the first wrong element.
std::optional<std::string> check_output(const Schedule& s, Rank r, std::int64_t it, std::span<const std::byte> window);

}  // namespace fabriclab::exec
