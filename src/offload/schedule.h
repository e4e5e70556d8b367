// A triggered-operation schedule: the operations of one collective on P ranks, their
// dependences (a DAG) and, once a counter assignment has run, the trigger counter,
// threshold and completion counter of every operation. The model is the one of
// shared/docs/triggered-ops.md section 1; the file format is its section 8
// (schedule_io.h).
//
// Operations are stored compactly (dependence lists in one shared pool) because
// schedules at P = 1024 hold millions of them.
//
//   Schedule s(4);
//   OpId put = s.add({.kind = OpKind::put, .rank = 0, .peer = 1, .bytes = 64});
//   OpId arr = s.add({.kind = OpKind::arrival, .rank = 1, .peer = 0, .bytes = 64}, {put});
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/params.h"

namespace fabriclab::offload {

using OpId = std::int32_t;
using Rank = std::int32_t;
using CounterId = std::int32_t;
inline constexpr CounterId kNoCounter = -1;
inline constexpr Rank kNoRank = -1;

enum class OpKind : std::uint8_t { put, get, atomic, arrival, cntr_add, host_wait };
inline constexpr params::EnumNames<OpKind, 6> kOpKindNames{{{OpKind::put, "put"},
                                                            {OpKind::get, "get"},
                                                            {OpKind::atomic, "atomic"},
                                                            {OpKind::arrival, "arrival"},
                                                            {OpKind::cntr_add, "cntr_add"},
                                                            {OpKind::host_wait, "host_wait"}}};

std::string_view to_string(OpKind k);
std::optional<OpKind> parse_op_kind(std::string_view s);

// Data operations that a rank initiates and that complete locally.
inline bool is_data_op(OpKind k) { return k == OpKind::put || k == OpKind::get || k == OpKind::atomic; }

struct Op {
  OpKind kind = OpKind::put;
  Rank rank = 0;
  Rank peer = kNoRank;  // put/get/atomic: target; arrival: initiator; else none
  std::int64_t bytes = 0;
  std::int64_t add = 0;  // cntr_add: amount added to `target`
  CounterId trigger = kNoCounter;
  std::int64_t threshold = 0;
  CounterId completion = kNoCounter;  // put/get/atomic/arrival: counter that gets +1
  CounterId target = kNoCounter;      // cntr_add: counter that gets +add
  // Data placement, in bytes into the per-rank window (DataLayout): put/atomic read
  // [src_offset, +bytes) of their own window and write (or add into) [dst_offset, +bytes)
  // of the peer's; an arrival repeats its send's dst_offset.
  std::int64_t src_offset = 0;
  std::int64_t dst_offset = 0;
  bool relay = false;   // cntr_add inserted by a counter assignment
  bool counted = true;  // false: completion deliberately not counted
  // Position of this op's lists in the schedule's pools (filled by Schedule::add).
  std::uint32_t deps_begin = 0, deps_count = 0, after_begin = 0, after_count = 0;

  bool fires_at_start() const { return trigger == kNoCounter; }
  // The counter this op increments when it completes (or fires, for cntr_add).
  CounterId increments() const { return kind == OpKind::cntr_add ? target : completion; }
  std::int64_t weight() const { return kind == OpKind::cntr_add ? add : 1; }
};

// Where a collective's data lives on each rank, so that a schedule can be executed and
// its result checked (src/exec). Every rank has one window of `window_bytes`, zeroed
// before each run; the host copies the rank's input to input_offset[r], performs the
// `prologue` copies (a local step of the algorithm, such as all-to-all's own block), starts
// the schedule and, when it is done, reads the output at output_offset[r]. The sizes of
// input and output follow from the collective (exec/reference.h); an offset is where a
// block starts, so an empty block may start at window_bytes.
struct HostCopy {
  Rank rank = 0;
  std::int64_t src_offset = 0, dst_offset = 0, bytes = 0;
};
struct DataLayout {
  std::int64_t window_bytes = 0;                          // 0: the schedule has no data layout
  std::vector<std::int64_t> input_offset, output_offset;  // per rank
  std::vector<HostCopy> prologue;
  bool empty() const { return window_bytes == 0; }
};

struct CounterSummary {
  std::vector<std::int64_t> per_rank;
  std::int64_t max = 0;
  std::int64_t total = 0;
};

class Schedule {
 public:
  explicit Schedule(Rank ranks = 0) : ranks_(ranks) {}

  // Metadata (echoed into files; not used by the analyses) and the data layout.
  std::string collective, algorithm, strategy, datatype;
  std::int64_t bytes = 0;
  Rank root = 0;
  bool ordered_channels = false;
  DataLayout layout;

  // Copies the metadata above (not ops or counters) from another schedule.
  void copy_metadata(const Schedule& o) {
    collective = o.collective;
    algorithm = o.algorithm;
    strategy = o.strategy;
    datatype = o.datatype;
    bytes = o.bytes;
    root = o.root;
    ordered_channels = o.ordered_channels;
    layout = o.layout;
  }

  Rank ranks() const { return ranks_; }
  std::size_t size() const { return ops_.size(); }
  const Op& op(OpId id) const { return ops_[static_cast<std::size_t>(id)]; }
  Op& op(OpId id) { return ops_[static_cast<std::size_t>(id)]; }
  const std::vector<Op>& ops() const { return ops_; }

  // Room for `ops` operations and `list_entries` entries of their deps and after lists
  // (what list_entries() counts): a builder that knows its size grows no vector by copies.
  void reserve(std::size_t ops, std::size_t list_entries) {
    ops_.reserve(ops);
    pool_.reserve(list_entries);
  }
  std::size_t list_entries() const { return pool_.size(); }

  // `deps`: direct predecessors as executed; `after`: transport-provided orderings.
  OpId add(Op op, std::span<const OpId> deps = {}, std::span<const OpId> after = {});
  OpId add(Op op, std::initializer_list<OpId> deps) {
    return add(op, std::span<const OpId>(deps.begin(), deps.size()));
  }

  std::span<const OpId> deps(OpId id) const {
    const Op& o = op(id);
    return {pool_.data() + o.deps_begin, o.deps_count};
  }
  std::span<const OpId> after(OpId id) const {
    const Op& o = op(id);
    return {pool_.data() + o.after_begin, o.after_count};
  }

  // Counters live on a NIC (triggered-ops.md section 1): counter 0 of rank 0 and counter
  // 0 of rank 1 are different counters. Internally each counter has a schedule-wide id
  // (what ops' trigger, completion and target hold, dense from 0) with an owning rank, and
  // a name: its id on its rank, as a file or program numbered it. Names are unique on a
  // rank; messages use them (counter_label), files are written with each rank's counters
  // renumbered from 0 (schedule_io.h).
  //
  // new_counter and set_counter_owners name each rank's counters 0, 1, 2, ... in id
  // order; set_counters takes the names as given (a reader's).
  CounterId new_counter(Rank owner);
  void set_counter_owners(std::vector<Rank> owners);
  void set_counters(std::vector<Rank> owners, std::vector<CounterId> names);
  std::size_t counter_count() const { return counter_owner_.size(); }
  Rank counter_owner(CounterId c) const { return counter_owner_[static_cast<std::size_t>(c)]; }
  CounterId counter_name(CounterId c) const { return counter_name_[static_cast<std::size_t>(c)]; }
  // "rank 1's counter 0" (by name), or "no counter".
  std::string counter_label(CounterId c) const;

  // Distinct counters each rank uses (named by any trigger, completion or target).
  CounterSummary counter_summary() const;
  std::size_t relay_count() const;

  // Operation ids grouped by rank, in issue order.
  std::vector<std::vector<OpId>> ops_by_rank() const;

 private:
  Rank ranks_;
  std::vector<Op> ops_;
  std::vector<OpId> pool_;
  std::vector<Rank> counter_owner_;
  std::vector<CounterId> counter_name_;
};

// Checks that the schedule is a well-formed DAG in the model: ids in range, acyclic,
// dependences across ranks only through arrivals (an arrival has exactly one dep, a
// put/atomic on its peer that targets its rank), ranks and peers in range. Throws
// InputError naming the operation. When `assigned` is set it also checks the counter
// realisation: every counter named belongs to the op's rank, every op with deps has a
// trigger, and every local parent increments exactly the op's trigger counter.
void validate(const Schedule& s, bool assigned);

}  // namespace fabriclab::offload
