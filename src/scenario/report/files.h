// Our output files as whole texts: writing one, reading one back (text or JSON), and the
// one way our CSV and JSON outputs write a time.
//
//   write_file(dir / "summary.json", j.dump(2) + "\n");
//   const nlohmann::json s = read_json(dir / "summary.json");
#pragma once

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/units.h"

namespace fabriclab::scenario {

// Throws InputError naming the file when it cannot be written (or read). Written whole
// (through FILE.tmp, renamed): a reader, or a run killed meanwhile, sees the old file or
// the new one.
void write_file(const std::filesystem::path& p, const std::string& text);
// The same for a file written piece by piece (a table of a row per flow, never whole in
// memory): into FILE.tmp, renamed over FILE by commit(); dropped uncommitted, the
// temporary file goes.
class FileWriter {
 public:
  explicit FileWriter(std::filesystem::path p);
  ~FileWriter();
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;
  void write(std::string_view text);
  void commit();  // InputError naming the file when it could not be written

 private:
  std::filesystem::path path_, tmp_;
  std::ofstream out_;
  bool committed_ = false;
};
std::string read_text(const std::filesystem::path& p);
// InputError naming the file if it is missing or not JSON.
nlohmann::json read_json(const std::filesystem::path& p);
// Creates `dir` and removes `mark` from it: the file a command writes last, which marks
// its outputs complete (run: summary.json; experiment: results.json; an offload grid:
// report.md), so that a command interrupted later cannot leave an earlier one's outputs
// looking current. InputError naming the directory or the file.
void prepare_outputs(const std::filesystem::path& dir, const std::string& mark);

// A time as our CSV and JSON outputs write it: nanoseconds with three decimals ("1671.680").
std::string ns_text(Time t);

}  // namespace fabriclab::scenario
