// Fuzz target: a flows file (traffic.pattern = "flows", `src,dst,bytes,start,priority,qps`)
// read by workload::read_flows_csv, the reader `fabriclab run` uses, for a network of 64
// hosts. The reader takes a path (core/input.h checks the file first), so each input is
// written to an in-memory file (memfd) read back through /proc/self/fd.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_common.h"
#include "workload/traffic.h"

namespace {

constexpr std::uint32_t kHosts = 64;

// The memfd every input goes through, and its name.
struct MemFile {
  int fd = -1;
  std::string path;
  MemFile() {
    fd = ::memfd_create("flows.csv", MFD_CLOEXEC);
    if (fd < 0) fabriclab::fuzz::finding("memfd_create failed");
    path = "/proc/self/fd/" + std::to_string(fd);
  }
  void write(const std::uint8_t* data, std::size_t size) const {
    if (::ftruncate(fd, 0) != 0) fabriclab::fuzz::finding("ftruncate failed");
    for (std::size_t done = 0; done < size;) {
      const ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
      if (n <= 0) fabriclab::fuzz::finding("pwrite failed");
      done += static_cast<std::size_t>(n);
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const MemFile file;
  file.write(data, size);
  fabriclab::fuzz::expect_input_errors([&] {
    const auto flows = fabriclab::workload::read_flows_csv(file.path, kHosts);
    for (const auto& f : flows)
      if (f.src >= kHosts || f.dst >= kHosts || f.src == f.dst || f.qps == 0 || f.bytes == 0 || f.priority > 7)
        fabriclab::fuzz::finding("read_flows_csv accepted an invalid flow");
  });
  return 0;
}
