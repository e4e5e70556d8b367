// Our output files as whole texts: writing one, reading one back (text or JSON), and the
// one way our CSV and JSON outputs write a time.
//
//   write_file(dir / "summary.json", j.dump(2) + "\n");
//   const nlohmann::json s = read_json(dir / "summary.json");
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "core/units.h"

namespace fabriclab::scenario {

// Throws InputError naming the file when it cannot be written (or read). Written whole
// (through FILE.tmp, renamed): a reader, or a run killed meanwhile, sees the old file or
// the new one.
void write_file(const std::filesystem::path& p, const std::string& text);
std::string read_text(const std::filesystem::path& p);
// InputError naming the file if it is missing or not JSON.
nlohmann::json read_json(const std::filesystem::path& p);

// A time as our CSV and JSON outputs write it: nanoseconds with three decimals ("1671.680").
std::string ns_text(Time t);

}  // namespace fabriclab::scenario
