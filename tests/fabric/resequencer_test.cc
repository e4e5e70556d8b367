// Re-sequencing: a reorder box on h0's link to the switch breaks the order, a
// re-sequencer on the switch's link to h1 restores it (or gives up: buffer full, timeout),
// and the NIC's own give-up timer for a gap inside its reorder window. Expected counts
// follow from the hold rule by hand.
#include "fabric/resequencer.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "fabric/network.h"
#include "fabric/topology.h"

namespace fabriclab::fabric {
namespace {

// h0 -> sw0 -> h1, 8 packets, PSN 2 held on h0's link until 3 later packets have passed:
// the switch receives 0 1 3 4 5 2 6 7.
struct Path {
  explicit Path(std::string rules, std::uint32_t window = 0, Time nic_timeout = {}, std::uint32_t packets = 8)
      : net(nic(window, nic_timeout), {}, 1) {
    TopologySpec t;
    t.kind = TopologyKind::single_switch;
    t.hosts = 2;
    build_topology(net, t);
    net.add_flow({.src = 0, .dst = 1, .bytes = packets * 4096ull, .start = {}});
    ImpairmentConfig c;
    c.rules = parse_impairment_rules(rules);
    net.add_impairment(net.host(0).port(0), c);
  }
  static NicConfig nic(std::uint32_t window, Time timeout) {
    NicConfig n;
    n.reorder_window = window;
    n.reorder_timeout = timeout;
    return n;
  }
  Port& egress() { return net.switch_at(0).port(1); }  // sw0's port toward h1
  Network net;
};

TEST(Resequencer, RestoresTheOrderForAGoBackNReceiver) {
  Path p("hold 0/2 3");
  Resequencer& r = p.net.add_resequencer(p.egress(), {.buffer = 4, .timeout = us(50)});
  ASSERT_TRUE(p.net.run(ms(10)).all_finished);
  EXPECT_EQ(p.net.host(1).naks_sent(), 0u);
  EXPECT_EQ(p.net.flows()[0].retransmitted, 0u);
  EXPECT_EQ(r.held_total(), 3u);  // 3, 4 and 5 waited for 2
  EXPECT_EQ(r.max_occupancy(), 3u);
  EXPECT_EQ(r.give_ups_full() + r.give_ups_timeout(), 0u);
}

TEST(Resequencer, WithoutItGoBackNNaks) {
  Path p("hold 0/2 3");
  ASSERT_TRUE(p.net.run(ms(10)).all_finished);
  EXPECT_GT(p.net.host(1).naks_sent(), 0u);
  EXPECT_GT(p.net.flows()[0].retransmitted, 0u);
}

// Buffer of 2: 3 and 4 are held, 5 does not fit: all leave (3 4 5), the NIC sees the gap
// at 2 and NAKs; go-back-N recovers.
TEST(Resequencer, GivesUpWhenFull) {
  Path p("hold 0/2 3");
  Resequencer& r = p.net.add_resequencer(p.egress(), {.buffer = 2, .timeout = us(50)});
  ASSERT_TRUE(p.net.run(ms(10)).all_finished);
  EXPECT_EQ(r.give_ups_full(), 1u);
  EXPECT_EQ(r.give_ups_timeout(), 0u);
  EXPECT_EQ(r.max_occupancy(), 2u);
  EXPECT_GE(p.net.host(1).naks_sent(), 1u);
  EXPECT_GT(p.net.flows()[0].retransmitted, 0u);
}

// A timeout shorter than the hold (3 packets of about 0.33 us): the held packets leave
// before 2 comes.
TEST(Resequencer, GivesUpAfterItsTimeout) {
  Path p("hold 0/2 3");
  Resequencer& r = p.net.add_resequencer(p.egress(), {.buffer = 64, .timeout = ns(100)});
  ASSERT_TRUE(p.net.run(ms(10)).all_finished);
  EXPECT_GE(r.give_ups_timeout(), 1u);
  EXPECT_EQ(r.give_ups_full(), 0u);
  EXPECT_GE(p.net.host(1).naks_sent(), 1u);
}

TEST(Resequencer, OneElementPerLink) {
  Path p("hold 0/2 3");
  EXPECT_THROW(p.net.add_resequencer(p.net.host(0).port(0), {}), InputError);  // the box is there
  EXPECT_THROW(p.net.add_resequencer(p.egress(), {.buffer = 0}), InputError);
}

// The NIC's window holds 3, 4, 5 beyond a dropped 2; nothing comes beyond the window (6
// packets in all), so without a give-up timer only the sender's RTO (1 ms) recovers. A
// 5 us timer NAKs the gap instead.
TEST(NicReorderTimeout, NaksAGapThatDoesNotFill) {
  {
    Path p("drop 0/2", 8, Time(), 6);
    ASSERT_TRUE(p.net.run(ms(10)).all_finished);
    EXPECT_EQ(p.net.host(0).timeouts(), 1u);
    EXPECT_EQ(p.net.host(1).naks_sent(), 0u);
    EXPECT_GT(p.net.flows()[0].finish, ms(1));
  }
  {
    Path p("drop 0/2", 8, us(5), 6);
    ASSERT_TRUE(p.net.run(ms(10)).all_finished);
    EXPECT_EQ(p.net.host(0).timeouts(), 0u);
    EXPECT_EQ(p.net.host(1).reorder_give_ups(), 1u);
    EXPECT_EQ(p.net.host(1).naks_sent(), 1u);
    EXPECT_LT(p.net.flows()[0].finish, us(20));
  }
}

}  // namespace
}  // namespace fabriclab::fabric
