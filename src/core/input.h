// Input files, bounded. What a user names as input -- a scenario, a flows or workload
// table, a schedule or program file -- must be a regular file (or a named pipe, read on
// purpose) of at most `limit` bytes. Anything else is an InputError naming the file and
// what was expected, before anything is read: a directory, a device (/dev/zero would be
// read for ever), a file larger than its kind ever needs.
//
//   const std::string text = read_input(path, "scenario", kScenarioBytes);
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <string>
#include <string_view>

namespace fabriclab {

inline constexpr std::uint64_t kScenarioBytes = std::uint64_t{16} << 20;  // a TOML scenario
inline constexpr std::uint64_t kTableBytes = std::uint64_t{1} << 30;      // flows, workload tables
inline constexpr std::uint64_t kScheduleBytes = std::uint64_t{4} << 30;   // a schedule (JSON, read as it streams)
// A JSON file read as one document (a program; a schedule whose "format" and "ranks"
// follow its "ops"): its parsed form takes several times its text.
inline constexpr std::uint64_t kJsonDocumentBytes = std::uint64_t{32} << 20;

// The whole file; `what` names its kind in messages ("scenario", "flows file", ...).
std::string read_input(const std::string& path, std::string_view what, std::uint64_t limit);

// The same file, checked the same way, read as a stream: a table is read a line at a time
// and never held whole. A read past `limit` bytes (a named pipe's) throws the InputError
// read_input would (badbit is in exceptions(), which passes it on).
//
//   InputStream in(path, "flows file", kTableBytes);
//   csv::Reader reader(in, path);
class InputStream : public std::istream {
 public:
  InputStream(const std::string& path, std::string_view what, std::uint64_t limit);
  ~InputStream() override;

 private:
  class Buffer;
  std::unique_ptr<Buffer> buffer_;
};

// An output file a command will write once its work is done, checked before the work
// starts: its folder must exist and it must not be a folder itself. InputError naming
// the option (`what`, "--json") and the path otherwise.
void check_output_file(const std::string& path, std::string_view what);

}  // namespace fabriclab
