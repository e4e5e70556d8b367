// Fuzz target: a flow-size distribution (a [[load]]'s cdf file, `SIZE PROBABILITY` lines)
// read by workload::Cdf::parse, the reader `fabriclab run` uses; what it accepts must be a
// distribution the load generator can draw from: points in order ending at 1, a finite
// mean of a byte or more, and sizes of at least one byte between the first and the last point's.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_common.h"
#include "workload/load.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using fabriclab::fuzz::finding;
  fabriclab::fuzz::expect_input_errors([&] {
    const auto c = fabriclab::workload::Cdf::parse(fabriclab::fuzz::text(data, size), "fuzz.cdf");
    const auto& p = c.points();
    if (p.empty() || p.back().p != 1.0) finding("Cdf::parse accepted a CDF that does not end at 1");
    for (std::size_t k = 1; k < p.size(); ++k)
      if (p[k].size < p[k - 1].size || p[k].p < p[k - 1].p) finding("Cdf::parse accepted points out of order");
    if (!std::isfinite(c.mean()) || c.mean() < 1) finding("a CDF's mean is not a finite size of a byte or more");
    for (const double u : {0.0, 0.25, 0.5, 0.999999}) {
      const std::uint64_t s = c.size_at(u);
      if (s < 1 || static_cast<double>(s) > std::max(p.back().size, 1.0))
        finding("a drawn size is out of the CDF's range");
    }
  });
  return 0;
}
