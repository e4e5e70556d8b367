#include "offload/schedule_io.h"

#include <gtest/gtest.h>

#include "error_message.h"

#include <fmt/format.h>

#include <set>
#include <sstream>

#include "core/error.h"
#include "offload/assignment.h"
#include "offload/collectives.h"
#include "offload/verifier.h"

namespace fabriclab::offload {
namespace {

using json = nlohmann::ordered_json;

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
 {"id": 2, "rank": )" +
         wait_rank + R"(, "kind": "host_wait", "deps": )" + wait_deps +
         R"(, "trigger": {"counter": 1, "threshold": 1}, "completion": null}]})";
}

TEST(ScheduleIo, ReadsTheExampleOfTheReferenceAndVerifiesIt) {
  const Schedule s = read_schedule_json(std::string(FABRICLAB_TEST_DATA) + "/doc_example.json");
  EXPECT_EQ(s.size(), 4u);
  EXPECT_EQ(s.op(2).kind, OpKind::cntr_add);
  // The cntr_add targets rank 1's counter 3, as the file names it.
  EXPECT_EQ(s.counter_owner(s.op(2).target), 1);
  EXPECT_EQ(s.counter_name(s.op(2).target), 3);
  EXPECT_EQ(s.counter_label(s.op(2).target), "rank 1's counter 3");
  EXPECT_EQ(s.counter_summary().per_rank, (std::vector<std::int64_t>{1, 2, 0, 0}));
  EXPECT_TRUE(verify(s).ok());
  // Written back, each rank's counters are numbered from 0 in the file's order: rank 0's
  // counter 0 stays 0; rank 1's counters 2 and 3 become 0 and 1.
  const auto j = schedule_to_json(s);
  EXPECT_EQ(j["ops"][0]["completion"], 0);
  EXPECT_EQ(j["ops"][1]["completion"], 0);
  EXPECT_EQ(j["ops"][2]["trigger"]["counter"], 0);
  EXPECT_EQ(j["ops"][2]["target"], 1);
  EXPECT_EQ(j["ops"][3]["trigger"]["counter"], 0);
}

std::string data(const std::string& name) { return std::string(FABRICLAB_TEST_DATA) + "/" + name; }

// The per-rank counter namespace of triggered-ops.md sections 1 and 8: a two-rank
// exchange in which both ranks number their counters from 0 (each rank: its put
// completes into counter 1, a relay moves that to counter 0, its arrival lands on
// counter 0, and the host waits for counter 0 to reach 2).
TEST(ScheduleIo, ReadsCountersNumberedFromZeroOnEveryRank) {
  const Schedule s = read_schedule_json(data("per_rank_exchange.json"));
  // Four counters: two per rank, although the file only uses ids 0 and 1.
  ASSERT_EQ(s.counter_count(), 4u);
  EXPECT_EQ(s.counter_summary().per_rank, (std::vector<std::int64_t>{2, 2}));
  // Rank 0's counter 0 and rank 1's counter 0 are different counters.
  EXPECT_NE(s.op(3).completion, s.op(2).completion);
  EXPECT_EQ(s.counter_label(s.op(3).completion), "rank 0's counter 0");
  EXPECT_EQ(s.counter_label(s.op(2).completion), "rank 1's counter 0");
  EXPECT_EQ(s.counter_label(s.op(1).completion), "rank 1's counter 1");
  // Each op's counters are its own rank's, and the parents of each wait complete into
  // the wait's trigger counter.
  EXPECT_EQ(s.op(4).target, s.op(3).completion);
  EXPECT_EQ(s.op(6).trigger, s.op(3).completion);
  EXPECT_EQ(s.op(5).target, s.op(2).completion);
  EXPECT_EQ(s.op(7).trigger, s.op(2).completion);
  EXPECT_EQ(s.op(4).trigger, s.op(0).completion);
  EXPECT_EQ(s.op(5).trigger, s.op(1).completion);
  EXPECT_NO_THROW(validate(s, true));
}

TEST(ScheduleIo, WritesAFileNumberedFromZeroOnEveryRankBackAsItWas) {
  const std::string path = data("per_rank_exchange.json");
  const auto original = nlohmann::ordered_json::parse(read_text_file(path));
  const auto written = schedule_to_json(read_schedule_json(path));
  ASSERT_EQ(written["ops"].size(), original["ops"].size());
  for (std::size_t i = 0; i < original["ops"].size(); ++i) {
    const auto& o = original["ops"][i];
    const auto& w = written["ops"][i];
    EXPECT_EQ(w["trigger"], o["trigger"]) << "op " << i;
    EXPECT_EQ(w["completion"], o["completion"]) << "op " << i;
    EXPECT_EQ(w.value("target", nlohmann::ordered_json()), o.value("target", nlohmann::ordered_json())) << "op " << i;
  }
  EXPECT_EQ(written["counters"], original["counters"]);
}

TEST(ScheduleIo, FilesWithScheduleWideCounterIdsReadTheSameWay) {
  // The same exchange with every counter its own id (rank 0: 0, 1; rank 1: 2, 3), as
  // files were written before ids became per rank: the same schedule once read.
  const Schedule per_rank = read_schedule_json(data("per_rank_exchange.json"));
  const Schedule unique = read_schedule_json(data("per_rank_exchange_global_ids.json"));
  auto ops = [](const Schedule& s) { return schedule_to_json(s)["ops"]; };
  EXPECT_EQ(ops(unique), ops(per_rank));
  // Messages still name the counters as the file does.
  EXPECT_EQ(unique.counter_label(unique.op(7).trigger), "rank 1's counter 2");
  EXPECT_EQ(unique.counter_label(unique.op(4).trigger), "rank 0's counter 1");
}

TEST(ScheduleIo, RenumbersSparseIdsInTheirOrderOnEachRank) {
  // Rank 0 names counters 7 and 3 (in that order of use); rank 1 names counter 7.
  const Schedule s = schedule_from_json_text(R"({"format": "fabriclab.schedule/1", "ranks": 2, "ops": [
 {"id": 0, "rank": 0, "kind": "put", "peer": 1, "bytes": 8, "deps": [], "trigger": null, "completion": 7},
 {"id": 1, "rank": 1, "kind": "arrival", "peer": 0, "bytes": 8, "deps": [0], "trigger": null, "completion": 7},
 {"id": 2, "rank": 0, "kind": "cntr_add", "target": 3, "add": 1, "deps": [0], "trigger": {"counter": 7, "threshold": 1}, "completion": null},
 {"id": 3, "rank": 0, "kind": "host_wait", "deps": [2], "trigger": {"counter": 3, "threshold": 1}, "completion": null},
 {"id": 4, "rank": 1, "kind": "host_wait", "deps": [1], "trigger": {"counter": 7, "threshold": 1}, "completion": null}]})",
                                             "t.json");
  EXPECT_TRUE(verify(s).ok());
  EXPECT_EQ(s.counter_label(s.op(2).target), "rank 0's counter 3");
  // Written: rank 0's 3 and 7 become 0 and 1 (their order), rank 1's 7 becomes 0.
  const auto j = schedule_to_json(s);
  EXPECT_EQ(j["ops"][0]["completion"], 1);
  EXPECT_EQ(j["ops"][1]["completion"], 0);
  EXPECT_EQ(j["ops"][2]["trigger"]["counter"], 1);
  EXPECT_EQ(j["ops"][2]["target"], 0);
  EXPECT_EQ(j["ops"][3]["trigger"]["counter"], 0);
  EXPECT_EQ(j["ops"][4]["trigger"]["counter"], 0);
  EXPECT_EQ(j["counters"]["per_rank"], nlohmann::ordered_json({2, 1}));
}

TEST(ScheduleIo, WritesEachRanksCountersFromZero) {
  // Binomial bcast on 2 ranks: rank 0's put completes into its only counter, which its
  // host waits on; rank 1's arrival lands on its only counter, which its host waits on.
  // Both are counter 0 of their rank.
  const auto j = schedule_to_json(
      assign_counters(build_schedule("bcast", "binomial", {.ranks = 2}), Strategy::optimized));
  ASSERT_EQ(j["ops"].size(), 4u);
  for (const auto& op : j["ops"]) {
    if (op["kind"] == "put" || op["kind"] == "arrival") {
      EXPECT_EQ(op["completion"], 0) << op.dump();
    }
    if (op["kind"] == "host_wait") {
      EXPECT_EQ(op["trigger"], nlohmann::ordered_json({{"counter", 0}, {"threshold", 1}}));
    }
  }
  // Every collective: the ids a rank names are exactly 0 .. n - 1, n its count.
  for (const auto& a : algorithms()) {
    for (Strategy st : {Strategy::naive, Strategy::optimized}) {
      SCOPED_TRACE(a.collective + "/" + a.algorithm + " " + std::string(to_string(st)));
      const Schedule s = assign_counters(build_schedule(a.collective, a.algorithm, {.ranks = 5}), st);
      const auto w = schedule_to_json(s);
      std::vector<std::set<std::int64_t>> ids(5);
      for (const auto& op : w["ops"]) {
        auto& mine = ids[op["rank"].get<std::size_t>()];
        if (!op["trigger"].is_null()) mine.insert(op["trigger"]["counter"].get<std::int64_t>());
        if (!op["completion"].is_null()) mine.insert(op["completion"].get<std::int64_t>());
        if (op.contains("target")) mine.insert(op["target"].get<std::int64_t>());
      }
      for (std::size_t r = 0; r < 5; ++r) {
        const auto n = static_cast<std::int64_t>(ids[r].size());
        EXPECT_EQ(w["counters"]["per_rank"][r], n) << "rank " << r;
        if (n > 0) {
          EXPECT_EQ(*ids[r].begin(), 0) << "rank " << r;
          EXPECT_EQ(*ids[r].rbegin(), n - 1) << "rank " << r;
        }
      }
      // What the verifier's messages call a counter is what the file calls it.
      const auto written = rank_counter_ids(s);
      for (std::size_t c = 0; c < s.counter_count(); ++c)
        EXPECT_EQ(written[c], s.counter_name(static_cast<CounterId>(c))) << "counter " << c;
    }
  }
}

TEST(ScheduleIo, BuiltCollectivesRoundTripThroughPerRankIdsAndVerify) {
  for (const auto& a : algorithms()) {
    for (Rank p : {3, 4}) {
      for (Strategy st : {Strategy::naive, Strategy::optimized}) {
        SCOPED_TRACE(a.collective + "/" + a.algorithm + " P=" + std::to_string(p) + " " + std::string(to_string(st)));
        // The default 8 bytes (reduce_scatter's empty output blocks start at the end of
        // its window; schedule_roundtrip_test.cc sweeps the sizes).
        const Schedule s = assign_counters(build_schedule(a.collective, a.algorithm, {.ranks = p}), st);
        const std::string text = schedule_to_json(s).dump(1);
        const Schedule back = schedule_from_json_text(text, "mem");
        EXPECT_EQ(schedule_to_json(back).dump(1), text);
        EXPECT_EQ(back.counter_summary().per_rank, s.counter_summary().per_rank);
        // The same counters, op by op: ids differ only by the renaming.
        for (std::size_t i = 0; i < s.size(); ++i) {
          const Op& x = s.op(static_cast<OpId>(i));
          const Op& y = back.op(static_cast<OpId>(i));
          EXPECT_EQ(back.counter_label(y.trigger), s.counter_label(x.trigger)) << "op " << i;
          EXPECT_EQ(back.counter_label(y.increments()), s.counter_label(x.increments())) << "op " << i;
        }
        const VerifyOptions vo{.random_runs = 4, .exhaustive_state_limit = 2000};
        const auto before = verify(s, vo), after = verify(back, vo);
        EXPECT_TRUE(after.ok());
        EXPECT_EQ(after.ok(), before.ok());
        EXPECT_EQ(after.exhaustive_states, before.exhaustive_states);
      }
    }
  }
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
  EXPECT_EQ(error_of(bad.dump()), "t.json: layout: field 'input_offset' must list one offset per rank (2)");
  bad.erase("layout");
  EXPECT_EQ(error_of(bad.dump()), "t.json: operation 0: 'src_offset' and 'dst_offset' need a top-level 'layout' and "
                                  "belong to transfers");
}

// The same file with its top-level fields in another order: as the writer writes it
// (format, ranks and layout before "ops": read as a stream, each operation dropped once
// read), "ops" first (read as one document), and "layout" after "ops" (streamed, then
// read again as one document). Every order reads the same schedule, and every error
// names the same place.
json with_fields_in_order(const json& j, const std::vector<std::string>& order) {
  json out = json::object();
  for (const auto& k : order)
    if (j.contains(k)) out[k] = j.at(k);
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!out.contains(it.key())) out[it.key()] = it.value();
  return out;
}

TEST(ScheduleIo, ReadsTheSameScheduleWhateverTheFieldOrder) {
  const Schedule s = assign_counters(build_schedule("alltoall", "pairwise", {.ranks = 3, .bytes = 16}),
                                     Strategy::optimized);
  const json j = schedule_to_json(s);
  ASSERT_EQ(j.begin().key(), "format");
  ASSERT_TRUE(j.contains("layout"));
  const std::vector<std::pair<std::vector<std::string>, ReadPath>> orders = {
      {{}, ReadPath::streamed},
      {{"ops"}, ReadPath::document},
      {{"format", "ranks", "ops", "layout"}, ReadPath::document},
      {{"counters", "ops"}, ReadPath::document},
      {{"ranks", "counters", "format"}, ReadPath::streamed}};
  for (const auto& [order, expected_path] : orders) {
    const json reordered = with_fields_in_order(j, order);
    SCOPED_TRACE(reordered.begin().key() + " first");
    ReadPath path{};
    EXPECT_EQ(schedule_to_json(schedule_from_json_text(reordered.dump(), "mem", &path)), j);
    EXPECT_EQ(path, expected_path);
  }
  // Errors found while streaming name what the whole document's reading names.
  for (const auto& order : std::vector<std::vector<std::string>>{{}, {"ops"}}) {
    json bad = with_fields_in_order(j, order);
    bad["ops"][3] = 5;
    EXPECT_EQ(error_of(bad.dump()), "t.json: ops[3]: an operation must be an object");
    bad = with_fields_in_order(j, order);
    bad["ops"][2]["deps"] = {1, 900};
    EXPECT_EQ(error_of(bad.dump()), "t.json: operation 2: dep 900 is not an operation id");
    bad = with_fields_in_order(j, order);
    bad["ops"][4]["after"] = {901};
    EXPECT_EQ(error_of(bad.dump()), "t.json: operation 4: 'after' 901 is not an operation id");
    bad = with_fields_in_order(j, order);
    bad["ops"] = {{"a", {{"id", 0}}}};
    EXPECT_EQ(error_of(bad.dump()), "t.json: field 'ops' must be an array");
    bad = with_fields_in_order(j, order);
    bad["colour"] = 1;
    EXPECT_EQ(error_of(bad.dump()), "t.json: unknown field 'colour' (expected: format, collective, algorithm, ranks, "
                                    "strategy, bytes, datatype, root, ordered_channels, layout, ops, counters)");
    // Two errors: the one in the earlier place wins, though the stream meets an id
    // naming no operation only once it has counted them all.
    bad = with_fields_in_order(j, order);
    bad["ops"][1]["deps"] = {900};
    bad["ops"][4]["kind"] = "bogus";
    EXPECT_EQ(error_of(bad.dump()), "t.json: operation 1: dep 900 is not an operation id");
    bad = with_fields_in_order(j, order);
    bad["ops"][2]["deps"] = {900};  // ids are checked before the trigger, after the kind
    bad["ops"][2]["trigger"] = "x";
    EXPECT_EQ(error_of(bad.dump()), "t.json: operation 2: dep 900 is not an operation id");
    bad["ops"][2]["kind"] = "bogus";
    EXPECT_EQ(error_of(bad.dump()).rfind("t.json: operation 2: unknown kind 'bogus'", 0), 0u) << error_of(bad.dump());
    bad = with_fields_in_order(j, order);
    bad["format"] = "other";
    bad["ops"][3] = 5;
    EXPECT_EQ(error_of(bad.dump()), "t.json: field 'format' must be \"fabriclab.schedule/1\"");
    bad["ops"] = {{"a", 1}};
    EXPECT_EQ(error_of(bad.dump()), "t.json: field 'format' must be \"fabriclab.schedule/1\"");
    bad["colour"] = 1;
    EXPECT_EQ(error_of(bad.dump()).rfind("t.json: unknown field 'colour'", 0), 0u) << error_of(bad.dump());
  }
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

// A hostile file nested 100 000 levels deep once drove the streamed reader's copies into
// the stack's end (SIGSEGV). Past 64 levels it is refused where the 65th level opens: on
// line 2 (after the header line), at column 10 + 63 = 73: "  \"ops\": " fills columns 1-9,
// its '[' at column 10 is the second level (the document's '{' the first).
TEST(ScheduleIo, RefusesNestingPastTheDepthBoundWhereItStarts) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(error_of("{\"format\": \"fabriclab.schedule/1\", \"ranks\": 2,\n  \"ops\": " + deep + "}"),
            "t.json:2:73: objects and arrays nested deeper than 64 levels (no schedule or program nests more "
            "than 4)");
  // Unclosed, in the header, in an operation, inside objects: the same bound, located.
  EXPECT_EQ(error_of(std::string(70, '[')), "t.json:1:65: objects and arrays nested deeper than 64 levels (no "
                                            "schedule or program nests more than 4)");
  std::string objects;
  for (int i = 0; i < 80; ++i) objects += "{\"a\":";
  EXPECT_EQ(error_of("{\"layout\": " + objects), "t.json:1:" + std::to_string(12 + 63 * 5) +
                                                     ": objects and arrays nested deeper than 64 levels (no "
                                                     "schedule or program nests more than 4)");
  // Brackets inside strings do not count; 64 levels are read (and rejected for what they are).
  EXPECT_NE(error_of("{\"format\": \"" + std::string(100, '[') + "\"}").find("field 'format' must be"),
            std::string::npos);
  EXPECT_NE(error_of("{\"x\": " + std::string(63, '[') + std::string(63, ']') + "}").find("unknown field 'x'"),
            std::string::npos);
}

// A string (a key or a value, escapes as written) of up to 4096 bytes is read; a longer
// one is refused at its opening quote before the parser holds it.
TEST(ScheduleIo, RefusesStringsPastTheLengthBoundAtTheirQuote) {
  const std::string head = "{\"format\": \"fabriclab.schedule/1\", \"ranks\": 2,\n  \"collective\": \"";
  // Column 17 on line 2: "  \"collective\": " fills columns 1-16.
  const std::string refused = "t.json:2:17: a string longer than 4096 bytes (no schedule or program needs one)";
  EXPECT_EQ(error_of(head + std::string(4097, 'x') + "\", \"ops\": []}"), refused);
  EXPECT_EQ(error_of(head + std::string(100000, 'x')), refused);  // unterminated as well
  // 4096 bytes are read: the file is refused for what it lacks, not for the string.
  EXPECT_NE(error_of(head + std::string(4096, 'x') + "\"}").find("missing field 'ops'"), std::string::npos);
  // An escape counts as written: 2048 escaped quotes are 4096 bytes; one more character is past.
  std::string escaped;
  for (int i = 0; i < 2048; ++i) escaped += "\\\"";
  EXPECT_NE(error_of(head + escaped + "\"}").find("missing field 'ops'"), std::string::npos);
  EXPECT_EQ(error_of(head + escaped + "x\"}"), refused);
  // A closer with nothing open ends the check where the parser reports it (the scan once
  // indexed its levels at -1 past it: fuzz/regressions/program_json/closer-too-many-*).
  EXPECT_EQ(error_of("{}\n]][[,"), "t.json:2:1: malformed JSON: syntax error while parsing value - unexpected ']'; "
                                   "expected end of input");
  // A key is a string too.
  EXPECT_EQ(error_of("{\"" + std::string(5000, 'k') + "\": 1}"),
            "t.json:1:2: a string longer than 4096 bytes (no schedule or program needs one)");
  // A raw line break ends a string for the parser, which reports it there (column 19).
  EXPECT_NE(error_of(head + "x\n" + std::string(5000, 'x') + "\"}").find("t.json:2:19: malformed JSON"),
            std::string::npos);
}

// An array of 2^25 elements (the most operations the planner builds) is read; the comma
// before one more is refused. "{\"ops\": [" fills columns 1-9 and the k-th comma is at
// column 9 + 2k: the 2^25-th at 9 + 2^26.
TEST(ScheduleIo, RefusesAnArrayPastTheElementBoundAtItsComma) {
  std::string ops;
  for (std::int64_t k = 1; k < std::int64_t{1} << 25; ++k) ops += "0,";
  ops += "0";
  EXPECT_EQ(error_of("{\"ops\": [" + ops + ",0]}"),
            fmt::format("t.json:1:{}: an array or object of more than 33554432 elements (the most operations the "
                        "planner builds)",
                        9 + (std::int64_t{1} << 26)));
  // At the bound the file reads on: 64 MiB with "ops" first is too large a document.
  EXPECT_EQ(error_of("{\"ops\": [" + ops + "]}"),
            "t.json: a schedule of more than 32 MiB must give \"format\" and \"ranks\" before \"ops\" (as fabriclab "
            "writes it), to be read as it streams");
}

TEST(ScheduleIo, BadSchedulesAreRejectedNamingTheOperation) {
  EXPECT_EQ(error_of(tiny()), "no error");
  EXPECT_EQ(error_of(tiny("[0]")), "operation 2 (host_wait on rank 1): depends on operation 0 of rank 0: a dependence "
                                   "across ranks needs an arrival");
  // Counter 0 of rank 1 is not rank 0's counter 0: the file reads, but the wait is
  // triggered by rank 1's counter 1 while its parent completes into rank 1's counter 0.
  EXPECT_EQ(error_of(tiny("[1]", "1", "0")), "no error");
  EXPECT_EQ(fabriclab::testing::input_error_of(
                [&] { verify(schedule_from_json_text(tiny("[1]", "1", "0"), "t.json")); }),
            "operation 2 (host_wait on rank 1): parent 1 completes into rank 1's counter 0, but "
            "the op is triggered by rank 1's counter 1; all parents of an operation must "
            "complete into its trigger counter");
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
  EXPECT_EQ(error_of(t), "t.json: counters: per_rank[1] = 2 does not match the 1 counter(s) rank 1's operations name");
  // A long array is not echoed: the first difference, or the count, is named.
  std::string big = tiny();
  std::string ones = "[1";
  for (int i = 0; i < 100'000; ++i) ones += ",1";
  big.insert(big.size() - 1, R"(, "counters": {"per_rank": )" + ones + "]}");
  EXPECT_EQ(error_of(big), "t.json: counters: per_rank has 100001 entries for 2 ranks");
  std::string odd = tiny();
  odd.insert(odd.size() - 1, R"(, "counters": {"per_rank": [{"a": "0123456789012345678901234567890123456789"}, 1]})");
  EXPECT_EQ(error_of(odd),
            "t.json: counters: per_rank[0] = {\"a\":\"0123456789012345678901234567890123... does not match the 1 "
            "counter(s) rank 0's operations name");
}

TEST(ScheduleIo, DotShowsRanksTriggersAndArrivalEdges) {
  std::ostringstream out;
  write_schedule_dot(assign_counters(build_schedule("bcast", "binomial", {.ranks = 2}), Strategy::optimized), out);
  const std::string dot = out.str();
  EXPECT_NE(dot.find("subgraph cluster_rank1"), std::string::npos);
  EXPECT_NE(dot.find("op0 -> op1 [style=dashed]"), std::string::npos);  // put -> arrival
  EXPECT_NE(dot.find("when c0 >= 1"), std::string::npos);               // rank 0's wait
  // Rank 1's arrival lands on rank 1's counter 0, labelled as the JSON numbers it.
  EXPECT_NE(dot.find("1: arrival <- 0\\ncompletes c0"), std::string::npos) << dot;
  EXPECT_EQ(dot.find("completes c1"), std::string::npos) << dot;
  EXPECT_EQ(dot.find("when c1"), std::string::npos) << dot;
}

}  // namespace
}  // namespace fabriclab::offload
