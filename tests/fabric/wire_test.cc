// Synthesized frames: the ICRC against a frame captured on real hardware, and the
// header fields of our own frames read back byte by byte.
#include "fabric/wire.h"

#include <gtest/gtest.h>

#include <vector>

namespace fabriclab::fabric {
namespace {

std::vector<std::uint8_t> hex(const char* s) {
  std::vector<std::uint8_t> out;
  auto nib = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (; s[0] && s[1]; s += 2) {
    while (*s == ' ') ++s;
    out.push_back(static_cast<std::uint8_t>(nib(s[0]) << 4 | nib(s[1])));
  }
  return out;
}

TEST(Wire, IcrcMatchesAConnectXCapture) {
  // A CNP captured on a ConnectX-4 Lx (the frame scapy's RoCE tests use): Ethernet
  // without a VLAN tag, IPv4 TOS 0xc2, UDP checksum 0, BTH opcode 0x81 with BECN set, 16
  // reserved bytes, and the ICRC bytes 82 fd 00 2a on the wire.
  const auto frame = hex("e41d2dab2bc27cfe90643b320800"
                         "45c2003c718c400040119161 0a001101 0a001201"
                         "000012b700280000"
                         "8100ffff400001180000 0000"
                         "00000000000000000000000000000000"
                         "82fd002a");
  ASSERT_EQ(frame.size(), 14u + 60u);
  const std::uint8_t* ip = frame.data() + 14;
  const std::uint32_t icrc = roce_icrc(ip, 60 - 4);
  EXPECT_EQ(icrc & 0xff, 0x82u);
  EXPECT_EQ((icrc >> 8) & 0xff, 0xfdu);
  EXPECT_EQ((icrc >> 16) & 0xff, 0x00u);
  EXPECT_EQ(icrc >> 24, 0x2au);
}

TEST(Wire, IcrcIgnoresTheVariantFields) {
  // TTL, TOS (so ECN marking), checksums and FECN/BECN change in flight; the ICRC must not.
  const auto frame = hex("45c2003c718c400040119161 0a001101 0a001201"
                         "000012b700280000"
                         "8100ffff400001180000 0000"
                         "00000000000000000000000000000000");
  auto changed = frame;
  changed[1] = 0x03;       // TOS: ECN CE
  changed[8] = 0x01;       // TTL
  changed[10] = 0x12;      // checksum
  changed[20 + 6] = 0x55;  // UDP checksum
  changed[28 + 4] = 0x80;  // FECN
  EXPECT_EQ(roce_icrc(frame.data(), frame.size()), roce_icrc(changed.data(), changed.size()));
  changed[28 + 11] = 0x01;  // PSN is invariant
  EXPECT_NE(roce_icrc(frame.data(), frame.size()), roce_icrc(changed.data(), changed.size()));
}

TEST(Wire, DataFrameFields) {
  Packet p;
  p.src = 1;
  p.dst = 2;
  p.dst_qp = 0x123;
  p.psn = 0xabcdef;
  p.payload = 1001;  // 3 bytes of pad
  p.message_bytes = 5000;
  p.udp_sport = 0xc001;
  p.opcode = Opcode::rc_write_first;
  p.priority = 3;
  p.dscp = 24;  // as the NIC sets it: 8 x priority
  p.ecn = kEcnCe;
  p.seal();
  std::uint8_t mac[6] = {};
  std::vector<std::uint8_t> out(kMaxFrameBytes);
  const std::size_t n = encode_frame(p, mac, out.data());
  EXPECT_EQ(n + 4, p.frame_bytes());  // the FCS is not written
  const std::uint8_t* b = out.data();
  EXPECT_EQ(b[12] << 8 | b[13], 0x8100);
  EXPECT_EQ(b[14] >> 5, 3);  // PCP
  const std::uint8_t* ip = b + 18;
  EXPECT_EQ(ip[1] >> 2, 24);  // DSCP CS3
  EXPECT_EQ(ip[1] & 3, 3);    // CE
  EXPECT_EQ(ip[2] << 8 | ip[3], static_cast<int>(n - 18));
  // The IPv4 header sums to 0xffff with its checksum.
  std::uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += static_cast<std::uint32_t>(ip[i] << 8 | ip[i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  EXPECT_EQ(sum, 0xffffu);
  const std::uint8_t* bth = ip + 28;
  EXPECT_EQ(bth[0], 6);
  EXPECT_EQ((bth[1] >> 4) & 3, 3);  // pad count
  EXPECT_EQ(bth[5] << 16 | bth[6] << 8 | bth[7], 0x123 + 0x100);
  EXPECT_EQ(bth[9] << 16 | bth[10] << 8 | bth[11], 0xabcdef);
  const std::uint8_t* reth = bth + 12;
  EXPECT_EQ(reth[12] << 24 | reth[13] << 16 | reth[14] << 8 | reth[15], 5000);
  const std::uint8_t* icrc = b + n - 4;
  const std::uint32_t want = roce_icrc(ip, n - 4 - 18);
  EXPECT_EQ(icrc[0] | icrc[1] << 8 | icrc[2] << 16 | static_cast<std::uint32_t>(icrc[3]) << 24, want);
}

// A CNP: BTH opcode 0x81 and 16 reserved bytes, no payload; DSCP and PCP as the NP sets
// them. 18 + 20 + 8 + 12 + 16 + 4 (ICRC) = 78 bytes written, 82 with the FCS.
TEST(Wire, CnpFrameFields) {
  Packet p;
  p.src = 2;
  p.dst = 1;
  p.dst_qp = 5;
  p.opcode = Opcode::cnp;
  p.priority = 6;
  p.dscp = 48;
  p.seal();
  EXPECT_EQ(p.frame_bytes(), 82u);
  std::uint8_t mac[6] = {};
  std::vector<std::uint8_t> out(kMaxFrameBytes);
  ASSERT_EQ(encode_frame(p, mac, out.data()), 78u);
  const std::uint8_t* b = out.data();
  EXPECT_EQ(b[14] >> 5, 6);
  const std::uint8_t* ip = b + 18;
  EXPECT_EQ(ip[1] >> 2, 48);
  EXPECT_EQ(ip[1] & 3, kEcnNotEct);
  const std::uint8_t* bth = ip + 28;
  EXPECT_EQ(bth[0], 0x81);
  EXPECT_EQ(bth[4], 0x40);  // FECN 0, BECN 1 (RoCEv2 Annex A17: a CNP sets BECN), reserved 0
  EXPECT_EQ(bth[5] << 16 | bth[6] << 8 | bth[7], 5 + 0x100);
  for (int i = 12; i < 28; ++i) EXPECT_EQ(bth[i], 0) << i;
  const std::uint8_t* icrc = b + 74;
  EXPECT_EQ(icrc[0] | icrc[1] << 8 | icrc[2] << 16 | static_cast<std::uint32_t>(icrc[3]) << 24,
            roce_icrc(ip, 78 - 4 - 18));
}

// An ACK carrying a congestion notification (roce_np.cnp_form = becn): the BTH's BECN bit,
// the rest of the ACK as without it.
TEST(Wire, AckWithBecn) {
  Packet p;
  p.opcode = Opcode::rc_ack;
  p.psn = 7;
  p.seal();
  std::uint8_t mac[6] = {};
  std::vector<std::uint8_t> plain(kMaxFrameBytes), flagged(kMaxFrameBytes);
  const std::size_t n = encode_frame(p, mac, plain.data());
  p.becn = true;
  ASSERT_EQ(encode_frame(p, mac, flagged.data()), n);
  const std::size_t bth = 18 + 20 + 8;
  EXPECT_EQ(plain[bth + 4], 0x00);
  EXPECT_EQ(flagged[bth + 4], 0x40);  // FECN 0, BECN 1
  // Every other byte is the same, the ICRC too: it masks the FECN/BECN byte.
  for (std::size_t i = 0; i < n; ++i) {
    if (i != bth + 4) {
      EXPECT_EQ(plain[i], flagged[i]) << i;
    }
  }
}

TEST(Wire, PfcFrameFields) {
  Packet p;
  p.opcode = Opcode::pfc;
  p.set_pause(3, 0xffff);
  p.seal();
  const std::uint8_t mac[6] = {0x02, 0xfc, 0, 1, 0, 2};
  std::vector<std::uint8_t> out(kMaxFrameBytes);
  ASSERT_EQ(encode_frame(p, mac, out.data()), 60u);
  const std::uint8_t* b = out.data();
  EXPECT_EQ(b[0], 0x01);
  EXPECT_EQ(b[5], 0x01);
  EXPECT_EQ(b[12] << 8 | b[13], 0x8808);
  EXPECT_EQ(b[14] << 8 | b[15], 0x0101);
  EXPECT_EQ(b[16] << 8 | b[17], 1 << 3);
  EXPECT_EQ(b[18 + 6] << 8 | b[18 + 7], 0xffff);
  EXPECT_EQ(b[18] << 8 | b[19], 0);
}

}  // namespace
}  // namespace fabriclab::fabric
