#include "offload/program.h"

#include <gtest/gtest.h>

#include "error_message.h"

#include <algorithm>

#include "core/error.h"
#include "offload/assignment.h"
#include "offload/collectives.h"
#include "offload/verifier.h"

namespace fabriclab::offload {
namespace {

std::string error_of(const std::string& text) {
  return fabriclab::testing::input_error_of([&] { recover_dag(program_from_json_text(text, "p.json")); });
}

TEST(Program, RefusesNestingPastTheDepthBound) {
  EXPECT_EQ(error_of("{\"calls\": " + std::string(100000, '[')),
            "p.json:1:74: objects and arrays nested deeper than 64 levels (no schedule or program nests more "
            "than 4)");
}

TEST(Program, RecoversTheShippedBroadcastByHand) {
  // Rank 0 puts to 2 and 1 and relays both completions into counter 2 for its wait;
  // rank 2 forwards to 3. Dependences: two relays (1 each), the wait (2), rank 2's put
  // and wait (1 each), the waits of ranks 1 and 3 (1 each) = 8.
  const Recovered r = recover_dag(read_program_json(std::string(FABRICLAB_EXAMPLES) + "/programs/bcast4.json"));
  EXPECT_EQ(r.dependences, 8u);
  EXPECT_EQ(r.contracted_counter_adds, 2u);
  EXPECT_EQ(r.as_given.counter_summary().per_rank, (std::vector<std::int64_t>{3, 1, 2, 1}));
  EXPECT_TRUE(verify(r.as_given).ok());
  // Without the relays rank 0's wait depends on both puts directly, and one counter per
  // rank suffices.
  EXPECT_EQ(assign_counters(r.dag, Strategy::optimized).counter_summary().per_rank,
            (std::vector<std::int64_t>{1, 1, 1, 1}));
}

TEST(Program, NaiveSchedulesRoundTripThroughPrograms) {
  // A naive schedule puts every threshold at exactly the incrementers issued before it,
  // so the recovery is unambiguous, and the recovered DAG is the builder's.
  for (const auto& a : algorithms()) {
    for (Rank p : {2, 3, 5, 8}) {
      for (bool ordered : {false, true}) {
        SCOPED_TRACE(a.collective + "/" + a.algorithm + " P=" + std::to_string(p));
        const Schedule dag = build_schedule(a.collective, a.algorithm, {.ranks = p, .ordered_channels = ordered});
        const Schedule naive = assign_counters(dag, Strategy::naive);
        const Recovered r = recover_dag(program_from_json_text(program_to_json_text(naive), "mem"));
        std::size_t deps = 0;
        for (std::size_t i = 0; i < naive.size(); ++i)
          if (naive.op(static_cast<OpId>(i)).kind != OpKind::arrival) deps += naive.deps(static_cast<OpId>(i)).size();
        EXPECT_EQ(r.dependences, deps);
        EXPECT_EQ(r.contracted_counter_adds, naive.relay_count());
        // The recovered DAG is the builder's, op by op (deps as sets).
        ASSERT_EQ(r.dag.size(), dag.size());
        for (std::size_t i = 0; i < dag.size(); ++i) {
          const auto id = static_cast<OpId>(i);
          EXPECT_EQ(r.dag.op(id).kind, dag.op(id).kind);
          EXPECT_EQ(r.dag.op(id).rank, dag.op(id).rank);
          std::vector<OpId> want(dag.deps(id).begin(), dag.deps(id).end());
          std::vector<OpId> got(r.dag.deps(id).begin(), r.dag.deps(id).end());
          std::sort(want.begin(), want.end());
          EXPECT_EQ(got, want) << "op " << i;
          EXPECT_EQ(std::vector<OpId>(r.dag.after(id).begin(), r.dag.after(id).end()),
                    std::vector<OpId>(dag.after(id).begin(), dag.after(id).end()));
        }
        EXPECT_TRUE(verify(r.as_given, {.random_runs = 2, .exhaustive_state_limit = 0}).ok());
        EXPECT_EQ(assign_counters(r.dag, Strategy::optimized).counter_summary().per_rank,
                  assign_counters(dag, Strategy::optimized).counter_summary().per_rank);
      }
    }
  }
}

// Rank 1 receives from ranks 0, 2 and 3 (or three times from rank 0) into counter 0 and
// issues a put once the counter reaches `threshold`.
std::string three_arrivals(int threshold, bool same_sender, bool ordered) {
  std::string calls;
  for (int s : {0, 2, 3}) {
    const int from = same_sender ? 0 : s;
    calls += R"({"rank": )" + std::to_string(from) +
             R"(, "kind": "put", "peer": 1, "buffer": "in", "bytes": 8, "trigger": null, "completion": null},)";
  }
  return R"({"format": "fabriclab.program/1", "ranks": 4, "ordered_channels": )" +
         std::string(ordered ? "true" : "false") +
         R"(, "buffers": [{"rank": 1, "name": "in", "counter": 0}], "calls": [)" + calls +
         R"({"rank": 1, "kind": "host_wait", "trigger": {"counter": 0, "threshold": )" + std::to_string(threshold) +
         "}}]}";
}

TEST(Program, WaitingForEveryBoundArrivalIsUnambiguous) {
  EXPECT_EQ(error_of(three_arrivals(3, false, false)), "no error");
}

TEST(Program, ALocalThresholdWithArrivalsBoundIsAmbiguous) {
  // An atomic into counter 0 and an arrival bound to it; a wait for 1: which of the two?
  EXPECT_EQ(error_of(R"({"format": "fabriclab.program/1", "ranks": 2,
    "buffers": [{"rank": 1, "name": "in", "counter": 0}], "calls": [
    {"rank": 0, "kind": "put", "peer": 1, "buffer": "in", "bytes": 8, "trigger": null, "completion": null},
    {"rank": 1, "kind": "atomic", "peer": 1, "bytes": 8, "trigger": null, "completion": 0},
    {"rank": 1, "kind": "host_wait", "trigger": {"counter": 0, "threshold": 1}}]})"),
            "p.json: call 2 (host_wait on rank 1): threshold 1 on counter 0 leaves 0 of the 1 "
            "arrivals bound to it (from rank 0) to wait for; which ones is ambiguous (declare "
            "ordered_channels if the transport delivers in order)");
}

TEST(Program, RejectsAPartialWaitOnUnorderedArrivalsNamingTheCall) {
  EXPECT_EQ(error_of(three_arrivals(2, false, false)),
            "p.json: call 3 (host_wait on rank 1): threshold 2 on counter 0 leaves 2 of the 3 "
            "arrivals bound to it (from ranks 0, 2, 3) to wait for; which ones is ambiguous");
  EXPECT_NE(error_of(three_arrivals(2, true, false)).find("declare ordered_channels"), std::string::npos);
}

TEST(Program, OrderedChannelsResolveAPartialWaitOnOneSender) {
  const auto r = recover_dag(program_from_json_text(three_arrivals(2, true, true), "p.json"));
  // The wait depends on the first two arrivals (ops 1 and 3, each after its put).
  EXPECT_EQ(std::vector<OpId>(r.as_given.deps(6).begin(), r.as_given.deps(6).end()), (std::vector<OpId>{1, 3}));
  EXPECT_TRUE(verify(r.as_given).ok());
}

TEST(Program, TheVerifierNamesTheLibrarysOwnCounters) {
  // Both ranks use their counter 2. Rank 1 waits for its counter 2 >= 1, fed by the
  // arrival of rank 0's put (op 1, after the put, op 0), and issues a get completing into
  // the same counter after the wait: the get (op 3) can bring the counter to 1 before the
  // arrival lands, so the library's own assignment is unsafe. Rank 0's wait (op 4) for its
  // put is safe.
  const Recovered r = recover_dag(program_from_json_text(R"({"format": "fabriclab.program/1", "ranks": 2,
    "buffers": [{"rank": 1, "name": "in", "counter": 2}], "calls": [
    {"rank": 0, "kind": "put", "peer": 1, "buffer": "in", "bytes": 8, "trigger": null, "completion": 2},
    {"rank": 1, "kind": "host_wait", "trigger": {"counter": 2, "threshold": 1}},
    {"rank": 1, "kind": "get", "peer": 0, "bytes": 8, "trigger": null, "completion": 2},
    {"rank": 0, "kind": "host_wait", "trigger": {"counter": 2, "threshold": 1}}]})",
                                                         "p.json"));
  EXPECT_EQ(r.as_given.counter_summary().per_rank, (std::vector<std::int64_t>{1, 1}));
  const auto v = verify(r.as_given);
  EXPECT_FALSE(v.safe_by_rule);
  ASSERT_FALSE(v.violations.empty());
  EXPECT_EQ(v.violations[0].message,
            "op 2 (host_wait on rank 1) can fire before its parent op 1: it waits for rank 1's "
            "counter 2 >= 1, and the incrementers [3] that do not need op 1 can complete first "
            "and bring the counter to 1 (global analysis)");
  for (const auto& x : v.violations) EXPECT_EQ(x.op, 2) << x.message;
}

TEST(Program, RejectsInconsistentThresholdsAndUnknownBuffers) {
  const std::string head =
      R"({"format": "fabriclab.program/1", "ranks": 2, "buffers": [{"rank": 1, "name": "in", "counter": 0}], "calls": [)";
  // Two local completions into counter 5, then a wait for 1 of them.
  EXPECT_EQ(error_of(head + R"({"rank": 0, "kind": "atomic", "peer": 0, "bytes": 8, "trigger": null, "completion": 5},
      {"rank": 0, "kind": "atomic", "peer": 0, "bytes": 8, "trigger": null, "completion": 5},
      {"rank": 0, "kind": "host_wait", "trigger": {"counter": 5, "threshold": 1}}]})"),
            "p.json: call 2 (host_wait on rank 0): threshold 1 on counter 5 is below the 2 that "
            "calls issued before it add to that counter: which of them it waits for is ambiguous");
  EXPECT_EQ(error_of(head + R"({"rank": 0, "kind": "host_wait", "trigger": {"counter": 5, "threshold": 1}}]})"),
            "p.json: call 0 (host_wait on rank 0): threshold 1 on counter 5 exceeds what "
            "increments it before the call (0 from earlier calls, 0 arrivals): it would wait for "
            "calls issued after it");
  EXPECT_EQ(
      error_of(
          head +
          R"({"rank": 0, "kind": "put", "peer": 1, "buffer": "inbox", "bytes": 8, "trigger": null, "completion": null}]})"),
      "p.json: call 0 (put on rank 0): rank 1 has no buffer 'inbox' (declare it under "
      "\"buffers\" with the counter it is bound to)");
  // A name is a rank's own: rank 0 may have an "in" beside rank 1's, but rank 1 not a second.
  EXPECT_EQ(error_of(
                R"({"format": "fabriclab.program/1", "ranks": 2, "buffers": [{"rank": 1, "name": "in", "counter": 0},
      {"rank": 0, "name": "in", "counter": 0}, {"rank": 1, "name": "in", "counter": 1}], "calls": []})"),
            "p.json: buffers[2]: buffer 'in' of rank 1 is declared twice");
  EXPECT_EQ(error_of(head + R"({"rank": 0, "kind": "arrival", "peer": 1}]})"),
            "p.json: call 0: unknown kind 'arrival' (expected put, get, atomic, cntr_add or "
            "host_wait; arrivals follow from the buffers)");
}

}  // namespace
}  // namespace fabriclab::offload
