// Fuzz target: a schedule file ("fabriclab.schedule/1", triggered-ops.md section 8) as
// `fabriclab verify` and `exec --schedule` read it (offload::schedule_from_json_text, what
// read_schedule_json does after reading the file). What the reader accepts must
//   - write back and read again to the same file (schedule_to_json is the reader's
//     normal form: a second round trip changes nothing);
//   - go through the verifier (a verdict either way; its own InputError is a verdict too:
//     a schedule without counters);
//   - be a DAG that the naive and optimized assignments turn into safe and live schedules
//     (fuzz/offload_oracle.h).
//
// FABRICLAB_FUZZ_SEEDS=DIR: write the planner's schedules (fuzz/offload_oracle.h) to DIR
// and exit.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/offload_oracle.h"
#include "offload/schedule_io.h"

namespace {

using fabriclab::fuzz::finding;
namespace offload = fabriclab::offload;

void round_trip(const offload::Schedule& s) {
  const std::string once = offload::schedule_to_json(s).dump(1);
  offload::Schedule back;
  try {
    back = offload::schedule_from_json_text(once, "round-trip.json");
  } catch (const fabriclab::InputError& e) {
    finding(std::string("the reader rejects what the writer wrote: ") + e.what());
  }
  if (offload::schedule_to_json(back).dump(1) != once) finding("a schedule written, read and written again differs");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fabriclab::fuzz::side_job("FABRICLAB_FUZZ_SEEDS", [](const std::string& dir) {
    fabriclab::fuzz::planner_schedules([&](const std::string& name, const offload::Schedule& s) {
      fabriclab::fuzz::write_file(dir + "/" + name + ".json", offload::schedule_to_json(s).dump() + "\n");
    });
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fabriclab::fuzz::expect_input_errors([&] {
    const offload::Schedule s = offload::schedule_from_json_text(fabriclab::fuzz::text(data, size), "fuzz.json");
    round_trip(s);
    try {
      fabriclab::fuzz::verify_small(s, offload::Analysis::global);
    } catch (const fabriclab::InputError&) {
      // No counters, or counters the verifier refuses: a verdict on the file.
    }
    fabriclab::fuzz::check_assignments(s);
  });
  return 0;
}
