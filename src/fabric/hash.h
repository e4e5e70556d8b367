// Hash functions a switch can use for ECMP over the RoCEv2 5-tuple (source and
// destination IPv4 address, UDP source port, UDP destination port 4791, protocol 17),
// prefixed with the switch's 32-bit seed:
//   crc32   CRC-32 (IEEE 802.3, reflected 0xEDB88320, as zlib computes it; by libdeflate)
//   crc16   CRC-16/CCITT-FALSE (0x1021, init 0xFFFF, not reflected)
//   xor     the 16-bit halves of every 32-bit word of the input XOR-folded together
// Equal functions and seeds at two tiers polarize: the second tier sees only the hashes
// the first tier sent its way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/params.h"

namespace fabriclab::fabric {

enum class HashFunction : std::uint8_t { crc32, crc16, xor_fold };
inline constexpr params::EnumNames<HashFunction, 3> kHashFunctionNames{
    {{HashFunction::crc32, "crc32"}, {HashFunction::crc16, "crc16"}, {HashFunction::xor_fold, "xor"}}};

// Which 5-tuple fields enter the hash (the others hash as zeros), as a bit mask.
enum HashField : std::uint8_t { kSrcIp = 1, kDstIp = 2, kSrcPort = 4, kDstPort = 8, kProtocol = 16 };
inline constexpr std::uint8_t kAllHashFields = kSrcIp | kDstIp | kSrcPort | kDstPort | kProtocol;
inline constexpr params::EnumNames<HashField, 5> kHashFieldNames{
    {{kSrcIp, "src_ip"}, {kDstIp, "dst_ip"}, {kSrcPort, "src_port"}, {kDstPort, "dst_port"}, {kProtocol, "protocol"}}};
// "src_ip,dst_ip,src_port,dst_port,protocol" (any non-empty subset); throws InputError.
std::uint8_t parse_hash_fields(const std::string& list);
// The fields of `mask` in that order, comma-separated: parse_hash_fields reads it back.
std::string hash_fields_text(std::uint8_t mask);

HashFunction parse_hash_function(const std::string& name);  // throws InputError
const char* to_string(HashFunction f);

std::uint32_t crc32(const std::uint8_t* data, std::size_t n);
std::uint16_t crc16_ccitt(const std::uint8_t* data, std::size_t n);

// The IPv4 address the simulator gives host h: 10.0.0.0 + h + 1.
inline std::uint32_t host_ipv4(std::uint32_t host) { return 0x0a000000u + host + 1; }

std::uint32_t flow_hash(HashFunction f, std::uint32_t seed, std::uint32_t src_ip, std::uint32_t dst_ip,
                        std::uint16_t udp_sport, std::uint8_t fields = kAllHashFields);

// The same hash in two halves, so that a switch does one XOR per packet: every function
// here is affine over GF(2) in its input, so for messages of equal length
// h(seed || tuple) = h(seed || 0) ^ h(0 || tuple) ^ h(0 || 0). The NIC computes the
// tuple's key once per QP and carries it in the packet; the switch keeps its seed's.
//   flow_hash(f, seed, ...) == flow_hash_seed(f, seed) ^ flow_hash_key(f, ...)
std::uint32_t flow_hash_key(HashFunction f, std::uint32_t src_ip, std::uint32_t dst_ip, std::uint16_t udp_sport,
                            std::uint8_t fields = kAllHashFields);
std::uint32_t flow_hash_seed(HashFunction f, std::uint32_t seed);

}  // namespace fabriclab::fabric
