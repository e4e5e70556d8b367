// nearest_rank: the percentile both scenario summaries report (fabric FCTs, offload
// completions).
#include "core/stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace fabriclab {
namespace {

TEST(NearestRank, IsTheElementOfRankCeilQN) {
  EXPECT_EQ(nearest_rank({}, 0.5), 0);
  EXPECT_EQ(nearest_rank({7}, 0.0), 7);
  EXPECT_EQ(nearest_rank({30, 10, 20, 40}, 0.5), 20);      // rank 2 of 4, in sorted order
  EXPECT_EQ(nearest_rank({30, 10, 20, 40, 50}, 0.5), 30);  // rank ceil(2.5) = 3
  EXPECT_EQ(nearest_rank({30, 10, 20, 40}, 1.0), 40);
  EXPECT_EQ(nearest_rank({30, 10, 20, 40}, 0.0), 10);  // at least the first
  std::vector<std::int64_t> hundred(100);
  std::iota(hundred.begin(), hundred.end(), 1);
  EXPECT_EQ(nearest_rank(hundred, 0.99), 99);
  EXPECT_EQ(nearest_rank(hundred, 0.07), 7);  // 0.07 x 100 is 7.000000000000001 in double
  hundred.push_back(101);
  EXPECT_EQ(nearest_rank(hundred, 0.99), 100);  // ceil(99.99)
}

// The formulas the two summaries used before they shared this one -- offload:
// ceil(q n); fabric: floor(q n + 0.999999999) -- agree with it on the quantiles they
// report for these sizes (an exhaustive check up to 2^28 elements found the first
// difference at 16,946,700 elements, where the fabric one rounds q n = 16,777,233 up).
TEST(NearestRank, AgreesWithTheFormulasItReplacedOnTheReportedQuantiles) {
  for (double q : {0.5, 0.99, 1.0})
    for (std::size_t n = 1; n <= 3000; ++n) {
      const double x = q * static_cast<double>(n);
      const auto clamp = [n](std::size_t r) { return std::clamp<std::size_t>(r, 1, n); };
      const std::size_t offload = clamp(static_cast<std::size_t>(std::ceil(x)));
      const std::size_t fabric = clamp(static_cast<std::size_t>(x + 0.999999999));
      std::vector<std::int64_t> v(n);
      std::iota(v.begin(), v.end(), 1);  // the element of rank r is r
      const auto r = static_cast<std::size_t>(nearest_rank(v, q));
      ASSERT_EQ(r, offload) << q << " " << n;
      ASSERT_EQ(r, fabric) << q << " " << n;
    }
}

}  // namespace
}  // namespace fabriclab
