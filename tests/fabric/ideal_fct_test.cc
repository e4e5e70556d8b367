// A flow's ideal FCT (Network::ideal_fct), worked out by hand for paths of two and four
// links, and checked against the flow run alone on the idle network: its slowdown is 1.
//
// A flow of 10 000 bytes at nic.mtu = 4096 is three WRITE packets: FIRST (4096 bytes, with
// its RETH: 66 + 16 + 4096 = 4178 bytes, 4198 on the wire with the gap), MIDDLE (66 +
// 4096 + 20 = 4182) and LAST (1808 bytes: 66 + 1808 + 20 = 1894); W = 10 274 bytes. At
// 100 Gb/s a byte takes 80 ps: 335.84 ns, 334.56 ns, 151.52 ns, W in 821.92 ns; at 25 Gb/s
// four times as long.
#include <gtest/gtest.h>

#include "fabric/network.h"

namespace fabriclab::fabric {
namespace {

constexpr std::uint64_t kBytes = 10'000;

// Hosts 0 and 1 joined by a chain of switches over links of `rates` (Gb/s) and `delays`.
struct Chain {
  Network net;
  Chain(std::vector<std::int64_t> rates, std::vector<std::int64_t> delays_ns, NicConfig nic = {}) : net(nic, {}, 1) {
    const auto a = net.add_host("a"), b = net.add_host("b");
    std::vector<std::uint32_t> sw;
    for (std::size_t i = 0; i + 1 < rates.size(); ++i) sw.push_back(net.add_switch("s" + std::to_string(i)));
    const auto node = [&](std::size_t k) -> Node& {  // 0: a, then the switches, then b
      if (k == 0) return net.host(a);
      if (k == rates.size()) return net.host(b);
      return net.switch_at(sw[k - 1]);
    };
    for (std::size_t i = 0; i < rates.size(); ++i) net.connect(node(i), node(i + 1), Gbps(rates[i]), ns(delays_ns[i]));
    net.add_flow({.src = a, .dst = b, .bytes = kBytes, .start = us(1)});
    net.run(ms(1));
  }
  Time fct() const { return net.flows()[0].finish - net.flows()[0].started; }
  Time ideal() const { return net.ideal_fct(net.flows()[0].spec); }
};

TEST(IdealFct, TwoLinksByHand) {
  Chain c({100, 100}, {1000, 1000});
  // The first frame through both links, then the other frames behind it on the last:
  // 2 x (1 us + 335.84 ns) + (334.56 + 151.52) ns.
  EXPECT_EQ(c.ideal(), ps(3'157'760));
  EXPECT_EQ(c.fct(), c.ideal());
}

TEST(IdealFct, FourLinksByHand) {
  Chain c({100, 100, 100, 100}, {1000, 500, 500, 1000});
  // 2 us of delays before the last link, the first frame serialized on the three links
  // before it, then W and the last link's 1 us: 2000 + 3 x 335.84 + 821.92 + 1000 = 4829.44 ns.
  EXPECT_EQ(c.ideal(), ps(4'829'440));
  EXPECT_EQ(c.fct(), c.ideal());
}

TEST(IdealFct, FourLinksWithASlowerCoreQueueAtItsSlowestLink) {
  Chain c({100, 25, 100, 100}, {1000, 500, 500, 1000});
  // The frames queue at the 25G link: the first frame to it (1000 + 335.84), all of W
  // through it (10 274 x 320 ps = 3287.68), its delay (500), then the last frame on the
  // two links after it (500 + 151.52 + 1000 + 151.52): 6926.56 ns.
  EXPECT_EQ(c.ideal(), ps(6'926'560));
  EXPECT_EQ(c.fct(), c.ideal());
}

TEST(IdealFct, EachFrameIsRoundedAsTheWireRoundsIt) {
  // At 56 Gb/s a byte takes 1000/7 ps: each frame's time rounds up on its own, 4198 ->
  // 599 715 ps, 4182 -> 597 429, 1894 -> 270 572 (all three: 1 467 716; W at once would
  // round to 1 467 715). The frames queue at the last link: 1 us + 599 715 + 1 us +
  // 1 467 716 = 4 067 431 ps.
  Chain c({56, 56}, {1000, 1000});
  EXPECT_EQ(c.ideal(), ps(4'067'431));
  EXPECT_EQ(c.fct(), c.ideal());
}

TEST(IdealFct, WithTheLastAckTheAckComesBack) {
  NicConfig nic;
  nic.flow_end = FlowEnd::acked;
  Chain c({100, 100}, {1000, 1000}, nic);
  // An ACK is 70 + 20 bytes: 7.2 ns per link, back over both: 2 x (1000 + 7.2) ns more.
  EXPECT_EQ(c.ideal(), ps(3'157'760 + 2'014'400));
  EXPECT_EQ(c.fct(), c.ideal());
}

TEST(IdealFct, TheBestOfTheEqualCostPaths) {
  // a - s0 - {s1 at 100G | s2 at 25G} - s3 - b, every link 1 us: ECMP has two paths;
  // the ideal is the fast one's, 4 us + 3 x 335.84 ns + 821.92 ns = 5829.44 ns.
  Network net({}, {}, 1);
  const auto a = net.add_host("a"), b = net.add_host("b");
  const auto s0 = net.add_switch("s0"), s1 = net.add_switch("s1"), s2 = net.add_switch("s2"), s3 = net.add_switch("s3");
  net.connect(net.host(a), net.switch_at(s0), Gbps(100), us(1));
  net.connect(net.switch_at(s0), net.switch_at(s1), Gbps(100), us(1));
  net.connect(net.switch_at(s0), net.switch_at(s2), Gbps(25), us(1));
  net.connect(net.switch_at(s1), net.switch_at(s3), Gbps(100), us(1));
  net.connect(net.switch_at(s2), net.switch_at(s3), Gbps(25), us(1));
  net.connect(net.switch_at(s3), net.host(b), Gbps(100), us(1));
  net.add_flow({.src = a, .dst = b, .bytes = kBytes, .start = {}});
  net.run(ms(1));
  EXPECT_EQ(net.ideal_fct(net.flows()[0].spec), ps(5'829'440));
  // Back the other way the same.
  EXPECT_EQ(net.ideal_fct({.src = b, .dst = a, .bytes = kBytes, .start = {}}), ps(5'829'440));
}

// The routed paths between two switches are walked once for every pair of their hosts
// (Network::IdealCache); each flow still crosses its own hosts' links. a (100G) on s0;
// s0-s1 at 100G; b (100G) and c (25G) on s1; every link 1 us.
TEST(IdealFct, PathsBetweenSwitchesWalkedOnceKeepEachHostsOwnLinks) {
  Network net({}, {}, 1);
  const auto a = net.add_host("a"), b = net.add_host("b"), c = net.add_host("c");
  const auto s0 = net.add_switch("s0"), s1 = net.add_switch("s1");
  net.connect(net.host(a), net.switch_at(s0), Gbps(100), us(1));
  net.connect(net.switch_at(s0), net.switch_at(s1), Gbps(100), us(1));
  net.connect(net.switch_at(s1), net.host(b), Gbps(100), us(1));
  net.connect(net.switch_at(s1), net.host(c), Gbps(25), us(1));
  net.prepare();
  Network::IdealCache cache;
  const auto flow = [](std::uint32_t src, std::uint32_t dst) {
    return FlowSpec{.src = src, .dst = dst, .bytes = kBytes, .start = {}};
  };
  // a -> b: three 100G links: 3 x (1 us + 335.84 ns) + (334.56 + 151.52) ns.
  EXPECT_EQ(net.ideal_fct(flow(a, b), &cache), ps(4'493'600));
  // a -> c, the same switches' path, then c's 25G link, where the frames queue: the first
  // frame over two links (2 x 1335.84 ns), then all of W at 25G (3287.68 ns) and 1 us.
  EXPECT_EQ(net.ideal_fct(flow(a, c), &cache), ps(6'959'360));
  // c -> a: all of W through c's link first (1 us + 3287.68 ns), then the last frame over
  // two 100G links (2 x 1151.52 ns).
  EXPECT_EQ(net.ideal_fct(flow(c, a), &cache), ps(6'590'720));
  for (std::uint32_t x = 0; x < 3; ++x)
    for (std::uint32_t y = 0; y < 3; ++y)
      if (x != y) {
        EXPECT_EQ(net.ideal_fct(flow(x, y), &cache), net.ideal_fct(flow(x, y))) << x << " -> " << y;
      }
}

}  // namespace
}  // namespace fabriclab::fabric
