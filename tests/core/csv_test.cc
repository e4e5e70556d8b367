// The CSV reader: header, rows, CRLF, comments and blank lines, trimming, and each error
// naming the file and line.
#include "core/csv.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "error_message.h"

namespace fabriclab::csv {
namespace {

using Fields = std::vector<std::string>;

TEST(Csv, SplitKeepsEveryFieldEmptyOnesToo) {
  EXPECT_EQ(split("a,,b,"), (Fields{"a", "", "b", ""}));
  EXPECT_EQ(split(""), (Fields{""}));
  EXPECT_EQ(split(" a , b\t", true), (Fields{"a", "b"}));
  EXPECT_EQ(split(" a , b"), (Fields{" a ", " b"}));
}

TEST(Csv, ReadsTheHeaderThenRowsWithTheirLineNumbers) {
  std::istringstream in("x,y\r\n1,2\r\n\r\n3,\n");
  Reader r(in, "t.csv");
  EXPECT_EQ(r.read_header(), (Fields{"x", "y"}));
  Row row;
  ASSERT_TRUE(r.next(row));
  EXPECT_EQ(row.fields, (Fields{"1", "2"}));
  EXPECT_EQ(row.line, 2u);
  ASSERT_TRUE(r.next(row));  // the blank line 3 is skipped
  EXPECT_EQ(row.fields, (Fields{"3", ""}));
  EXPECT_EQ(r.where(row), "t.csv:4");
  EXPECT_FALSE(r.next(row));
}

TEST(Csv, CommentsAreLinesOnlyWhereTheFileAllowsThem) {
  std::istringstream with("# made by hand\nx,y\n# a note\n1,2\n");
  Reader r(with, "c.csv", {.comments = true});
  r.expect_header({"x", "y"});
  Row row;
  ASSERT_TRUE(r.next(row));
  EXPECT_EQ(row.line, 4u);
  EXPECT_FALSE(r.next(row));
  std::istringstream without("x\n#1\n");
  Reader plain(without, "p.csv");
  plain.read_header();
  ASSERT_TRUE(plain.next(row));
  EXPECT_EQ(row.fields, (Fields{"#1"}));
}

TEST(Csv, TrimmingDropsSpacesAroundLinesAndFields) {
  std::istringstream in("  src , dst \n \t \n  # indented comment\n h0 ,h1\r\n");
  Reader r(in, "f.csv", {.comments = true, .trim = true});
  r.expect_header({"src", "dst"});
  Row row;
  ASSERT_TRUE(r.next(row));
  EXPECT_EQ(row.fields, (Fields{"h0", "h1"}));
  EXPECT_EQ(row.line, 4u);
}

TEST(Csv, ErrorsNameTheFileAndLine) {
  std::istringstream wide("x,y\n1,2\n1,2,3\n");
  Reader r(wide, "w.csv");
  r.read_header();
  Row row;
  ASSERT_TRUE(r.next(row));
  EXPECT_EQ(testing::input_error_of([&] { r.next(row); }), "w.csv:3: expected 2 columns, got 3");

  std::istringstream other("\nx,z\n");
  Reader h(other, "h.csv");
  EXPECT_EQ(testing::input_error_of([&] { h.expect_header({"x", "y"}); }), "h.csv:2: expected the header 'x,y'");

  std::istringstream empty("# only a comment\n\n");
  Reader e(empty, "e.csv", {.comments = true});
  EXPECT_EQ(testing::input_error_of([&] { e.expect_header({"x", "y"}); }), "e.csv: empty (expected the header 'x,y')");
  std::istringstream nothing("");
  Reader n(nothing, "n.csv");
  EXPECT_EQ(testing::input_error_of([&] { n.read_header(); }), "n.csv: empty (expected a header row)");
}

// Optional last columns: the required ones, then a prefix of the optional ones, in order.
TEST(Csv, OptionalColumnsArePrefixesInOrder) {
  for (const auto& [text, columns] :
       std::vector<std::pair<std::string, std::size_t>>{{"a,b\n", 2}, {"a,b,c\n", 3}, {"a,b,c,d\n", 4}}) {
    std::istringstream in(text);
    Reader r(in, "o.csv");
    r.expect_header({"a", "b"}, {"c", "d"});
    EXPECT_EQ(r.header().size(), columns) << text;
  }
  for (const char* bad : {"a\n", "a,b,d\n", "a,b,c,d,e\n", "b,a\n"}) {
    std::istringstream in(bad);
    Reader r(in, "o.csv");
    EXPECT_EQ(testing::input_error_of([&] {
                r.expect_header({"a", "b"}, {"c", "d"});
              }),
              "o.csv:1: expected the header 'a,b' or 'a,b,c,d'")
        << bad;
  }
}

TEST(Csv, WideHeadersWideRowsAndLongLinesAreRefusedBeforeTheSplit) {
  // A header of 1025 columns (kMaxColumns + 1), as read_header and expect_header see it.
  std::istringstream header(std::string(1024, ',') + "\n");
  Reader h(header, "h.csv");
  EXPECT_EQ(testing::input_error_of([&] { h.read_header(); }), "h.csv:1: a header of 1025 columns; at most 1024");
  std::istringstream named("# c\n" + std::string(2000, ',') + "\n");
  Reader n(named, "n.csv", {.comments = true});
  EXPECT_EQ(testing::input_error_of([&] { n.expect_header({"x"}); }),
            "n.csv:2: a header of 2001 columns; at most 1024");
  // A row of a million commas (a line under the bound): counted, never split into a
  // million strings.
  std::istringstream wide("x,y\n" + std::string(1'000'000, ',') + "\n");
  Reader w(wide, "w.csv");
  w.read_header();
  Row row;
  EXPECT_EQ(testing::input_error_of([&] { w.next(row); }), "w.csv:2: expected 2 columns, got 1000001");
  // A line one byte past kMaxLineBytes, and one at it (then too wide for the header).
  std::istringstream longer("x\n" + std::string(kMaxLineBytes + 1, 'a') + "\n");
  Reader l(longer, "l.csv");
  l.read_header();
  EXPECT_EQ(testing::input_error_of([&] { l.next(row); }), "l.csv:2: a line longer than 1048576 bytes");
  std::istringstream at("x\n" + std::string(kMaxLineBytes, 'a') + "\n");
  Reader a(at, "a.csv");
  a.read_header();
  ASSERT_TRUE(a.next(row));
  EXPECT_EQ(row.fields[0].size(), kMaxLineBytes);
}

}  // namespace
}  // namespace fabriclab::csv
