// Fuzz target: a flows file (traffic.pattern = "flows", `src,dst,bytes,start,priority,qps`)
// read by workload::read_flows_csv, the reader `fabriclab run` uses, for a network of 64
// hosts. The reader takes a path (core/input.h checks the file first), so each input is
// written to an in-memory file (memfd) read back through /proc/self/fd.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_common.h"
#include "workload/traffic.h"

namespace {

constexpr std::uint32_t kHosts = 64;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fabriclab::fuzz::MemFile file("flows.csv");
  file.write(data, size);
  fabriclab::fuzz::expect_input_errors([&] {
    const auto flows = fabriclab::workload::read_flows_csv(file.path, kHosts);
    for (const auto& f : flows)
      if (f.src >= kHosts || f.dst >= kHosts || f.src == f.dst || f.qps == 0 || f.bytes == 0 || f.priority > 7)
        fabriclab::fuzz::finding("read_flows_csv accepted an invalid flow");
  });
  return 0;
}
