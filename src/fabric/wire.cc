#include "fabric/wire.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <libdeflate.h>

#include "fabric/hash.h"

namespace fabriclab::fabric {

namespace {

void put16(std::uint8_t* b, std::uint32_t v) {
  b[0] = static_cast<std::uint8_t>(v >> 8);
  b[1] = static_cast<std::uint8_t>(v);
}
void put24(std::uint8_t* b, std::uint32_t v) {
  b[0] = static_cast<std::uint8_t>(v >> 16);
  b[1] = static_cast<std::uint8_t>(v >> 8);
  b[2] = static_cast<std::uint8_t>(v);
}
void put32(std::uint8_t* b, std::uint32_t v) {
  put16(b, v >> 16);
  put16(b + 2, v);
}
void host_mac(std::uint32_t host, std::uint8_t* b) {
  b[0] = 0x02;
  b[1] = b[2] = 0;
  put24(b + 3, host);
}

std::uint16_t ip_checksum(const std::uint8_t* h) {
  std::uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += static_cast<std::uint32_t>(h[i] << 8 | h[i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

}  // namespace

std::uint32_t roce_icrc(const std::uint8_t* ip, std::size_t len) {
  const bool v6 = ip[0] >> 4 == 6;
  const std::size_t ip_len = v6 ? 40 : 20;
  if (len < ip_len + 8 + 12) throw std::invalid_argument("roce_icrc: shorter than IP + UDP + BTH");
  // The masked invariant part: FF x 8, then IP + UDP + BTH with the variant fields set to 1s.
  std::uint8_t head[8 + 40 + 8 + 12];
  const std::size_t head_len = 8 + ip_len + 8 + 12;
  std::memset(head, 0xff, 8);
  std::memcpy(head + 8, ip, ip_len + 8 + 12);
  std::uint8_t* iph = head + 8;
  if (v6) {
    iph[0] |= 0x0f;                   // traffic class (high nibble) ...
    iph[1] = iph[2] = iph[3] = 0xff;  // ... its low nibble and the flow label
    iph[7] = 0xff;                    // hop limit
  } else {
    iph[1] = 0xff;             // TOS (DSCP + ECN)
    iph[8] = 0xff;             // TTL
    iph[10] = iph[11] = 0xff;  // header checksum
  }
  std::uint8_t* udp = iph + ip_len;
  udp[6] = udp[7] = 0xff;  // UDP checksum
  std::uint8_t* bth = udp + 8;
  bth[4] = 0xff;  // FECN, BECN, reserved
  std::uint32_t c = crc32(head, head_len);
  c = libdeflate_crc32(c, ip + head_len - 8, len - (head_len - 8));
  return c;
}

std::size_t append_fcs(std::uint8_t* frame, std::size_t len) {
  const std::uint32_t c = crc32(frame, len);
  for (std::size_t i = 0; i < 4; ++i) frame[len + i] = static_cast<std::uint8_t>(c >> (8 * i));
  return len + 4;
}

std::uint64_t int_hop_word(const IntHop& h) {
  std::uint64_t code = 7;
  const std::int64_t rates[] = {25'000'000'000, 50'000'000'000, 100'000'000'000, 200'000'000'000, 400'000'000'000};
  for (std::uint64_t i = 0; i < 5; ++i)
    if (h.rate.bps() == rates[i]) code = i;
  const auto ns = static_cast<std::uint64_t>(h.at.ps() / 1000);
  const std::uint64_t qlen = std::min<std::uint64_t>(h.qlen / 80, (1u << 17) - 1);
  return code << 61 | (ns & 0xffffff) << 37 | (h.tx_bytes / 128 & 0xfffff) << 17 | qlen;
}

std::size_t encode_frame(const Packet& p, const std::uint8_t (&sender_mac)[6], std::uint8_t* out, IntOnWire telemetry) {
  if (p.opcode == Opcode::pfc) {
    std::memset(out, 0, 60);
    const std::uint8_t dst[6] = {0x01, 0x80, 0xc2, 0x00, 0x00, 0x01};
    std::memcpy(out, dst, 6);
    std::memcpy(out + 6, sender_mac, 6);
    put16(out + 12, 0x8808);                 // MAC control
    put16(out + 14, 0x0101);                 // priority-based flow control
    put16(out + 16, 1u << p.pause_class());  // class-enable vector
    put16(out + 18 + 2 * p.pause_class(), p.pause_quanta());
    return 60;
  }
  const std::uint32_t pad = is_data(p.opcode) ? (4 - p.payload % 4) % 4 : 0;
  std::uint32_t transport = 12;  // BTH
  if (p.opcode == Opcode::rc_ack) transport += 4;
  else if (p.opcode == Opcode::cnp) transport += 16;
  else if (has_reth(p.opcode)) transport += 16;
  const bool with_int = p.telemetry && telemetry.stack;
  const std::uint32_t int_len = !with_int                  ? 0
                                : telemetry.pint_bytes > 0 ? telemetry.pint_bytes
                                                           : kIntHeaderBytes + kIntHopBytes * telemetry.slots;
  const std::uint32_t ip_len = 20 + 8 + transport + p.payload + pad + int_len + 4;
  if (18 + ip_len > kMaxFrameBytes) throw std::logic_error("encode_frame: frame larger than kMaxFrameBytes");

  std::uint8_t* b = out;
  host_mac(p.dst, b);
  host_mac(p.src, b + 6);
  put16(b + 12, 0x8100);
  put16(b + 14, static_cast<std::uint32_t>(p.priority) << 13);  // PCP, DEI 0, VID 0
  put16(b + 16, 0x0800);
  std::uint8_t* ip = b + 18;
  ip[0] = 0x45;
  ip[1] = static_cast<std::uint8_t>((p.dscp & 63) << 2 | (p.ecn & 3));
  put16(ip + 2, ip_len);
  put16(ip + 4, p.psn & 0xffff);  // identification
  put16(ip + 6, 0x4000);          // DF
  ip[8] = p.ttl;
  ip[9] = 17;
  put16(ip + 10, 0);
  put32(ip + 12, host_ipv4(p.src));
  put32(ip + 16, host_ipv4(p.dst));
  put16(ip + 10, ip_checksum(ip));
  std::uint8_t* udp = ip + 20;
  put16(udp, p.udp_sport);
  put16(udp + 2, kRoceUdpPort);
  put16(udp + 4, ip_len - 20);
  put16(udp + 6, 0);
  std::uint8_t* bth = udp + 8;
  bth[0] = static_cast<std::uint8_t>(p.opcode);
  bth[1] = static_cast<std::uint8_t>(pad << 4);  // SE 0, M 0, pad count, TVer 0
  put16(bth + 2, 0xffff);                        // P_Key
  // FECN, BECN (a CNP's: RoCEv2 Annex A17), reserved; a trimmed header (switch.trim, which
  // RoCE does not define) is marked with the lowest reserved bit.
  bth[4] = static_cast<std::uint8_t>((p.opcode == Opcode::cnp || p.becn ? 0x40 : 0) | (p.trimmed ? 0x01 : 0));
  put24(bth + 5, (p.dst_qp + kWireQpnBase) & 0xffffff);
  const bool ack_req = is_data(p.opcode) && is_last(p.opcode) && static_cast<std::uint8_t>(p.opcode) < 0x20;
  bth[8] = ack_req ? 0x80 : 0;
  put24(bth + 9, p.psn & kPsnMask);
  std::uint8_t* ext = bth + 12;
  std::uint32_t ext_len = transport - 12;
  std::memset(ext, 0, ext_len);
  if (p.opcode == Opcode::rc_ack) ext[0] = p.syndrome;            // AETH: syndrome, MSN 0
  else if (has_reth(p.opcode)) put32(ext + 12, p.message_bytes);  // RETH: VA 0, R_Key 0, DMA length
  std::uint8_t* payload = ext + ext_len;
  std::memset(payload, 0, p.payload + pad);
  std::uint8_t* icrc = payload + p.payload + pad;
  if (with_int) {
    const IntStack& s = *telemetry.stack;
    std::memset(icrc, 0, int_len);
    if (telemetry.pint_bytes == 1) icrc[0] = static_cast<std::uint8_t>(s.pint);
    else if (telemetry.pint_bytes == 2) put16(icrc, s.pint);
    else put16(icrc, s.hops);
    for (std::uint32_t i = 0; i < s.hops && i < telemetry.slots && telemetry.pint_bytes == 0; ++i) {
      const std::uint64_t w = int_hop_word(s.hop[i]);
      put32(icrc + kIntHeaderBytes + kIntHopBytes * i, static_cast<std::uint32_t>(w >> 32));
      put32(icrc + kIntHeaderBytes + kIntHopBytes * i + 4, static_cast<std::uint32_t>(w));
    }
    icrc += int_len;
  }
  const std::uint32_t c = roce_icrc(ip, static_cast<std::size_t>(icrc - ip));
  icrc[0] = static_cast<std::uint8_t>(c);
  icrc[1] = static_cast<std::uint8_t>(c >> 8);
  icrc[2] = static_cast<std::uint8_t>(c >> 16);
  icrc[3] = static_cast<std::uint8_t>(c >> 24);
  // Damaged on the link: one bit of the payload (or of the ICRC) differs from what the
  // ICRC covers, as a receiver would see it.
  if (p.corrupted) (p.payload > 0 ? payload[0] : icrc[0]) ^= 0x01;
  return static_cast<std::size_t>(icrc + 4 - out);
}

}  // namespace fabriclab::fabric
