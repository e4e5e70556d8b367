#include "scenario/report/files.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <utility>

#include "core/error.h"

namespace fabriclab::scenario {

void prepare_outputs(const std::filesystem::path& dir, const std::string& mark) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError(fmt::format("{}: cannot create the output directory: {}", dir.string(), ec.message()));
  std::filesystem::remove(dir / mark, ec);
  if (ec) throw InputError(fmt::format("{}: cannot replace the earlier {}: {}", dir.string(), mark, ec.message()));
}

void write_file(const std::filesystem::path& p, const std::string& text) {
  FileWriter out(p);
  out.write(text);
  out.commit();
}

// Into a temporary file beside it, then renamed over it: a run killed meanwhile leaves
// the old file or the new one, never a torn one.
FileWriter::FileWriter(std::filesystem::path p) : path_(std::move(p)), tmp_(path_) {
  tmp_ += ".tmp";
  out_.open(tmp_, std::ios::binary);
}

FileWriter::~FileWriter() {
  if (committed_) return;
  out_.close();
  std::error_code ignored;
  std::filesystem::remove(tmp_, ignored);
}

void FileWriter::write(std::string_view text) { out_.write(text.data(), static_cast<std::streamsize>(text.size())); }

void FileWriter::commit() {
  out_.close();  // a failed flush (disk full) shows only here
  if (!out_) throw InputError(fmt::format("{}: cannot write", path_.string()));  // (the destructor removes it)
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) throw InputError(fmt::format("{}: cannot write: {}", path_.string(), ec.message()));
  committed_ = true;
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read", p.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read", p.string()));
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not JSON: {}", p.string(), e.what()));
  }
}

std::string ns_text(Time t) { return fmt::format("{}.{:03}", t.ps() / 1000, t.ps() % 1000); }

}  // namespace fabriclab::scenario
