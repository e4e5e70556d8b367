// Traffic: the flows a scenario runs, from a pattern or a file.
//   incast       `incast_senders` hosts (the lowest-numbered ones other than the
//                receiver) each send `bytes` to `incast_receiver`
//   permutation  every host sends `bytes` to one other host and receives from one: a
//                random cyclic permutation (Sattolo's algorithm, no host sends to itself)
//                drawn from the run's seed
//   all_to_all   every host sends `bytes` to every other host
//   flows        a CSV file with the header `src,dst,bytes,start,priority,qps` (sizes and
//                times with units: "1MB", "10us"); errors name the file and line
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/units.h"
#include "fabric/flows.h"

namespace fabriclab::workload {

enum class Pattern : std::uint8_t { incast, permutation, all_to_all, flows };

struct TrafficSpec {
  Pattern pattern = Pattern::incast;
  Bytes bytes = Bytes::from_count(1'000'000);
  Time start;
  std::uint8_t priority = 3;
  std::uint32_t qps_per_flow = 1;
  std::uint32_t incast_receiver = 0;
  std::uint32_t incast_senders = 0;  // 0: every other host
  std::string flows_file;
};

Pattern parse_pattern(const std::string& name);  // throws InputError
std::vector<fabric::FlowSpec> make_flows(const TrafficSpec& t, std::uint32_t hosts, std::uint64_t seed);
std::vector<fabric::FlowSpec> read_flows_csv(const std::string& path, std::uint32_t hosts);

}  // namespace fabriclab::workload
