#include "core/input.h"

#include <filesystem>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/error.h"

namespace fabriclab {

namespace {

std::string kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

std::string size_text(std::uint64_t bytes) {
  if (bytes >= (std::uint64_t{1} << 30)) return fmt::format("{} GiB", bytes >> 30);
  if (bytes >= (std::uint64_t{1} << 20)) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} bytes", bytes);
}

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_input(const std::string& path, std::string_view what, std::uint64_t limit) {
  // Opened first, then checked on the open file (not the name, which could change between).
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (f.fd < 0) throw InputError(fmt::format("{}: cannot open the {}: {}", path, what, std::strerror(errno)));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0)
    throw InputError(fmt::format("{}: cannot read the {}: {}", path, what, std::strerror(errno)));
  const bool fifo = S_ISFIFO(st.st_mode);
  if (!S_ISREG(st.st_mode) && !fifo)
    throw InputError(fmt::format("{}: the {} is {}; expected a file", path, what, kind_of(st.st_mode)));
  if (!fifo && static_cast<std::uint64_t>(st.st_size) > limit)
    throw InputError(fmt::format("{}: the {} is {}, more than the {} a {} may be", path, what,
                                 size_text(static_cast<std::uint64_t>(st.st_size)), size_text(limit), what));
  if (fifo) {  // a pipe on purpose: blocking reads from here on
    const int flags = ::fcntl(f.fd, F_GETFL);
    if (flags >= 0) ::fcntl(f.fd, F_SETFL, flags & ~O_NONBLOCK);
  }
  std::string text;
  if (!fifo) text.reserve(static_cast<std::size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError(fmt::format("{}: cannot read the {}: {}", path, what, std::strerror(errno)));
    }
    if (n == 0) break;
    if (text.size() + static_cast<std::size_t>(n) > limit)
      throw InputError(fmt::format("{}: the {} is more than the {} a {} may be", path, what, size_text(limit), what));
    text.append(buf, static_cast<std::size_t>(n));
  }
  return text;
}

void check_output_file(const std::string& path, std::string_view what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) throw InputError(fmt::format("{} {}: is a folder; name the file to write", what, path));
  const fs::path folder = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  if (!fs::is_directory(folder, ec))
    throw InputError(fmt::format("{} {}: the folder {} does not exist", what, path, folder.string()));
}

}  // namespace fabriclab
