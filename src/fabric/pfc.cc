#include "fabric/pfc.h"

#include <fmt/format.h>

#include "core/error.h"
#include "fabric/packet.h"

namespace fabriclab::fabric {

std::int64_t headroom_bytes(const PfcConfig& c, std::int64_t max_frame, BitRate rate, Time delay) {
  if (c.headroom_mode == HeadroomMode::given) return c.headroom.count();
  if (c.headroom_mode == HeadroomMode::ns3) {
    __extension__ using u128 = unsigned __int128;
    const u128 bdp = static_cast<u128>(rate.bps()) * static_cast<u128>(delay.ps() / 1000) / 8 / 1'000'000'000;
    if (bdp * 3 > static_cast<u128>(INT64_MAX))
      throw InputError("switch.pfc.headroom = \"ns3\": 3 x the one-way BDP of a " + to_string(rate) + " link of " +
                       to_string(delay) + " overflows");
    return static_cast<std::int64_t>(bdp * 3);
  }
  const std::int64_t cable = bytes_in(rate, delay).count();
  return 2 * max_frame + 2 * cable + c.mac_phy_delay.count() + c.peer_response.count();
}

void check_pause_refresh(const PfcConfig& c, std::int64_t max_frame, BitRate rate, std::string_view who,
                         const WireFormat& wire) {
  if (!c.refresh) {
    if (!c.pause_until_xon)
      throw InputError(fmt::format("{}: switch.pfc.pause_refresh = \"off\" needs switch.pfc.pause_expiry = \"xon\": "
                                   "a pause that is not refreshed would expire while XOFF holds",
                                   who));
    return;
  }
  const Time half = Time::from_ps(pause_time(c.pause_quanta, rate).ps() / 2);
  const Time need = serialization_time(Bytes::from_count(max_frame + wire.gap_bytes), rate, wire.rounding) +
                    serialization_time(Bytes::from_count(wire.pfc_frame_bytes + wire.gap_bytes), rate, wire.rounding);
  if (half < need)
    throw InputError(fmt::format("{}: a pause of {} quanta is refreshed every {} at {}, less than a largest frame "
                                 "plus a PFC frame ({}): raise switch.pfc.pause_quanta",
                                 who, c.pause_quanta, to_string(half), to_string(rate), to_string(need)));
}

}  // namespace fabriclab::fabric
