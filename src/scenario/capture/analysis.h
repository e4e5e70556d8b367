// The outputs of `fabriclab analyze` (capture/analyzer.h) in DIR, for pandas and for people:
//
//   captures.csv        per capture: frames by kind, truncated, malformed, ICRC and IPv4
//                       checksum results, unknown opcodes, duration, throughput bin
//   qps.csv             per QP: packets, payload, throughput, ACKs, NAKs by syndrome, CNPs
//                       and their intervals, ECN CE share, PSN gaps / missing / duplicates,
//                       reordering (the columns of the simulator's reorder.csv)
//   throughput.csv      per QP and bin: Gb/s of payload
//   reorder_density.csv per QP: extent, displacement and buffer-occupancy histograms
//   cnp_ports.csv       per address CNPs were sent to: count and intervals
//   cnp_intervals.csv   per capture: CNP intervals (per QP) in 1 us bins
//   pfc.csv             per sender MAC and priority: XOFF, XON, quanta, pauses, paused time
//   pause_timeline.csv  the paused intervals
//   analysis.json       all of the above but the histograms and time series
//   *.png (+ .gp)       throughput, pause timeline, CNP intervals, reorder extents
//   report.md           written last: its presence marks the outputs complete
//
// Times are in ns since the capture's first frame; empty cells where a value needs what
// the capture did not give (pause time without a link speed).
#pragma once

#include <filesystem>
#include <string>

#include "capture/analyzer.h"

namespace fabriclab::scenario {

void write_analysis(const capture::Analyzer& a, const std::filesystem::path& dir);

// A few lines for the terminal: per capture, what it held.
std::string analysis_digest(const capture::Analyzer& a);

}  // namespace fabriclab::scenario
