// The builders' data layouts, executed in memory in random orders the model allows, give
// what each collective is defined to give (exec/reference.h), at many sizes.
#include "exec/dataflow.h"

#include <gtest/gtest.h>

#include <cstring>

#include "exec/reference.h"
#include "offload/assignment.h"
#include "offload/collectives.h"
#include "offload/segment.h"

namespace fabriclab::exec {
namespace {

using offload::BuildOptions;
using offload::Datatype;

void expect_correct(const Schedule& s, std::uint64_t seed, const std::string& what) {
  const auto windows = run_dataflow(s, /*it=*/3, seed);
  for (Rank r = 0; r < s.ranks(); ++r) {
    const auto bad = check_output(s, r, 3, windows[static_cast<std::size_t>(r)]);
    ASSERT_FALSE(bad.has_value()) << what << " seed " << seed << ": " << *bad;
  }
}

TEST(Reference, InputsAndSumsByHand) {
  EXPECT_EQ(input_value(0, 0, 0), 1);
  EXPECT_EQ(input_value(1, 0, 0), 132);
  EXPECT_EQ(input_value(1, 2, 3), (131 + 21 + 58) % 1000 + 1);
  // allreduce of two ranks, one double each: window holds rank 0's 1 + rank 1's 132.
  const Schedule s = offload::build_schedule("allreduce", "ring", {.ranks = 2, .bytes = 16});
  std::vector<std::byte> w(static_cast<std::size_t>(s.layout.window_bytes));
  prepare_window(s, 0, 0, w);
  double v[2] = {133, 7 + 1 + 131 + 7 + 1};  // element 1: (0+7)+1 and (131+7)+1
  std::memcpy(w.data(), v, sizeof v);
  EXPECT_FALSE(check_output(s, 0, 0, w).has_value());
  v[1] += 1;
  std::memcpy(w.data(), v, sizeof v);
  const auto bad = check_output(s, 0, 0, w);
  ASSERT_TRUE(bad.has_value());
  EXPECT_NE(bad->find("element 1"), std::string::npos) << *bad;
  EXPECT_NE(bad->find("gives 147"), std::string::npos) << *bad;
}

TEST(Dataflow, EveryBuilderComputesItsCollective) {
  for (const auto& a : offload::algorithms())
    for (Rank p : {2, 3, 4, 5, 6, 7, 8, 11, 16})
      for (Datatype dt : {Datatype::float64, Datatype::int64, Datatype::float32}) {
        BuildOptions o{.ranks = p, .bytes = 13 * offload::datatype_size(dt), .datatype = dt};
        if (a.uses_root) o.root = p - 1;
        const Schedule dag = offload::build_schedule(a.collective, a.algorithm, o);
        const std::string what = a.collective + "/" + a.algorithm + " P=" + std::to_string(p) + " " + dag.datatype;
        for (std::uint64_t seed = 1; seed <= 3; ++seed) expect_correct(dag, seed, what);
      }
}

TEST(Dataflow, AssignedAndSplitSchedulesKeepTheData) {
  for (const auto& a : offload::algorithms()) {
    const BuildOptions o{.ranks = 6, .bytes = 40 * 8};
    const Schedule dag = offload::build_schedule(a.collective, a.algorithm, o);
    const Schedule split = offload::split_atomics(dag, 3 * 8);
    const Schedule assigned = offload::assign_counters(split, offload::Strategy::optimized);
    expect_correct(split, 7, a.collective + "/" + a.algorithm + " split");
    expect_correct(assigned, 7, a.collective + "/" + a.algorithm + " assigned");
  }
}

TEST(Segment, SplitsLargeAtomicsIntoElementSegments) {
  // Ring allreduce, P = 2, 10 doubles: two chunks of 5; each step atomic is 40 bytes.
  const Schedule dag = offload::build_schedule("allreduce", "ring", {.ranks = 2, .bytes = 80});
  const Schedule split = offload::split_atomics(dag, 16);  // segments of 2, 2, 1 doubles
  std::size_t atomics = 0, arrivals = 0, puts = 0;
  for (const auto& op : split.ops()) {
    atomics += op.kind == offload::OpKind::atomic;
    arrivals += op.kind == offload::OpKind::arrival;
    puts += op.kind == offload::OpKind::put;
  }
  EXPECT_EQ(atomics, 2u * 3u);  // one reduce-scatter atomic per rank, in 3 pieces
  EXPECT_EQ(puts, 2u);          // puts are not split
  EXPECT_EQ(arrivals, atomics + puts);
  // Rank 0's first atomic carries chunk 0 (bytes 0..40) as [0,16) [16,32) [32,40).
  std::vector<std::pair<std::int64_t, std::int64_t>> pieces;
  for (const auto& op : split.ops())
    if (op.kind == offload::OpKind::atomic && op.rank == 0) pieces.push_back({op.src_offset, op.bytes});
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0], (std::pair<std::int64_t, std::int64_t>{0, 16}));
  EXPECT_EQ(pieces[1], (std::pair<std::int64_t, std::int64_t>{16, 16}));
  EXPECT_EQ(pieces[2], (std::pair<std::int64_t, std::int64_t>{32, 8}));
}

TEST(Dataflow, ABrokenLayoutIsCaught) {
  // Make one reduce-scatter atomic of ring allreduce add into the wrong chunk.
  Schedule dag = offload::build_schedule("allreduce", "ring", {.ranks = 4, .bytes = 4 * 8});
  for (std::size_t i = 0; i < dag.size(); ++i) {
    auto& op = dag.op(static_cast<offload::OpId>(i));
    if (op.kind == offload::OpKind::atomic && op.peer == 1) {
      op.dst_offset = (op.dst_offset + 8) % 32;
      break;
    }
  }
  const auto windows = run_dataflow(dag, 0, 1);
  bool any_wrong = false;
  for (Rank r = 0; r < 4; ++r) any_wrong |= check_output(dag, r, 0, windows[r]).has_value();
  EXPECT_TRUE(any_wrong);
}

}  // namespace
}  // namespace fabriclab::exec
