// Fuzz target: a schedule file ("fabriclab.schedule/1", triggered-ops.md section 8) as
// `fabriclab verify` and `exec --schedule` read it (offload::schedule_from_json_text, what
// read_schedule_json does after reading the file). What the reader accepts must
//   - write back and read again to the same file (schedule_to_json is the reader's
//     normal form: a second round trip changes nothing);
//   - go through the verifier (a verdict either way; its own InputError is a verdict too:
//     a schedule without counters);
//   - be a DAG that the naive and optimized assignments turn into safe and live schedules
//     (fuzz/offload_oracle.h).
// And a file that is a JSON object is read the same (the same schedule or the same error)
// with its fields in its own order (streamed when "format" and "ranks" come before "ops")
// and with "ops" first (read as one document).
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

// The schedule read from `text`, or the reader's error.
std::string reading_of(const std::string& text) {
  try {
    return offload::schedule_to_json(offload::schedule_from_json_text(text, "fuzz.json")).dump();
  } catch (const fabriclab::InputError& e) {
    return std::string("error: ") + e.what();
  }
}

void same_reading_in_any_order(const std::string& text) {
  const std::string as_given = reading_of(text);
  // Past the readers' depth bound the file is refused where it nests too deep, a place
  // that moves with its fields; and this oracle's own copy and dump would recurse.
  if (as_given.find("nested deeper than") != std::string::npos) return;
  const auto j = nlohmann::ordered_json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("ops")) return;
  nlohmann::ordered_json ops_first = nlohmann::ordered_json::object();
  ops_first["ops"] = j.at("ops");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "ops") ops_first[it.key()] = it.value();
  const std::string as_document = reading_of(ops_first.dump());
  // Past a bound on strings or elements the file is refused at the first such place, which
  // moves with the fields; and the copy is written anew (a string's escapes, as written,
  // may shorten it below the bound). The reading is compared within the bounds only.
  const auto past_a_bound = [](const std::string& r) {
    return r.find(": a string longer than") != std::string::npos ||
           r.find(": an array or object of more than") != std::string::npos;
  };
  if (past_a_bound(as_given) || past_a_bound(as_document)) return;
  if (as_given != as_document)
    finding("the file reads differently with \"ops\" first:\n  as given: " + as_given.substr(0, 300) +
            "\n  ops first: " + as_document.substr(0, 300));
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
  same_reading_in_any_order(fabriclab::fuzz::text(data, size));
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
