#include "offload/schedule_io.h"

#include <gtest/gtest.h>

#include "error_message.h"

#include <sstream>

#include "core/error.h"
#include "offload/assignment.h"
#include "offload/collectives.h"
#include "offload/verifier.h"

namespace fabriclab::offload {
namespace {

std::string error_of(const std::string& text) {
  return fabriclab::testing::input_error_of([&] { schedule_from_json_text(text, "t.json"); });
}

// A valid two-rank schedule to mutate: put 0 -> arrival on 1 -> host_wait on 1.
std::string tiny(const std::string& wait_deps = "[1]", const std::string& wait_rank = "1",
                 const std::string& arrival_counter = "1") {
  return R"({"format": "fabriclab.schedule/1", "ranks": 2, "ops": [
 {"id": 0, "rank": 0, "kind": "put", "peer": 1, "bytes": 8, "deps": [], "trigger": null, "completion": 0},
 {"id": 1, "rank": 1, "kind": "arrival", "peer": 0, "bytes": 8, "deps": [0], "trigger": null, "completion": )" +
         arrival_counter + R"(},
 {"id": 2, "rank": )" + wait_rank + R"(, "kind": "host_wait", "deps": )" + wait_deps +
         R"(, "trigger": {"counter": 1, "threshold": 1}, "completion": null}]})";
}

TEST(ScheduleIo, ReadsTheExampleOfTheReferenceAndVerifiesIt) {
  const Schedule s = read_schedule_json(std::string(FABRICLAB_TEST_DATA) + "/doc_example.json");
  EXPECT_EQ(s.size(), 4u);
  EXPECT_EQ(s.op(2).kind, OpKind::cntr_add);
  EXPECT_EQ(s.op(2).target, 3);
  EXPECT_EQ(s.counter_summary().per_rank, (std::vector<std::int64_t>{1, 2, 0, 0}));
  EXPECT_TRUE(verify(s).ok());
}

TEST(ScheduleIo, RoundTripsEveryFieldExactly) {
  for (auto [c, a] : {std::pair{"allreduce", "ring"}, {"allgather", "recursive_doubling"}}) {
    for (bool counted : {true, false}) {
      BuildOptions o{.ranks = 5, .bytes = 1000, .ordered_channels = true};
      o.count_send_completions = counted;
      const Schedule s = assign_counters(build_schedule(c, a, o), Strategy::naive);
      const std::string once = schedule_to_json(s).dump(1);
      const Schedule back = schedule_from_json_text(once, "mem");
      EXPECT_EQ(schedule_to_json(back).dump(1), once);
      // Relays (counted: the host waits on several sends) and null completions
      // (uncounted sends) both survive.
      if (counted) {
        EXPECT_GT(back.relay_count(), 0u);
      }
      std::size_t null_completions = 0;
      for (const Op& op : back.ops()) null_completions += op.kind == OpKind::put && op.completion == kNoCounter;
      EXPECT_EQ(null_completions > 0, !counted);
    }
  }
}

TEST(ScheduleIo, DataLayoutRoundTripsAndIsCheckedOnRead) {
  // All-to-all carries host copies in its layout; they survive the round trip.
  const Schedule s = assign_counters(build_schedule("alltoall", "pairwise", {.ranks = 3, .bytes = 16}),
                                     Strategy::optimized);
  const auto j = schedule_to_json(s);
  const Schedule back = schedule_from_json_text(j.dump(), "mem");
  EXPECT_EQ(back.layout.window_bytes, 2 * 3 * 16);
  ASSERT_EQ(back.layout.prologue.size(), 3u);
  EXPECT_EQ(back.layout.prologue[1].src_offset, 16);  // rank 1's own block...
  EXPECT_EQ(back.layout.prologue[1].dst_offset, 64);  // ...to its receive block 1
  EXPECT_EQ(back.layout.output_offset, (std::vector<std::int64_t>{48, 48, 48}));

  // bcast, 2 ranks, 8 bytes: ops 0 (put) and 1 (its arrival) in an 8-byte window.
  auto bad = schedule_to_json(build_schedule("bcast", "binomial", {.ranks = 2, .bytes = 8}));
  bad["ops"][1]["dst_offset"] = 8;
  EXPECT_EQ(error_of(bad.dump()), "t.json: operation 1: field 'dst_offset' = 8 is outside 0..0");
  bad = schedule_to_json(build_schedule("bcast", "binomial", {.ranks = 2, .bytes = 4}));
  bad["ops"][1]["dst_offset"] = 4;
  EXPECT_EQ(error_of(bad.dump()),
            "t.json: operation 1: the arrival lands 4 bytes at 4 but its send writes 4 bytes at 0");
  bad = schedule_to_json(build_schedule("bcast", "binomial", {.ranks = 2, .bytes = 8}));
  bad["layout"]["input_offset"] = {0};
  EXPECT_EQ(error_of(bad.dump()),
            "t.json: layout: field 'input_offset' must list one offset per rank (2)");
  bad.erase("layout");
  EXPECT_EQ(error_of(bad.dump()),
            "t.json: operation 0: 'src_offset' and 'dst_offset' need a top-level 'layout' and "
            "belong to transfers");
}

TEST(ScheduleIo, UsesTheFieldNamesOfTheReference) {
  const auto j = schedule_to_json(
      assign_counters(build_schedule("bcast", "binomial", {.ranks = 2}), Strategy::optimized));
  for (const char* k : {"format", "collective", "algorithm", "ranks", "strategy", "ops", "counters"})
    EXPECT_TRUE(j.contains(k)) << k;
  const auto& put = j["ops"][0];
  for (const char* k : {"id", "rank", "kind", "peer", "bytes", "deps", "trigger", "completion"})
    EXPECT_TRUE(put.contains(k)) << k;
  EXPECT_EQ(j["counters"]["per_rank"], nlohmann::ordered_json({1, 1}));
}

TEST(ScheduleIo, MalformedJsonNamesLineAndColumn) {
  // The stray comma is at line 3, column 12 (two spaces, "ranks" is 7, colon, space).
  EXPECT_EQ(error_of("{\n  \"format\": 1,\n  \"ranks\": ,\n}"),
            "t.json:3:12: malformed JSON: syntax error while parsing value - unexpected ','; "
            "expected '[', '{', or a literal");
}

TEST(ScheduleIo, BadSchedulesAreRejectedNamingTheOperation) {
  EXPECT_EQ(error_of(tiny()), "no error");
  EXPECT_EQ(error_of(tiny("[0]")),
            "operation 2 (host_wait on rank 1): depends on operation 0 of rank 0: a dependence "
            "across ranks needs an arrival");
  EXPECT_EQ(error_of(tiny("[1]", "1", "0")),
            "t.json: operation 1: counter 0 belongs to rank 0 (first named by operation 0), "
            "not to rank 1: counters live on one NIC");
  EXPECT_NE(error_of(tiny("[2]")).find("dep 2 is not another operation"), std::string::npos);
  EXPECT_EQ(error_of(R"({"format": "fabriclab.schedule/1", "ranks": 1, "ops": [
    {"id": 0, "rank": 0, "kind": "cntr_add", "target": 0, "add": 1, "deps": [1], "trigger": {"counter": 0, "threshold": 1}, "completion": null},
    {"id": 1, "rank": 0, "kind": "cntr_add", "target": 0, "add": 1, "deps": [0], "trigger": {"counter": 0, "threshold": 1}, "completion": null}]})"),
            "the dependences form a cycle through operation 0 (cntr_add on rank 0)");
  EXPECT_EQ(error_of(R"({"format": "fabriclab.schedule/1", "ranks": 2, "ops": [
    {"id": 0, "rank": 0, "kind": "send", "deps": [], "trigger": null, "completion": null}]})"),
            "t.json: operation 0: unknown kind 'send' (expected put, get, atomic, arrival, "
            "cntr_add or host_wait)");
  EXPECT_EQ(error_of(R"({"format": "fabriclab.schedule/1", "ranks": 2, "colour": 1, "ops": []})"),
            "t.json: unknown field 'colour' (expected: format, collective, algorithm, ranks, "
            "strategy, bytes, datatype, root, ordered_channels, layout, ops, counters)");
  EXPECT_EQ(error_of(R"({"format": "fabriclab.schedule/2", "ranks": 2, "ops": []})"),
            "t.json: field 'format' must be \"fabriclab.schedule/1\"");
}

TEST(ScheduleIo, RejectsTransportFactsNoNetworkProvides) {
  const std::string head = R"({"format": "fabriclab.schedule/1", "ranks": 3, "ops": [
 {"id": 0, "rank": 0, "kind": "put", "peer": 1, "bytes": 8, "deps": [], "trigger": null, "completion": null},
 {"id": 1, "rank": 2, "kind": "put", "peer": 1, "bytes": 8, "deps": [], "trigger": null, "completion": null},
 {"id": 2, "rank": 1, "kind": "arrival", "peer": 0, "bytes": 8, "deps": [0], "trigger": null, "completion": 0},)";
  // An ordering between arrivals from different senders.
  EXPECT_EQ(error_of(head + R"(
 {"id": 3, "rank": 1, "kind": "arrival", "peer": 2, "bytes": 8, "deps": [1], "after": [2], "trigger": null, "completion": 0}]})"),
            "operation 3 (arrival on rank 1): 'after' may only order an arrival after an earlier "
            "arrival from the same sender to the same rank -- the only order a transport can "
            "provide (got operation 2)");
  // One put landing twice.
  EXPECT_EQ(error_of(head + R"(
 {"id": 3, "rank": 1, "kind": "arrival", "peer": 0, "bytes": 8, "deps": [0], "trigger": null, "completion": 0},
 {"id": 4, "rank": 1, "kind": "arrival", "peer": 2, "bytes": 8, "deps": [1], "trigger": null, "completion": 0}]})"),
            "operation 3 (arrival on rank 1): operation 0 already lands as operation 2; a put or "
            "atomic has exactly one arrival");
  // An arrival whose peer is not its sender.
  EXPECT_EQ(error_of(head + R"(
 {"id": 3, "rank": 1, "kind": "arrival", "peer": 0, "bytes": 8, "deps": [1], "trigger": null, "completion": 0}]})"),
            "operation 3 (arrival on rank 1): peer 0 and bytes 8 must be those of its sender, "
            "operation 1 (rank 2, 8 bytes)");
  // A put that lands nowhere.
  EXPECT_EQ(error_of(head + "{\"id\": 3, \"rank\": 1, \"kind\": \"host_wait\", \"deps\": [2], "
                            "\"trigger\": {\"counter\": 0, \"threshold\": 1}, \"completion\": null}]}"),
            "operation 1 (put on rank 2): no arrival on rank 1 lists it as its dep; every put or "
            "atomic to another rank lands somewhere");
}

TEST(ScheduleIo, RejectsNumbersBeyondWhatCountersAndTablesHold) {
  // Two adds of 2^63 - 1 would overflow the rule's sums: counters are 32-bit.
  EXPECT_EQ(error_of(R"({"format": "fabriclab.schedule/1", "ranks": 1, "ops": [
    {"id": 0, "rank": 0, "kind": "cntr_add", "target": 0, "add": 9223372036854775807, "deps": [], "trigger": null, "completion": null}]})"),
            "t.json: operation 0: field 'add' = 9223372036854775807 is outside 0..2147483647");
  EXPECT_EQ(error_of(tiny("[1]", "1", "2147483647")),
            "t.json: operation 1: field 'completion' = 2147483647 is outside 0..1048575");
  EXPECT_EQ(error_of(R"({"format": "fabriclab.schedule/1", "ranks": 2000000000, "ops": []})"),
            "t.json: field 'ranks' = 2000000000 is outside 1..1048576");
}

TEST(ScheduleIo, CounterSummaryInTheFileMustMatch) {
  std::string t = tiny();
  t.insert(t.size() - 1, R"(, "counters": {"per_rank": [1, 2], "max": 2, "total": 3})");
  EXPECT_EQ(error_of(t),
            "t.json: counters: per_rank [1,2] does not match the counters the operations name "
            "([1,1])");
}

TEST(ScheduleIo, DotShowsRanksTriggersAndArrivalEdges) {
  std::ostringstream out;
  write_schedule_dot(
      assign_counters(build_schedule("bcast", "binomial", {.ranks = 2}), Strategy::optimized), out);
  const std::string dot = out.str();
  EXPECT_NE(dot.find("subgraph cluster_rank1"), std::string::npos);
  EXPECT_NE(dot.find("op0 -> op1 [style=dashed]"), std::string::npos);  // put -> arrival
  EXPECT_NE(dot.find("when c0 >= 1"), std::string::npos);              // rank 0's wait
}

}  // namespace
}  // namespace fabriclab::offload
