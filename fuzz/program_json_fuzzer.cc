// Fuzz target: a program file ("fabriclab.program/1", docs/program-format.md) as
// `fabriclab plan` reads it: offload::program_from_json_text (what read_program_json does
// after reading the file), then recover_dag, the rest of reading a program (an ambiguous or
// inconsistent dependence is an InputError naming the call). What is recovered must
//   - go through the verifier as given (a verdict either way);
//   - be a DAG that the naive and optimized assignments turn into safe and live schedules
//     (fuzz/offload_oracle.h), as `plan` does with it.
//
// FABRICLAB_FUZZ_SEEDS=DIR: write the programs of the planner's assigned schedules
// (offload::program_to_json_text) to DIR and exit.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/offload_oracle.h"
#include "offload/program.h"

namespace offload = fabriclab::offload;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fabriclab::fuzz::side_job("FABRICLAB_FUZZ_SEEDS", [](const std::string& dir) {
    fabriclab::fuzz::planner_schedules([&](const std::string& name, const offload::Schedule& s) {
      if (name.ends_with("-dag")) return;  // a program has counters
      fabriclab::fuzz::write_file(dir + "/" + name + ".json", offload::program_to_json_text(s));
    });
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fabriclab::fuzz::expect_input_errors([&] {
    const offload::Program p = offload::program_from_json_text(fabriclab::fuzz::text(data, size), "fuzz.json");
    const offload::Recovered r = offload::recover_dag(p);
    try {
      fabriclab::fuzz::verify_small(r.as_given, offload::Analysis::global);
    } catch (const fabriclab::InputError&) {
      // Counters the verifier refuses: a verdict on the program.
    }
    fabriclab::fuzz::check_assignments(r.dag);
  });
  return 0;
}
