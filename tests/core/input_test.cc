// Input files: read whole (read_input) or as a stream (InputStream), both checked and
// bounded the same way.
#include "core/input.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "core/error.h"
#include "error_message.h"

namespace fabriclab {
namespace {

struct TempDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("fabriclab-input-test-" + std::to_string(::getpid()));
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
};

// 200 000 numbered lines (1.3 MB, twenty refills of the stream's 64 KiB buffer) come
// back line for line, as read_input reads them whole.
TEST(InputStream, ReadsTheFileLineByLine) {
  TempDir d;
  const std::string path = (d.path / "t.csv").string();
  {
    std::ofstream out(path);
    for (int i = 0; i < 200000; ++i) out << "line " << i << "\n";
  }
  InputStream in(path, "table", kTableBytes);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ASSERT_EQ(line, "line " + std::to_string(n));
    ++n;
  }
  EXPECT_EQ(n, 200000);
  EXPECT_EQ(read_input(path, "table", kTableBytes).size(), std::filesystem::file_size(path));
}

TEST(InputStream, RefusesWhatReadInputRefuses) {
  TempDir d;
  const std::string path = (d.path / "t.csv").string();
  std::ofstream(path) << std::string(101, 'x');
  EXPECT_EQ(testing::input_error_of([&] { InputStream in(path, "table", 100); }),
            path + ": the table is 101 bytes, more than the 100 bytes a table may be");
  EXPECT_EQ(testing::input_error_of([&] { InputStream in(d.path.string(), "table", 100); }),
            d.path.string() + ": the table is a directory; expected a file");
  EXPECT_EQ(testing::input_error_of([&] { InputStream in((d.path / "none").string(), "table", 100); }),
            (d.path / "none").string() + ": cannot open the table: No such file or directory");
}

// A named pipe has no size to check first: the read past the limit throws, through
// getline, the error a file too large gets. The writer may come after the reader opened
// the pipe, and go before it reads: what it wrote is read either way.
TEST(InputStream, APipeIsBoundedAsItIsRead) {
  TempDir d;
  const std::string path = (d.path / "pipe").string();
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(path) << std::string(101, 'x') << "\n"; });
  std::string error = testing::input_error_of([&] {
    InputStream in(path, "table", 100);
    std::string line;
    std::getline(in, line);
  });
  writer.join();
  EXPECT_EQ(error, path + ": the table is more than the 100 bytes a table may be");

  std::thread small([&] { std::ofstream(path) << "a\nb\n"; });
  InputStream in(path, "table", 100);
  std::string a, b, c;
  EXPECT_TRUE(std::getline(in, a) && std::getline(in, b));
  EXPECT_FALSE(std::getline(in, c));
  small.join();
  EXPECT_EQ(a + b, "ab");
}

}  // namespace
}  // namespace fabriclab
