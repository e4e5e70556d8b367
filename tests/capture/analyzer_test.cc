// The capture analyzer on frame sequences written here (our simulator's frame encoder
// gives the bytes), each with its expected metrics worked out by hand in the comments.
#include "capture/analyzer.h"

#include <gtest/gtest.h>

#include "error_message.h"

#include <cstdio>
#include <fstream>
#include <numeric>
#include <random>
#include <vector>

#include "core/error.h"
#include "fabric/packet.h"
#include "fabric/wire.h"

namespace fabriclab::capture {
namespace {

using fabric::Opcode;
using fabric::Packet;

class Feed {
 public:
  explicit Feed(AnalyzeOptions o = {}) : a(o) { a.begin_capture("test"); }
  // Host src -> dst, QP q.
  // An RDMA WRITE MIDDLE packet of host src's QP to host dst's QP `qp`.
  static Packet write(std::uint32_t psn, std::uint32_t payload = 1000, std::uint8_t ecn = 2, std::uint32_t src = 1,
                      std::uint32_t dst = 0, std::uint32_t qp = 0) {
    Packet p;
    p.src = src;
    p.dst = dst;
    p.dst_qp = qp;
    p.psn = psn;
    p.payload = payload;
    p.ecn = ecn & 3;
    p.opcode = Opcode::rc_write_middle;
    return p;
  }
  void data(std::int64_t at_ns, std::uint32_t psn, std::uint32_t payload = 1000, std::uint8_t ecn = 2,
            std::uint32_t src = 1, std::uint32_t dst = 0, std::uint32_t qp = 0) {
    send(at_ns, write(psn, payload, ecn, src, dst, qp));
  }
  void ack(std::int64_t at_ns, std::uint8_t syndrome, std::uint32_t src = 0, std::uint32_t dst = 1, bool becn = false) {
    Packet p;
    p.src = src;
    p.dst = dst;
    p.opcode = Opcode::rc_ack;
    p.syndrome = syndrome;
    p.becn = becn;
    send(at_ns, p);
  }
  void cnp(std::int64_t at_ns, std::uint32_t qp, std::uint32_t dst = 1) {
    Packet p;
    p.src = 0;
    p.dst = dst;
    p.dst_qp = qp;
    p.opcode = Opcode::cnp;
    send(at_ns, p);
  }
  void pfc(std::int64_t at_ns, std::uint8_t prio, std::uint16_t quanta) {
    Packet p;
    p.opcode = Opcode::pfc;
    p.set_pause(prio, quanta);
    send(at_ns, p);
  }
  void send(std::int64_t at_ns, const Packet& p) {
    const std::uint8_t mac[6] = {2, 0xfc, 0, 1, 0, 2};
    std::vector<std::uint8_t> b(fabric::kMaxFrameBytes);
    const std::size_t n = fabric::encode_frame(p, mac, b.data());
    a.frame(1'700'000'000'000'000'000 + at_ns, b.data(), n, n);
  }
  const QpStats& qp(std::size_t i = 0) {
    a.end_capture();
    return a.qps().at(i);
  }
  Analyzer a;
};

// PSNs across the 24-bit wrap: ffffe ffffff 0 2 1, then 0 again. Relative to the first:
// 0 1 2 4 3 2. 4 skips 3 (a gap); 3 arrives after 4 (reordered, extent 1, late by
// 1 us); the second 0 is a duplicate. Nothing is missing at the end.
TEST(Analyzer, PsnsUnwrapAcrossTheWrap) {
  Feed f;
  std::int64_t t = 0;
  for (std::uint32_t psn : {0xfffffeu, 0xffffffu, 0u, 2u, 1u, 0u}) f.data(t += 1000, psn);
  const QpStats& q = f.qp();
  const auto& m = q.reorder.metrics();
  EXPECT_EQ(q.data_packets, 6u);
  EXPECT_EQ(q.payload_bytes, 6000u);
  EXPECT_EQ(m.received, 5u);
  EXPECT_EQ(m.duplicates, 1u);
  EXPECT_EQ(m.reordered, 1u);
  EXPECT_EQ(m.max_extent, 1u);
  EXPECT_EQ(m.max_late, us(1));
  EXPECT_EQ(q.psn_gaps, 1u);
  EXPECT_EQ(q.reorder.missing(), 0u);
  EXPECT_EQ(q.before_start, 0u);
}

// A capture that starts mid-stream: PSN 10 first, then 9 (sent before it began), 11 and
// 14: 12 and 13 are missing at the end (one gap event).
TEST(Analyzer, BeforeTheStartAndMissing) {
  Feed f;
  for (std::uint32_t psn : {10u, 9u, 11u, 14u}) f.data(0, psn);
  const QpStats& q = f.qp();
  EXPECT_EQ(q.before_start, 1u);
  EXPECT_EQ(q.reorder.metrics().received, 3u);
  EXPECT_EQ(q.psn_gaps, 1u);
  EXPECT_EQ(q.reorder.missing(), 2u);
}

// Throughput, ECN and the time axis: three 1000-byte packets at 0, 4 and 12 us with a fixed
// 10 us bin: bin 0 holds 2000 bytes, bin 1 1000. 1 of 3 is CE, all are ECN-capable. Payload
// over first to last: 3000 B x 8 / 12 us = 2 Gb/s.
TEST(Analyzer, ThroughputBinsAndCe) {
  AnalyzeOptions o;
  o.bin = us(10);
  Feed f(o);
  f.data(0, 0);
  f.data(4000, 1, 1000, fabric::kEcnCe);
  f.data(12000, 2);
  const QpStats& q = f.qp();
  EXPECT_EQ(q.bin_bytes, (std::vector<std::uint64_t>{2000, 1000}));
  EXPECT_EQ(q.ect, 3u);
  EXPECT_EQ(q.ce, 1u);
  EXPECT_DOUBLE_EQ(q.throughput_gbps(), 2.0);
  EXPECT_EQ(f.a.captures()[0].duration(), us(12));
}

// Automatic bins start at 1 us and double until the capture fits 256 of them: frames at 0,
// 1 and 300 us fall in bins 0, 1 and 300 of 1 us, then 0, 0 and 150 of 2 us.
TEST(Analyzer, AutomaticBinsDoubleAndMerge) {
  Feed f;
  f.data(0, 0);
  f.data(1000, 1);
  f.data(300'000, 2);
  const QpStats& q = f.qp();
  EXPECT_EQ(f.a.captures()[0].bin, us(2));
  ASSERT_EQ(q.bin_bytes.size(), 151u);
  EXPECT_EQ(q.bin_bytes[0], 2000u);
  EXPECT_EQ(q.bin_bytes[150], 1000u);
}

// ACKs and NAKs by syndrome, in the reverse direction (host 0 -> 1, QP 0).
TEST(Analyzer, AcksAndNaksBySyndrome) {
  Feed f;
  f.ack(0, 0x00);
  f.ack(1, 0x1f);
  f.ack(2, 0x60);
  f.ack(3, 0x60);
  f.ack(4, 0x62);
  f.ack(5, 0x21);
  f.ack(6, 0x00, 0, 1, /*becn=*/true);  // roce_np.cnp_form = becn: the notification on the ACK
  f.ack(7, 0x60, 0, 1, /*becn=*/true);
  const QpStats& q = f.qp();
  EXPECT_EQ(q.acks, 3u);
  EXPECT_EQ(q.becn_acks, 2u);
  EXPECT_EQ(q.cnps, 0u);
  EXPECT_EQ(q.naks[0], 3u);
  EXPECT_EQ(q.naks[2], 1u);
  EXPECT_EQ(q.rnr_naks, 1u);
  EXPECT_EQ(q.data_packets, 0u);
}

// CNPs to QP 5 at 0, 50 and 60 us and to QP 6 at 55 us, all to host 1: QP 5's intervals
// 50 and 10 us (mean 30); host 1's 50, 5 and 5 us (mean 20); the histogram has 10 and 50
// once (QP intervals).
TEST(Analyzer, CnpIntervalsPerQpAndPerPort) {
  Feed f;
  f.cnp(0, 5);
  f.cnp(50'000, 5);
  f.cnp(55'000, 6);
  f.cnp(60'000, 5);
  f.a.end_capture();
  const QpStats& q = f.a.qps().at(0);
  EXPECT_EQ(q.cnps, 3u);
  EXPECT_EQ(q.cnp.count, 2u);
  EXPECT_EQ(q.cnp.min, us(10));
  EXPECT_EQ(q.cnp.max, us(50));
  EXPECT_EQ(q.cnp.mean(), us(30));
  ASSERT_EQ(f.a.cnp_ports().size(), 1u);
  const CnpPort& p = f.a.cnp_ports()[0];
  EXPECT_EQ(to_string(p.address), "10.0.0.2");
  EXPECT_EQ(p.cnps, 4u);
  EXPECT_EQ(p.intervals.min, us(5));
  EXPECT_EQ(p.intervals.max, us(50));
  EXPECT_EQ(p.intervals.mean(), us(20));
  const auto& h = f.a.captures()[0].cnp_interval_us;
  EXPECT_EQ(h[10], 1u);
  EXPECT_EQ(h[50], 1u);
  EXPECT_EQ(std::accumulate(h.begin(), h.end(), std::uint64_t{0}), 2u);
}

// PFC at 100 Gb/s, where a quantum is 512 bits = 5.12 ns: XOFF 65535 at 0 (until
// 335.5392 us), refreshed at 100 us, XON at 200 us: one pause of 200 us. XOFF 1000 at
// 300 us lapses by itself at 305.12 us. Total 205.12 us in two pauses.
TEST(Analyzer, PfcPausesAtTheLinkSpeed) {
  AnalyzeOptions o;
  o.link_speed = Gbps(100);
  Feed f(o);
  f.pfc(0, 3, 65535);
  f.pfc(100'000, 3, 65535);
  f.pfc(200'000, 3, 0);
  f.pfc(300'000, 3, 1000);
  f.a.end_capture();
  ASSERT_EQ(f.a.pfc().size(), 1u);
  const PfcStats& p = f.a.pfc()[0];
  EXPECT_EQ(mac_text(p.mac), "02:fc:00:01:00:02");
  EXPECT_EQ(p.priority, 3);
  EXPECT_EQ(p.xoff, 3u);
  EXPECT_EQ(p.xon, 1u);
  EXPECT_EQ(p.quanta, 65535u * 2 + 1000);
  EXPECT_EQ(p.pauses, 2u);
  EXPECT_EQ(p.paused, us(200) + ns(5120));
  ASSERT_EQ(f.a.pause_timeline().size(), 2u);
  EXPECT_EQ(f.a.pause_timeline()[1].start, us(300));
  EXPECT_EQ(f.a.pause_timeline()[1].end, us(300) + ns(5120));
}

// Without a link speed PFC is counted in quanta only.
TEST(Analyzer, PfcWithoutLinkSpeedCountsFrames) {
  Feed f;
  f.pfc(0, 3, 100);
  f.pfc(10, 3, 0);
  f.a.end_capture();
  EXPECT_EQ(f.a.pfc()[0].xoff, 1u);
  EXPECT_EQ(f.a.pfc()[0].xon, 1u);
  EXPECT_EQ(f.a.pfc()[0].pauses, 0u);
  EXPECT_TRUE(f.a.pause_timeline().empty());
}

// QPs are told apart by destination QP and address pair, and captures apart by capture.
TEST(Analyzer, QpsAndCapturesAreSeparate) {
  Feed f;
  f.data(0, 0, 1000, 2, 1, 0, 0);
  f.data(0, 0, 1000, 2, 2, 0, 0);
  f.data(0, 0, 1000, 2, 1, 0, 1);
  f.a.end_capture();
  f.a.begin_capture("second");
  f.data(0, 0);
  f.a.end_capture();
  ASSERT_EQ(f.a.qps().size(), 4u);
  EXPECT_EQ(f.a.qps()[3].capture, 1u);
  EXPECT_EQ(f.a.captures()[1].frames, 1u);
}

// What is not RoCE is counted, never fatal; timestamps going back are counted.
TEST(Analyzer, OddFramesAreCounted) {
  Feed f;
  f.data(1000, 0);
  const std::uint8_t arp[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x08, 0x06, 0, 1};
  f.a.frame(1'700'000'000'000'000'000, arp, sizeof arp, sizeof arp);  // 1 us earlier
  f.a.frame(1'700'000'000'000'002'000, arp, 8, 60);                   // cut in the Ethernet header
  f.a.end_capture();
  const CaptureSummary& c = f.a.captures()[0];
  EXPECT_EQ(c.frames, 3u);
  EXPECT_EQ(c.roce, 1u);
  EXPECT_EQ(c.other, 1u);
  EXPECT_EQ(c.truncated, 1u);
  EXPECT_EQ(c.short_captured, 1u);
  EXPECT_EQ(c.timestamps_backwards, 1u);
  EXPECT_EQ(c.icrc_ok, 1u);
}

// The reorder metrics a capture gives are those of fabric::reorder_metrics on the same
// PSNs (the simulator's recorder): a random walk with local swaps and repeats.
TEST(Analyzer, ReorderMetricsAreTheSimulatorsOnTheSamePsns) {
  std::mt19937 rng(7);
  std::vector<std::uint32_t> psns(3000);
  for (std::uint32_t i = 0; i < psns.size(); ++i) psns[i] = i;
  for (std::size_t i = 1; i + 8 < psns.size(); i += 1 + rng() % 5) std::swap(psns[i], psns[i + rng() % 8]);
  for (int k = 0; k < 50; ++k) psns.insert(psns.begin() + 1 + rng() % 2999, psns[rng() % 3000]);
  Feed f;
  std::vector<fabric::Arrival> arrivals;
  std::int64_t t = 0;
  for (std::uint32_t p : psns) {
    f.data(t += 100, p);
    arrivals.push_back({p, ns(t)});
  }
  ASSERT_EQ(psns[0], 0u);  // the first seen is PSN 0, so relative PSNs are the PSNs
  const auto& got = f.qp().reorder.metrics();
  const auto want = fabric::reorder_metrics(arrivals);
  EXPECT_EQ(got.received, want.received);
  EXPECT_EQ(got.duplicates, want.duplicates);
  EXPECT_EQ(got.reordered, want.reordered);
  EXPECT_EQ(got.extent_count, want.extent_count);
  EXPECT_EQ(got.displacement, want.displacement);
  EXPECT_EQ(got.occupancy, want.occupancy);
  EXPECT_GT(got.reordered, 100u);
}

// Times are picoseconds in 64 bits: frames up to 50 days either side of the first are
// taken (any two of them 100 days apart at most), one beyond is refused by name (found by
// fuzzing: 100 days apart, their distance overflowed).
TEST(Analyzer, FramesMoreThan50DaysFromTheFirstAreRefused) {
  constexpr std::int64_t kDay = std::int64_t{86400} * 1'000'000'000;
  Feed f;
  f.data(0, 0);
  f.data(-49 * kDay, 1);
  f.data(49 * kDay, 2);
  EXPECT_EQ(f.a.captures()[0].duration(), ns(98 * kDay));
  try {
    f.data(51 * kDay, 3);
    FAIL() << "a frame 51 days on was taken";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "test: frame 4 is stamped 4406400 s from the first frame; a capture must lie within 50 days of its "
                 "first frame");
  }
}

// A pcapng file written byte by byte: a Section Header Block, an Interface Description
// Block for Ethernet with if_tsresol 9 (ns) and if_speed 25 Gb/s, and one Enhanced Packet
// Block holding a PFC XOFF of 1000 quanta on priority 3 at 1 us. At 25 Gb/s the pause
// lasts 1000 x 512 bits / 25 Gb/s = 20.48 us; libpcap does not give the speed out, so it
// comes from the file's own block.
TEST(Analyzer, PcapngGivesItsLinkSpeed) {
  std::vector<std::uint8_t> f;
  const auto u16 = [&](std::uint32_t v) {
    f.push_back(static_cast<std::uint8_t>(v));
    f.push_back(static_cast<std::uint8_t>(v >> 8));
  };
  const auto u32 = [&](std::uint32_t v) {
    u16(v & 0xffff);
    u16(v >> 16);
  };
  u32(0x0a0d0d0a), u32(28), u32(0x1a2b3c4d), u16(1), u16(0), u32(0xffffffff), u32(0xffffffff), u32(28);
  // IDB: 8 + 8 + if_tsresol (4 + 4) + if_speed (4 + 8) + end (4) + 4 = 44 bytes
  u32(1), u32(44), u16(1), u16(0), u32(65535);
  u16(9), u16(1), u32(9);
  u16(8), u16(8), u32(25'000'000'000 & 0xffffffff), u32(25'000'000'000 >> 32);
  u16(0), u16(0), u32(44);
  // 01:80:c2:00:00:01 from 02:fc:00:01:00:02, MAC control, PFC, class-enable 0x0008,
  // classes 0-2 at 0, class 3 at 1000 (0x03e8), the rest zero.
  std::uint8_t pfc[60] = {0x01, 0x80, 0xc2, 0, 0, 1, 2, 0xfc, 0, 1, 0, 2, 0x88, 0x08, 0x01, 0x01, 0, 0x08};
  pfc[18 + 2 * 3] = 0x03;
  pfc[18 + 2 * 3 + 1] = 0xe8;
  u32(6), u32(32 + 60), u32(0), u32(0), u32(1000), u32(60), u32(60);
  f.insert(f.end(), pfc, pfc + 60);
  u32(32 + 60);
  const std::string path = ::testing::TempDir() + "/speed.pcapng";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(f.data()), static_cast<std::streamsize>(f.size()));
  }
  ASSERT_TRUE(pcapng_link_speed(path).has_value());
  EXPECT_EQ(*pcapng_link_speed(path), Gbps(25));
  Analyzer a({});
  read_capture(path, a);
  ASSERT_EQ(a.pfc().size(), 1u);
  EXPECT_EQ(a.pfc()[0].priority, 3);
  EXPECT_EQ(a.pfc()[0].quanta, 1000u);
  EXPECT_EQ(a.pfc()[0].paused, ns(20480));
  EXPECT_EQ(a.captures()[0].start_epoch_ns, 1000);
  // Given on the command line, the speed wins: 100 Gb/s makes it 5.12 us.
  AnalyzeOptions o;
  o.link_speed = Gbps(100);
  Analyzer given(o);
  read_capture(path, given);
  EXPECT_EQ(given.pfc()[0].paused, ns(5120));
  std::remove(path.c_str());
}

// A data packet with a bad ICRC is counted but its PSN is not tracked (a receiver drops
// it): PSNs 0, 1 (damaged), 2 leave 1 missing, one gap, nothing reordered.
TEST(Analyzer, DamagedPacketsAreNotPsnTracked) {
  Feed f;
  f.data(0, 0);
  Packet p = Feed::write(1);
  p.corrupted = true;
  f.send(100, p);
  f.data(200, 2);
  const QpStats& q = f.qp();
  EXPECT_EQ(q.data_packets, 3u);
  EXPECT_EQ(q.icrc_bad, 1u);
  EXPECT_EQ(q.reorder.metrics().received, 2u);
  EXPECT_EQ(q.reorder.missing(), 1u);
  EXPECT_EQ(q.psn_gaps, 1u);
  EXPECT_EQ(q.reorder.metrics().reordered, 0u);
}

// RDMA READ responses to a QP carry the requester's PSNs, a sequence of their own: counted
// as data, not PSN-tracked. WRITEs 0 and 1 with a READ response (opcode 0x10, its frame
// made from a WRITE's with the opcode and ICRC rewritten) of PSN 500 between them: no gap.
TEST(Analyzer, ReadResponsesAreNotMixedIntoThePsnSequence) {
  Feed f;
  f.data(0, 0);
  const Packet p = Feed::write(500);
  const std::uint8_t mac[6] = {};
  std::vector<std::uint8_t> b(fabric::kMaxFrameBytes);
  const std::size_t n = fabric::encode_frame(p, mac, b.data());
  b[18 + 20 + 8] = 0x10;  // RC RDMA READ response only: an AETH, then the payload
  const std::uint32_t c = fabric::roce_icrc(b.data() + 18, n - 18 - 4);
  for (std::size_t i = 0; i < 4; ++i) b[n - 4 + i] = static_cast<std::uint8_t>(c >> (8 * i));
  f.a.frame(1'700'000'000'000'000'000 + 50, b.data(), n, n);
  f.data(100, 1);
  const QpStats& q = f.qp();
  EXPECT_EQ(q.data_packets, 3u);
  EXPECT_EQ(q.read_responses, 1u);
  EXPECT_EQ(q.payload_bytes, 1000u + 996u + 1000u);  // the AETH's 4 bytes are not payload
  EXPECT_EQ(q.reorder.metrics().received, 2u);
  EXPECT_EQ(q.psn_gaps, 0u);
  EXPECT_EQ(q.icrc_bad, 0u);
}

// With the first PSN known (a test stream's), a first packet held back is reordered, not
// "before the start": 1 0 2 from first PSN 0 is one reordered packet of extent 1.
TEST(Analyzer, AKnownFirstPsn) {
  AnalyzeOptions o;
  o.first_psn = 0;
  Feed f(o);
  for (std::uint32_t psn : {1u, 0u, 2u}) f.data(0, psn);
  const QpStats& q = f.qp();
  EXPECT_EQ(q.before_start, 0u);
  EXPECT_EQ(q.reorder.metrics().reordered, 1u);
  EXPECT_EQ(q.reorder.metrics().max_extent, 1u);
  EXPECT_EQ(q.psn_gaps, 1u);
}

// A given bin that would need more than 2^22 bins is refused by name, not allocated.
TEST(Analyzer, TooManyGivenBinsAreRefused) {
  AnalyzeOptions o;
  o.bin = ns(1);
  Feed f(o);
  f.data(0, 0);
  EXPECT_THROW(f.data(10'000'000, 1), InputError);  // 10 ms in 1 ns bins
}

// The bins over all QPs are bounded at 2^24. With --bin 1 ns, each QP with a packet at
// 0 and at 4 194 303 ns keeps 2^22 bins: four QPs fill the bound exactly, and a fifth
// QP's first bin passes it.
TEST(Analyzer, BinsOverAllQpsAreBoundedWithGivenBins) {
  AnalyzeOptions o;
  o.bin = ns(1);
  Feed f(o);
  for (std::uint32_t qp = 0; qp < 4; ++qp) {
    f.data(0, 0, 1000, 2, 1, 0, qp);
    f.data(4'194'303, 1, 1000, 2, 1, 0, qp);
  }
  EXPECT_EQ(f.a.qps()[3].bin_bytes.size(), std::size_t{1} << 22);
  EXPECT_EQ(testing::input_error_of([&] { f.data(0, 0, 1000, 2, 1, 0, 4); }),
            "test: frame 9: 1 ns throughput bins would be more than 16777216 over the analysis's 5 QPs; give a "
            "wider --bin, or none for automatic ones");
}

// Automatic bins widen for the bound as well. 65 537 QPs each with a packet at 0 and at
// 255 us keep 256 bins of 1 us once both came, 1 before; with every first packet in, the
// second packets add 255 each: 65 537 + 255 m passes 2^24 at m = 65 536. There the bins
// double to 2 us, the grown QPs merging to 128 bins, and the last one grows to 128 as well.
TEST(Analyzer, AutomaticBinsWidenForTheBoundOverAllQps) {
  Feed f;
  constexpr std::uint32_t kQps = 65'537;
  for (std::uint32_t qp = 0; qp < kQps; ++qp) f.data(0, 0, 100, 2, 1, 0, qp);
  for (std::uint32_t qp = 0; qp < kQps - 2; ++qp) f.data(255'000, 1, 100, 2, 1, 0, qp);
  EXPECT_EQ(f.a.captures()[0].bin, us(1));
  EXPECT_EQ(f.a.qps()[0].bin_bytes.size(), 256u);
  f.data(255'000, 1, 100, 2, 1, 0, kQps - 2);
  EXPECT_EQ(f.a.captures()[0].bin, us(2));
  f.a.end_capture();
  for (std::uint32_t qp = 0; qp < kQps - 1; ++qp) {
    const auto& b = f.a.qps()[qp].bin_bytes;
    ASSERT_EQ(b.size(), 128u) << qp;
    EXPECT_EQ(b[0], 100u);
    EXPECT_EQ(b[127], 100u);
  }
  EXPECT_EQ(f.a.qps()[kQps - 1].bin_bytes, (std::vector<std::uint64_t>{100}));
}

}  // namespace
}  // namespace fabriclab::capture
