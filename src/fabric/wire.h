// The bytes of a simulated frame, synthesized only for pcap output: Ethernet with an
// 802.1Q priority tag (VID 0, PCP = priority), IPv4 (DSCP = 8 x priority, the packet's
// ECN bits, DF, TTL 64, header checksum), UDP to 4791 (checksum 0, as RoCEv2 allows),
// BTH, RETH/AETH or the CNP's 16 reserved bytes, a zero payload padded to 4 bytes, and
// the ICRC; PFC frames as 802.1Qbb MAC control frames. The FCS is not included (as a
// capture would not show it). Host h has MAC 02:00:00:hh:hh:hh and IPv4 10.0.0.0 + h + 1;
// a QP's number on the wire is its index in its host plus kWireQpnBase, clear of the
// management QPs 0 and 1 (which dissectors read as MADs).
#pragma once

#include <cstddef>
#include <cstdint>

#include "fabric/packet.h"
#include "fabric/telemetry.h"

namespace fabriclab::fabric {

inline constexpr std::uint32_t kWireQpnBase = 0x100;

// Largest frame encode_frame writes (9000-byte MTU with headers).
inline constexpr std::size_t kMaxFrameBytes = 9216;

// Writes the frame into `out` (kMaxFrameBytes) and returns its length. `sender_mac` is the
// source MAC of a PFC frame (the port that sends it); data, ACK and CNP frames carry the
// hosts' MACs. A packet with an INT stack (`telemetry`) carries HPCC's INT header between
// its payload (with its pad) and the ICRC, counted in the IP and UDP lengths and covered
// by the ICRC, so that dissectors show it as the last bytes of the RDMA payload (or, on
// an ACK, as data after the AETH): a 2-byte hop count, then `slots` 8-byte words, big
// endian, one per hop in the order the switches were crossed (unused ones zero):
//   bits 63..61  the hop's line rate: 0 25G, 1 50G, 2 100G, 3 200G, 4 400G, 7 another
//   bits 60..37  the time the packet started leaving the port, ns mod 2^24
//   bits 36..17  the bytes the port had sent, 128-byte units mod 2^20
//   bits 16..0   the bytes queued at the port, 80-byte units (at most 2^17 - 1)
// (the fields of the HPCC ns-3 model's IntHop at INT_MULTI = 1, in a layout of our own;
// the simulation reads the exact values).
// HPCC-PINT's header (`pint_bytes` 1 or 2) is the PINT code alone, big endian.
std::size_t encode_frame(const Packet& p, const std::uint8_t (&sender_mac)[6], std::uint8_t* out,
                         IntOnWire telemetry = {});
// One hop's 8-byte word in that header.
std::uint64_t int_hop_word(const IntHop& h);

// Appends the Ethernet FCS to the `len` bytes of a frame at `frame` (CRC-32 of them, least
// significant byte first, as it goes on the wire) and returns the new length; `frame` has
// room for 4 more bytes.
std::size_t append_fcs(std::uint8_t* frame, std::size_t len);

// The RoCEv2 invariant CRC of an IPv4 or IPv6 packet (`ip` starts at the IP header, its
// version nibble says which; `len` stops before the ICRC): CRC-32 over 8 bytes of 0xFF
// (the masked LRH), the IP header with its variant fields masked to ones (IPv4: TOS, TTL
// and checksum; IPv6: traffic class, flow label and hop limit), the UDP header with its
// checksum masked, the BTH with its FECN/BECN/reserved byte masked, and the rest. The ICRC's wire bytes are
// this value little-endian first (as Linux rxe stores it).
std::uint32_t roce_icrc(const std::uint8_t* ip, std::size_t len);

}  // namespace fabriclab::fabric
