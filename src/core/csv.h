// Comma-separated files read a line at a time: the one reader behind every CSV input --
// the flows and workload files a scenario names, and our own outputs read back. A header
// row names the columns and every row after it has as many fields; there is no quoting.
// A CR before the end of a line is dropped, blank lines are skipped, and so are lines
// starting with '#' where the file allows comments. Errors are InputErrors naming
// FILE:LINE; a header of more than kMaxColumns columns and a line of more than
// kMaxLineBytes bytes are errors too.
//
//   std::ifstream in(path);
//   csv::Reader r(in, path, {.comments = true, .trim = true});
//   r.expect_header({"src", "dst", "bytes"});
//   for (csv::Row row; r.next(row);) use(row.fields, r.where(row));
#pragma once

#include <cstddef>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

namespace fabriclab::csv {

struct Options {
  bool comments = false;  // skip lines whose first character (after trimming) is '#'
  bool trim = false;      // drop spaces, tabs and CRs around the line and every field
};

struct Row {
  std::size_t line = 0;  // 1-based, in the file
  std::vector<std::string> fields;
};

// The fields of one line, split at every comma: "a,,b," is four fields.
std::vector<std::string> split(std::string_view line, bool trim = false);

// Bounds on what a file may hold, checked before a line is split: a hostile line of a
// hundred million commas would otherwise become as many strings. No file fabriclab reads
// has more than a few dozen columns or lines of more than a few hundred bytes.
inline constexpr std::size_t kMaxColumns = 1024;
inline constexpr std::size_t kMaxLineBytes = std::size_t{1} << 20;

class Reader {
 public:
  // `path` names the input in messages; `in` must outlive the reader.
  Reader(std::istream& in, std::string path, Options options = {});

  // The header is the first line that is not blank (or a comment); its fields are the
  // columns. InputError "PATH: empty (expected a header row)" when there is none.
  const std::vector<std::string>& read_header();
  // The header must be `names`, followed by the first k of `optional` (k >= 0, in that
  // order; header().size() tells which). InputError "PATH:LINE: expected the header
  // 'a,b,c'" (with optional columns: "'a,b' or 'a,b,c'"), or "PATH: empty (expected ...)".
  void expect_header(const std::vector<std::string>& names, const std::vector<std::string>& optional = {});

  // The next row; false at the end of the input. InputError "PATH:LINE: expected N
  // columns, got M" when its width is not the header's. Call after the header.
  bool next(Row& row);

  // "PATH:LINE", to name a row in a message about its contents.
  std::string where(const Row& row) const;
  const std::string& path() const { return path_; }
  const std::vector<std::string>& header() const { return header_; }

 private:
  bool next_line(std::string& line);                  // the next line that is neither blank nor a comment
  void check_columns(const std::string& line) const;  // a header's width, before it is split

  std::istream& in_;
  std::string path_;
  Options options_;
  std::size_t line_ = 0;
  bool has_header_ = false;
  std::vector<std::string> header_;
  std::vector<char> buf_;  // kMaxLineBytes + 2: a line, its '\n', the terminator
};

}  // namespace fabriclab::csv
