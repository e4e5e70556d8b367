// One captured Ethernet frame decoded into what `fabriclab analyze` counts: RoCEv2 (UDP
// 4791 over IPv4 or IPv6), RoCEv1 (EtherType 0x8915, GRH), 802.1Qbb PFC (MAC control
// 0x8808, opcode 0x0101), behind 0-2 VLAN tags (0x8100, 0x88a8, 0x9100), and frames
// mirrored in ERSPAN (GRE 0x88BE type I/II, 0x22EB type III: the inner frame is decoded).
// Nothing here throws or reads past `caplen`: a frame cut by the snap length before the
// headers that matter is `truncated`, one whose lengths contradict each other `malformed`,
// anything else that is not RoCE or PFC `other`.
//
// The payload length comes from the headers (IP or GRH length minus the transport headers,
// the pad and the ICRC), so it is right for a frame captured with a short snap length. The
// ICRC is checked when the whole IP packet was captured (RoCEv2 over IPv4 without options,
// or IPv6), the IPv4 header checksum when the header was, the FCS when the frame has one.
//
//   const capture::Frame f = capture::decode_frame(data, hdr.caplen, hdr.len);
//   if (f.kind == capture::FrameKind::roce && capture::carries_data(f.opcode)) ...
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace fabriclab::capture {

enum class FrameKind : std::uint8_t { roce, pfc, other, truncated, malformed };

// A check the decoder could make or not (the bytes were not all captured).
enum class Check : std::uint8_t { unchecked, ok, bad };

// An IPv4 (the first 4 bytes) or IPv6 address; RoCEv1's GIDs are IPv6-shaped.
struct Address {
  std::array<std::uint8_t, 16> bytes{};
  bool v6 = false;
  auto operator<=>(const Address&) const = default;
};

// "10.0.0.2", "fe80::1" (RFC 5952 form).
std::string to_string(const Address& a);
// "02:00:00:00:00:01"
std::string mac_text(const std::array<std::uint8_t, 6>& mac);

struct Frame {
  FrameKind kind = FrameKind::other;
  std::uint8_t vlan_tags = 0;
  std::uint8_t pcp = 0;  // the outer VLAN tag's priority (0 when untagged)
  bool erspan = false;   // decoded from inside an ERSPAN mirror
  std::array<std::uint8_t, 6> src_mac{};

  // PFC: the class-enable vector and the eight pause times in quanta (512 bit times).
  std::uint16_t pfc_enable = 0;
  std::array<std::uint16_t, 8> pfc_quanta{};

  // RoCE
  bool roce_v1 = false;
  Address src_ip, dst_ip;
  std::uint8_t dscp = 0, ecn = 0;  // ECN: 0 not ECT, 1 ECT(1), 2 ECT(0), 3 CE
  std::uint8_t opcode = 0;
  bool opcode_known = false;  // an opcode of RC, UC or UD that IBA defines, or the CNP
  bool fecn = false, becn = false, ack_req = false;
  std::uint32_t dest_qp = 0, psn = 0;
  std::uint32_t payload = 0;  // payload bytes (known opcodes)
  bool has_aeth = false;
  std::uint8_t syndrome = 0;  // AETH syndrome
  Check icrc = Check::unchecked;
  Check ip_checksum = Check::unchecked;
  // The Ethernet FCS, when the frame was captured with it (a tester's export, a replay
  // file): checked when 4 bytes follow the IP packet (or GRH) -- ok when they are the
  // CRC-32 of the rest, else bad -- or a PFC frame is 64 bytes; unchecked otherwise
  // (most captures drop it).
  Check fcs = Check::unchecked;
};

Frame decode_frame(const std::uint8_t* data, std::size_t caplen, std::size_t wire_len);

inline constexpr std::uint8_t kCnpOpcode = 0x81;

// Opcodes whose packets carry message payload in sequence (PSN order matters): SEND,
// RDMA WRITE and RDMA READ response packets of RC and UC, and UD SEND.
bool carries_data(std::uint8_t opcode);
// The RC ACK (AETH), which also carries NAKs.
inline bool is_ack(std::uint8_t opcode) { return opcode == 0x11; }

// AETH syndrome (IBA 9.7.5.1): bits 6-5 the type -- 00 ACK, 01 RNR NAK, 11 NAK with the
// code in bits 4-0 (0 PSN sequence error, 1 invalid request, 2 remote access error,
// 3 remote operational error, 4 invalid RD request).
enum class AckKind : std::uint8_t {
  ack,
  rnr_nak,
  nak_psn_sequence,
  nak_invalid_request,
  nak_remote_access,
  nak_remote_operational,
  nak_other
};
AckKind ack_kind(std::uint8_t syndrome);

}  // namespace fabriclab::capture
