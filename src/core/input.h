// Input files, bounded. What a user names as input -- a scenario, a flows or workload
// table, a schedule or program file -- must be a regular file (or a named pipe, read on
// purpose) of at most `limit` bytes. Anything else is an InputError naming the file and
// what was expected, before anything is read: a directory, a device (/dev/zero would be
// read for ever), a file larger than its kind ever needs.
//
//   const std::string text = read_input(path, "scenario", kScenarioBytes);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fabriclab {

inline constexpr std::uint64_t kScenarioBytes = std::uint64_t{16} << 20;  // a TOML scenario
inline constexpr std::uint64_t kTableBytes = std::uint64_t{1} << 30;      // flows, workload tables
inline constexpr std::uint64_t kScheduleBytes = std::uint64_t{4} << 30;   // schedule, program JSON

// The whole file; `what` names its kind in messages ("scenario", "flows file", ...).
std::string read_input(const std::string& path, std::string_view what, std::uint64_t limit);

// An output file a command will write once its work is done, checked before the work
// starts: its folder must exist and it must not be a folder itself. InputError naming
// the option (`what`, "--json") and the path otherwise.
void check_output_file(const std::string& path, std::string_view what);

}  // namespace fabriclab
