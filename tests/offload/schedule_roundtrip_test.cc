// Every schedule file fabriclab writes reads back: for every collective and algorithm at
// P = 2..9 and sizes below P, not divisible by P or by the element, the file written by
// write_schedule_json (what `counters --json` writes) is read by read_schedule_json (what
// `verify` and `exec --schedule` read), comes back field for field, verifies, keeps every
// rank's input and output inside its window, and -- at the sizes exec runs -- still
// computes its collective.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include <unistd.h>

#include "error_message.h"
#include "exec/dataflow.h"
#include "exec/reference.h"
#include "offload/assignment.h"
#include "offload/collectives.h"
#include "offload/schedule_io.h"
#include "offload/strategy_runs.h"
#include "offload/verifier.h"

namespace fabriclab::offload {
namespace {

// The file fabriclab writes for `s`, as text.
std::string written(const Schedule& s) {
  std::ostringstream out;
  write_schedule_json(s, out);
  return out.str();
}

// Unique per process: ctest may run these tests in parallel, and other checkouts share /tmp.
std::string temp_path(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / fmt::format("fabriclab-roundtrip-{}-{}", ::getpid(), name))
      .string();
}

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes `s` where `counters --json` would and reads it back as `verify` does.
Schedule through_file(const Schedule& s, const std::string& name, std::string* text = nullptr) {
  const std::string path = temp_path(name);
  write_schedule_json(s, path);
  if (text != nullptr) *text = file_text(path);
  Schedule back;
  try {
    back = read_schedule_json(path);
  } catch (...) {
    std::filesystem::remove(path);
    throw;
  }
  std::filesystem::remove(path);
  return back;
}

// The reported bug: reduce_scatter ring on 4 ranks with the default 8 bytes (one double).
// Worked out by hand: the single element goes to rank 0's block, at offset 0; blocks 1, 2
// and 3 are empty and start where block 0 ends, at byte 8, which is also the end of the
// 8-byte window. An empty block there lies inside the window, so the file reads back.
TEST(ScheduleRoundTrip, ReduceScatterWithEmptyBlocksAtTheWindowsEnd) {
  const Schedule s = assign_counters(build_schedule("reduce_scatter", "ring", {.ranks = 4, .bytes = 8}),
                                     Strategy::naive);
  ASSERT_EQ(s.layout.window_bytes, 8);
  ASSERT_EQ(s.layout.output_offset, (std::vector<std::int64_t>{0, 8, 8, 8}));
  std::string text;
  const Schedule back = through_file(s, "rs4.json", &text);
  EXPECT_EQ(back.layout.window_bytes, 8);
  EXPECT_EQ(back.layout.input_offset, (std::vector<std::int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(back.layout.output_offset, (std::vector<std::int64_t>{0, 8, 8, 8}));
  EXPECT_EQ(written(back), text);
  EXPECT_TRUE(verify(back).ok());
  // Rank 0 ends with the sum of the four ranks' element 0 (inputs 1, 132, 263, 394 in
  // iteration 0: exec/reference.h's (131 r + 7 e + 29 it) mod 1000 + 1); ranks 1..3 have
  // nothing to check.
  const auto windows = exec::run_dataflow(back, 0, 1);
  double got = 0;
  std::memcpy(&got, windows[0].data(), 8);
  EXPECT_EQ(got, 1 + 132 + 263 + 394);
  for (Rank r = 0; r < 4; ++r) EXPECT_FALSE(exec::check_output(back, r, 0, windows[static_cast<std::size_t>(r)]));
}

// Fewer elements than ranks: three doubles (24 bytes) over 4 ranks are blocks of 1, 1, 1
// and 0 elements at 0, 8, 16 and 24; three floats (12 bytes) at 0, 4, 8 and 12 -- the
// empty block again at the window's end.
TEST(ScheduleRoundTrip, ReduceScatterFewerElementsThanRanks) {
  for (auto [bytes, dt, offsets] : {std::tuple{24, Datatype::float64, std::vector<std::int64_t>{0, 8, 16, 24}},
                                    std::tuple{12, Datatype::float32, std::vector<std::int64_t>{0, 4, 8, 12}}}) {
    SCOPED_TRACE(bytes);
    const Schedule s = assign_counters(
        build_schedule("reduce_scatter", "ring", {.ranks = 4, .bytes = bytes, .datatype = dt}), Strategy::optimized);
    const Schedule back = through_file(s, "rs4-3.json");
    EXPECT_EQ(back.layout.window_bytes, bytes);
    EXPECT_EQ(back.layout.output_offset, offsets);
    EXPECT_TRUE(verify(back).ok());
  }
}

// An offset is where a block starts: 0..window_bytes (window_bytes only for an empty
// block; whether a block of a given size fits is exec's check, which knows the sizes).
TEST(ScheduleRoundTrip, LayoutOffsetsMayReachButNotPassTheWindowsEnd) {
  auto j = schedule_to_json(build_schedule("reduce_scatter", "ring", {.ranks = 4, .bytes = 8}));
  auto error_of = [](const nlohmann::ordered_json& x) {
    return fabriclab::testing::input_error_of([&] { schedule_from_json_text(x.dump(), "t.json"); });
  };
  EXPECT_EQ(error_of(j), "no error");
  j["layout"]["input_offset"][2] = 8;
  EXPECT_EQ(error_of(j), "no error");
  j["layout"]["output_offset"][3] = 9;
  EXPECT_EQ(error_of(j), "t.json: layout: field 'output_offset' = 9 is outside 0..8");
  j["layout"]["output_offset"][3] = 8;
  j["layout"]["input_offset"][1] = -1;
  EXPECT_EQ(error_of(j), "t.json: layout: field 'input_offset' = -1 is outside 0..8");
}

std::string describe(const AlgorithmInfo& a, const BuildOptions& o) {
  return fmt::format("{}/{} P={} bytes={} {} root={}{}{}", a.collective, a.algorithm, o.ranks, o.bytes,
                     to_string(o.datatype), o.root, o.ordered_channels ? " ordered" : "",
                     o.count_send_completions ? "" : " uncounted-sends");
}

// Round trip of one assigned schedule through a file, with everything checked.
void expect_round_trip(const Schedule& s, const std::string& what) {
  SCOPED_TRACE(what);
  std::string text;
  Schedule back;
  try {
    back = through_file(s, "sweep.json", &text);
  } catch (const InputError& e) {
    FAIL() << "the file fabriclab wrote does not read back: " << e.what();
  }
  // Lossless: written again, the same bytes.
  EXPECT_EQ(written(back), text);
  EXPECT_EQ(back.layout.window_bytes, s.layout.window_bytes);
  EXPECT_EQ(back.layout.input_offset, s.layout.input_offset);
  EXPECT_EQ(back.layout.output_offset, s.layout.output_offset);
  EXPECT_EQ(back.layout.prologue.size(), s.layout.prologue.size());
  // Every rank's input and output, of the sizes the collective's definition gives
  // (exec/reference.h, not the builder), lie inside the window.
  for (Rank r = 0; r < back.ranks(); ++r) {
    const exec::Shape sh = exec::shape(back, r);
    const auto i = static_cast<std::size_t>(r);
    EXPECT_LE(back.layout.input_offset[i] + sh.input_bytes, back.layout.window_bytes) << "rank " << r;
    EXPECT_LE(back.layout.output_offset[i] + sh.output_bytes, back.layout.window_bytes) << "rank " << r;
  }
  const VerifyOptions vo{.random_runs = 2, .exhaustive_state_limit = 500};
  EXPECT_TRUE(verify(back, vo).ok());
  // At the sizes exec runs (a positive number of whole elements) the schedule read back
  // still computes its collective.
  const std::int64_t esize = datatype_size(parse_datatype(back.datatype));
  if (back.bytes > 0 && back.bytes % esize == 0) {
    const auto windows = exec::run_dataflow(back, 1, 5);
    for (Rank r = 0; r < back.ranks(); ++r) {
      const auto bad = exec::check_output(back, r, 1, windows[static_cast<std::size_t>(r)]);
      EXPECT_FALSE(bad.has_value()) << *bad;
    }
  }
}

TEST(ScheduleRoundTrip, EveryCollectiveAndAlgorithmAtSmallSizesReadsBack) {
  std::size_t cases = 0;
  for (const auto& a : algorithms())
    for (Rank p = 2; p <= 9; ++p)
      for (std::int64_t bytes : {0, 1, 3, 8, 12, 1000})
        for (Datatype dt : {Datatype::float64, Datatype::float32}) {
          BuildOptions o{.ranks = p, .bytes = bytes, .datatype = dt};
          if (a.uses_root) o.root = p - 1;
          const Schedule dag = build_schedule(a.collective, a.algorithm, o);
          // Every strategy `counters --json` writes a file for, but exact (a SAT solve
          // each; its schedules carry the same layout and file fields).
          for (const Variant& v : variants({.all = true}, {}, dag)) {
            if (v.strategy == Strategy::exact) continue;
            expect_round_trip(assign_counters(dag, v.strategy, {.analysis = v.analysis}),
                              describe(a, o) + " " + v.label());
            ++cases;
          }
        }
  // Every algorithm x 8 rank counts x 6 sizes x 2 datatypes x 3 variants (naive,
  // optimized/local, optimized/global: global fits at these P).
  EXPECT_EQ(cases, algorithms().size() * 8 * 6 * 2 * 3);
}

// The build options that change what a file holds besides the layout: ordered channels
// ('after' orderings) and uncounted sends (null completions).
TEST(ScheduleRoundTrip, OrderedChannelsAndUncountedSendsReadBack) {
  for (const auto& a : algorithms())
    for (Rank p = 2; p <= 9; ++p)
      for (std::int64_t bytes : {3, 8}) {
        for (bool ordered : {false, true})
          for (bool counted : {true, false}) {
            if (!ordered && counted) continue;  // the sweep above
            BuildOptions o{.ranks = p, .bytes = bytes, .ordered_channels = ordered, .count_send_completions = counted};
            const Schedule dag = build_schedule(a.collective, a.algorithm, o);
            expect_round_trip(assign_counters(dag, Strategy::optimized), describe(a, o));
          }
      }
}

}  // namespace
}  // namespace fabriclab::offload
