#include "core/input.h"

#include <filesystem>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <span>
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
  explicit Fd(int f) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// The file opened and checked: a regular file of at most `limit` bytes (its size in
// `*size`, when given), or a named pipe (switched to blocking reads; size 0).
Fd open_input(const std::string& path, std::string_view what, std::uint64_t limit, std::uint64_t* size = nullptr) {
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
  if (size) *size = fifo ? 0 : static_cast<std::uint64_t>(st.st_size);
  if (fifo) {
    // A pipe on purpose: blocking reads from here on, once a writer came (opened without
    // one, a read would see the end at once; poll waits for its first bytes or its close).
    pollfd p{f.fd, POLLIN, 0};
    while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
    }
    const int flags = ::fcntl(f.fd, F_GETFL);
    if (flags >= 0) ::fcntl(f.fd, F_SETFL, flags & ~O_NONBLOCK);
  }
  return f;
}

// At most buf.size() bytes of the file; 0 at its end. `read` counts what came before:
// past `limit` in all, the InputError of a file too large.
std::size_t read_some(const Fd& f, std::span<char> buf, std::uint64_t read, const std::string& path,
                      std::string_view what, std::uint64_t limit) {
  for (;;) {
    const ssize_t n = ::read(f.fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError(fmt::format("{}: cannot read the {}: {}", path, what, std::strerror(errno)));
    }
    if (read + static_cast<std::uint64_t>(n) > limit)
      throw InputError(fmt::format("{}: the {} is more than the {} a {} may be", path, what, size_text(limit), what));
    return static_cast<std::size_t>(n);
  }
}

}  // namespace

std::string read_input(const std::string& path, std::string_view what, std::uint64_t limit) {
  std::uint64_t size = 0;
  const Fd f = open_input(path, what, limit, &size);
  std::string text;
  text.reserve(static_cast<std::size_t>(size));
  char buf[1 << 16];
  while (const std::size_t n = read_some(f, buf, text.size(), path, what, limit)) text.append(buf, n);
  return text;
}

class InputStream::Buffer : public std::streambuf {
 public:
  Buffer(const std::string& path, std::string_view what, std::uint64_t limit)
      : path_(path), what_(what), limit_(limit), fd_(open_input(path, what, limit)) {}

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const std::size_t n = read_some(fd_, buf_, read_, path_, what_, limit_);
    if (n == 0) return traits_type::eof();
    read_ += n;
    setg(buf_.data(), buf_.data(), buf_.data() + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  std::string path_, what_;
  std::uint64_t limit_, read_ = 0;
  Fd fd_;
  std::array<char, 1 << 16> buf_;
};

InputStream::InputStream(const std::string& path, std::string_view what, std::uint64_t limit)
    : std::istream(nullptr), buffer_(std::make_unique<Buffer>(path, what, limit)) {
  rdbuf(buffer_.get());
  exceptions(std::ios::badbit);
}

InputStream::~InputStream() = default;

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
