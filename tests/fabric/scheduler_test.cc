// Egress scheduling between priorities on one congested port: DWRR shares the bytes by
// weight, strict priority starves the lower class while the higher one has packets.
#include <gtest/gtest.h>

#include "fabric/network.h"
#include "fabric/topology.h"

namespace fabriclab::fabric {
namespace {

// h1 (priority 1) and h2 (priority 2) each send `bytes` to h0 through one switch; both
// priorities lossless so nothing is dropped and the shares are the scheduler's alone.
std::unique_ptr<Network> two_classes(Scheduler sched, std::uint64_t bytes) {
  SwitchConfig sw;
  sw.scheduler = sched;
  sw.pfc.lossless = (1u << 1) | (1u << 2);
  sw.strict_classes = 0;
  sw.weights = {1, 1, 3, 1, 1, 1, 1, 1};
  auto net = std::make_unique<Network>(NicConfig{}, sw, 1);
  TopologySpec t;
  t.kind = TopologyKind::single_switch;
  t.hosts = 3;
  build_topology(*net, t);
  net->add_flow({.src = 1, .dst = 0, .bytes = bytes, .start = {}, .priority = 1});
  net->add_flow({.src = 2, .dst = 0, .bytes = bytes, .start = {}, .priority = 2});
  return net;
}

TEST(Scheduler, DwrrSharesByWeight) {
  // Run until the weight-3 class finishes, then look at what the weight-1 class got by
  // then: a third, up to the granularity of a round (a few frames).
  const std::uint64_t bytes = 8'000'000;
  auto first = two_classes(Scheduler::dwrr, bytes);
  first->run(sec(1));
  const Time heavy_done = first->flows()[1].finish;
  ASSERT_LT(heavy_done, first->flows()[0].finish);
  auto again = two_classes(Scheduler::dwrr, bytes);
  again->run(heavy_done);
  const double light = static_cast<double>(again->flows()[0].delivered);
  const double heavy = static_cast<double>(again->flows()[1].delivered);
  EXPECT_EQ(heavy, static_cast<double>(bytes));
  EXPECT_NEAR(light / heavy, 1.0 / 3.0, 0.01);
}

TEST(Scheduler, StrictPriorityServesTheHigherClassFirst) {
  const std::uint64_t bytes = 4'000'000;
  auto first = two_classes(Scheduler::strict, bytes);
  first->run(sec(1));
  const Time high_done = first->flows()[1].finish;
  auto again = two_classes(Scheduler::strict, bytes);
  again->run(high_done);
  // Only what slipped through before the high class had a queue: a handful of frames.
  EXPECT_LT(again->flows()[0].delivered, 10u * 4096u);
  // The high class ran at line rate: 4 MB of payload in about 4 MB x 8 / 100G = 320 us
  // (plus headers and the two links).
  EXPECT_LT(high_done, us(335));
}

}  // namespace
}  // namespace fabriclab::fabric
