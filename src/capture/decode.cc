#include "capture/decode.h"

#include <fmt/format.h>

#include "fabric/hash.h"
#include "fabric/wire.h"

namespace fabriclab::capture {

namespace {

std::uint32_t get16(const std::uint8_t* b) { return static_cast<std::uint32_t>(b[0] << 8 | b[1]); }
std::uint32_t get24(const std::uint8_t* b) { return static_cast<std::uint32_t>(b[0] << 16 | b[1] << 8 | b[2]); }
// The ICRC and the FCS go on the wire least significant byte first.
std::uint32_t get32le(const std::uint8_t* b) {
  return static_cast<std::uint32_t>(b[0]) | static_cast<std::uint32_t>(b[1]) << 8 |
         static_cast<std::uint32_t>(b[2]) << 16 | static_cast<std::uint32_t>(b[3]) << 24;
}

constexpr std::uint32_t kRoceV2Port = 4791;
constexpr std::size_t kBth = 12, kIcrc = 4;

// The length of the headers after the BTH for an opcode IBA defines (RC, UC, UD) or the
// CNP, or -1 for any other.
int extension_bytes(std::uint8_t op) {
  if (op == kCnpOpcode) return 16;  // reserved
  const std::uint8_t transport = op >> 5, code = op & 0x1f;
  if (transport == 3) {  // UD: DETH, and ImmDt for SEND only with immediate
    if (code == 4) return 8;
    if (code == 5) return 12;
    return -1;
  }
  if (transport != 0 && transport != 1) return -1;  // RC 000, UC 001 (RD and others not decoded)
  const bool uc = transport == 1;
  switch (code) {
    case 0x00:
    case 0x01:
    case 0x02:
    case 0x04:
    case 0x07:
    case 0x08: return 0;
    case 0x03:
    case 0x05:
    case 0x09: return 4;  // ImmDt
    case 0x06:
    case 0x0a: return 16;  // RETH
    case 0x0b: return 20;  // RETH + ImmDt
    default: break;
  }
  if (uc) return -1;
  switch (code) {
    case 0x0c: return 16;  // READ request: RETH
    case 0x0d:
    case 0x0f:
    case 0x10: return 4;   // READ response first/last/only: AETH
    case 0x0e: return 0;   // READ response middle
    case 0x11: return 4;   // ACK: AETH
    case 0x12: return 12;  // ATOMIC ACK: AETH + AtomicAckETH
    case 0x13:
    case 0x14: return 28;  // compare-swap, fetch-add: AtomicETH
    case 0x16:
    case 0x17: return 4;  // SEND last/only with invalidate: IETH
    default: return -1;
  }
}

bool has_aeth(std::uint8_t op) {
  const std::uint8_t code = op & 0x1f;
  return op >> 5 == 0 && (code == 0x0d || code == 0x0f || code == 0x10 || code == 0x11 || code == 0x12);
}

std::uint16_t ipv4_checksum(const std::uint8_t* h, std::size_t len) {
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i + 1 < len; i += 2) sum += get16(h + i);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

class Decoder {
 public:
  Decoder(const std::uint8_t* data, std::size_t caplen) : d_(data), cap_(caplen) {}
  // Where the outer frame's IP packet (or GRH packet) ends, as its header says; 0 unknown.
  std::size_t l3_end() const { return l3_end_; }

  Frame ethernet(std::size_t off, bool inner) {
    Frame f;
    f.erspan = inner;
    if (!have(off, 14)) return cut(f);
    for (int i = 0; i < 6; ++i) f.src_mac[static_cast<std::size_t>(i)] = d_[off + 6 + static_cast<std::size_t>(i)];
    std::uint32_t type = get16(d_ + off + 12);
    off += 14;
    while (type == 0x8100 || type == 0x88a8 || type == 0x9100) {
      if (f.vlan_tags == 2) return as(f, FrameKind::other);  // more tags than RoCE networks use
      if (!have(off, 4)) return cut(f);
      if (f.vlan_tags++ == 0) f.pcp = static_cast<std::uint8_t>(d_[off] >> 5);
      type = get16(d_ + off + 2);
      off += 4;
    }
    switch (type) {
      case 0x8808: return pfc(f, off);
      case 0x8915: return roce_v1(f, off);
      case 0x0800: return ipv4(f, off, inner);
      case 0x86dd: return ipv6(f, off);
      default: return as(f, FrameKind::other);
    }
  }

 private:
  bool have(std::size_t off, std::size_t n) const { return off <= cap_ && n <= cap_ - off; }
  static Frame as(Frame f, FrameKind k) {
    f.kind = k;
    return f;
  }
  static Frame cut(Frame f) { return as(f, FrameKind::truncated); }

  Frame pfc(Frame f, std::size_t off) {
    if (!have(off, 2)) return cut(f);
    if (get16(d_ + off) != 0x0101) return as(f, FrameKind::other);  // 802.3x PAUSE and other MAC control
    if (!have(off, 4 + 16)) return cut(f);
    f.pfc_enable = static_cast<std::uint16_t>(get16(d_ + off + 2));
    for (std::size_t c = 0; c < 8; ++c) f.pfc_quanta[c] = static_cast<std::uint16_t>(get16(d_ + off + 4 + 2 * c));
    return as(f, FrameKind::pfc);
  }

  Frame roce_v1(Frame f, std::size_t off) {
    // GRH: version/class/flow (4), payload length (2), next header (1, 0x1B for a BTH), hop
    // limit (1), source GID (16), destination GID (16).
    if (!have(off, 40)) return cut(f);
    if (d_[off + 6] != 0x1b) return as(f, FrameKind::other);
    f.roce_v1 = true;
    f.src_ip.v6 = f.dst_ip.v6 = true;
    for (std::size_t i = 0; i < 16; ++i) {
      f.src_ip.bytes[i] = d_[off + 8 + i];
      f.dst_ip.bytes[i] = d_[off + 24 + i];
    }
    f.dscp = static_cast<std::uint8_t>((get16(d_ + off) >> 4 & 0xff) >> 2);
    end_at(off + 40 + get16(d_ + off + 4));
    return bth(f, off + 40, get16(d_ + off + 4), nullptr, 0);
  }

  Frame ipv4(Frame f, std::size_t off, bool inner) {
    if (!have(off, 20)) return cut(f);
    const std::uint8_t* ip = d_ + off;
    const std::size_t ihl = (ip[0] & 0x0f) * 4u;
    const std::size_t total = get16(ip + 2);
    if (ip[0] >> 4 != 4 || ihl < 20 || total < ihl) return as(f, FrameKind::malformed);
    if (!have(off, ihl)) return cut(f);
    end_at(off + total);
    f.ip_checksum = ipv4_checksum(ip, ihl) == 0 ? Check::ok : Check::bad;
    if ((get16(ip + 6) & 0x3fff) != 0) return as(f, FrameKind::other);  // a fragment
    f.dscp = ip[1] >> 2;
    f.ecn = ip[1] & 3;
    for (std::size_t i = 0; i < 4; ++i) {
      f.src_ip.bytes[i] = ip[12 + i];
      f.dst_ip.bytes[i] = ip[16 + i];
    }
    if (ip[9] == 47 && !inner) return gre(f, off + ihl, total - ihl);
    if (ip[9] != 17) return as(f, FrameKind::other);
    return udp(f, off + ihl, total - ihl, ihl == 20 ? ip : nullptr);
  }

  Frame ipv6(Frame f, std::size_t off) {
    if (!have(off, 40)) return cut(f);
    const std::uint8_t* ip = d_ + off;
    if (ip[0] >> 4 != 6) return as(f, FrameKind::malformed);
    end_at(off + 40 + get16(ip + 4));
    const std::uint32_t traffic_class = get16(ip) >> 4 & 0xff;
    f.dscp = static_cast<std::uint8_t>(traffic_class >> 2);
    f.ecn = static_cast<std::uint8_t>(traffic_class & 3);
    f.src_ip.v6 = f.dst_ip.v6 = true;
    for (std::size_t i = 0; i < 16; ++i) {
      f.src_ip.bytes[i] = ip[8 + i];
      f.dst_ip.bytes[i] = ip[24 + i];
    }
    if (ip[6] != 17) return as(f, FrameKind::other);  // extension headers: not RoCE as sent
    return udp(f, off + 40, get16(ip + 4), ip);
  }

  // `len`: the IP payload's length; `ip`: the IP header, for the ICRC (null when it cannot
  // be checked).
  Frame udp(Frame f, std::size_t off, std::size_t len, const std::uint8_t* ip) {
    if (!have(off, 8)) return cut(f);
    if (get16(d_ + off + 2) != kRoceV2Port) return as(f, FrameKind::other);
    const std::size_t udp_len = get16(d_ + off + 4);
    if (udp_len < 8 || udp_len > len) return as(f, FrameKind::malformed);
    return bth(f, off + 8, udp_len - 8, ip, ip ? static_cast<std::size_t>(d_ + off - ip) + udp_len : 0);
  }

  // `len`: bytes from the BTH to the end of the ICRC; `ip`, `ip_len`: the IP header and the
  // bytes from it to the end of the ICRC.
  Frame bth(Frame f, std::size_t off, std::size_t len, const std::uint8_t* ip, std::size_t ip_len) {
    if (len < kBth + kIcrc) return as(f, FrameKind::malformed);
    if (!have(off, kBth)) return cut(f);
    const std::uint8_t* b = d_ + off;
    f.opcode = b[0];
    f.fecn = (b[4] & 0x80) != 0;
    f.becn = (b[4] & 0x40) != 0;
    f.dest_qp = get24(b + 5);
    f.ack_req = (b[8] & 0x80) != 0;
    f.psn = get24(b + 9);
    const int ext = extension_bytes(f.opcode);
    f.kind = FrameKind::roce;
    if (ext < 0) return f;
    const std::size_t pad = b[1] >> 4 & 3;
    if (kBth + static_cast<std::size_t>(ext) + pad + kIcrc > len) return as(f, FrameKind::malformed);
    f.opcode_known = true;
    f.payload = static_cast<std::uint32_t>(len - kBth - static_cast<std::size_t>(ext) - pad - kIcrc);
    if (has_aeth(f.opcode)) {
      if (!have(off + kBth, 4)) return cut(f);
      f.has_aeth = true;
      f.syndrome = d_[off + kBth];
    }
    if (ip && !f.roce_v1 && have(static_cast<std::size_t>(ip - d_), ip_len)) {
      f.icrc = fabric::roce_icrc(ip, ip_len - kIcrc) == get32le(ip + ip_len - kIcrc) ? Check::ok : Check::bad;
    }
    return f;
  }

  // GRE carrying ERSPAN: the mirrored frame inside is decoded in its place.
  Frame gre(Frame f, std::size_t off, std::size_t len) {
    if (!have(off, 4)) return cut(f);
    const std::uint32_t flags = get16(d_ + off), proto = get16(d_ + off + 2);
    std::size_t hdr = 4 + ((flags & 0x8000) ? 4 : 0) + ((flags & 0x2000) ? 4 : 0) + ((flags & 0x1000) ? 4 : 0);
    if (proto == 0x88be) {
      if (flags & 0x1000) hdr += 8;  // type II (a sequence number) has an 8-byte header; type I none
    } else if (proto == 0x22eb) {    // type III: 12 bytes, 8 more with the optional subheader (O)
      if (!have(off + hdr, 12)) return cut(f);
      hdr += 12 + ((d_[off + hdr + 11] & 1) ? 8 : 0);
    } else {
      return as(f, FrameKind::other);
    }
    if (hdr > len) return as(f, FrameKind::malformed);
    return ethernet(off + hdr, true);
  }

  void end_at(std::size_t end) {
    if (l3_end_ == 0) l3_end_ = end;  // the outer packet's (not an ERSPAN mirror's inner one)
  }

  const std::uint8_t* d_;
  std::size_t cap_;
  std::size_t l3_end_ = 0;
};

}  // namespace

bool carries_data(std::uint8_t op) {
  const std::uint8_t transport = op >> 5, code = op & 0x1f;
  if (transport == 3) return code == 4 || code == 5;
  if (transport == 1) return code <= 0x0b;
  if (transport != 0) return false;
  return code <= 0x0b || (code >= 0x0d && code <= 0x10) || code == 0x16 || code == 0x17;
}

AckKind ack_kind(std::uint8_t s) {
  switch (s >> 5 & 3) {
    case 0: return AckKind::ack;
    case 1: return AckKind::rnr_nak;
    case 3:
      switch (s & 0x1f) {
        case 0: return AckKind::nak_psn_sequence;
        case 1: return AckKind::nak_invalid_request;
        case 2: return AckKind::nak_remote_access;
        case 3: return AckKind::nak_remote_operational;
        default: return AckKind::nak_other;
      }
    default: return AckKind::nak_other;  // 10: reserved
  }
}

Frame decode_frame(const std::uint8_t* data, std::size_t caplen, std::size_t wire_len) {
  Decoder d(data, std::min(caplen, wire_len));
  Frame f = d.ethernet(0, false);
  // Checked where 4 bytes follow the IP (or GRH) packet, or a PFC frame is 64 bytes long
  // (60 and an FCS): a capture without FCS costs no CRC.
  const bool ip_with_fcs = d.l3_end() != 0 && d.l3_end() + 4 == wire_len;
  if (caplen >= wire_len && wire_len >= 64 && (ip_with_fcs || (f.kind == FrameKind::pfc && wire_len == 64))) {
    const bool matches = fabric::crc32(data, wire_len - 4) == get32le(data + wire_len - 4);
    // A minimum-size frame may end in padding rather than an FCS: not matching says nothing.
    f.fcs = matches ? Check::ok : ip_with_fcs && wire_len > 64 ? Check::bad : Check::unchecked;
  }
  return f;
}

std::string to_string(const Address& a) {
  const auto& b = a.bytes;
  if (!a.v6) return fmt::format("{}.{}.{}.{}", b[0], b[1], b[2], b[3]);
  std::uint32_t w[8];
  for (std::size_t i = 0; i < 8; ++i) w[i] = get16(b.data() + 2 * i);
  // RFC 5952: the longest run (of two or more) of zero words becomes "::", the first if tied.
  int best = -1, best_len = 1;
  for (int i = 0; i < 8;) {
    int j = i;
    while (j < 8 && w[j] == 0) ++j;
    if (j - i > best_len) best = i, best_len = j - i;
    i = j == i ? i + 1 : j;
  }
  std::string s;
  for (int i = 0; i < 8; ++i) {
    if (i == best) {
      s += "::";
      i += best_len - 1;
      continue;
    }
    if (!s.empty() && s.back() != ':') s += ':';
    s += fmt::format("{:x}", w[i]);
  }
  return s;
}

std::string mac_text(const std::array<std::uint8_t, 6>& m) {
  return fmt::format("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5]);
}

}  // namespace fabriclab::capture
