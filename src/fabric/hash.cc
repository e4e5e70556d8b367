#include "fabric/hash.h"

#include <libdeflate.h>

#include <array>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "fabric/packet.h"

namespace fabriclab::fabric {

HashFunction parse_hash_function(const std::string& name) {
  return params::parse_enum(kHashFunctionNames, name, "hash function");
}

const char* to_string(HashFunction f) { return params::name_of(kHashFunctionNames, f).data(); }

std::uint32_t crc32(const std::uint8_t* data, std::size_t n) { return libdeflate_crc32(0, data, n); }

namespace {
constexpr std::array<std::uint16_t, 256> make_crc16_table() {
  std::array<std::uint16_t, 256> t{};
  for (unsigned i = 0; i < 256; ++i) {
    std::uint16_t c = static_cast<std::uint16_t>(i << 8);
    for (int k = 0; k < 8; ++k) c = static_cast<std::uint16_t>((c & 0x8000) ? (c << 1) ^ 0x1021 : c << 1);
    t[i] = c;
  }
  return t;
}
constexpr auto kCrc16 = make_crc16_table();
}  // namespace

std::uint16_t crc16_ccitt(const std::uint8_t* data, std::size_t n) {
  std::uint16_t c = 0xffff;
  for (std::size_t i = 0; i < n; ++i) c = static_cast<std::uint16_t>((c << 8) ^ kCrc16[((c >> 8) ^ data[i]) & 0xff]);
  return c;
}

namespace {
std::uint16_t fold(std::uint32_t x) { return static_cast<std::uint16_t>((x >> 16) ^ (x & 0xffff)); }

// The 17 hashed bytes in network order: seed, source IP, destination IP, UDP source
// port, UDP destination port (4791), IP protocol (17). `tuple` false zeroes the last 13.
std::uint32_t crc_of(HashFunction f, std::uint32_t seed, std::uint32_t src_ip, std::uint32_t dst_ip,
                     std::uint16_t udp_sport, std::uint8_t fields) {
  src_ip = (fields & kSrcIp) ? src_ip : 0;
  dst_ip = (fields & kDstIp) ? dst_ip : 0;
  udp_sport = (fields & kSrcPort) ? udp_sport : 0;
  const std::uint16_t dport = (fields & kDstPort) ? kRoceUdpPort : 0;
  const std::uint8_t proto = (fields & kProtocol) ? 17 : 0;
  // Two bytes a line, each field's bytes together.
  // clang-format off
  const std::uint8_t b[17] = {
      static_cast<std::uint8_t>(seed >> 24),   static_cast<std::uint8_t>(seed >> 16),
      static_cast<std::uint8_t>(seed >> 8),    static_cast<std::uint8_t>(seed),
      static_cast<std::uint8_t>(src_ip >> 24), static_cast<std::uint8_t>(src_ip >> 16),
      static_cast<std::uint8_t>(src_ip >> 8),  static_cast<std::uint8_t>(src_ip),
      static_cast<std::uint8_t>(dst_ip >> 24), static_cast<std::uint8_t>(dst_ip >> 16),
      static_cast<std::uint8_t>(dst_ip >> 8),  static_cast<std::uint8_t>(dst_ip),
      static_cast<std::uint8_t>(udp_sport >> 8), static_cast<std::uint8_t>(udp_sport),
      static_cast<std::uint8_t>(dport >> 8),   static_cast<std::uint8_t>(dport & 0xff),
      proto};
  // clang-format on
  return f == HashFunction::crc32 ? crc32(b, sizeof b) : crc16_ccitt(b, sizeof b);
}

std::uint32_t tuple_xor(std::uint32_t src_ip, std::uint32_t dst_ip, std::uint16_t udp_sport, std::uint8_t fields) {
  const std::uint32_t sport = (fields & kSrcPort) ? udp_sport : 0;
  const std::uint32_t dport = (fields & kDstPort) ? kRoceUdpPort : 0;
  return ((fields & kSrcIp) ? src_ip : 0) ^ ((fields & kDstIp) ? dst_ip : 0) ^ (sport << 16 | dport) ^
         ((fields & kProtocol) ? 17u : 0u);
}
}  // namespace

std::uint32_t flow_hash(HashFunction f, std::uint32_t seed, std::uint32_t src_ip, std::uint32_t dst_ip,
                        std::uint16_t udp_sport, std::uint8_t fields) {
  if (f == HashFunction::xor_fold) return fold(seed ^ tuple_xor(src_ip, dst_ip, udp_sport, fields));
  return crc_of(f, seed, src_ip, dst_ip, udp_sport, fields);
}

std::uint32_t flow_hash_key(HashFunction f, std::uint32_t src_ip, std::uint32_t dst_ip, std::uint16_t udp_sport,
                            std::uint8_t fields) {
  if (f == HashFunction::xor_fold) return fold(tuple_xor(src_ip, dst_ip, udp_sport, fields));
  return crc_of(f, 0, src_ip, dst_ip, udp_sport, fields);  // h(0 || tuple)
}

std::uint32_t flow_hash_seed(HashFunction f, std::uint32_t seed) {
  if (f == HashFunction::xor_fold) return fold(seed);
  return crc_of(f, seed, 0, 0, 0, 0) ^ crc_of(f, 0, 0, 0, 0, 0);  // h(seed || 0) ^ h(0)
}

std::uint8_t parse_hash_fields(const std::string& list) {
  std::uint8_t m = 0;
  std::size_t pos = 0;
  while (pos <= list.size()) {
    const auto comma = list.find(',', pos);
    std::string f = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    f.erase(0, f.find_first_not_of(' '));
    f.erase(f.find_last_not_of(' ') + 1);
    m = static_cast<std::uint8_t>(m | params::parse_enum(kHashFieldNames, f, "hash field"));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return m;
}

std::string hash_fields_text(std::uint8_t mask) {
  std::vector<std::string_view> names;
  for (const auto& f : kHashFieldNames)
    if (mask & f.value) names.push_back(f.name);
  return fmt::format("{}", fmt::join(names, ","));
}

}  // namespace fabriclab::fabric
