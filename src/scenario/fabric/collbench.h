// collbench: nccl-tests on the simulated fabric. One collective run at every size from
// min to max (each a factor apart) on a scenario's fabric, offloaded or in software as
// the NICs' counters allow (the [[collective]] entry's policy), and the table nccl-tests
// prints -- size, count, type, redop, root, time, algbw, busbw, #wrong -- in its units
// (bytes, elements, us, GB/s) and with its bus-bandwidth factors (busbw_factor).
//
// Sizes are nccl-tests' `size`: the whole buffer (allgather, alltoall, reduce_scatter: n
// blocks, so a size is rounded down to a multiple of n elements, as nccl-tests does; a size
// that rounds to 0 is skipped). Each size is one run of the scenario with one
// [[collective]] entry appended (the scenario must have none), `warmup + iters` instances
// back to back (each issued as the one before completes); the time is the mean completion
// (issue to the host seeing it done) of the last `iters`. The fabric moves no data, so
// #wrong is N/A (nccl-tests' with checking off). The scenario's own traffic runs beside it.
//
//   DIR/collbench.csv  size_bytes,count,type,redop,root,time_us,algbw_GBps,busbw_GBps,offloaded,software
//   DIR/busbw.png      busbw against size, with its gnuplot script
//   DIR/sizes/SIZE/    each size's run: summary.json, flows.csv, ports.csv, collectives.csv
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/units.h"

namespace fabriclab::scenario {

struct CollbenchOptions {
  std::string collective, algorithm = "ring";
  std::string scenario;
  std::vector<std::string> sets = {};  // scenario keys, after the file
  std::int32_t ranks = 0;              // 0: every host
  Bytes min = Bytes::from_count(8), max = Bytes::from_count(64'000'000);
  std::uint32_t factor = 2;
  std::uint32_t iters = 5, warmup = 1;
  std::string out_dir = {};  // "" = write nothing
  bool progress = false;
};

struct CollbenchRow {
  std::int64_t size = 0, count = 0;           // nccl-tests' size (bytes) and count (elements)
  double time_us = 0, algbw = 0, busbw = 0;   // GB/s
  std::uint32_t offloaded = 0, software = 0;  // instances measured
};

struct CollbenchResult {
  std::string type, redop;
  std::int32_t root = -1, ranks = 0;
  std::vector<CollbenchRow> rows;
  double avg_busbw = 0;  // over the sizes, as nccl-tests' "Avg bus bandwidth"
};

// Throws InputError for options that cannot run (naming the option), NegativeAnswer when
// an instance never completes (a collective that can never start under `stall`).
CollbenchResult run_collbench(const CollbenchOptions& o);

// The table as nccl-tests prints it (its header lines, one row per size, the average).
std::string nccl_table(const CollbenchResult& r);

}  // namespace fabriclab::scenario
