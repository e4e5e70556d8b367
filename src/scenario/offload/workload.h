// The workload of an offload scenario: the collectives to run, each with its issue time
// or the one it follows, as generated from workload.* or read from a CSV file.
//
//   std::vector<Spec> specs = make_workload(setup.value, setup.config);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/units.h"
#include "scenario/offload/offload_scenario.h"

namespace fabriclab::scenario::offload_internal {

// One collective to run: rank r on NIC r.
struct Spec {
  std::string name, collective, algorithm;
  int ranks = 0;
  std::int64_t bytes = 0;
  Time issue;
  std::int32_t after = -1;  // >= 0: issued when that one completes (issue is then unused)
};

// A CSV file name,collective,algorithm,ranks,bytes,issue (comments and blank lines
// allowed). InputError naming the file and line.
std::vector<Spec> read_workload_file(const std::string& path);

// The scenario's workload: generated from workload.* (arrival in_flight or poisson), or
// read from workload.file (relative to the scenario file that set it) when arrival is
// "file". InputError naming where the offending key was set.
std::vector<Spec> make_workload(const OffloadScenario& sc, const Config& cfg);

}  // namespace fabriclab::scenario::offload_internal
