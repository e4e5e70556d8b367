// collbench (scenario/fabric/collbench.h): nccl-tests' table from runs on the fabric. The
// times are checked against each size's own collectives.csv, the bandwidths against
// nccl-tests' definitions (algbw = size / time, busbw = algbw x its factor), and the ring
// allreduce's busbw against the link's payload rate, which it approaches as size grows
// and never exceeds: at nic.mtu = 4096 a 100G link carries 4096 payload bytes per 4182 on
// the wire (66 bytes of headers, 20 of gap), 100 x 4096 / 4182 / 8 = 12.243 GB/s.
#include <gtest/gtest.h>

#include <filesystem>

#include "error_message.h"
#include "scenario/fabric/collbench.h"
#include "scenario/report/csv_table.h"

namespace fabriclab::scenario {
namespace {

namespace fs = std::filesystem;
using testing::input_error_of;

const std::string kExamples = FABRICLAB_EXAMPLES;

fs::path fresh_dir(const std::string& name) {
  const auto d = fs::path(::testing::TempDir()) / name;
  fs::remove_all(d);
  return d;
}

TEST(Collbench, TheRingAllreducesBusBandwidthApproachesTheLinksPayloadRate) {
  const fs::path out = fresh_dir("collbench-ring");
  CollbenchOptions o;
  o.collective = "allreduce";
  o.algorithm = "ring";
  o.scenario = kExamples + "/collbench.toml";
  o.ranks = 8;
  o.min = MB(1);
  o.max = MB(64);
  o.factor = 4;
  o.iters = 2;
  o.warmup = 1;
  o.out_dir = out.string();
  const CollbenchResult r = run_collbench(o);
  ASSERT_EQ(r.rows.size(), 4u);  // 1, 4, 16, 64 MB
  EXPECT_EQ(r.type, "double");
  EXPECT_EQ(r.redop, "sum");
  EXPECT_EQ(r.root, -1);
  const double payload_rate = 100.0 * 4096 / 4182 / 8;  // GB/s
  double before = 0, sum = 0;
  for (const CollbenchRow& row : r.rows) {
    EXPECT_EQ(row.count * 8, row.size);
    // The time: the mean completion of the timed instances (1 and 2) in the size's own run.
    const CsvTable c = read_csv(out / "sizes" / std::to_string(row.size) / "collectives.csv");
    ASSERT_EQ(c.rows(), 3u);
    EXPECT_NEAR(row.time_us, (c.number(1, "completion_ns") + c.number(2, "completion_ns")) / 2 / 1000, 1e-9);
    EXPECT_NEAR(row.algbw, static_cast<double>(row.size) / (row.time_us * 1000), 1e-12);
    EXPECT_NEAR(row.busbw, row.algbw * 2 * 7 / 8, 1e-12);
    EXPECT_GT(row.busbw, before);
    EXPECT_LE(row.busbw, payload_rate);
    EXPECT_EQ(row.offloaded, 2u);
    before = row.busbw;
    sum += row.busbw;
  }
  EXPECT_GT(r.rows.back().busbw, 0.95 * payload_rate);
  EXPECT_NEAR(r.avg_busbw, sum / 4, 1e-12);
  const CsvTable csv = read_csv(out / "collbench.csv");
  ASSERT_EQ(csv.rows(), 4u);
  EXPECT_EQ(csv.number(3, "size_bytes"), 64e6);
  EXPECT_TRUE(fs::exists(out / "busbw.png"));
  // nccl-tests' columns, as all_reduce_perf prints its out-of-place group.
  const std::string table = nccl_table(r);
  EXPECT_EQ(table.substr(0, table.find('\n')),
            "#       size         count      type   redop    root     time   algbw   busbw #wrong");
  EXPECT_NE(table.find("\n     1000000        125000    double     sum      -1  "), std::string::npos) << table;
}

TEST(Collbench, BlockCollectivesCountARanksPart) {
  CollbenchOptions o;
  o.collective = "allgather";
  o.algorithm = "ring";
  o.scenario = kExamples + "/collbench.toml";
  o.ranks = 6;
  o.min = Bytes::from_count(100);
  o.max = Bytes::from_count(1000);
  o.factor = 10;
  o.iters = 1;
  o.warmup = 0;
  const CollbenchResult r = run_collbench(o);
  // Sizes rounded down to whole doubles per rank: 100 -> 96 (6 x 2 x 8), 1000 -> 960.
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].size, 96);
  EXPECT_EQ(r.rows[0].count, 2);
  EXPECT_EQ(r.rows[1].size, 960);
  EXPECT_EQ(r.rows[1].count, 20);
  EXPECT_EQ(r.redop, "none");
  EXPECT_NEAR(r.rows[1].busbw, r.rows[1].algbw * 5 / 6, 1e-12);
}

TEST(Collbench, ErrorsNameWhatCannotRun) {
  CollbenchOptions o;
  o.collective = "allreduce";
  o.scenario = kExamples + "/collectives.toml";
  EXPECT_EQ(input_error_of([&] { run_collbench(o); }),
            kExamples +
                "/collectives.toml: collbench adds the one [[collective]] it measures; the scenario has 1 of its "
                "own");
  o.scenario = kExamples + "/collbench.toml";
  o.ranks = 17;
  EXPECT_EQ(input_error_of([&] { run_collbench(o); }), "collbench: --ranks 17: the scenario's fabric has 16 hosts");
  o.ranks = 4;
  o.collective = "barrier";
  EXPECT_EQ(input_error_of([&] { run_collbench(o); }),
            "collbench: a barrier moves no bytes: there is no bandwidth to measure");
  o.collective = "allreduce";
  o.min = MB(2);
  o.max = MB(1);
  EXPECT_EQ(input_error_of([&] { run_collbench(o); }), "collbench: --maxbytes 1MB is below --minbytes 2MB");
  o.min = Bytes::from_count(1);
  o.max = Bytes::from_count(7);
  EXPECT_EQ(input_error_of([&] { run_collbench(o); }),
            "collbench: every size from 1B to 7B rounds to 0: 4 ranks of double elements need 8 bytes at least");
}

}  // namespace
}  // namespace fabriclab::scenario
