#include "core/csv.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "core/error.h"

namespace fabriclab::csv {

namespace {

std::string_view trimmed(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

// The fields split() would make of `line`, without making them.
std::size_t fields_in(std::string_view line) {
  return static_cast<std::size_t>(std::count(line.begin(), line.end(), ',')) + 1;
}

}  // namespace

std::vector<std::string> split(std::string_view line, bool trim) {
  std::vector<std::string> out;
  for (std::size_t pos = 0;;) {
    const auto comma = line.find(',', pos);
    const std::string_view field = line.substr(pos,
                                               comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    out.emplace_back(trim ? trimmed(field) : field);
    if (comma == std::string_view::npos) return out;
    pos = comma + 1;
  }
}

Reader::Reader(std::istream& in, std::string path, Options options)
    : in_(in), path_(std::move(path)), options_(options) {}

bool Reader::next_line(std::string& line) {
  // Read into a buffer of the bound's size: a longer line is refused once the buffer is
  // full, never held whole.
  if (buf_.empty()) buf_.resize(kMaxLineBytes + 2);
  for (;;) {
    in_.getline(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    const auto got = static_cast<std::size_t>(in_.gcount());  // with the '\n', unless at the end
    if (in_.fail() && got == 0) return false;
    ++line_;
    const std::size_t length = in_.fail() || in_.eof() ? got : got - 1;
    if (length > kMaxLineBytes)
      throw InputError(fmt::format("{}:{}: a line longer than {} bytes", path_, line_, kMaxLineBytes));
    const std::string_view text(buf_.data(), length);
    if (options_.trim) line = std::string(trimmed(text));
    else line.assign(text.substr(0, text.ends_with('\r') ? length - 1 : length));
    if (line.empty() || (options_.comments && line[0] == '#')) continue;
    return true;
  }
}

const std::vector<std::string>& Reader::read_header() {
  std::string line;
  if (!next_line(line)) throw InputError(fmt::format("{}: empty (expected a header row)", path_));
  check_columns(line);
  header_ = split(line, options_.trim);
  has_header_ = true;
  return header_;
}

void Reader::expect_header(const std::vector<std::string>& names, const std::vector<std::string>& optional) {
  std::vector<std::string> all = names;
  all.insert(all.end(), optional.begin(), optional.end());
  const std::string expected = optional.empty() ? joined(names) : fmt::format("{}' or '{}", joined(names), joined(all));
  std::string line;
  if (!next_line(line)) throw InputError(fmt::format("{}: empty (expected the header '{}')", path_, expected));
  check_columns(line);
  header_ = split(line, options_.trim);
  const bool ok = header_.size() >= names.size() && header_.size() <= all.size() &&
                  std::equal(header_.begin(), header_.end(), all.begin());
  if (!ok) throw InputError(fmt::format("{}:{}: expected the header '{}'", path_, line_, expected));
  has_header_ = true;
}

bool Reader::next(Row& row) {
  if (!has_header_) throw std::logic_error("csv::Reader::next before the header");
  std::string line;
  if (!next_line(line)) return false;
  row.line = line_;
  // Counted before the split: a row far wider than the header costs nothing.
  const std::size_t fields = fields_in(line);
  if (fields != header_.size())
    throw InputError(fmt::format("{}: expected {} columns, got {}", where(row), header_.size(), fields));
  row.fields = split(line, options_.trim);
  return true;
}

void Reader::check_columns(const std::string& line) const {
  const std::size_t fields = fields_in(line);
  if (fields > kMaxColumns)
    throw InputError(fmt::format("{}:{}: a header of {} columns; at most {}", path_, line_, fields, kMaxColumns));
}

std::string Reader::where(const Row& row) const { return fmt::format("{}:{}", path_, row.line); }

}  // namespace fabriclab::csv
