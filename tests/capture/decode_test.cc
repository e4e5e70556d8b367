// Frames decoded field by field: a CNP captured on real hardware, our simulator's frames,
// and frames built here byte by byte (QinQ IPv6, RoCEv1, ERSPAN, PFC, damaged and cut
// ones). Every expected value is read off the bytes written in the test.
#include "capture/decode.h"

#include <gtest/gtest.h>

#include <vector>

#include "fabric/packet.h"
#include "fabric/wire.h"

namespace fabriclab::capture {
namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes hex(const char* s) {
  Bytes out;
  auto nib = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (; *s;) {
    while (*s == ' ') ++s;
    if (!s[0] || !s[1]) break;
    out.push_back(static_cast<std::uint8_t>(nib(s[0]) << 4 | nib(s[1])));
    s += 2;
  }
  return out;
}

Frame decode(const Bytes& b) { return decode_frame(b.data(), b.size(), b.size()); }

// Writes the ICRC of the IP packet starting at `ip` into its last 4 bytes.
void seal(Bytes& b, std::size_t ip) {
  const std::uint32_t c = fabric::roce_icrc(b.data() + ip, b.size() - ip - 4);
  for (std::size_t i = 0; i < 4; ++i) b[b.size() - 4 + i] = static_cast<std::uint8_t>(c >> (8 * i));
}

// The ConnectX-4 Lx CNP of fabric/wire_test.cc: untagged IPv4, TOS 0xc2 (DSCP 48, ECT(0)),
// 10.0.17.1 -> 10.0.18.1, BTH opcode 0x81, BECN, QP 0x118, PSN 0, ICRC 82 fd 00 2a.
TEST(Decode, ACnpCapturedOnHardware) {
  const Frame f = decode(hex("e41d2dab2bc27cfe90643b320800"
                             "45c2003c718c400040119161 0a001101 0a001201"
                             "000012b700280000"
                             "8100ffff400001180000 0000"
                             "00000000000000000000000000000000"
                             "82fd002a"));
  EXPECT_EQ(f.kind, FrameKind::roce);
  EXPECT_EQ(f.vlan_tags, 0);
  EXPECT_EQ(mac_text(f.src_mac), "7c:fe:90:64:3b:32");
  EXPECT_EQ(to_string(f.src_ip), "10.0.17.1");
  EXPECT_EQ(to_string(f.dst_ip), "10.0.18.1");
  EXPECT_EQ(f.dscp, 48);
  EXPECT_EQ(f.ecn, 2);
  EXPECT_EQ(f.opcode, kCnpOpcode);
  EXPECT_TRUE(f.opcode_known);
  EXPECT_TRUE(f.becn);
  EXPECT_FALSE(f.fecn);
  EXPECT_EQ(f.dest_qp, 0x118u);
  EXPECT_EQ(f.psn, 0u);
  EXPECT_EQ(f.payload, 0u);
  EXPECT_EQ(f.icrc, Check::ok);
  EXPECT_EQ(f.ip_checksum, Check::ok);
}

Bytes simulator_frame(bool corrupted = false) {
  fabric::Packet p;
  p.src = 1;
  p.dst = 0;
  p.dst_qp = 3;
  p.psn = 0xabcdef;
  p.opcode = fabric::Opcode::rc_write_first;
  p.payload = 1001;  // 3 bytes of pad
  p.message_bytes = 4096;
  p.priority = 3;
  p.dscp = 24;
  p.ecn = fabric::kEcnCe;
  p.ttl = 64;
  p.udp_sport = 0xc000;
  p.corrupted = corrupted;
  Bytes b(fabric::kMaxFrameBytes);
  const std::uint8_t mac[6] = {};
  b.resize(fabric::encode_frame(p, mac, b.data()));
  return b;
}

// 18 (Ethernet + tag) + 20 + 8 + 12 (BTH) + 16 (RETH) + 1001 + 3 (pad) + 4 (ICRC) bytes.
TEST(Decode, OurOwnWriteFirst) {
  const Bytes b = simulator_frame();
  ASSERT_EQ(b.size(), 18u + 20 + 8 + 12 + 16 + 1001 + 3 + 4);
  const Frame f = decode(b);
  EXPECT_EQ(f.kind, FrameKind::roce);
  EXPECT_EQ(f.vlan_tags, 1);
  EXPECT_EQ(f.pcp, 3);
  EXPECT_EQ(to_string(f.src_ip), "10.0.0.2");
  EXPECT_EQ(to_string(f.dst_ip), "10.0.0.1");
  EXPECT_EQ(f.dscp, 24);
  EXPECT_EQ(f.ecn, 3);
  EXPECT_EQ(f.opcode, 0x06);
  EXPECT_TRUE(carries_data(f.opcode));
  EXPECT_EQ(f.dest_qp, 0x103u);
  EXPECT_EQ(f.psn, 0xabcdefu);
  EXPECT_EQ(f.payload, 1001u);
  EXPECT_EQ(f.icrc, Check::ok);
  EXPECT_EQ(f.ip_checksum, Check::ok);
}

TEST(Decode, DamageAndShortCapturesAreTold) {
  EXPECT_EQ(decode(simulator_frame(true)).icrc, Check::bad);
  Bytes b = simulator_frame();
  b[18 + 10] ^= 0xff;  // the IPv4 header checksum (the ICRC masks it)
  Frame f = decode(b);
  EXPECT_EQ(f.ip_checksum, Check::bad);
  EXPECT_EQ(f.icrc, Check::ok);
  // Cut after the RETH (snap length 74): the headers still give the payload; no ICRC.
  b = simulator_frame();
  f = decode_frame(b.data(), 74, b.size());
  EXPECT_EQ(f.kind, FrameKind::roce);
  EXPECT_EQ(f.payload, 1001u);
  EXPECT_EQ(f.icrc, Check::unchecked);
  // Cut inside the BTH, inside the IPv4 header, inside the Ethernet header.
  for (std::size_t cut : {50u, 30u, 10u}) EXPECT_EQ(decode_frame(b.data(), cut, b.size()).kind, FrameKind::truncated);
  // A UDP length shorter than its own header.
  b = simulator_frame();
  b[18 + 20 + 4] = 0;
  b[18 + 20 + 5] = 4;
  EXPECT_EQ(decode(b).kind, FrameKind::malformed);
}

// QinQ (0x88a8 PCP 5, then 0x8100), IPv6 traffic class 0x6a (DSCP 26, ECT(0)), UDP to
// 4791, BTH opcode 0x11 (RC ACK) with AETH syndrome 0x60: a NAK for a PSN sequence error.
TEST(Decode, QinQIpv6Nak) {
  Bytes b = hex("020000000002 020000000001 88a8 a00a 8100 0014 86dd"
                "66a00000 001c 11 40 fe800000000000000000000000000001 20010db8000000000000000000000002"
                "c0de12b7 001c 0000"
                "11 00 ffff 00 000123 00 000456"
                "60000000"
                "00000000");
  ASSERT_EQ(b.size(), 14u + 8 + 40 + 8 + 12 + 4 + 4);
  seal(b, 22);
  const Frame f = decode(b);
  EXPECT_EQ(f.kind, FrameKind::roce);
  EXPECT_EQ(f.vlan_tags, 2);
  EXPECT_EQ(f.pcp, 5);
  EXPECT_EQ(f.dscp, 26);
  EXPECT_EQ(f.ecn, 2);
  EXPECT_EQ(to_string(f.src_ip), "fe80::1");
  EXPECT_EQ(to_string(f.dst_ip), "2001:db8::2");
  EXPECT_TRUE(is_ack(f.opcode));
  EXPECT_TRUE(f.has_aeth);
  EXPECT_EQ(ack_kind(f.syndrome), AckKind::nak_psn_sequence);
  EXPECT_EQ(f.dest_qp, 0x123u);
  EXPECT_EQ(f.psn, 0x456u);
  EXPECT_EQ(f.payload, 0u);
  EXPECT_EQ(f.icrc, Check::ok);
  EXPECT_EQ(f.ip_checksum, Check::unchecked);  // IPv6 has none
  b[22 + 40 + 8 + 12 + 4] ^= 1;                // the ICRC itself
  EXPECT_EQ(decode(b).icrc, Check::bad);
  b = hex("020000000002 020000000001 88a8 a00a 8100 0014 8100 0000 86dd");
  EXPECT_EQ(decode(b).kind, FrameKind::other);  // a third tag
}

// RoCEv1: EtherType 0x8915, a GRH (next header 0x1B, payload length 24 = BTH 12 + 8 bytes
// of payload + ICRC 4), then RC SEND ONLY (0x04).
TEST(Decode, RoceV1) {
  const Bytes b = hex("020000000002 020000000001 8915"
                      "60000000 0018 1b 40 fe800000000000000000000000000001 fe800000000000000000000000000002"
                      "04 00 ffff 00 000007 80 000009"
                      "0102030405060708"
                      "00000000");
  const Frame f = decode(b);
  EXPECT_EQ(f.kind, FrameKind::roce);
  EXPECT_TRUE(f.roce_v1);
  EXPECT_EQ(to_string(f.dst_ip), "fe80::2");
  EXPECT_EQ(f.opcode, 0x04);
  EXPECT_TRUE(f.ack_req);
  EXPECT_EQ(f.dest_qp, 7u);
  EXPECT_EQ(f.psn, 9u);
  EXPECT_EQ(f.payload, 8u);
  EXPECT_EQ(f.icrc, Check::unchecked);
}

// A switch's mirror: outer IPv4 (proto 47) to the collector, GRE with a sequence number
// (flags 0x1000) and protocol 0x88BE, the 8-byte ERSPAN type II header, then the frame.
TEST(Decode, ErspanTypeTwoCarriesTheMirroredFrame) {
  const Bytes inner = simulator_frame();
  Bytes b = hex("02000000aaaa 02000000bbbb 0800"
                "45000000 0000 4000 40 2f 0000 c0a80001 c0a80002"
                "1000 88be 00000001"
                "10010000 00000000");
  const std::size_t ip_total = b.size() - 14 + inner.size();
  b[14 + 2] = static_cast<std::uint8_t>(ip_total >> 8);
  b[14 + 3] = static_cast<std::uint8_t>(ip_total);
  b.insert(b.end(), inner.begin(), inner.end());
  const Frame f = decode(b);
  EXPECT_EQ(f.kind, FrameKind::roce);
  EXPECT_TRUE(f.erspan);
  EXPECT_EQ(to_string(f.src_ip), "10.0.0.2");  // the inner frame's
  EXPECT_EQ(f.dest_qp, 0x103u);
  EXPECT_EQ(f.payload, 1001u);
  EXPECT_EQ(f.icrc, Check::ok);
}

TEST(Decode, PfcFrame) {
  // From 02:fc:00:11:00:01, classes 3 and 5 enabled: 65535 quanta on 3, 0 (XON) on 5.
  Bytes b = hex("0180c2000001 02fc00110001 8808 0101 0028 0000 0000 0000 ffff 0000 0000 0000 0000");
  b.resize(60, 0);
  const Frame f = decode(b);
  EXPECT_EQ(f.kind, FrameKind::pfc);
  EXPECT_EQ(mac_text(f.src_mac), "02:fc:00:11:00:01");
  EXPECT_EQ(f.pfc_enable, 0x28);
  EXPECT_EQ(f.pfc_quanta[3], 0xffff);
  EXPECT_EQ(f.pfc_quanta[5], 0);
  b[14] = 0x00;  // opcode 0x0001: 802.3x PAUSE, not PFC
  EXPECT_EQ(decode(b).kind, FrameKind::other);
}

TEST(Decode, WhatIsNotRoce) {
  Bytes dns = simulator_frame();
  dns[18 + 20 + 2] = 0;
  dns[18 + 20 + 3] = 53;
  EXPECT_EQ(decode(dns).kind, FrameKind::other);
  EXPECT_EQ(decode(hex("ffffffffffff 020000000001 0806 0001080006040001")).kind, FrameKind::other);  // ARP
  Bytes unknown = simulator_frame();
  unknown[18 + 20 + 8] = 0x1f;  // an RC opcode IBA reserves
  const Frame f = decode(unknown);
  EXPECT_EQ(f.kind, FrameKind::roce);
  EXPECT_FALSE(f.opcode_known);
}

TEST(Decode, AckKinds) {
  EXPECT_EQ(ack_kind(0x1f), AckKind::ack);  // credits
  EXPECT_EQ(ack_kind(0x21), AckKind::rnr_nak);
  EXPECT_EQ(ack_kind(0x61), AckKind::nak_invalid_request);
  EXPECT_EQ(ack_kind(0x62), AckKind::nak_remote_access);
  EXPECT_EQ(ack_kind(0x63), AckKind::nak_remote_operational);
  EXPECT_EQ(ack_kind(0x64), AckKind::nak_other);
  EXPECT_EQ(ack_kind(0x40), AckKind::nak_other);  // reserved type
}

// RFC 5952 section 4: the longest run of zero words shortened, the first of equal runs.
TEST(Decode, Ipv6Text) {
  Address a;
  a.v6 = true;
  EXPECT_EQ(to_string(a), "::");
  a.bytes = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1};
  EXPECT_EQ(to_string(a), "2001:db8::1:0:0:1");
  a.bytes = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1};
  EXPECT_EQ(to_string(a), "2001:db8:0:1:1:1:1:1");  // one zero word is not shortened
  a.bytes = {0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(to_string(a), "1::");
}

// A frame ending with its FCS (fabric::append_fcs, whose value tshark checks in the CLI
// test): checked when 4 bytes follow the IP packet; a damaged one is bad; a capture
// without it is unchecked; a 64-byte PFC frame with its FCS is recognised.
TEST(Decode, FcsWhenTheFrameHasOne) {
  Bytes b = simulator_frame();
  EXPECT_EQ(decode(b).fcs, Check::unchecked);
  const std::size_t n = b.size();
  b.resize(n + 4);
  ASSERT_EQ(fabric::append_fcs(b.data(), n), n + 4);
  EXPECT_EQ(decode(b).fcs, Check::ok);
  EXPECT_EQ(decode(b).payload, 1001u);  // the FCS is not payload
  b[n] ^= 1;
  EXPECT_EQ(decode(b).fcs, Check::bad);
  EXPECT_EQ(decode_frame(b.data(), 74, b.size()).fcs, Check::unchecked);  // cut short
  Bytes pfc = hex("0180c2000001 02fc00110001 8808 0101 0008 0000 0000 0000 ffff 0000 0000 0000 0000");
  pfc.resize(64, 0);
  fabric::append_fcs(pfc.data(), 60);
  EXPECT_EQ(decode(pfc).fcs, Check::ok);
}

}  // namespace
}  // namespace fabriclab::capture
