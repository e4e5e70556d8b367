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

namespace fabriclab::fabric {

inline constexpr std::uint32_t kWireQpnBase = 0x100;

// Largest frame encode_frame writes (9000-byte MTU with headers).
inline constexpr std::size_t kMaxFrameBytes = 9216;

// Writes the frame into `out` (kMaxFrameBytes) and returns its length. `sender_mac` is the
// source MAC of a PFC frame (the port that sends it); data, ACK and CNP frames carry the
// hosts' MACs.
std::size_t encode_frame(const Packet& p, const std::uint8_t (&sender_mac)[6], std::uint8_t* out);

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
