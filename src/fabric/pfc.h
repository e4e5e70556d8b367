// PFC (IEEE 802.1Qbb) as both ends of a link configure it, and its two sizing rules. One
// PfcConfig per network (SwitchConfig::pfc) is read by every switch and every NIC; nothing
// copies it.
//
// Headroom, per lossless priority group of a receiving port: the bytes that can still
// arrive once it decides to pause -- SONiC's formula, xoff = 2 x largest frame + 2 x the
// bytes on the cable + mac_phy_delay + peer_response (cell occupancy 1, no gearbox) --,
// a size given outright, or the HPCC ns-3 RDMA model's 3 x the port's one-way BDP
// (third.cc: rate x delay in whole ns / 8 / 10^9 x 3, in integers).
//
// Refresh: a paused sender is paused again at half the pause time, so half the pause time
// must cover a largest frame and the PFC frame itself at the port's rate.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/params.h"
#include "core/units.h"
#include "fabric/packet.h"

namespace fabriclab::fabric {

enum class HeadroomMode : std::uint8_t { formula, given, ns3 };
inline constexpr params::EnumNames<HeadroomMode, 3> kHeadroomModeNames{
    {{HeadroomMode::formula, "auto"}, {HeadroomMode::given, "given"}, {HeadroomMode::ns3, "ns3"}}};

struct PfcConfig {
  bool enabled = true;
  std::uint8_t lossless = 1u << 3;                     // priorities that never drop
  HeadroomMode headroom_mode = HeadroomMode::formula;  // per port, or `headroom`
  Bytes headroom = Bytes::from_count(64 << 10);
  Bytes mac_phy_delay = Bytes::from_count(1536);  // formula terms
  Bytes peer_response = Bytes::from_count(3840);
  Bytes xon_offset = Bytes::from_count(8192);  // resume this far below the pause point
  std::uint16_t pause_quanta = 0xffff;         // per pause frame, in 512-bit times
  // How a port takes a pause it receives: for its quanta (802.1Qbb; the sender refreshes
  // it), or until the XON whatever its quanta (the ns-3 RDMA model's PFC).
  bool pause_until_xon = false;
  // Whether a pausing receiver sends the pause again at half its time while XOFF holds
  // (802.1Qbb practice), or once per XOFF (the ns-3 RDMA model); off needs
  // pause_until_xon, or the sender would resume while XOFF holds.
  bool refresh = true;

  // The lossless priorities in force: none when PFC is off.
  std::uint8_t active() const { return enabled ? lossless : std::uint8_t{0}; }
};

// How long `quanta` pause quanta (512 bit times each) last at `rate`.
inline Time pause_time(std::uint32_t quanta, BitRate rate) {
  return serialization_time(Bytes::from_count(64 * static_cast<std::int64_t>(quanta)), rate);
}

// Headroom bytes per lossless group of a port at `rate` over a cable of `delay`, receiving
// frames of at most `max_frame` bytes.
std::int64_t headroom_bytes(const PfcConfig& c, std::int64_t max_frame, BitRate rate, Time delay);

// Throws InputError naming `who` when c.pause_quanta, refreshed at half, is shorter than a
// largest frame plus a PFC frame at `rate`; or when refresh is off and a pause expires.
void check_pause_refresh(const PfcConfig& c, std::int64_t max_frame, BitRate rate, std::string_view who,
                         const WireFormat& wire = {});

}  // namespace fabriclab::fabric
