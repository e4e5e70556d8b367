#include "fabric/params.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace fabriclab::fabric {

using params::Kind;
using params::Spec;
using params::Value;

std::uint8_t priority_mask(const std::string& list) {
  std::uint8_t m = 0;
  for (const std::string& item : params::split_list(list)) {
    const auto v = params::parse_integer(item);
    if (!v || *v < 0 || *v > 7) throw InputError(fmt::format("'{}' is not a priority 0..7", item));
    m = static_cast<std::uint8_t>(m | (1u << *v));
  }
  return m;
}

std::string priority_list_text(std::uint8_t mask) {
  std::vector<int> prios;
  for (int p = 0; p < 8; ++p)
    if (mask & (1u << p)) prios.push_back(p);
  return fmt::format("{}", fmt::join(prios, ","));
}

namespace {
std::vector<std::string> cc_policy_names() {
  std::vector<std::string> names;
  for (const CcPolicy& p : cc_policies()) names.emplace_back(p.name);
  return names;
}

// "RATE=VALUE,...": each item's rate and value text, at most 64, no rate twice; errors
// name the item.
std::vector<std::pair<BitRate, std::string>> by_rate_items(const std::string& text) {
  std::vector<std::pair<BitRate, std::string>> out;
  if (text.empty()) return out;
  const auto items = params::split_list(text);
  if (items.size() > 64) throw InputError(fmt::format("{} rates: at most 64", items.size()));
  for (const std::string& item : items) {
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) throw InputError(fmt::format("'{}': expected RATE=VALUE", item));
    BitRate rate;
    try {
      rate = parse_bit_rate(item.substr(0, eq));
    } catch (const InputError& e) {
      throw InputError(fmt::format("'{}': {}", item, e.what()));
    }
    for (const auto& [r, v] : out)
      if (r == rate) throw InputError(fmt::format("'{}': {} is given twice", item, to_string(rate)));
    out.emplace_back(rate, item.substr(eq + 1));
  }
  return out;
}
}  // namespace

const params::Table<DcqcnParams>& dcqcn_table() {
  static const auto table = [] {
    using P = DcqcnParams;
    params::Table<P> t;
    t.integer("rate_reduce_monitor_period", &P::rate_reduce_monitor_period,
              "us between rate cuts of a QP that saw a CNP (0 = cut at each CNP)", 0, 1'000'000)
        .integer("initial_alpha_value", &P::initial_alpha_value,
                 "alpha (/1024) set by the first CNP (1024: alpha = 1, as ns-3 sets it)", 0, 1024)
        .rate_in("Mbps", "rate_to_set_on_first_cnp", &P::rate_to_set_on_first_cnp,
                 "Mb/s set by the first CNP at full rate (0 = keep)", "0", "10000000")
        .integer("rpg_gd", &P::rpg_gd, "cut = Rc alpha_raw / 2^rpg_gd (11: Rc alpha/2)", 1, 20)
        .integer("rpg_min_dec_fac", &P::rpg_min_dec_fac, "a cut keeps at least this percent of Rc", 0, 100)
        .rate_in("Mbps", "rpg_min_rate", &P::rpg_min_rate, "Mb/s floor of Rc", "0.001", "10000000")
        .integer("dce_tcp_rtt", &P::dce_tcp_rtt, "us between alpha updates (the paper's K)", 1, 1'000'000)
        .integer("dce_tcp_g", &P::dce_tcp_g, "weight of the old alpha, out of 1024 (1020: the paper's g = 1/256)", 0,
                 1024)
        .integer("rpg_time_reset", &P::rpg_time_reset, "us of the rate-increase timer (the paper's T_inc)", 1,
                 10'000'000)
        .integer("rpg_byte_reset", &P::rpg_byte_reset,
                 "64-byte units sent per byte-counter increase, 0 = off (the paper's B = 10 MiB: 163840)", 0,
                 67'108'864)
        .integer("rpg_threshold", &P::rpg_threshold, "F: increase stages before additive increase", 0, 1000)
        .rate_in("Mbps", "rpg_ai_rate", &P::rpg_ai_rate, "Mb/s of additive increase (the paper's R_AI)", "0",
                 "10000000")
        .rate_in("Mbps", "rpg_hai_rate", &P::rpg_hai_rate, "Mb/s of hyper increase (the paper's R_HAI)", "0",
                 "10000000")
        .rate_in("Mbps", "rpg_max_rate", &P::rpg_max_rate, "Mb/s ceiling (0 = line rate)", "0", "10000000");
    // sysfs flags: 0 or 1.
    const auto flag01 = [&t](const char* key, bool P::*m, const char* help) {
      t.custom(
          {key, Kind::integer, help, "0", "1", {}}, [m](P& p, const Value& v) { p.*m = v.i != 0; },
          [m](const P& p) { return std::string(p.*m ? "1" : "0"); });
    };
    flag01("clamp_tgt_rate", &P::clamp_tgt_rate, "1: every cut sets Rt = Rc first");
    flag01("clamp_tgt_rate_after_time_inc", &P::clamp_tgt_rate_after_time_inc,
           "1: a cut sets Rt = Rc if the timer raised the rate since the last");
    t.choice("stage_compare", &P::stage_compare, kStageCompareNames,
             "an increase event compares its stage with F after raising it (F - 1 fast-recovery steps) or before "
             "(F steps)")
        .choice("increase_stages", &P::increase_stages, kIncreaseStagesNames,
                "the phase read off both counters (max and min of T, BC) or the timer's T alone")
        .choice("hyper_increase", &P::hyper_increase, kHyperIncreaseNames,
                "hyper increase adds (stage - F) R_HAI (growing) or R_HAI (constant)")
        .choice("alpha_after_recovery", &P::alpha_after_recovery, kAlphaAfterRecoveryNames,
                "the first CNP after a full recovery sets alpha again (reset) or only a QP's first CNP does (keep)")
        .choice("cut_grid", &P::cut_grid, kCutGridNames,
                "rate checks on the simulator's clock (global) or on a QP's own clock from its first CNP")
        .choice("cut_alpha", &P::cut_alpha, kCutAlphaNames,
                "a cut reads alpha in 1/1024 steps (quantized) or as it is (exact)");
    return t;
  }();
  return table;
}

const params::Table<DctcpParams>& dctcp_table() {
  static const auto table = [] {
    using P = DctcpParams;
    params::Table<P> t;
    t.custom(
        {"preset", Kind::choice, "DCTCP values before any nic.dctcp key set beside it", "", "", {"default", "ns3"}},
        [](P& p, const Value& v) { p = P::preset_named(v.text); }, [](const P& p) { return p.preset; },
        /*preset=*/true);
    t.real("g", &P::g, "EWMA gain of alpha, updated once per round trip from the echoed fraction", "0", "1")
        .real("initial_alpha", &P::initial_alpha, "alpha of a new QP", "0", "1")
        .rate_in("Mbps", "rate_ai", &P::rate_ai,
                 "Mb/s added per round trip without a mark (0 = one MTU per base RTT, DCTCP's one segment)", "0",
                 "10000000")
        .rate_in("Mbps", "min_rate", &P::min_rate, "Mb/s floor of a cut", "0.001", "10000000")
        .choice("window", &P::window, kCcWindowNames,
                "bytes in flight bounded by the rate's share of line x base RTT (rate_bdp) or not (off)");
    return t;
  }();
  return table;
}

const params::Table<HpccParams>& hpcc_table() {
  static const auto table = [] {
    using P = HpccParams;
    params::Table<P> t;
    t.custom(
        {"preset", Kind::choice, "HPCC values before any nic.hpcc key set beside it", "", "", {"paper", "ns3"}},
        [](P& p, const Value& v) { p = P::preset_named(v.text); }, [](const P& p) { return p.preset; },
        /*preset=*/true);
    t.real("eta", &P::eta, "target utilization of the most loaded link", "0.01", "1")
        .integer("max_stage", &P::max_stage, "additive rounds before a multiplicative step (the paper's maxStage)", 0,
                 1'000'000)
        .rate_in("Mbps", "rai", &P::rai, "Mb/s of additive increase, W_AI / T (0 = line / 2500: 40 at 100 Gb/s)", "0",
                 "10000000")
        .rate_in("Mbps", "min_rate", &P::min_rate, "Mb/s floor of the rate", "0.001", "10000000")
        .flag("fast_react", &P::fast_react, "every ACK reacts (without moving the reference), not only one per RTT")
        .choice("feedback", &P::feedback, kHpccFeedbackNames,
                "what the switches report: a record per hop (int) or PINT's code of the path's largest utilization "
                "(pint, 1-2 bytes: HPCC-PINT)")
        .real("pint_log_base", &P::pint_log_base,
              "pint: the code is a power of this (1.05: 8 bits, 1 byte on the wire; 1.01: 11 bits, 2)", "1.001", "2")
        .real("pint_prob", &P::pint_prob, "pint: the share of ACKs the sender reads (each by a random draw)", "0.001",
              "1");
    return t;
  }();
  return table;
}

const params::Table<TimelyParams>& timely_table() {
  static const auto table = [] {
    using P = TimelyParams;
    params::Table<P> t;
    t.custom(
        {"preset",
         Kind::choice,
         "TIMELY values before any nic.timely key set beside it",
         "",
         "",
         {"paper", "ns3", "ns3-vwin"}},
        [](P& p, const Value& v) { p = P::preset_named(v.text); }, [](const P& p) { return p.preset; },
        /*preset=*/true);
    t.time("t_low", &P::t_low, "below this RTT the rate rises by ai whatever the gradient", "0ps", "1s")
        .time("t_high", &P::t_high, "above this RTT the rate falls by beta (1 - t_high/rtt)", "0ps", "1s")
        .time("min_rtt", &P::min_rtt, "normalizes the RTT gradient", "1ps", "1s")
        .real("alpha", &P::alpha, "EWMA weight of the newest RTT difference", "0", "1")
        .real("beta", &P::beta, "multiplicative decrease factor", "0", "1")
        .rate_in("Mbps", "ai", &P::ai, "Mb/s of additive increase (the paper's delta)", "0", "10000000")
        .rate_in("Mbps", "hai_rate", &P::hai_rate, "Mb/s of hyper-active increase (0 = hai_after x ai)", "0",
                 "10000000")
        .integer("hai_after", &P::hai_after, "N: counted updates before the hyper-active increase", 1, 1'000'000)
        .rate_in("Mbps", "min_rate", &P::min_rate, "Mb/s floor of the rate", "0.001", "10000000")
        .choice("update", &P::update, kTimelyUpdateNames,
                "every ACK with an RTT sample updates (per_ack) or the first one per round trip (per_rtt)")
        .choice("hai_count", &P::hai_count, kTimelyHaiCountNames,
                "N counts updates with a gradient <= 0 (gradient) or increases of either kind (increases)")
        .choice("window", &P::window, kCcWindowNames,
                "bytes in flight bounded by the rate's share of line x base RTT (rate_bdp) or not (off)");
    return t;
  }();
  return table;
}

const params::Table<SwiftParams>& swift_table() {
  static const auto table = [] {
    using P = SwiftParams;
    params::Table<P> t;
    t.custom(
        {"preset", Kind::choice, "Swift values before any nic.swift key set beside it", "", "", {"default"}},
        [](P& p, const Value& v) { p = P::preset_named(v.text); }, [](const P& p) { return p.preset; },
        /*preset=*/true);
    t.time("base_target", &P::base_target, "fabric target delay before hop and flow scaling", "1ps", "1s")
        .time("hop_scaling", &P::hop_scaling, "added to the fabric target per switch the data crossed", "0ps", "1s")
        .time("fs_range", &P::fs_range, "the most flow scaling adds to the fabric target", "0ps", "1s")
        .real("fs_min_cwnd", &P::fs_min_cwnd, "packets: at or below it flow scaling adds fs_range", "0.000001",
              "1000000")
        .real("fs_max_cwnd", &P::fs_max_cwnd, "packets: at or above it flow scaling adds nothing", "0.000001",
              "1000000")
        .time("endpoint_target", &P::endpoint_target, "target of the endpoint delay (receiver and sender holds)", "0ps",
              "1s")
        .real("ai", &P::ai, "additive increase: packets per window's worth of ACKs", "0", "1000000")
        .real("beta", &P::beta, "multiplicative decrease factor", "0", "1")
        .real("max_mdf", &P::max_mdf, "the most one decrease takes (0.5: halves)", "0", "1")
        .real("min_cwnd", &P::min_cwnd, "packets: floor of each window (below 1: paced)", "0.000001", "1000000")
        .real("max_cwnd", &P::max_cwnd, "packets: ceiling of each window", "0.000001", "1000000")
        .real("initial_cwnd", &P::initial_cwnd, "packets: both windows of a new QP", "0.000001", "1000000")
        .integer("retx_reset", &P::retx_reset, "timeouts in a row that set the fabric window to min_cwnd", 1, 1000);
    return t;
  }();
  return table;
}

const params::Table<CnpParams>& cnp_table() {
  static const auto table = [] {
    using P = CnpParams;
    params::Table<P> t;
    t.flag("enable", &P::enabled, "answer CE-marked packets with CNPs (under the policies that read them: none, dcqcn)")
        .time_in("us", "min_time_between_cnps", &P::min_time_between_cnps,
                 "the least time between CNPs (whole us, as the NIC's sysfs takes it: 4 or \"4us\")", "0", "1000000")
        .either("cnp_scope", &P::per_qp, {"port", "qp"}, "qp", "one CNP interval per port (ConnectX) or per QP")
        .choice("cnp_form", &P::form, kCnpFormNames,
                "a CNP frame, or the BECN bit on the next ACK to the QP (reliable transport only)")
        .choice("cnp_pacing", &P::pacing, kCnpPacingNames,
                "at most one notification within the interval of the last (since_last) or per fixed window of it")
        .integer("cnp_802p_prio", &P::cnp_802p_prio, "802.1p priority of CNPs", 0, 7)
        .integer("cnp_dscp", &P::cnp_dscp, "DSCP of CNPs", 0, 63);
    return t;
  }();
  return table;
}

const params::Table<WireFormat>& wire_table() {
  static const auto table = [] {
    using W = WireFormat;
    params::Table<W> t;
    t.integer("header_bytes", &W::header_bytes,
              "bytes of every RoCE frame besides payload and RETH/AETH/CNP fields (66: Ethernet 14, 802.1Q 4, IPv4 20, "
              "UDP 8, BTH 12, ICRC 4, FCS 4)",
              0, 1024)
        .integer("min_frame_bytes", &W::min_frame_bytes, "the smallest frame (Ethernet: 64)", 0, 1518)
        .integer("gap_bytes", &W::gap_bytes, "bytes a port spends between frames (preamble 7, delimiter 1, gap 12)", 0,
                 1024)
        .integer("pfc_frame_bytes", &W::pfc_frame_bytes,
                 "a PFC frame's size (a MAC control frame: 64; the ns-3 RDMA model's: 43)", 1, 1518)
        .integer("int_max_hops", &W::int_max_hops,
                 "hop slots of the INT header on data and ACKs of a policy that reads INT (hpcc): 8 bytes each after "
                 "a 2-byte count (5: 42 bytes, as the HPCC ns-3 model's)",
                 1, kIntHopSlots)
        .choice("serialization", &W::rounding, kWireRoundingNames,
                "times on the wire exact to the ps (rounded up), or whole ns truncated or rounded to the nearest, as "
                "another simulator keeps them");
    return t;
  }();
  return table;
}

const params::Table<IrnParams>& irn_table() {
  static const auto table = [] {
    using P = IrnParams;
    params::Table<P> t;
    t.integer("bdp_cap", &P::bdp_cap,
              "packets outstanding beyond the cumulative ACK at most (BDP-FC), and the receiver's bitmap (0 = the "
              "network's base RTT at the NIC's line rate, in MTUs)",
              0, kMaxIrnCap)
        .time("rto_low", &P::rto_low, "timeout while fewer than rto_low_packets are in flight", "1us", "10s")
        .time("rto_high", &P::rto_high, "timeout otherwise", "1us", "10s")
        .integer("rto_low_packets", &P::rto_low_packets, "IRN's N: packets in flight below which RTO_low applies", 0,
                 kMaxIrnCap)
        .integer("reorder_tolerance", &P::reorder_tolerance,
                 "a hole counts as lost once a PSN more than this beyond it is SACKed (0: IRN, any later one)", 0,
                 kMaxIrnCap);
    return t;
  }();
  return table;
}

const params::Table<NsccParams>& nscc_table() {
  static const auto table = [] {
    using P = NsccParams;
    params::Table<P> t;
    t.time("target_qdelay", &P::target_qdelay, "target queueing delay (0ps = 0.75 x the network's base RTT)", "0ps",
           "1s")
        .real("pi", &P::pi, "proportional increase: alpha = pi x MSS a b / target", "0", "1000")
        .real("fair_increase", &P::fair_increase, "MSS per window's worth of ACKs at the reference BDP (150 kB)", "0",
              "1000")
        .real("eta", &P::eta, "MSS added per network RTT at the reference BDP", "0", "1000")
        .real("fast_increase_scale", &P::fast_increase_scale, "fast increase: cwnd grows by this x a per byte", "0",
              "100")
        .time("fast_increase_below", &P::fast_increase_below,
              "delay under which a window's worth of ACKs starts fast increase", "0ps", "1s")
        .real("gamma", &P::gamma, "multiplicative decrease factor", "0", "1")
        .real("delay_weight", &P::delay_weight, "EWMA weight of the average delay", "0.000001", "1")
        .real("max_window_bdp", &P::max_window_bdp, "maxwnd and the first window, in BDPs of the base RTT", "0.01",
              "1000")
        .integer("adjust_packets", &P::adjust_packets, "increases applied every this many MSS received", 1, 65536)
        .integer("qa_gate", &P::qa_gate, "quick adapt when an epoch acknowledged below maxwnd / 2^qa_gate", 0, 20)
        .flag("quick_adapt", &P::quick_adapt, "quick adapt on trims, losses and delays above 4 x target");
    return t;
  }();
  return table;
}

const params::Table<UetParams>& uet_table() {
  static const auto table = [] {
    using P = UetParams;
    params::Table<P> t;
    t.integer("entropies", &P::entropies,
              "entropy values a QP sprays its packets over (a power of two; the UDP source port's low bits)", 1,
              kMaxEntropies)
        .choice("entropy", &P::entropy, kEntropyAlgoNames,
                "how a packet's entropy is picked: good ones recycled, else a walk skipping penalised ones (mixed); "
                "the walk alone (bitmap); round-robin ignoring feedback (oblivious)")
        .time("rto", &P::rto,
              "timeout; the oldest packet in flight is resent (0ps = 15 us + 6 base RTTs with trimming, 30 without)",
              "0ps", "10s")
        .integer("max_outstanding", &P::max_outstanding,
                 "PSNs outstanding beyond the cumulative ACK at most, and the receiver's bitmap (0 = 8 BDPs, at least "
                 "64)",
                 0, kMaxIrnCap)
        .flag("rccc", &P::rccc,
              "receiver credits: a QP sends only what the receiver's pulls grant, after a first "
              "speculative_bdp")
        .integer("pull_bytes", &P::pull_bytes, "credit one pull grants (0 = 4 MTUs)", 0, 1 << 24)
        .real("pull_share", &P::pull_share, "the receiver's pulls grant this share of its line rate", "0.01", "1")
        .real("speculative_bdp", &P::speculative_bdp,
              "credit a QP starts with, in BDPs of the base RTT, and the most it may hold", "0.01", "100");
    return t;
  }();
  return table;
}

const params::Table<NicConfig>& nic_table() {
  static const auto table = [] {
    using C = NicConfig;
    params::Table<C> t;
    t.custom(
         {"mtu", Kind::bytes, "RDMA payload per packet", "256B", "9000B", {}},
         [](C& c, const Value& v) { c.mtu = static_cast<std::uint32_t>(v.i); },
         [](const C& c) { return to_string(Bytes::from_count(c.mtu)); })
        .choice("transport", &C::transport, kTransportNames,
                "reliable (go-back-N), unreliable, reliable with selective repeat and out-of-order placement "
                "(IRN: nic.irn.*), or the Ultra Ethernet transport (UET: nic.uet.*)")
        .flag("ecn_capable", &C::ecn_capable, "send data ECT(0) so that switches may mark it")
        .integer(
            "ack_every", &C::ack_every,
            "RC: one coalesced ACK per this many in-order packets (0 = 1 for irn, uet, dctcp, timely, swift and hpcc, "
            "8 otherwise)",
            0, 65536)
        .choice("flow_end", &C::flow_end, kFlowEndNames,
                "a flow is finished when its last byte is placed, or when its sender has the last ACK (RC)")
        .time("rto", &C::rto, "RC: retransmission timeout without progress (IRN: nic.irn.rto_low, rto_high)", "1us",
              "10s")
        .time("reorder_timeout", &C::reorder_timeout,
              "RC with a reorder window: NAK a gap that has not filled this long (0ps = only beyond the window)", "0ps",
              "1s")
        .integer("reorder_window", &C::reorder_window, "RC: packets accepted beyond the expected PSN (0 = go-back-N)",
                 0, 65536)
        .rate("rx_rate", &C::rx_rate, "host drain rate of the NIC's receive buffer (0bps = takes packets as they come)")
        .bytes("rx_buffer", &C::rx_buffer, "NIC receive buffer; past it minus PFC headroom the NIC pauses", "1KiB")
        .one_of("congestion_control", &C::congestion_control, cc_policy_names(),
                "congestion control of every QP (none = line rate)");
    std::vector<std::string> presets;
    for (const auto& p : dcqcn_presets()) presets.emplace_back(p.name);
    t.custom(
        {"roce_rp.preset", Kind::choice, "DCQCN values of both ends, before any roce_rp/roce_np key set beside it", "",
         "", presets},
        [](C& c, const Value& v) {
          const DcqcnPreset& p = dcqcn_preset(v.text);
          c.dcqcn = p.rp;
          c.cnp = p.np;
        },
        [](const C& c) { return c.dcqcn.preset; }, /*preset=*/true);
    t.nest("roce_rp", &C::dcqcn, dcqcn_table()).nest("roce_np", &C::cnp, cnp_table());
    t.nest("dctcp", &C::dctcp, dctcp_table())
        .nest("timely", &C::timely, timely_table())
        .nest("swift", &C::swift, swift_table())
        .nest("hpcc", &C::hpcc, hpcc_table())
        .nest("nscc", &C::nscc, nscc_table())
        .nest("irn", &C::irn, irn_table())
        .nest("uet", &C::uet, uet_table());
    t.time("base_rtt", &C::base_rtt,
           "unloaded RTT of window policies (0ps = the longest path's: data frames out, ACKs back)", "0ps", "1s");
    return t;
  }();
  return table;
}

const params::Table<PfcConfig>& pfc_table() {
  static const auto table = [] {
    using C = PfcConfig;
    params::Table<C> t;
    t.flag("enabled", &C::enabled, "PFC on the lossless priorities")
        .custom(
            {"lossless", Kind::text, "lossless priorities, comma-separated (\"3\", \"3,4\")", "", "", {}},
            [](C& c, const Value& v) { c.lossless = priority_mask(v.text); },
            [](const C& c) { return priority_list_text(c.lossless); })
        .choice("headroom", &C::headroom_mode, kHeadroomModeNames,
                "headroom per lossless group: the SONiC formula (auto), a given size, or the HPCC ns-3 model's 3 x "
                "the port's one-way BDP (ns3)")
        .bytes("headroom_size", &C::headroom, "headroom when switch.pfc.headroom = \"given\"")
        .bytes("mac_phy_delay", &C::mac_phy_delay, "formula term: MAC/PHY delay in bytes")
        .bytes("peer_response", &C::peer_response, "formula term: bytes the peer sends before it reacts")
        .bytes("xon_offset", &C::xon_offset, "resume when a group is this far below its limit")
        .integer("pause_quanta", &C::pause_quanta, "pause time per frame in 512-bit quanta (refreshed at half)", 1,
                 65535)
        .either("pause_expiry", &C::pause_until_xon, {"quanta", "xon"}, "xon",
                "a received pause lasts its quanta (802.1Qbb, refreshed by the sender) or until the XON (the ns-3 "
                "RDMA model's PFC)")
        .either(
            "pause_refresh", &C::refresh, {"half", "off"}, "half",
            "while XOFF holds, the pause is sent again at half its time (half), or once per XOFF (off: the ns-3 RDMA "
            "model's PFC; needs pause_expiry = \"xon\")");
    return t;
  }();
  return table;
}

const params::Table<SwitchConfig>& switch_table() {
  static const auto table = [] {
    using C = SwitchConfig;
    params::Table<C> t;
    t.bytes("buffer", &C::buffer, "shared buffer of each switch", "1KiB")
        .bytes("mmu.reserve", &C::reserve, "reserved bytes per ingress port and priority group (or per port)")
        .either("mmu.reserve_scope", &C::reserve_per_port, {"pg", "port"}, "port",
                "one reserve per ingress port and priority group (pg), or per port, its groups sharing it (port)")
        .either("mmu.release_at", &C::release_at_start, {"last_bit", "start"}, "start",
                "a packet's buffer is freed after its last bit left the egress port (last_bit), or as its transmission "
                "starts (start: the ns-3 RDMA model, which frees it on dequeue)")
        .choice("mmu.threshold", &C::threshold_mode, kThresholdModeNames, "shared-pool limit per priority group")
        .bytes("mmu.static_th", &C::static_th, "static limit per priority group")
        .integer("mmu.dynamic_th", &C::dynamic_th, "dynamic limit: 2^n x free shared buffer", -7, 7)
        .custom(
            {"mmu.dynamic_th_by_rate",
             Kind::text,
             "dynamic limits of the ingress ports at given rates, RATE=N comma-separated (\"400Gbps=-1\"; the "
             "others: mmu.dynamic_th)",
             "",
             "",
             {}},
            [](C& c, const Value& v) {
              c.dynamic_th_by_rate.clear();
              for (const auto& [rate, text] : by_rate_items(v.text)) {
                const auto n = params::parse_integer(text);
                if (!n || *n < -7 || *n > 7)
                  throw InputError(fmt::format("'{}={}': expected an integer -7..7", to_string(rate), text));
                c.dynamic_th_by_rate.push_back({rate, static_cast<int>(*n)});
              }
            },
            [](const C& c) {
              std::vector<std::string> items;
              for (const auto& d : c.dynamic_th_by_rate)
                items.push_back(fmt::format("{}={}", to_string(d.rate), d.dynamic_th));
              return fmt::format("{}", fmt::join(items, ","));
            })
        .nest("pfc", &C::pfc, pfc_table())
        .flag("pfc_wd.enabled", &C::watchdog, "SONiC PFC watchdog on the lossless queues")
        .choice("pfc_wd.action", &C::wd_action, kWatchdogActionNames,
                "in a storm: drop the queue, forward despite pauses, or alert")
        .time("pfc_wd.detection_time", &C::wd_detection, "paused this long with packets queued: a storm", "1ns", "10s")
        .time("pfc_wd.restoration_time", &C::wd_restoration, "no pause for this long: the storm is over", "1ns", "10s")
        .time("pfc_wd.poll_interval", &C::wd_poll, "how often the watchdog looks", "1ns", "10s")
        .choice("scheduler", &C::scheduler, kSchedulerNames, "egress scheduling among priorities")
        .custom(
            {"dwrr.weights", Kind::text, "DWRR weights of priorities 0..7", "", "", {}},
            [](C& c, const Value& v) {
              const auto items = params::split_list(v.text);
              if (items.size() != 8)
                throw InputError(fmt::format("expected 8 comma-separated values, got {}", items.size()));
              for (std::size_t i = 0; i < 8; ++i) {
                const auto w = params::parse_integer(items[i]);
                if (!w || *w < 1 || *w > 1000)
                  throw InputError(fmt::format("weight '{}' of priority {} is not in 1..1000", items[i], i));
                c.weights[i] = static_cast<std::uint32_t>(*w);
              }
            },
            [](const C& c) { return fmt::format("{}", fmt::join(c.weights, ",")); })
        .custom(
            {"dwrr.strict", Kind::text, "DWRR: priorities served strictly before the others", "", "", {}},
            [](C& c, const Value& v) { c.strict_classes = priority_mask(v.text); },
            [](const C& c) { return priority_list_text(c.strict_classes); })
        .either("wred.ecn", &C::ecn, {"ecn_all", "ecn_none"}, "ecn_all", "ECN marking on (SONiC ecn_all) or off")
        .custom(
            {"wred.green_min_threshold", Kind::bytes, "Kmin: no marking at or below", "0B", "", {}},
            [](C& c, const Value& v) { c.wred.kmin = v.i; },
            [](const C& c) { return to_string(Bytes::from_count(c.wred.kmin)); })
        .custom(
            {"wred.green_max_threshold", Kind::bytes, "Kmax: marking always above", "1B", "", {}},
            [](C& c, const Value& v) { c.wred.kmax = v.i; },
            [](const C& c) { return to_string(Bytes::from_count(c.wred.kmax)); })
        .custom(
            {"wred.green_drop_probability", Kind::real, "Pmax in percent, reached at Kmax", "0", "100", {}},
            [](C& c, const Value& v) { c.wred.pmax = v.d / 100.0; },
            // 15 digits: the percent the fraction was made from, not 0.01 x 100's rounding.
            [](const C& c) { return fmt::format("{:.15g}", c.wred.pmax * 100.0); })
        .custom(
            {"wred.by_rate",
             Kind::text,
             "marking of the egress ports at given rates, RATE=KMIN/KMAX/PMAX comma-separated (\"400Gbps=800KB/3200KB/"
             "20\", Pmax in percent; the others: green_*)",
             "",
             "",
             {}},
            [](C& c, const Value& v) {
              c.wred_by_rate.clear();
              for (const auto& [rate, text] : by_rate_items(v.text)) {
                const std::string item = to_string(rate) + "=" + text;
                const auto parts = params::split_list(text, '/');
                if (parts.size() != 3) throw InputError(fmt::format("'{}': expected RATE=KMIN/KMAX/PMAX", item));
                Wred w;
                char* end = nullptr;
                try {
                  w.kmin = parse_bytes(parts[0]).count();
                  w.kmax = parse_bytes(parts[1]).count();
                } catch (const InputError& e) {
                  throw InputError(fmt::format("'{}': {}", item, e.what()));
                }
                const double pmax = std::strtod(parts[2].c_str(), &end);
                if (parts[2].empty() || end != parts[2].c_str() + parts[2].size() || !(pmax >= 0 && pmax <= 100))
                  throw InputError(fmt::format("'{}': Pmax '{}': expected a percent 0..100", item, parts[2]));
                if (w.kmin < 0 || w.kmax <= w.kmin)
                  throw InputError(fmt::format("'{}': Kmax must be above Kmin", item));
                w.pmax = pmax / 100.0;
                c.wred_by_rate.push_back({rate, w});
              }
            },
            [](const C& c) {
              std::vector<std::string> items;
              for (const auto& r : c.wred_by_rate)
                items.push_back(fmt::format("{}={}/{}/{:.15g}", to_string(r.rate),
                                            to_string(Bytes::from_count(r.wred.kmin)),
                                            to_string(Bytes::from_count(r.wred.kmax)), r.wred.pmax * 100.0));
              return fmt::format("{}", fmt::join(items, ","));
            })
        .either("wred.mark_at", &C::mark_at_enqueue, {"dequeue", "enqueue"}, "enqueue", "where the queue is measured")
        .either("wred.queue_bytes", &C::mark_by_port, {"queue", "port"}, "port",
                "the bytes WRED reads: the packet's egress queue (per queue, as SONiC's WRED profiles) or the whole "
                "egress port's")
        .choice("lb", &C::load_balance, kLoadBalanceNames,
                "choice among equal-cost next hops: the flow's hash, spraying each packet in turn or at random, each "
                "packet to the least-loaded port (adaptive), or each flowlet (flowlet)")
        .bytes("ar.bias", &C::ar_bias,
               "adaptive and flowlet: the hashed port is kept unless another's queue is more than this shorter")
        .time("flowlet.timeout", &C::flowlet_timeout, "flowlet: an idle gap longer than this ends a flow's flowlet",
              "1ps", "1s")
        .choice("flowlet.choice", &C::flowlet_choice, kFlowletChoiceNames,
                "flowlet: a new flowlet's port, the least-loaded (as adaptive) or at random (LetFlow)")
        .integer("flowlet.table", &C::flow_table,
                 "adaptive and flowlet: entries of the flow table (a power of two; flows hashing to one entry take "
                 "turns in it; 16 bytes each, per switch)",
                 1, 1 << 20)
        .bytes("trim.threshold", &C::trim_threshold,
               "packet trimming: a data packet whose egress queue would hold more than this with it (or that the "
               "buffer refuses) is cut to its headers, forwarded at trim.priority and NAKed by its receiver; 0B = off")
        .integer("trim.priority", &C::trim_priority,
                 "packet trimming: the priority queue trimmed headers wait in at every switch (served strictly)", 0, 7)
        .choice("ecmp.hash", &C::hash, kHashFunctionNames, "ECMP hash function")
        .custom(
            {"ecmp.fields", Kind::text, "5-tuple fields the ECMP hash reads", "", "", {}},
            [](C& c, const Value& v) { c.hash_fields = parse_hash_fields(v.text); },
            [](const C& c) { return hash_fields_text(c.hash_fields); })
        .integer("ecmp.seed", &C::seed, "ECMP hash seed")
        .flag("ecmp.seed_per_switch", &C::seed_per_switch,
              "mix the switch index into the seed (false: every tier hashes alike)");
    return t;
  }();
  return table;
}

const params::Table<TopologySpec>& topology_table() {
  static const auto table = [] {
    using T = TopologySpec;
    params::Table<T> t;
    t.choice("kind", &T::kind, kTopologyKindNames, "network shape")
        .integer("hosts", &T::hosts, "single_switch: hosts on the switch", 2, 65536)
        .integer("s1_hosts", &T::s1_hosts, "two_switches: hosts on s1", 1, 65536)
        .integer("s2_hosts", &T::s2_hosts, "two_switches: hosts on s2", 1, 65536)
        .integer("inter_switch_links", &T::inter_switch_links, "two_switches: parallel s1-s2 links", 1, 64)
        .integer("leaves", &T::leaves, "leaf_spine: leaf switches", 1, 4096)
        .integer("spines", &T::spines, "leaf_spine: spine switches", 1, 1024)
        .integer("hosts_per_leaf", &T::hosts_per_leaf, "leaf_spine: hosts under each leaf", 1, 1024)
        .integer("uplinks", &T::uplinks, "leaf_spine: parallel links from each leaf to each spine", 1, 64)
        .integer("ring_switches", &T::ring_switches, "ring: switches in the ring", 3, 4096)
        .integer("hosts_per_switch", &T::hosts_per_switch, "ring: hosts on each switch", 1, 1024)
        .integer("k", &T::k, "fat_tree: switch radix k (even; k^3/4 hosts)", 2, 64)
        .text("file", &T::file,
              "ns3: the HPCC ns-3 RDMA model's topology.txt, every link at its own rate and delay (relative to the "
              "scenario)")
        .custom(
            {"host_rate", Kind::rate, "rate of host links", "1Mbps", "", {}},
            [](T& s, const Value& v) { s.host_link.rate = BitRate::from_bps(v.i); },
            [](const T& s) { return to_string(s.host_link.rate); })
        .custom(
            {"fabric_rate", Kind::rate, "rate of switch-to-switch links", "1Mbps", "", {}},
            [](T& s, const Value& v) { s.fabric_link.rate = BitRate::from_bps(v.i); },
            [](const T& s) { return to_string(s.fabric_link.rate); })
        .custom(
            {"link_delay", Kind::time, "propagation delay of every link", "0ps", "1s", {}},
            [](T& s, const Value& v) { s.host_link.delay = s.fabric_link.delay = Time::from_ps(v.i); },
            [](const T& s) { return to_string(s.host_link.delay); })
        .custom(
            {"link_rates",
             Kind::text,
             "links at a rate of their own, both directions: NODE:PORT=RATE, comma-separated (\"leaf0:4=50Gbps\")",
             "",
             "",
             {}},
            [](T& s, const Value& v) { s.link_rates = parse_link_rates(v.text); },
            [](const T& s) { return link_rates_text(s.link_rates); });
    return t;
  }();
  return table;
}

const params::Table<ImpairmentConfig>& impairment_table() {
  static const auto table = [] {
    using C = ImpairmentConfig;
    params::Table<C> t;
    t.real("drop_probability", &C::drop, "each data packet lost with this probability", "0", "1")
        .real("corrupt_probability", &C::corrupt, "each data packet corrupted (discarded by the receiver)", "0", "1")
        .real("duplicate_probability", &C::duplicate, "each data packet duplicated", "0", "1")
        .real("reorder_probability", &C::reorder, "each data packet held back (reordered)", "0", "1")
        .integer("reorder_packets", &C::reorder_packets, "a reordered packet lets this many later ones by", 1,
                 1'000'000)
        .time("reorder_delay", &C::reorder_delay, "if positive: a reordered packet is held this long instead", "0ps",
              "1s")
        .time("max_hold", &C::max_hold, "a held packet leaves after this long at the latest", "1ns", "1s");
    return t;
  }();
  return table;
}

const params::Table<ResequencerConfig>& resequencer_table() {
  static const auto table = [] {
    using C = ResequencerConfig;
    params::Table<C> t;
    t.integer("buffer", &C::buffer, "re-sequencer: packets it can hold (all QPs)", 1, 1'048'576)
        .time("timeout", &C::timeout, "re-sequencer: the longest a packet waits for the gap before it", "1ns", "1s");
    return t;
  }();
  return table;
}

}  // namespace fabriclab::fabric
