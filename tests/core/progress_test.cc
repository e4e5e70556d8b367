#include "core/progress.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace fabriclab {
namespace {

// A progress report on a clock the test moves, written into a string.
struct Fake {
  Progress::Clock::time_point t{};
  std::string out;
  Progress::Options options(bool terminal) {
    return {.what = "sweep",
            .total = 10,
            .unit = "points",
            .terminal = terminal,
            .period_seconds = 10,
            .write = [this](std::string_view s) { out += s; },
            .now = [this] { return t; }};
  }
  void at(double seconds) {
    t = Progress::Clock::time_point{} +
        std::chrono::duration_cast<Progress::Clock::duration>(std::chrono::duration<double>(seconds));
  }
};

TEST(Progress, ALogGetsALineEveryPeriodWithWhatRemains) {
  Fake f;
  Progress p(f.options(false));
  f.at(5);
  p.update(1);
  EXPECT_EQ(f.out, "");  // before the first period
  f.at(10);
  p.update(4);
  // 10 s for 4 of 10: 6 more at 2.5 s each.
  EXPECT_EQ(f.out, "sweep: 4/10 points, 10 s elapsed, about 15 s left\n");
  f.at(12);
  p.update(5);
  EXPECT_EQ(f.out.size(), 50u);  // 2 s after the last line: nothing
  f.at(90);
  p.update(9, "1 failed");
  EXPECT_EQ(f.out.substr(50), "sweep: 9/10 points, 1 min 30 s elapsed, about 10 s left (1 failed)\n");
  f.at(100);
  p.update(10);
  p.finish();
  EXPECT_EQ(f.out.substr(f.out.rfind("sweep")), "sweep: 10/10 points, 1 min 40 s elapsed\n");
}

TEST(Progress, ATerminalLineIsRewrittenThenCleared) {
  Fake f;
  Progress p(f.options(true));
  f.at(0.1);
  p.update(1);
  EXPECT_EQ(f.out, "");  // within 0.2 s of the start
  f.at(0.5);
  p.update(5);
  const std::string first = "sweep: 5/10 points, 0 s elapsed, about 0 s left";
  EXPECT_EQ(f.out, "\r" + first);
  f.at(1.0);
  p.update(8);
  // Padded to the longer line before it, so nothing of it is left.
  const std::string second = "sweep: 8/10 points, 1 s elapsed, about 0 s left";
  EXPECT_EQ(f.out, "\r" + first + "\r" + second);
  p.finish();
  EXPECT_EQ(f.out.substr(f.out.size() - second.size() - 2), "\r" + std::string(second.size(), ' ') + "\r");
}

TEST(Progress, QuietAndShortWorkSayNothing) {
  Fake f;
  auto o = f.options(false);
  o.enabled = false;
  {
    Progress p(o);
    f.at(60);
    p.update(5);
  }
  EXPECT_EQ(f.out, "");
  Progress quick(f.options(false));  // done before its first period: no line at all
  f.at(65);
  quick.update(10);
  quick.finish();
  EXPECT_EQ(f.out, "");
}

TEST(Progress, AnUpperBoundAndItsOwnWords) {
  Fake f;
  auto o = f.options(false);
  o.total = 1000;
  o.upper_bound = true;
  o.show = [](double done) { return "simulated " + std::to_string(static_cast<int>(done)) + " us of 1000"; };
  Progress p(o);
  f.at(20);
  p.update(400);
  // 20 s for 400 of 1000: 600 more at 0.05 s each, unless it ends first.
  EXPECT_EQ(f.out, "sweep: simulated 400 us of 1000, 20 s elapsed, at most 30 s left\n");
}

}  // namespace
}  // namespace fabriclab
