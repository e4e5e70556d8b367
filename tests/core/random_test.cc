#include "core/random.h"

#include <gtest/gtest.h>

#include <array>

namespace fabriclab {
namespace {

TEST(RandomStream, SameSeedAndNameGiveTheSameSequence) {
  RandomStream a(42, "x"), b(42, "x"), c(42, "y"), d(43, "x");
  bool differs_by_name = false, differs_by_seed = false;
  for (int i = 0; i < 100; ++i) {
    const auto va = a.next();
    EXPECT_EQ(va, b.next());
    differs_by_name |= va != c.next();
    differs_by_seed |= va != d.next();
  }
  EXPECT_TRUE(differs_by_name);
  EXPECT_TRUE(differs_by_seed);
}

TEST(RandomStream, BelowIsInRangeAndUniform) {
  RandomStream r(7, "uniformity");
  std::array<int, 10> bins{};
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const auto x = r.below(10);
    ASSERT_LT(x, 10u);
    ++bins[x];
  }
  // Chi-square with 9 degrees of freedom: 27.88 is the 0.999 quantile.
  double chi2 = 0;
  for (int b : bins) chi2 += (b - n / 10.0) * (b - n / 10.0) / (n / 10.0);
  EXPECT_LT(chi2, 27.88);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(r.below(1), 0u);
}

}  // namespace
}  // namespace fabriclab
